"""The estimator base shared by induce's models: scikit-learn parameters, the trace, warnings, the iteration count.

Contract (scikit-learn's): hyperparameters are the keyword arguments of
``__init__``, stored unchanged under the same names (so ``get_params``,
``set_params`` and ``sklearn.base.clone`` work); ``fit`` returns ``self``;
everything learned ends in ``_``.  On top of that every iterative estimator
keeps

* ``trace_``: one record (a dict) per iteration;
* ``n_iter_``: iterations run; ``converged_``: whether the stopping rule
  (:class:`induce.infer.convergence.ConvergenceMonitor`) fired before the
  ``n_iter`` cap (a scikit-learn ``ConvergenceWarning`` says so when it did not);
* ``warnings_``: the one-line warnings of the run (collapse, non-finite or
  decreasing objectives, the cap), also issued through :mod:`warnings` as
  :class:`~induce.infer.convergence.FitWarning` (the CLI prints them as
  ``induce: warning: ...`` and lists them in its JSON).

scikit-learn semantics shared by every estimator: ``fit(X, y=None)`` and ``score(X, y=None)`` accept ``y`` and
ignore it (what an estimator really takes besides ``X`` -- a tag dictionary, a dev set, a client -- is a
keyword), so ``Pipeline``, ``cross_val_score`` and ``GridSearchCV`` can pass their ``y`` along;
``score`` is always the **mean log-likelihood per token** (taggers, parsers) **or per time step**
(segmenters), in nats, higher is better; ``predict`` / ``score`` before ``fit`` or ``load`` raise
:class:`NotFittedError` (scikit-learn's ``NotFittedError`` and an induce :class:`~induce.errors.ConfigError`).

Hyperparameters are validated declaratively: a class lists its constraints in
``_parameter_constraints`` (name -> :class:`Integer`, :class:`Real`,
:class:`Options`, :class:`Seed`, :class:`Boolean`, :class:`Items` or
:class:`AnyOf`; subclasses extend their parents' table), and every ``fit`` /
``fit_*`` method of a subclass first checks its own hyperparameters against it
(:meth:`InduceEstimator._validate_params`), raising
:class:`induce.errors.ConfigError` with one line naming the parameter, the
value and what was expected.  Checks that relate several parameters, or a
parameter and the data, stay in the estimator.
"""

from __future__ import annotations

import functools
import numbers
import warnings
from abc import ABC, abstractmethod

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError as _SklearnNotFitted

from .errors import ConfigError, _domain, check_float, check_int, check_seed
from .infer.convergence import ConvergenceMonitor, FitWarning

__all__ = ["InduceEstimator", "NotFittedError", "Integer", "Real", "Options", "Seed", "Boolean", "Items", "AnyOf", "SCHEDULE"]


class NotFittedError(ConfigError, _SklearnNotFitted):
    """``predict``/``score`` before ``fit`` or ``load``: an induce error (one line on the command line) and
    scikit-learn's ``NotFittedError``."""

    @classmethod
    def of(cls, estimator) -> "NotFittedError":
        return cls(f"this {type(estimator).__name__} is not fitted yet; call fit() or load() first")


class Constraint(ABC):
    """A hyperparameter's domain: :meth:`check` raises ``ConfigError`` (one line) for a value outside it."""

    expected = ""  # what the domain is, after "must be"

    @abstractmethod
    def accepts(self, value) -> bool:
        """Whether ``value`` lies in the domain."""

    def check(self, name: str, value) -> None:
        if not self.accepts(value):
            raise ConfigError(f"{name} must be {self.expected}; got {value!r}")


class Integer(Constraint):
    """An integer (not a bool) in ``[minimum, maximum]`` (:func:`induce.errors.check_int`)."""

    def __init__(self, minimum: int | None = None, maximum: int | None = None):
        self.minimum, self.maximum = minimum, maximum
        self.expected = f"an integer {_domain(minimum, maximum, False, False)}"

    def accepts(self, value) -> bool:
        try:
            check_int("", value, self.minimum, self.maximum)
        except ConfigError:
            return False
        return True


class Real(Constraint):
    """A finite real number (not a bool or a string) within the bounds, open or closed (:func:`induce.errors.check_float`)."""

    def __init__(self, minimum: float | None = None, maximum: float | None = None, *, min_open: bool = False,
                 max_open: bool = False):
        self.bounds = dict(minimum=minimum, maximum=maximum, min_open=min_open, max_open=max_open)
        self.expected = f"a finite number {_domain(minimum, maximum, min_open, max_open)}"

    def accepts(self, value) -> bool:
        if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
            return False
        try:
            check_float("", value, **self.bounds)
        except ConfigError:
            return False
        return True


class Options(Constraint):
    """One of a fixed set of values (names, or ``None``)."""

    def __init__(self, *choices):
        self.choices = choices
        self.expected = ("one of " if len(choices) > 1 else "") + ", ".join(map(str, choices))

    def accepts(self, value) -> bool:
        return any(value is c or (c is not None and isinstance(value, str) and value == c) for c in self.choices)


class Seed(Constraint):
    """A seed: ``None`` or an integer in ``[0, 2**32)`` (:func:`induce.errors.check_seed`)."""

    expected = "None or an integer in [0, 4294967295]"

    def accepts(self, value) -> bool:
        try:
            check_seed("", value)
        except ConfigError:
            return False
        return True


class Boolean(Constraint):
    """``True`` or ``False``."""

    expected = "True or False"

    def accepts(self, value) -> bool:
        return isinstance(value, (bool, np.bool_))


class Items(Constraint):
    """A list or tuple of ``length`` items (any length >= 1 when ``None``), each accepted by ``item``."""

    def __init__(self, item: Constraint, length: int | None = None):
        self.item, self.length = item, length
        self.expected = (f"a sequence of {length} items" if length else "a non-empty sequence") + f", each {item.expected}"

    def accepts(self, value) -> bool:
        return (isinstance(value, (list, tuple)) and (len(value) == self.length if self.length else len(value) > 0)
                and all(self.item.accepts(v) for v in value))


class AnyOf(Constraint):
    """A value accepted by any of ``constraints``."""

    def __init__(self, *constraints: Constraint):
        self.constraints = constraints
        self.expected = " or ".join(c.expected for c in constraints)

    def accepts(self, value) -> bool:
        return any(c.accepts(value) for c in self.constraints)


#: the step-size schedule of the stochastic algorithms, rho_m = (tau + m + 1)^-kappa with kappa in
#: [0.5, 1] (Robbins-Monro; thesis eq. 3.103), over minibatches of ``batch_size`` (``None``: the estimator's default
#: size in one process, a planned one on a dask cluster: :meth:`InduceEstimator._resolve_batch_size`)
SCHEDULE = {"tau": Real(0.0), "kappa": Real(0.5, 1.0), "batch_size": AnyOf(Options(None), Integer(1))}


#: hyperparameter names of model files written before the names were shared across estimators
RENAMED_PARAMS = {"prior": "alpha", "n_iterations": "n_iter", "n_ibm1_iterations": "n_iter_ibm1",
                  "progress": "verbose"}


def _validating(method):
    """``method`` preceded by the estimator's :meth:`InduceEstimator._validate_params`."""
    @functools.wraps(method)
    def fit(self, *args, **kwargs):
        self._validate_params()
        return method(self, *args, **kwargs)

    return fit


def resolve_batch_size(batch_size: int | None, default: int, n_items: int, saved: int | None = None,
                       epochs: int = 1, client=None) -> int:
    """A minibatch fit's size: ``batch_size`` when given; else ``saved`` (the size of a checkpoint being resumed),
    ``default`` without a dask ``client``, or with one the largest size that keeps 500 minibatches in ``epochs``
    passes over ``n_items`` items (:func:`induce.distributed.cluster.planned_batch_size`)."""
    if batch_size is not None:
        return int(batch_size)
    if saved is not None:
        return int(saved)
    if client is None:
        return int(default)
    from .distributed import cluster

    return cluster.planned_batch_size(n_items, default, epochs)


class InduceEstimator(BaseEstimator):
    """Base of every induce estimator (see the module docstring)."""

    #: hyperparameter name -> :class:`Constraint`; a subclass's table extends its parents'
    _parameter_constraints: dict[str, Constraint] = {}

    def __init_subclass__(cls, **kwargs):
        """Make every ``fit`` / ``fit_*`` the subclass defines start with :meth:`_validate_params`."""
        super().__init_subclass__(**kwargs)
        for name, method in list(vars(cls).items()):
            if (name == "fit" or name.startswith("fit_")) and callable(method):
                setattr(cls, name, _validating(method))

    def _keep_arguments(self, arguments: dict) -> None:
        """scikit-learn's constructor contract: every argument of ``__init__`` (its ``locals()``, ``self`` left
        out) kept unchanged as the attribute of the same name, for ``get_params`` / ``clone``; the checks run in
        ``fit`` (:meth:`_validate_params`)."""
        for name, value in arguments.items():
            if name != "self":
                setattr(self, name, value)

    @classmethod
    def _constraints(cls) -> dict[str, Constraint]:
        """The constraints of this class's hyperparameters: its table over its parents' (nearest wins)."""
        table: dict[str, Constraint] = {}
        for klass in reversed(cls.__mro__):
            table.update(vars(klass).get("_parameter_constraints", {}))
        names = set(cls._get_param_names())
        return {k: v for k, v in table.items() if k in names}

    def _validate_params(self) -> None:
        """Check every constrained hyperparameter (``ConfigError`` naming the parameter, the value, the domain)."""
        for name, constraint in self._constraints().items():
            constraint.check(name, getattr(self, name))

    @classmethod
    def _from_params(cls, params: dict):
        """An unfitted estimator from the hyperparameters a model file stored, under today's names."""
        return cls(**{RENAMED_PARAMS.get(k, k): v for k, v in params.items()})

    def _start_run(self) -> None:
        """Reset what a fit records: the trace, warnings, iteration count, convergence flag."""
        self.trace_: list[dict] = []
        self.warnings_: list[str] = []
        self.n_iter_ = 0
        self.converged_ = False

    def _warn(self, message: str) -> None:
        """Record a one-line warning in ``warnings_`` and issue it as a ``FitWarning`` (once per message)."""
        if message not in self.warnings_:
            self.warnings_.append(message)
            warnings.warn(message, FitWarning, stacklevel=3)

    def _resolve_batch_size(self, default: int, n_items: int, saved: int | None = None, epochs: int = 1) -> int:
        """The minibatch size of this fit (:func:`resolve_batch_size`), stored in ``batch_size_``."""
        self.batch_size_ = resolve_batch_size(self.batch_size, default, n_items, saved, epochs,
                                              getattr(self, "client", None))
        return self.batch_size_

    def _warn_cluster_overhead(self) -> None:
        """After a minibatch fit on a dask cluster: warn when the step overhead dominated
        (:meth:`induce.distributed.cluster.Meter.advice`: a size to give, or that the planned size was already
        the largest the schedule allows)."""
        meter = getattr(self, "cluster_meter_", None)
        if getattr(self, "client", None) is None or not meter:
            return
        message = meter.advice(self.batch_size_, planned=self.batch_size is None)
        if message:
            self._warn(message)

    def _end_iterations(self, monitor: ConvergenceMonitor, name: str, n_iter: int, cap: int) -> None:
        """Store ``n_iter_`` / ``converged_`` and the monitor's end-of-run warnings (cap hit, decrease)."""
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(monitor.converged)
        self.warnings_ += [m for m in monitor.finish(name, n_iter, cap) if m not in self.warnings_]

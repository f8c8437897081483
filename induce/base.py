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
"""

from __future__ import annotations

import warnings

from sklearn.base import BaseEstimator

from .infer.convergence import ConvergenceMonitor, FitWarning

__all__ = ["InduceEstimator"]


#: hyperparameter names of model files written before the names were shared across estimators
RENAMED_PARAMS = {"prior": "alpha", "n_iterations": "n_iter", "n_ibm1_iterations": "n_iter_ibm1",
                  "progress": "verbose"}


class InduceEstimator(BaseEstimator):
    """Base of every induce estimator (see the module docstring)."""

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

    def _end_iterations(self, monitor: ConvergenceMonitor, name: str, n_iter: int, cap: int) -> None:
        """Store ``n_iter_`` / ``converged_`` and the monitor's end-of-run warnings (cap hit, decrease)."""
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(monitor.converged)
        self.warnings_ += [m for m in monitor.finish(name, n_iter, cap) if m not in self.warnings_]

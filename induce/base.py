"""The estimator base shared by induce's models: scikit-learn parameters, the trace, convergence, warnings.

Contract (scikit-learn's): hyperparameters are the keyword arguments of
``__init__``, stored unchanged under the same names (so ``get_params``,
``set_params`` and ``sklearn.base.clone`` work); ``fit`` returns ``self``;
everything learned ends in ``_``.  On top of that every iterative estimator
keeps

* ``trace_``: one record (a dict) per iteration;
* ``n_iter_``: iterations run; ``converged_``: whether the stopping rule fired
  before the ``n_iter`` cap (a ``ConvergenceWarning`` says so when it did not);
* ``warnings_``: the one-line warnings of the run (collapse, non-finite or
  decreasing objectives, the cap), also issued through :mod:`warnings`.

The stopping rule (:class:`Convergence`): the change of the objective in one
iteration is below ``tol`` times the progress made since the first iteration,
``|f_t - f_{t-1}| <= tol * |f_t - f_1|``, for ``patience`` consecutive
iterations.  Measuring the change against the progress made (rather than
against ``|f_t|``) keeps a run from stopping on the plateau of a symmetric
start, where CVI from random local posteriors changes its objective by 1e-5
of its value per pass for several passes before the states separate.
"""

from __future__ import annotations

import math
import warnings

from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning

__all__ = ["InduceEstimator", "Convergence", "ConvergenceWarning", "InduceWarning"]


class InduceWarning(UserWarning):
    """A run that finished but whose result is suspect (collapsed states, a non-finite objective)."""


class Convergence:
    """Stopping rule on an objective sequence: a step below ``tol`` of the progress so far, ``patience`` times.

    ``monotone`` objectives (EM's log-likelihood, the VI bound) must not
    decrease; a decrease larger than rounding (relative ``1e-9``) is reported by
    :meth:`update` as a problem.  ``tol = 0`` never stops early.
    """

    def __init__(self, tol: float, patience: int = 3, monotone: bool = False):
        self.tol = float(tol)
        self.patience = int(patience)
        self.monotone = monotone
        self.previous: float | None = None
        self.first: float | None = None
        self.quiet = 0
        self.converged = False

    def update(self, value: float) -> str | None:
        """Feed the next objective; returns a problem description (non-finite, decreased) or ``None``."""
        value = float(value)
        if not math.isfinite(value):
            return f"the objective is {value}"
        problem = None
        if self.previous is not None:
            change = value - self.previous
            if self.monotone and change < -1e-9 * max(1.0, abs(value)):
                problem = f"the objective decreased from {self.previous:.6g} to {value:.6g}"
            if self.tol > 0 and abs(change) <= self.tol * abs(value - self.first):
                self.quiet += 1
            else:
                self.quiet = 0
            self.converged = self.tol > 0 and self.quiet >= self.patience
        else:
            self.first = value
        self.previous = value
        return problem


class InduceEstimator(BaseEstimator):
    """Base of every induce estimator (see the module docstring)."""

    def _start_run(self) -> None:
        """Reset what a fit records: the trace, warnings, iteration count, convergence flag."""
        self.trace_: list[dict] = []
        self.warnings_: list[str] = []
        self.n_iter_ = 0
        self.converged_ = False

    def _warn(self, message: str, category: type[Warning] = InduceWarning) -> None:
        """Record a one-line warning in ``warnings_`` and issue it (once per message)."""
        if message not in self.warnings_:
            self.warnings_.append(message)
            warnings.warn(message, category, stacklevel=3)

    def _end_iterations(self, n_iter: int, converged: bool, cap: int, stoppable: bool = True) -> None:
        """Store ``n_iter_`` / ``converged_``; warn when a stoppable run hit its cap ``cap``."""
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        if stoppable and not converged and n_iter >= cap:
            self._warn(f"{type(self).__name__} did not converge in {cap} iterations (tol={getattr(self, 'tol', 0)}); "
                       "raise n_iter / --iterations or tol", ConvergenceWarning)

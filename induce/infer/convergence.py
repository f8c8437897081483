"""Stopping rule shared by the iterative estimators.

A run stops when the change of its objective ``f`` (log-likelihood, ELBO,
collapsed objective) in one pass is small against a reference, for
``patience`` consecutive passes:

* ``reference="previous"``: ``|f_t - f_{t-1}| < tol * |f_{t-1}|`` (the
  relative change; the DMV, started from the harmonic initialiser);
* ``reference="progress"``: ``|f_t - f_{t-1}| <= tol * |f_t - f_1|``, the
  change against the progress made since the first pass (the HMM taggers:
  CVI from random local posteriors moves its objective by ~1e-5 of its value
  per pass for several passes before the states separate, and the relative
  change would stop it on that plateau; docs/experiments/defaults.md);
* ``reference="best"``: ``f_t - max_{s<t} f_s <= tol * |max_{s<t} f_s|``, no
  improvement on the best value so far (the stochastic taggers' held-out
  log-likelihood once per epoch: a noisy objective that can also fall as the
  fit goes on, so "no better than the best for ``patience`` epochs" is the
  stop, scikit-learn's ``n_iter_no_change`` rule of its SGD estimators);
* ``reference="below"``: ``f_t < tol``, for an objective that is itself a change per pass (the series cvi1's
  mean change of ``q`` per step, named by ``measure`` in the warning).

``--iterations`` is then only a cap,
and hitting it issues scikit-learn's :class:`~sklearn.exceptions.ConvergenceWarning`.
A non-finite objective stops the run at once (it cannot recover) and is
reported the same way; for an objective that must not decrease (EM's
log-likelihood, thesis section 3.3) a decrease beyond rounding is reported.
"""

from __future__ import annotations

import math
import warnings

from sklearn.exceptions import ConvergenceWarning

class FitWarning(RuntimeWarning):
    """A fit whose result is suspect: non-finite or decreasing objective, collapsed structure."""


#: Default relative tolerance and number of consecutive passes below it.
TOL = 1e-6
PATIENCE = 3
REFERENCES = ("previous", "progress", "best", "below")


class ConvergenceMonitor:
    """Feeds on one objective value per pass; says when to stop.

    ``converged`` becomes True once ``patience`` consecutive changes are small
    against ``reference`` (module docstring); ``diverged`` once a value is NaN or infinite.  ``tol = 0``
    never converges (the run goes to its cap, as a fixed number of passes).
    With ``monotone``, ``decreased_at`` is the first pass whose objective fell by
    more than ``1e-8`` relative (None when none did).
    """

    def __init__(self, tol: float = TOL, patience: int = PATIENCE, monotone: bool = False,
                 reference: str = "previous", measure: str = "objective"):
        if reference not in REFERENCES:
            raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}")
        self.tol, self.patience, self.monotone, self.reference = tol, patience, monotone, reference
        self.measure = measure
        self.previous: float | None = None
        self.first: float | None = None
        self.best: float | None = None
        self.passes = 0
        self.streak = 0
        self.converged = False
        self.diverged = False
        self.decreased_at: int | None = None

    def update(self, value: float) -> bool:
        """Record one pass's objective; True when the run should stop."""
        if not math.isfinite(value):
            self.diverged = True
            return True
        if self.reference == "below":
            self.converged = value < self.tol
        elif self.previous is not None:
            scale = max(abs(self.previous), 1e-300)
            if self.monotone and self.decreased_at is None and value < self.previous - 1e-8 * scale:
                self.decreased_at = self.passes
            if self.reference == "previous":
                small = abs(value - self.previous) / scale < self.tol
            elif self.reference == "best":
                small = self.tol > 0 and value - self.best <= self.tol * max(abs(self.best), 1e-300)
            else:
                small = self.tol > 0 and abs(value - self.previous) <= self.tol * abs(value - self.first)
            self.streak = self.streak + 1 if small else 0
            self.converged = self.streak >= self.patience
        if self.first is None:
            self.first = value
        self.previous = value
        self.best = value if self.best is None else max(self.best, value)
        self.passes += 1
        return self.converged

    def restart_streak(self) -> None:
        """The fit changed in a way its objective's trend does not show (a split-merge move): the calm passes
        count again from zero, against the same reference."""
        self.streak = 0
        self.converged = False

    def _rule(self) -> str:
        """The stopping rule that did not fire, in words (for the cap warning)."""
        if self.reference == "best":
            return f"it still gained more than tol={self.tol:g} of its best within {self.patience} passes"
        if self.reference == "below":
            last = "" if self.previous is None else f" {self.previous:.3g}"
            return f"{self.measure}{last} not below tol={self.tol:g}"
        return f"change of the objective not below tol={self.tol:g} of the {self.reference} for {self.patience} passes"

    def finish(self, name: str, n_iter: int, n_max: int) -> list[str]:
        """Warnings for the run's end (also issued through :mod:`warnings`): cap hit, non-finite or decreasing objective."""
        messages = []
        if self.decreased_at is not None:
            messages.append(f"{name}: the objective decreased at pass {self.decreased_at}, which it must not")
            warnings.warn(messages[-1], FitWarning, stacklevel=3)
        if self.diverged:
            messages.append(f"{name}: the objective became NaN or infinite at pass {n_iter}; stopped")
            warnings.warn(messages[-1], FitWarning, stacklevel=3)
        elif not self.converged and self.tol > 0 and n_iter >= n_max:
            messages.append(f"{name}: not converged after {n_max} passes ({self._rule()}); raise the iteration cap")
            warnings.warn(messages[-1], ConvergenceWarning, stacklevel=3)
        return messages

"""The HDP-HMM's hyperparameter schedule and stopping rule, shared by its four algorithms (``cvi``, ``scvi``,
``svi``, ``beam``): which hyperparameters ``fix_hyper`` holds, the burn-in (fixed, or adaptive: until the
symmetric start has broken), the pass cap, the convergence monitor and the passes' trace records.

:class:`HDPSchedule` is a mixin of :class:`induce.taggers.HDPHMMTagger` (it reads the estimator's
hyperparameters); cvi and scvi call it through the estimator, svi and beam get its settings and passes and return
a :class:`induce.algorithms.Fitted` (:meth:`HDPSchedule._store_fitted`; docs/architecture.md).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..algorithms.base import Fitted
from ..algorithms.loop import HDPLoop
from ..errors import ConfigError
from ..infer.convergence import ConvergenceMonitor
from ..kernels.hdp_qc import QC_METHODS
from ..names import HDP_HYPERPARAMETERS
from .hmm_defaults import STOCHASTIC_PATIENCE

HYPERPARAMETERS = HDP_HYPERPARAMETERS  # the names ``fix_hyper`` accepts
#: ``n_iter=None``: the cap on cvi's passes and scvi's / svi's epochs, which stop earlier on convergence (``tol``),
#: and the sweeps the beam sampler runs (a sampler has no stop).  cvi 1,000 and scvi 300, the lengths of the
#: recorded recovery runs (whose split-merge schedule, laid out over the cap, the stopped runs keep); beam 3,000,
#: the sweeps its recovery needs (thesis 5.5.1: > 2,500; RESULTS "HDP-HMM").  docs/experiments/hdp_defaults.md,
#: "Stopping on convergence".
MAX_ITER = {"cvi": 1000, "scvi": 300, "svi": 300, "beam": 3000}
ASYMMETRIC_BURN_IN = {"cvi": 50, "scvi": 5}  # hyper_burn_in=None with Dir(beta tau) (docs/experiments/hdp.md)
SYMMETRY_BREAK_GAIN = 0.01  # hyper_burn_in=None with Dir(beta), cvi: objective gain over pass 1 that ends the burn-in


class HDPSchedule:
    """The HDP-HMM tagger's fixed hyperparameters, burn-in, pass cap, stopping rule and trace records."""

    def _fixed_hyper(self) -> frozenset:
        """The hyperparameters ``fix_hyper`` holds: all of :data:`HYPERPARAMETERS`, none, or the named ones."""
        if isinstance(self.fix_hyper, (bool, np.bool_)):
            return frozenset(HYPERPARAMETERS if self.fix_hyper else ())
        names = [self.fix_hyper] if isinstance(self.fix_hyper, str) else list(self.fix_hyper)
        unknown = [n for n in names if n not in HYPERPARAMETERS]
        if unknown:
            raise ConfigError(f"fix_hyper: unknown hyperparameter(s) {', '.join(map(repr, unknown))}; expected True, "
                              f"False or names from {', '.join(HYPERPARAMETERS)}")
        return frozenset(names)

    def _learns(self, name: str, it: int) -> bool:
        """Whether pass ``it`` updates hyperparameter ``name``: not fixed, and past the burn-in.

        With the adaptive burn-in (``_burn_in() is None``) the burn-in ends at the
        pass :meth:`_symmetry_broken` first holds (``self._learn_from``).
        """
        if name in self._fixed_hyper():
            return False
        burn_in = self._burn_in()
        if burn_in is None:
            return self._learn_from is not None and it >= self._learn_from
        return it > burn_in

    def _burn_in(self) -> int | None:
        """``hyper_burn_in``, with ``None`` resolved as documented there (``None``: adaptive, cvi with Dir(beta))."""
        if self.hyper_burn_in is not None:
            return int(self.hyper_burn_in)
        if self.emission_prior != "asymmetric":
            return None if self.infer == "cvi" else 0
        return min(ASYMMETRIC_BURN_IN.get(self.infer, 0), self._max_iter() // 2)

    def _past_burn_in(self, it: int) -> bool:
        """Whether pass ``it`` comes after the burn-in (:meth:`_burn_in`; adaptive: the symmetric start has broken)."""
        burn_in = self._burn_in()
        return self._learn_from is not None and it >= self._learn_from if burn_in is None else it > burn_in

    def _held_passes(self) -> int:
        """Passes during which the burn-in held the hyperparameters (all passes run if it never ended)."""
        run = int(self._loop.last)
        if self._fixed_hyper() >= frozenset(HYPERPARAMETERS):
            return run
        burn_in = self._burn_in()
        if burn_in is not None:
            return min(burn_in, run)
        return run if self._learn_from is None else self._learn_from - 1

    def _max_iter(self) -> int:
        """``n_iter``, or where it is ``None`` the algorithm's default (:data:`MAX_ITER`)."""
        return int(self.n_iter) if self.n_iter is not None else MAX_ITER[self.infer]

    def _monitor(self) -> ConvergenceMonitor:
        """The stopping rule of ``infer`` (see ``tol``): cvi's as :class:`HMMTagger`'s batch algorithms, scvi's and
        svi's on the epoch's summed minibatch log-likelihood against its best; none for the beam sampler."""
        if self.infer == "beam":
            return ConvergenceMonitor(0.0)
        if self.infer == "cvi":
            return ConvergenceMonitor(self._tol(), reference="progress")
        return ConvergenceMonitor(self._tol(), STOCHASTIC_PATIENCE, reference="best")

    def _converging(self, it: int, objective: float) -> bool:
        """Feed pass ``it``'s objective to the stopping rule (:meth:`induce.algorithms.loop.HDPLoop.converging`:
        restarted every pass until the burn-in has ended); True when it says stop (or the objective is not
        finite).  Where split-merge rounds run (:meth:`_runs_rounds`) its verdict waits for the first round of
        their schedule (:meth:`_merge_due`).  (A cvi fit stopped at its first plateau and given its rounds then,
        before the schedule's first, kept 4 merged states on 4 of 10 grammar datasets where the schedule's rounds
        find the 7; docs/experiments/hdp_defaults.md, "Stopping on convergence".)"""
        return self._loop.converging(it, objective, self._past_burn_in(it),
                                     self._runs_rounds() and not self._rounds_run)

    @property
    def _convergence(self) -> ConvergenceMonitor:
        """The stopping rule of the fit under way (its :meth:`_iterations`)."""
        return self._loop.monitor

    def _max_epochs(self) -> int:
        """scvi's / svi's epoch cap is ``n_iter``'s (:meth:`_max_iter`; :meth:`_planned_epochs` plans with it)."""
        return self._max_iter()

    def _symmetry_broken(self, it: int, objective: float) -> None:
        """Adaptive burn-in: learning starts at the first pass whose objective beats the first pass's by
        :data:`SYMMETRY_BREAK_GAIN` of its magnitude (see ``hyper_burn_in``)."""
        if it == 1:
            self._first_objective = objective
        if self._learn_from is None and objective - self._first_objective > SYMMETRY_BREAK_GAIN * abs(
                self._first_objective):
            self._learn_from = it

    def _qc_code(self) -> int:
        return QC_METHODS.index(self.qc)

    def _iterations(self, data, gold, seeds) -> HDPLoop:
        """The passes of this fit over ``data`` (:class:`induce.algorithms.loop.HDPLoop`: progress bar, trace
        records, the stopping rule of :meth:`_monitor`), kept as ``_loop`` until :meth:`_finish`."""
        self._loop = HDPLoop(self.infer, self._max_iter(), self._monitor, data, gold, seeds,
                             coverage=self.coverage, order=self.order, eval_every=self.eval_every,
                             callback=self.callback, verbose=self.verbose, label=self._progress_label,
                             trace=self.trace_)
        return self._loop

    def _hdp_record(self, bar, it, objective, name, seconds, data, usage, states, gold, **extra):
        if self.client is not None:
            bar.meter = getattr(self, "cluster_meter_", None)
        bar.record_hdp(it, objective, name, seconds, usage, states, self.gamma_, self.sigma_, **extra)

    def _hdp_settings(self) -> SimpleNamespace:
        """What a registered algorithm (:data:`induce.algorithms.HDP_ALGORITHMS`) reads of the hyperparameters."""
        return SimpleNamespace(burn_in=self._burn_in(), tau=self.tau, kappa=self.kappa, batch_size=self.batch_size,
                               planned_epochs=self._planned_epochs(), client=self.client, vocab=self.vocab_)

    def _store_fitted(self, fitted: Fitted, data) -> None:
        """Store what a registered algorithm returned: its fitted attributes, counts, labels."""
        vars(self).update(fitted.extra)
        if fitted.meter is not None:
            self.cluster_meter_ = fitted.meter
        self._local_labels = fitted.labels
        self._finish(fitted.trans, fitted.emit, data)
        self._warn_cluster_overhead()

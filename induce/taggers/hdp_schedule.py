"""The HDP-HMM's hyperparameter schedule and stopping rule, shared by its four algorithms (``cvi``, ``scvi``,
``svi``, ``beam``): which hyperparameters ``fix_hyper`` holds, the burn-in (fixed, or adaptive: until the
symmetric start has broken), the pass cap and the convergence monitor, as the fit's
:class:`induce.algorithms.loop.HDPLoop` and settings, and storing what the algorithm returns.

:class:`HDPSchedule` is a mixin of :class:`induce.taggers.HDPHMMTagger` (it reads the estimator's
hyperparameters); the algorithm (:data:`induce.algorithms.base.HDP_ALGORITHMS`) gets the loop and settings and returns
a :class:`induce.algorithms.Fitted` (:meth:`HDPSchedule._store_fitted`; docs/architecture.md).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..algorithms.base import Fitted
from ..algorithms.hdp_cvi import emission_attributes
from ..algorithms.loop import SYMMETRY_BREAK_GAIN, HDPLoop
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


class HDPSchedule:
    """The HDP-HMM tagger's fixed hyperparameters, burn-in, pass cap, stopping rule, settings and results."""

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

    def _burn_in(self) -> int | None:
        """``hyper_burn_in``, with ``None`` resolved as documented there (``None``: adaptive, cvi with Dir(beta))."""
        if self.hyper_burn_in is not None:
            return int(self.hyper_burn_in)
        if self.emission_prior != "asymmetric":
            return None if self.infer == "cvi" else 0
        return min(ASYMMETRIC_BURN_IN.get(self.infer, 0), self._max_iter() // 2)

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

    def _max_epochs(self) -> int:
        """scvi's / svi's epoch cap is ``n_iter``'s (:meth:`_max_iter`; :meth:`_planned_epochs` plans with it)."""
        return self._max_iter()

    def _iterations(self, data, gold, seeds) -> HDPLoop:
        """The passes of this fit over ``data`` (:class:`induce.algorithms.loop.HDPLoop`: progress bar, trace
        records, the burn-in of :meth:`_burn_in`, the stopping rule of :meth:`_monitor`)."""
        return HDPLoop(self.infer, self._max_iter(), self._monitor, data, gold, seeds, coverage=self.coverage,
                       burn_in=self._burn_in(), order=self.order, eval_every=self.eval_every, callback=self.callback,
                       verbose=self.verbose, label=self._progress_label, trace=self.trace_)

    def _hdp_settings(self) -> SimpleNamespace:
        """What the algorithm (:data:`induce.algorithms.base.HDP_ALGORITHMS`) reads of the hyperparameters: besides
        svi's, cvi's and scvi's passes (:class:`induce.algorithms.hdp_cvi.CVIRun`), whether split-merge
        ``rounds`` run (cvi, or scvi with its sentence ``memory``) or scvi's instant ``merges``."""
        merges = bool(self.merge_moves) and self.emission_prior == "symmetric"
        memory = bool(self.scvi_memory) if self.scvi_memory is not None else merges and self.client is None
        if self.infer == "scvi" and merges and self.client is not None and self.scvi_memory is None:
            self._warn("on a cluster scvi keeps no sentence memory: instant merges replace the memoized split-merge "
                       "moves of the single-process default (docs/experiments/hdp_defaults.md)")
        return SimpleNamespace(
            tau=self.tau, kappa=self.kappa, batch_size=self.batch_size, planned_epochs=self._planned_epochs(),
            client=self.client, vocab=self.vocab_, order=self.order, qc_code=QC_METHODS.index(self.qc),
            qc_samples=self.qc_samples,
            sampled_tables=int(self.table_samples) if self.table_estimate == "sampled" else 0,
            learn_emission=self.emission_prior == "asymmetric" and "emission" not in self._fixed_hyper(),
            merges=merges, memory=memory, rounds=merges and (self.infer == "cvi" or self.infer == "scvi" and memory))

    def _store_fitted(self, fitted: Fitted, data, loop: HDPLoop, emission) -> None:
        """Store what the algorithm returned (its fitted attributes, the prior ``emission`` it started from unless
        it returned its own, counts, labels) and the run's burn-in and warnings."""
        vars(self).update(emission_attributes(emission) | fitted.extra)
        if fitted.meter is not None:
            self.cluster_meter_ = fitted.meter
        self._finish(fitted, data)
        self.hyper_burn_in_ = loop.held_passes(self._fixed_hyper() >= frozenset(HYPERPARAMETERS))
        if loop.burn_in is None and loop.learn_from is None:
            self._warn(f"hdp-hmm {self.infer}: the symmetric start never broke (no pass's objective rose "
                       f"{SYMMETRY_BREAK_GAIN:.0%} above the first's), so the hyperparameters were held and no "
                       "split-merge round ran; try another --seed or more --iterations")
        self._check_collapse(self.labels_, self.n_states_, count_used=False, effective=self.effective_states_)
        self._warn_cluster_overhead()

    def _fit_best_start(self, corpus) -> "HDPSchedule":
        """cvi's ``n_init`` single-start fits (start 0: ``random_state``); keep the highest final objective."""
        params = {k: getattr(self, k) for k in self._PARAMS} | {
            "n_init": 1, "verbose": self.verbose, "eval_column": self.eval_column,
            "eval_every": self.eval_every, "callback": self.callback}
        best, objectives = None, []
        for start in range(int(self.n_init)):
            seed = self.random_state if start == 0 else int(
                np.random.default_rng([int(self.random_state), start]).integers(0, 2**31 - 1))
            model = type(self)(**(params | {"random_state": seed}))
            model._progress_label = f" start {start + 1}/{self.n_init}"
            model.fit(corpus)
            objectives.append(model.init_objectives_[0])
            if best is None or objectives[-1] > best.init_objectives_[0]:
                best = model
        vars(self).update({k: v for k, v in vars(best).items() if k.endswith("_")})  # the fitted attributes
        self.init_objectives_ = objectives
        return self

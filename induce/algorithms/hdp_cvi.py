"""The HDP-HMM's batch collapsed VI (``HDPHMMTagger(infer="cvi")``, thesis 5.3) and its split-merge moves.

One pass (eq. 5.37-5.39): each sentence's ``q(z^i)`` under the surrogate transitions
``(E[C^{\\i}_jk] + sigma G[pi_k]) / (E[C^{\\i}_j.] + sigma)``, then the sticks (5.25-5.26), ``gamma`` (5.17)
and ``sigma`` (5.20) from the expected table counts (5.35-5.36); after the burn-in, split-merge rounds
(:mod:`induce.infer.hdp_merge`) accepted by the collapsed bound of eq. 5.13.

:class:`HDPCVI` is a mixin of :class:`induce.taggers.HDPHMMTagger`: it reads the estimator's hyperparameters
and its burn-in and stopping rule (``_learns``, ``_converging``, ``_iterations``), and leaves the fit through
``_finish``.  (Not yet a registered :class:`induce.algorithms.base.Algorithm`; docs/architecture.md.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..corpus.corpus import Corpus
from ..infer import hdp
from ..infer import hmm_passes as passes
from ..infer.hdp_merge import move_round
from ..infer.hdp_passes import emission_log_q0, hdp_cvi_pass
from .loop import visit_order

if TYPE_CHECKING:
    from ..taggers.hdp_hmm import HDPHMMTagger

# split-merge moves (cvi, Dir(beta); see merge_moves): rounds from MERGE_EVERY (at most n_iter / 10) passes after the
# burn-in; each trial runs MERGE_TRIAL_PASSES passes from the changed and from the unchanged fit; states with fewer
# expected tokens than MERGE_MIN_USAGE are left alone; at most MERGE_MAX_TRIALS trials a round, and all rounds'
# trial passes (2 x 3 a trial, a generous count of the baselines) within n_iter / MOVE_BUDGET_SHARE = n_iter / 4
# (docs/experiments/hdp_defaults.md, "Split-merge moves").  scvi (the rounds on its sentence memory) runs fewer epochs
# (300 on the recovery data) and needs about as many trials: 2 passes a trial within n_iter / 3, which reach the
# true states there as 3 within n_iter / 2 do (hdp_defaults.md, "scvi: memoized split-merge moves")
MERGE_EVERY = 100
MERGE_TRIAL_PASSES = {"cvi": 3, "scvi": 2}
MERGE_MIN_USAGE = 1.0
MERGE_MAX_TRIALS = 20
MOVE_BUDGET_SHARE = {"cvi": 4, "scvi": 3}


@dataclass
class _CVIState:
    """Everything one batch-CVI pass reads and writes: local statistics, their totals, the HDP globals,
    each sentence's ``H(q(z^i))``, the ``q(C = 0)`` accumulators and the emission prior (copied whole
    by the merge moves)."""

    sent_trans: np.ndarray
    gamma: np.ndarray
    trans: np.ndarray
    emit: np.ndarray
    glob: hdp.HDPGlobals
    entropy: np.ndarray
    logq0: np.ndarray
    logq0_row: np.ndarray
    sampled: np.ndarray
    stats: dict
    emission: hdp.EmissionPrior


class HDPCVI:
    """``infer="cvi"`` of the HDP-HMM tagger: the passes, the best of ``n_init`` starts and the split-merge
    rounds with their schedule and trial-pass budget (state kept on the estimator during a fit)."""

    _OBJECTIVE = "predictive_log_likelihood"  # what cvi's trace records and n_init compares

    def _fit_best_start(self, corpus: Corpus) -> "HDPHMMTagger":
        """``n_init`` single-start fits (start 0: ``random_state``); keep the highest final objective."""
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

    def _set_sticks(self, u_sorted, v_sorted, order):
        self.stick_u_ = np.asarray(u_sorted, dtype=np.float64)
        self.stick_v_ = np.asarray(v_sorted, dtype=np.float64)
        self.stick_order_ = np.asarray(order, dtype=np.int64)
        self.state_prior_ = hdp.prior_by_state(hdp.geometric_pi(self.stick_u_, self.stick_v_), self.stick_order_,
                                               self.sigma_)

    def _fit_cvi(self, data, gold, seeds):
        K = self.n_states_
        sample_tables = self.table_estimate == "sampled"
        st = self._cvi_state(data)
        # random initial local posteriors q(z_t | z_{t-1}) ~ U[0, 1] (thesis 5.5.1)
        passes.init_chain_posteriors(data.tokens, data.offsets, K, int(seeds[0]), st.sent_trans, st.gamma)
        learn_emission = self.emission_prior == "asymmetric" and "emission" not in self._fixed_hyper()
        logq0_emit = np.zeros((data.W, K)) if learn_emission else None
        merges = self._runs_rounds()
        self._start_moves()
        bar = self._iterations(data, gold, seeds)
        for it in bar:
            t0 = time.perf_counter()
            ll = self._cvi_step(st, data, seeds[it], it, sample_tables, gate=True)
            stop = self._converging(it, ll)
            extra = {}
            if merges and (self._merge_due(it) or self._round_left(stop)):
                st, extra = self._move_round(st, data, seeds[it], it)
                stop = self._unless_moved(stop, extra)
            self._emission = em = st.emission
            self.gamma_, self.sigma_ = st.glob.gamma, st.glob.sigma
            # thesis 5.5.3: Dir(beta tau) from the emission table counts, once per pass
            if learn_emission and self._learns("emission", it):
                emission_log_q0(data.tokens, st.gamma, logq0_emit)
                extra |= {"emission_tables": em.update(st.emit, logq0_emit), "beta": em.concentration,
                          "new_word_mass": em.new_mass}
            self._hdp_record(bar, it, ll, self._OBJECTIVE, time.perf_counter() - t0, data, st.emit.sum(axis=0),
                             st.gamma.argmax(axis=1) if gold is not None else None, gold,
                             tables=st.stats["tables"], **extra)
            if stop:
                break
        bar.close()
        self.bound_ = self._bound(st)
        self._end_moves()
        self.qc_positive_ = st.stats["qpos"]
        self._set_sticks(st.glob.u, st.glob.v, st.glob.order)
        self._local_labels = st.gamma.argmax(axis=1)
        self._finish(st.trans, st.emit, data)

    def _cvi_state(self, data, local: tuple[np.ndarray, np.ndarray] | None = None) -> _CVIState:
        """A batch-CVI state for ``data`` (``n_states_`` states, the starting hyperparameters), with zero local
        statistics or the given ``local`` ``(sent_trans, gamma)`` (not copied)."""
        K = self.n_states_
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        S = int(self.table_samples) if self.table_estimate == "sampled" else 0
        sent_trans, gamma = (np.zeros((I, K + 1, K)), np.zeros((N, K))) if local is None else local
        return _CVIState(sent_trans=sent_trans, gamma=gamma, trans=np.zeros((K + 1, K)),
                         emit=np.zeros((data.W, K)), glob=hdp.HDPGlobals(K, self.gamma, self.sigma),
                         entropy=np.zeros(I), logq0=np.zeros((K + 1, K)), logq0_row=np.zeros(K + 1),
                         sampled=np.zeros((S, K + 1, K)), stats={"qpos": np.ones((K + 1, K))},
                         emission=self._emission)

    def _cvi_step(self, st, data, seed, it, sample_tables, gate=False):
        """One batch CVI pass on the state ``st`` (eq. 5.37-5.39), then the sticks and the learned
        ``gamma`` / ``sigma`` (5.25-5.26, 5.17, 5.20); returns the predictive log-likelihood.  ``gate``:
        the pass of the main loop, whose objective may end the adaptive burn-in (before the update)."""
        passes.totals_from_local(data.tokens, data.offsets, st.sent_trans, st.gamma, data.W, st.trans, st.emit)
        em, glob = st.emission, st.glob
        order = visit_order(data.offsets.shape[0] - 1, self.order, seed)
        ll = hdp_cvi_pass(st.trans, st.emit, st.sent_trans, st.gamma, data.tokens, data.offsets, order,
                          glob.prior(), glob.sigma, em.pseudo_counts(), em.concentration,
                          self._qc_code(), int(self.qc_samples), int(seed), st.logq0, st.logq0_row, st.sampled,
                          st.entropy)
        if gate:
            self._symmetry_broken(it, ll)
        st.stats = glob.update(st.trans, st.emit.sum(axis=0), st.logq0, st.logq0_row, self._learns("gamma", it),
                               self._learns("sigma", it), st.sampled if sample_tables else None)
        return ll

    def _bound(self, st) -> float:
        """:func:`induce.infer.hdp.collapsed_bound` of the state ``st`` (eq. 5.13, zeroth order)."""
        em = st.emission
        return hdp.collapsed_bound(st.trans, st.emit, st.glob, em.pseudo_counts(), em.concentration,
                                   st.entropy.sum())

    def _runs_rounds(self) -> bool:
        """Whether this fit runs split-merge rounds (:meth:`_move_round`): cvi, or scvi with its sentence memory,
        with :meth:`_merges`."""
        return self._merges() and (self.infer == "cvi" or self.infer == "scvi" and self._scvi_keeps_memory())

    def _merges(self) -> bool:
        """Whether this fit tries merge moves (``merge_moves`` with the symmetric emission prior; scvi runs them on
        its sentence memory, or instant merges without one)."""
        return bool(self.merge_moves) and self.emission_prior == "symmetric"

    def _start_moves(self) -> None:
        """Reset the split-merge schedule (:meth:`_merge_due`) and the trial-pass budget: ``n_iter / 4`` passes
        for all rounds (``scvi``: ``n_iter / 3``, :data:`MOVE_BUDGET_SHARE`; a trial and its baseline count
        ``2 x`` :data:`MERGE_TRIAL_PASSES`)."""
        self._next_move = self._move_gap = None
        self._rounds_run = 0
        self._move_budget = self._max_iter() // MOVE_BUDGET_SHARE[self.infer]

    def _end_moves(self) -> None:
        """Drop the split-merge schedule and budget of :meth:`_start_moves` (not fitted attributes)."""
        del self._next_move, self._move_gap, self._move_budget, self._rounds_run

    def _move_round(self, st: _CVIState, data, seed, it: int, joint: bool = False) -> tuple[_CVIState, dict]:
        """One split-merge round (:func:`induce.infer.hdp_merge.move_round`) from the batch-CVI state ``st``, its
        trials run by :meth:`_cvi_step` and accepted by :meth:`_bound`, within the budget of :meth:`_start_moves`;
        schedules the next round (:meth:`_moved`).  Returns the state to go on from (``st`` itself, unchanged,
        if nothing was accepted) and the trace entries (accepted ``merges`` and ``splits``, ``move_trials``)."""
        passes = MERGE_TRIAL_PASSES[self.infer]
        trials = min(MERGE_MAX_TRIALS, self._move_budget // (2 * passes))
        sample_tables = self.table_estimate == "sampled"
        st, records = move_round(st, lambda s: self._cvi_step(s, data, seed, it, sample_tables), self._bound,
                                 passes, MERGE_MIN_USAGE, trials, data, int(seed), joint)
        self._move_budget -= 2 * passes * len(records)
        self._rounds_run += 1
        extra = {"merges": [r["merge"] for r in records if r["accepted"] and "merge" in r],
                 "splits": [r["split"] for r in records if r["accepted"] and "split" in r],
                 "move_trials": len(records)}
        self._moved(it, bool(extra["merges"] or extra["splits"]))
        return st, extra

    def _merge_due(self, it: int) -> bool:
        """Whether pass ``it`` ends with a split-merge round: the first ``every = min(MERGE_EVERY, n_iter // 10)``
        passes after the burn-in (the hyperparameters learn), then ``every`` passes after a round that changed
        the fit and twice the last gap after one that did not; never in the last ``every`` passes."""
        every = max(1, min(MERGE_EVERY, self._max_iter() // 10))
        if self._next_move is None:
            start = self._learn_from if self._burn_in() is None else self._burn_in() + 1
            if start is None:
                return False
            self._next_move, self._move_gap = start + every - 1, every
        return it == self._next_move and it <= self._max_iter() - every

    def _moved(self, it: int, changed: bool) -> None:
        """Schedule the next split-merge round after the one at pass ``it`` (see :meth:`_merge_due`)."""
        every = max(1, min(MERGE_EVERY, self._max_iter() // 10))
        self._move_gap = every if changed else 2 * self._move_gap
        self._next_move = it + self._move_gap

    def _unless_moved(self, stop: bool, moves: dict) -> bool:
        """After a split-merge round: a fit the round changed has not converged (its calm passes count again,
        against the same reference: progress since the burn-in, or the best epoch)."""
        if moves.get("merges") or moves.get("splits"):
            self._convergence.restart_streak()
            return False
        return stop

    def _round_left(self, stop: bool) -> bool:
        """Whether a converged fit (``stop``) first gets a split-merge round: its objective is finite and the
        budget of :meth:`_start_moves` still holds a trial."""
        return (stop and not self._convergence.diverged
                and self._move_budget >= 2 * MERGE_TRIAL_PASSES[self.infer])

"""The HDP-HMM's batch collapsed VI (``HDPHMMTagger(infer="cvi")``, thesis 5.3).

One pass (eq. 5.37-5.39): each sentence's ``q(z^i)`` under the surrogate transitions
``(E[C^{\\i}_jk] + sigma G[pi_k]) / (E[C^{\\i}_j.] + sigma)``, then the sticks (5.25-5.26), ``gamma`` (5.17)
and ``sigma`` (5.20) from the expected table counts (5.35-5.36); after the burn-in, split-merge rounds
(:mod:`induce.algorithms.hdp_moves`) accepted by the collapsed bound of eq. 5.13.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..infer import hdp
from ..infer import hmm_passes as passes
from ..infer.hdp_passes import emission_log_q0, hdp_cvi_pass
from .base import Algorithm, Fitted, HDPCore, Sequences, register_hdp
from .hdp_moves import MoveSchedule
from .loop import visit_order

OBJECTIVE = "predictive_log_likelihood"  # what cvi's trace records and n_init compares

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


def sticks(u, v, order, sigma: float) -> dict:
    """The fitted stick attributes: ``stick_u_``, ``stick_v_`` (by stick position), ``stick_order_`` (position ->
    state) and ``state_prior_`` (``sigma G[pi_k]`` by state)."""
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    order = np.asarray(order, dtype=np.int64)
    return {"stick_u_": u, "stick_v_": v, "stick_order_": order,
            "state_prior_": hdp.prior_by_state(hdp.geometric_pi(u, v), order, sigma)}


def emission_attributes(em: hdp.EmissionPrior) -> dict:
    """The fitted attributes of the emission prior ``em`` (``Dir(beta tau)``, or ``Dir(beta)``: ``W beta``, uniform)."""
    return {"emission_concentration_": em.concentration, "emission_base_": em.tau, "emission_new_mass_": em.new_mass}


class CVIRun:
    """One fit's batch-CVI passes (:meth:`step`) and bound (:meth:`bound`) over ``data`` under ``loop``
    (:class:`induce.algorithms.loop.HDPLoop`): the core (truncation, starting hyperparameters, emission prior) and
    ``opts``: ``order``, ``qc_code``, ``qc_samples``, ``sampled_tables`` (0: first-order table counts, else the
    draws a pass), ``learn_emission`` and ``rounds`` (split-merge rounds run)."""

    def __init__(self, name: str, core: HDPCore, data: Sequences, loop, opts):
        self.core, self.data, self.loop, self.opts = core, data, loop, opts
        self.moves = MoveSchedule(name, loop) if opts.rounds else None

    def state(self, local: tuple[np.ndarray, np.ndarray] | None = None) -> _CVIState:
        """A batch-CVI state (the core's states and starting hyperparameters), with zero local statistics or the
        given ``local`` ``(sent_trans, gamma)`` (not copied)."""
        K, data = self.core.K, self.data
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        S = self.opts.sampled_tables
        sent_trans, gamma = (np.zeros((I, K + 1, K)), np.zeros((N, K))) if local is None else local
        return _CVIState(sent_trans=sent_trans, gamma=gamma, trans=np.zeros((K + 1, K)),
                         emit=np.zeros((data.W, K)), glob=hdp.HDPGlobals(K, self.core.gamma, self.core.sigma),
                         entropy=np.zeros(I), logq0=np.zeros((K + 1, K)), logq0_row=np.zeros(K + 1),
                         sampled=np.zeros((S, K + 1, K)), stats={"qpos": np.ones((K + 1, K))},
                         emission=self.core.emission)

    def step(self, st: _CVIState, seed, it: int, gate: bool = False) -> float:
        """One batch CVI pass on the state ``st`` (eq. 5.37-5.39), then the sticks and the learned
        ``gamma`` / ``sigma`` (5.25-5.26, 5.17, 5.20); returns the predictive log-likelihood.  ``gate``:
        the pass of the main loop, whose objective may end the adaptive burn-in (before the update)."""
        data, opts, loop, fixed = self.data, self.opts, self.loop, self.core.fixed
        passes.totals_from_local(data.tokens, data.offsets, st.sent_trans, st.gamma, data.W, st.trans, st.emit)
        em, glob = st.emission, st.glob
        order = visit_order(data.offsets.shape[0] - 1, opts.order, seed)
        ll = hdp_cvi_pass(st.trans, st.emit, st.sent_trans, st.gamma, data.tokens, data.offsets, order,
                          glob.prior(), glob.sigma, em.pseudo_counts(), em.concentration,
                          opts.qc_code, int(opts.qc_samples), int(seed), st.logq0, st.logq0_row, st.sampled,
                          st.entropy)
        if gate:
            loop.symmetry_broken(it, ll)
        st.stats = glob.update(st.trans, st.emit.sum(axis=0), st.logq0, st.logq0_row, loop.learns("gamma", it, fixed),
                               loop.learns("sigma", it, fixed), st.sampled if opts.sampled_tables else None)
        return ll

    @staticmethod
    def bound(st: _CVIState) -> float:
        """:func:`induce.infer.hdp.collapsed_bound` of the state ``st`` (eq. 5.13, zeroth order)."""
        em = st.emission
        return hdp.collapsed_bound(st.trans, st.emit, st.glob, em.pseudo_counts(), em.concentration,
                                   st.entropy.sum())

    def move_round(self, st: _CVIState, seed, it: int, joint: bool = False) -> tuple[_CVIState, dict]:
        """A split-merge round (:meth:`induce.algorithms.hdp_moves.MoveSchedule.run`) from ``st``, its trials run
        by :meth:`step` and accepted by :meth:`bound`."""
        return self.moves.run(st, lambda s: self.step(s, seed, it), self.bound, self.data, seed, it, joint)

    def waits(self) -> bool:
        """Whether the stopping rule's verdict waits for the first split-merge round of the schedule.  (A cvi fit
        stopped at its first plateau and given its rounds then, before the schedule's first, kept 4 merged states
        on 4 of 10 grammar datasets where the schedule's rounds find the 7; docs/experiments/hdp_defaults.md,
        "Stopping on convergence".)"""
        return self.moves is not None and not self.moves.rounds_run


@register_hdp("cvi")
class HDPCVI(Algorithm):
    """Batch collapsed VI with split-merge rounds; ``opts`` as :class:`CVIRun`'s."""

    def fit(self, core: HDPCore, data: Sequences, loop, opts) -> Fitted:
        K, run = core.K, CVIRun("cvi", core, data, loop, opts)
        st = run.state()
        # random initial local posteriors q(z_t | z_{t-1}) ~ U[0, 1] (thesis 5.5.1)
        passes.init_chain_posteriors(data.tokens, data.offsets, K, int(loop.seeds[0]), st.sent_trans, st.gamma)
        logq0_emit = np.zeros((data.W, K)) if opts.learn_emission else None

        def settle(it: int, stop: bool) -> dict:
            """The pass's split-merge round (when due) and the emission prior's update, after the verdict."""
            nonlocal st
            extra = {}
            if run.moves is not None and run.moves.due(it, stop):
                st, extra = run.move_round(st, loop.seeds[it], it)
            em = st.emission
            # thesis 5.5.3: Dir(beta tau) from the emission table counts, once per pass
            if opts.learn_emission and loop.learns("emission", it, core.fixed):
                emission_log_q0(data.tokens, st.gamma, logq0_emit)
                extra |= {"emission_tables": em.update(st.emit, logq0_emit), "beta": em.concentration,
                          "new_word_mass": em.new_mass}
            return loop.entries(st.emit.sum(axis=0), st.glob.gamma, st.glob.sigma, tables=st.stats["tables"], **extra)

        loop.waits = run.waits
        loop.run(OBJECTIVE, lambda it: run.step(st, loop.seeds[it], it, gate=True),
                 labels=lambda: st.gamma.argmax(axis=1), settle=settle)
        glob = st.glob
        extra = {"bound_": run.bound(st), "qc_positive_": st.stats["qpos"], "gamma_": glob.gamma, "sigma_": glob.sigma}
        extra |= sticks(glob.u, glob.v, glob.order, glob.sigma) | emission_attributes(st.emission)
        return Fitted(st.trans, st.emit, st.gamma.argmax(axis=1), loop.last, loop.max_iter, loop.monitor, loop.trace,
                      None, extra)

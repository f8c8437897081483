"""The HDP-HMM's stochastic collapsed VI (``HDPHMMTagger(infer="scvi")``; thesis 5.3 "Stochastic CVI"; Wang &
Blunsom, paper 004).

Global counts blended per minibatch (eq. 3.103-3.104); ``gamma``, ``sigma`` and the sticks by gradient steps
(eq. 5.40 with 5.16, 5.19, 5.23-5.24); each minibatch's ``q(C^m = 0)`` kept and replaced when it comes round
again; cvi's split-merge moves on the memoized sentence statistics, or instant merges of the global counts.

:class:`HDPSCVI` is a mixin of :class:`induce.taggers.HDPHMMTagger` on top of :class:`HDPCVI` (whose moves it
runs on its memory).  (Not yet a registered :class:`induce.algorithms.base.Algorithm`; docs/architecture.md.)
"""

from __future__ import annotations

import time

import numpy as np

from ..infer import hdp
from ..infer import hmm_passes as passes
from ..infer.hdp_merge import instant_merges, merge_locals
from ..infer.hdp_passes import hdp_cvi_pass, hdp_minibatch_pass
from ..infer.schedules import blend, exponential_init, minibatches, step_size
from .base import worker_corpus
from .hdp_cvi import MERGE_EVERY, MERGE_MAX_TRIALS, MERGE_MIN_USAGE, HDPCVI


_NO_EMIT_Q0 = np.zeros((0, 0))  # hdp_minibatch_pass without the emission log q(C = 0)

class HDPSCVI(HDPCVI):
    """``infer="scvi"`` of the HDP-HMM tagger: minibatch steps, the sentence memory, memoized split-merge rounds
    or instant merges, the cluster's local steps."""

    def _fit_scvi(self, data, gold, seeds):
        """Stochastic CVI: counts as SCVI for HMMs, HDP hyperparameters and sticks by eq. 5.40."""
        K, W = self.n_states_, data.W
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        rng = np.random.default_rng(int(seeds[0]))
        # global counts from exponential distributions (thesis eq. 3.106-3.107)
        N_trans = exponential_init(rng, (K + 1, K), N / K**2)
        N_emit = exponential_init(rng, (W, K), N / (K * W))
        # the minibatches are fixed so that each one's q(C^m = 0) can be replaced (thesis 5.3)
        batches = [b.astype(np.int64) for b in minibatches(
            I, self._resolve_batch_size(100, I, epochs=self._planned_epochs()), rng, 1)]
        logq0_b = np.zeros((len(batches), K + 1, K))
        logq0_row_b = np.zeros((len(batches), K + 1))
        memory = self._scvi_memory(I, N, K)
        memoized = self._runs_rounds()  # split-merge rounds on the memory, else instant merges
        self._start_moves()
        u, v = np.ones(K), np.full(K, self.gamma_)  # by state; prior Beta(1, gamma)
        G_state = np.full(K, 1.0 / K)
        trans_b = np.zeros((K + 1, K))
        emit_b = np.zeros((W, K))
        qcode = self._qc_code()
        em = self._emission
        learn_emission = self.emission_prior == "asymmetric" and "emission" not in self._fixed_hyper()
        if learn_emission:
            # global estimate of log q(C_wk = 0) = sum_t log(1 - q(z_t = k)), blended like the counts; it starts
            # at -N_emit (log(1 - p) ~ -p for the many small token probabilities behind the initial counts)
            logq0_emit, logq0_emit_b = -N_emit, np.zeros((W, K))
        cluster = self._minibatch_cluster(data)
        m = 0
        bar = self._iterations(data, gold, seeds)
        for it in bar:
            t0 = time.perf_counter()
            ll = 0.0
            learn_gamma, learn_sigma = self._learns("gamma", it), self._learns("sigma", it)
            extra = {}
            for b in rng.permutation(len(batches)):
                items = batches[b]
                prior = self.sigma_ * G_state
                args = (N_trans, N_emit, data.tokens, data.offsets, items, prior, self.sigma_, em.pseudo_counts(),
                        em.concentration, qcode, int(self.qc_samples), int(rng.integers(2**31 - 1)),
                        trans_b, emit_b, logq0_b[b], logq0_row_b[b], *memory)
                if cluster is not None:
                    ll += cluster(learn_emission, *args, *((logq0_emit_b,) if learn_emission else ()))
                else:
                    ll += hdp_minibatch_pass(*args, logq0_emit_b if learn_emission else _NO_EMIT_Q0)
                rho = step_size(m, self.tau, self.kappa)
                scale = I / len(items)
                blend(N_trans, trans_b, rho, scale)  # thesis eq. 3.103
                blend(N_emit, emit_b, rho, scale)    # thesis eq. 3.104
                G_state = self._scvi_global_step(N_trans, N_emit, logq0_b, logq0_row_b, prior, u, v, rho,
                                                 learn_gamma, learn_sigma)
                if learn_emission:
                    blend(logq0_emit, logq0_emit_b, rho, scale)
                    if self._learns("emission", it):  # thesis 5.5.3 with the steps of 5.40
                        extra = {"emission_tables": em.stochastic_step(N_emit, logq0_emit, rho),
                                 "beta": em.concentration, "new_word_mass": em.new_mass}
                m += 1
            stop = self._converging(it, ll)
            if memoized and (self._merge_due(it) or self._round_left(stop)):
                G_state, moves = self._scvi_move_round(data, seeds[it], it, memory, N_trans, N_emit, u, v, batches,
                                                       logq0_b, logq0_row_b, G_state)
                extra |= moves
                stop = self._unless_moved(stop, moves)
            elif not memoized and (self._scvi_merges(it) or self._merges() and stop
                                   and not self._convergence.diverged):
                extra["merges"] = self._instant_merges(N_trans, N_emit, G_state, logq0_b, logq0_row_b, memory)
                stop = self._unless_moved(stop, extra)
            self._hdp_record(bar, it, ll, "minibatch_log_likelihood", time.perf_counter() - t0, data,
                             N_emit.sum(axis=0), None, None, step=rho, **extra)
            if stop:
                break
        bar.close()
        self._end_moves()
        order = hdp.usage_order(N_emit.sum(axis=0))
        self.qc_positive_ = hdp.q_positive(logq0_b.sum(axis=0))
        self._set_sticks(u[order], v[order], order)
        self._local_labels = None
        self._finish(N_trans, N_emit, data)
        self._warn_cluster_overhead()

    def _scvi_memory(self, I: int, N: int, K: int) -> tuple[np.ndarray, np.ndarray]:
        """Each sentence's expected counts of its last visit, left out of the counts its surrogate uses (empty
        arrays unless :meth:`_scvi_keeps_memory`)."""
        if self._merges() and self.client is not None and self.scvi_memory is None:
            self._warn("on a cluster scvi keeps no sentence memory: instant merges replace the memoized split-merge "
                       "moves of the single-process default (docs/experiments/hdp_defaults.md)")
        if self._scvi_keeps_memory():
            return np.zeros((I, K + 1, K)), np.zeros((N, K))
        return np.zeros((0, K + 1, K)), np.zeros((0, K))

    def _minibatch_cluster(self, data):
        """scvi's minibatch local steps on the workers of ``client`` (:mod:`induce.distributed.hdp`), or ``None``."""
        if self.client is None:
            return None
        from ..distributed import ClusterHDPMinibatch

        cluster = ClusterHDPMinibatch(worker_corpus(self.client, data, self.vocab_))
        self.cluster_meter_ = cluster.meter
        return cluster

    def _scvi_global_step(self, N_trans, N_emit, logq0_b, logq0_row_b, prior, u, v, rho, learn_gamma, learn_sigma):
        """scvi's global step after a minibatch at step size ``rho``: the learned ``gamma_`` / ``sigma_`` and the
        sticks ``u``, ``v`` (by state, in place) from the expected tables; returns the state prior ``G``."""
        # q(C > 0) = 1 - prod_m q(C^m = 0) (thesis 5.3, eq. 5.46 over minibatches)
        qpos = hdp.q_positive(logq0_b.sum(axis=0))
        qpos_row = hdp.q_positive(logq0_row_b.sum(axis=0))
        tables = hdp.expected_tables(N_trans, qpos, prior)
        order = hdp.usage_order(N_emit.sum(axis=0))
        col = tables.sum(axis=0)[order]
        # eq. 5.40 with the gradients 5.16, 5.19, 5.23-5.24, preconditioned (see induce.infer.hdp)
        if learn_gamma:
            self.gamma_ = hdp.scaled_gamma_step(u, v, self.gamma_, rho)
        if learn_sigma:
            self.sigma_ = hdp.scaled_sigma_step(tables.sum(), N_trans.sum(axis=1), qpos_row, self.sigma_, rho)
        u[order], v[order] = hdp.natural_stick_step(u[order], v[order], col, self.gamma_, rho)
        return hdp.prior_by_state(hdp.geometric_pi(u[order], v[order]), order, 1.0)

    def _instant_merges(self, N_trans, N_emit, G_state, logq0_b, logq0_row_b, memory) -> list:
        """scvi without the memoized rounds: :func:`induce.infer.hdp_merge.instant_merges` on the global counts
        (in place); the minibatches' log q(C = 0) and the sentence memory follow.  Returns the merged pairs."""
        em, K = self._emission, N_emit.shape[1]
        merged = instant_merges(N_trans, N_emit, G_state.copy(), self.sigma_, em.pseudo_counts(), em.concentration,
                                MERGE_MIN_USAGE, MERGE_MAX_TRIALS)
        for k, l in merged:  # the minibatches' log q(C = 0) (summed: independent) and the memory follow
            merge_locals(logq0_b, np.zeros((0, K)), k, l)
            logq0_row_b[:, k + 1] += logq0_row_b[:, l + 1]
            logq0_row_b[:, l + 1] = 0.0
            if memory[0].shape[0]:
                merge_locals(memory[0], memory[1], k, l)
        return [list(p) for p in merged]

    def _scvi_keeps_memory(self) -> bool:
        """``scvi_memory`` with ``None`` resolved: on when the memoized split-merge rounds run (``merge_moves``,
        ``Dir(beta)``, in this process), which need the sentences' local statistics."""
        if self.scvi_memory is not None:
            return bool(self.scvi_memory)
        return self._merges() and self.client is None

    def _scvi_move_round(self, data, seed, it, memory, N_trans, N_emit, u, v, batches, logq0_b, logq0_row_b,
                         G_state) -> tuple[np.ndarray, dict]:
        """Memoized split-merge round of ``scvi`` (memoized online VI with merge and birth moves, Hughes & Sudderth
        2013; docs/experiments/hdp_defaults.md, "scvi: memoized split-merge moves").

        The sentence memory (each sentence's expected counts of its last visit) is a batch-CVI state whose
        totals are exact, with ``gamma``, ``sigma`` and the sticks of the stochastic fit; :meth:`_move_round`
        runs cvi's moves on it (trial passes, the collapsed bound of eq. 5.13).  If a move is kept, the global
        counts become the totals of the new memory (``N = sum_i c^i``, as memoized VI keeps them), the
        hyperparameters and sticks those of the trial passes, and one cvi sweep over the minibatches, one at a
        time, gives each minibatch's ``q(C^m = 0)`` for the new states.  ``N_trans``, ``N_emit``, ``u``, ``v``
        (by state), the memory and the minibatches' ``log q(C^m = 0)`` are changed in place; returns
        ``G[pi]`` by state and the trace entries.
        """
        st = self._cvi_state(data, memory)
        passes.totals_from_local(data.tokens, data.offsets, st.sent_trans, st.gamma, data.W, st.trans, st.emit)
        glob = st.glob
        glob.gamma, glob.sigma = self.gamma_, self.sigma_
        glob.order = hdp.usage_order(N_emit.sum(axis=0))
        glob.u, glob.v = u[glob.order], v[glob.order]
        glob.G_sorted = hdp.geometric_pi(glob.u, glob.v)
        new, extra = self._move_round(st, data, seed, it, joint=True)
        if new is st:
            return G_state, extra
        memory[0][:], memory[1][:] = new.sent_trans, new.gamma
        N_trans[:], N_emit[:] = new.trans, new.emit
        glob = new.glob
        self.gamma_, self.sigma_ = glob.gamma, glob.sigma
        u[glob.order], v[glob.order] = glob.u, glob.v
        em = new.emission
        for b, items in enumerate(batches):
            hdp_cvi_pass(N_trans, N_emit, memory[0], memory[1], data.tokens, data.offsets, items, glob.prior(),
                         glob.sigma, em.pseudo_counts(), em.concentration, self._qc_code(), int(self.qc_samples),
                         int(seed) + b, logq0_b[b], logq0_row_b[b], new.sampled, new.entropy)
        return hdp.prior_by_state(glob.G_sorted, glob.order, 1.0), extra

    def _scvi_merges(self, it: int) -> bool:
        """``scvi`` with ``merge_moves``: instant merges (:func:`induce.infer.hdp_merge.instant_merges`) after
        every ``min(10, n_iter // 10)`` epochs of the second half of the cap but the last (earlier, states that
        differ only in their context, as the Beal grammar's, can still look alike and be merged), and once the
        stopping rule holds (:meth:`_fit_scvi`)."""
        cap = self._max_iter()
        every = max(1, min(MERGE_EVERY // 10, cap // 10))
        return self._merges() and it % every == 0 and cap <= 2 * it < 2 * cap

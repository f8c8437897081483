"""The HDP-HMM's stochastic collapsed VI (``HDPHMMTagger(infer="scvi")``; thesis 5.3 "Stochastic CVI"; Wang &
Blunsom, paper 004).

Global counts blended per minibatch (eq. 3.103-3.104); ``gamma``, ``sigma`` and the sticks by gradient steps
(eq. 5.40 with 5.16, 5.19, 5.23-5.24); each minibatch's ``q(C^m = 0)`` kept and replaced when it comes round
again; cvi's split-merge moves on the memoized sentence statistics, or instant merges of the global counts.
"""

from __future__ import annotations

import numpy as np

from ..base import resolve_batch_size
from ..infer import hdp
from ..infer import hmm_passes as passes
from ..infer.hdp_passes import hdp_cvi_pass, hdp_minibatch_pass
from ..infer.schedules import blend, exponential_init, minibatches
from .base import Algorithm, Fitted, HDPCore, Sequences, register_hdp, worker_corpus
from .hdp_cvi import CVIRun, emission_attributes, sticks
from .minibatch import Updater, step
from .hdp_moves import MERGE_EVERY, MERGE_MAX_TRIALS, MERGE_MIN_USAGE, instant_merges, merge_locals

_NO_EMIT_Q0 = np.zeros((0, 0))  # hdp_minibatch_pass without the emission log q(C = 0)


class _SCVIRun(CVIRun):
    """One scvi fit: the learned ``gamma`` / ``sigma`` so far, the global step, the memoized rounds (cvi's moves on
    the sentence memory, :class:`CVIRun`) or instant merges.  ``opts`` as :class:`CVIRun`'s and :class:`HDPSCVI`'s."""

    def __init__(self, core: HDPCore, data: Sequences, loop, opts):
        super().__init__("scvi", core, data, loop, opts)
        self.gamma, self.sigma = core.gamma, core.sigma

    def memory(self) -> tuple[np.ndarray, np.ndarray]:
        """Each sentence's expected counts of its last visit, left out of the counts its surrogate uses (empty
        arrays unless ``opts.memory``)."""
        K, data = self.core.K, self.data
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        if self.opts.memory:
            return np.zeros((I, K + 1, K)), np.zeros((N, K))
        return np.zeros((0, K + 1, K)), np.zeros((0, K))

    def global_step(self, N_trans, N_emit, logq0_b, logq0_row_b, prior, u, v, rho, learn_gamma, learn_sigma):
        """scvi's global step after a minibatch at step size ``rho``: the learned ``gamma`` / ``sigma`` and the
        sticks ``u``, ``v`` (by state, in place) from the expected tables; returns the state prior ``G``."""
        # q(C > 0) = 1 - prod_m q(C^m = 0) (thesis 5.3, eq. 5.46 over minibatches)
        qpos = hdp.q_positive(logq0_b.sum(axis=0))
        qpos_row = hdp.q_positive(logq0_row_b.sum(axis=0))
        tables = hdp.expected_tables(N_trans, qpos, prior)
        order = hdp.usage_order(N_emit.sum(axis=0))
        col = tables.sum(axis=0)[order]
        # eq. 5.40 with the gradients 5.16, 5.19, 5.23-5.24, preconditioned (see induce.infer.hdp)
        if learn_gamma:
            self.gamma = hdp.scaled_gamma_step(u, v, self.gamma, rho)
        if learn_sigma:
            self.sigma = hdp.scaled_sigma_step(tables.sum(), N_trans.sum(axis=1), qpos_row, self.sigma, rho)
        u[order], v[order] = hdp.natural_stick_step(u[order], v[order], col, self.gamma, rho)
        return hdp.prior_by_state(hdp.geometric_pi(u[order], v[order]), order, 1.0)

    def instant_merges(self, N_trans, N_emit, G_state, logq0_b, logq0_row_b, memory) -> list:
        """scvi without the memoized rounds: :func:`induce.algorithms.hdp_moves.instant_merges` on the global counts
        (in place); the minibatches' log q(C = 0) and the sentence memory follow.  Returns the merged pairs."""
        em, K = self.core.emission, N_emit.shape[1]
        merged = instant_merges(N_trans, N_emit, G_state.copy(), self.sigma, em.pseudo_counts(), em.concentration,
                                MERGE_MIN_USAGE, MERGE_MAX_TRIALS)
        for k, l in merged:  # the minibatches' log q(C = 0) (summed: independent) and the memory follow
            merge_locals(logq0_b, np.zeros((0, K)), k, l)
            logq0_row_b[:, k + 1] += logq0_row_b[:, l + 1]
            logq0_row_b[:, l + 1] = 0.0
            if memory[0].shape[0]:
                merge_locals(memory[0], memory[1], k, l)
        return [list(p) for p in merged]

    def instant_due(self, it: int, stop: bool) -> bool:
        """Instant merges (``merge_moves`` without the memory) after every ``min(10, n_iter // 10)`` epochs of the
        second half of the cap but the last (earlier, states that differ only in their context, as the Beal
        grammar's, can still look alike and be merged), and once the stopping rule holds."""
        cap = self.loop.max_iter
        every = max(1, min(MERGE_EVERY // 10, cap // 10))
        due = it % every == 0 and cap <= 2 * it < 2 * cap
        return self.opts.merges and (due or stop and not self.loop.monitor.diverged)

    def memo_round(self, seed, it, memory, N_trans, N_emit, u, v, batches, logq0_b, logq0_row_b,
                   G_state) -> tuple[np.ndarray, dict]:
        """Memoized split-merge round of ``scvi`` (memoized online VI with merge and birth moves, Hughes & Sudderth
        2013; docs/experiments/hdp_defaults.md, "scvi: memoized split-merge moves").

        The sentence memory (each sentence's expected counts of its last visit) is a batch-CVI state whose
        totals are exact, with ``gamma``, ``sigma`` and the sticks of the stochastic fit; :meth:`move_round`
        runs cvi's moves on it (trial passes, the collapsed bound of eq. 5.13).  If a move is kept, the global
        counts become the totals of the new memory (``N = sum_i c^i``, as memoized VI keeps them), the
        hyperparameters and sticks those of the trial passes, and one cvi sweep over the minibatches, one at a
        time, gives each minibatch's ``q(C^m = 0)`` for the new states.  ``N_trans``, ``N_emit``, ``u``, ``v``
        (by state), the memory and the minibatches' ``log q(C^m = 0)`` are changed in place; returns
        ``G[pi]`` by state and the trace entries.
        """
        data, opts = self.data, self.opts
        st = self.state(memory)
        passes.totals_from_local(data.tokens, data.offsets, st.sent_trans, st.gamma, data.W, st.trans, st.emit)
        glob = st.glob
        glob.gamma, glob.sigma = self.gamma, self.sigma
        glob.order = hdp.usage_order(N_emit.sum(axis=0))
        glob.u, glob.v = u[glob.order], v[glob.order]
        glob.G_sorted = hdp.geometric_pi(glob.u, glob.v)
        new, extra = self.move_round(st, seed, it, joint=True)
        if new is st:
            return G_state, extra
        memory[0][:], memory[1][:] = new.sent_trans, new.gamma
        N_trans[:], N_emit[:] = new.trans, new.emit
        glob = new.glob
        self.gamma, self.sigma = glob.gamma, glob.sigma
        u[glob.order], v[glob.order] = glob.u, glob.v
        em = new.emission
        for b, items in enumerate(batches):
            hdp_cvi_pass(N_trans, N_emit, memory[0], memory[1], data.tokens, data.offsets, items, glob.prior(),
                         glob.sigma, em.pseudo_counts(), em.concentration, opts.qc_code, int(opts.qc_samples),
                         int(seed) + b, logq0_b[b], logq0_row_b[b], new.sampled, new.entropy)
        return hdp.prior_by_state(glob.G_sorted, glob.order, 1.0), extra


class _Updater(Updater):
    """One scvi minibatch (thesis 5.3 with eq. 3.103-3.104 and 5.40; :mod:`induce.algorithms.minibatch`): the local
    step of minibatch ``b`` under the surrogate of the global counts with the state prior ``sigma G``, eq. 3.103-3.104
    on the counts, then the global step of the sticks, ``gamma`` and ``sigma`` (``learn``: which of gamma, sigma and
    the emission prior this pass learns) and, with a learned emission prior, of its ``log q(C = 0)`` (``extra``: the
    trace entries of the emission step)."""

    def __init__(self, run, data: Sequences, opts, batches: list, N_emit: np.ndarray, rng, cluster):
        K, W, n_batches = run.core.K, data.W, len(batches)
        self.run, self.data, self.opts, self.batches, self.rng, self.cluster = run, data, opts, batches, rng, cluster
        self.I = data.offsets.shape[0] - 1
        self.logq0_b, self.logq0_row_b = np.zeros((n_batches, K + 1, K)), np.zeros((n_batches, K + 1))
        self.memory = run.memory()
        self.u, self.v = np.ones(K), np.full(K, run.gamma)  # by state; prior Beta(1, gamma)
        self.G_state = np.full(K, 1.0 / K)
        self.trans_b, self.emit_b = np.zeros((K + 1, K)), np.zeros((W, K))
        if opts.learn_emission:
            # global estimate of log q(C_wk = 0) = sum_t log(1 - q(z_t = k)), blended like the counts; it starts
            # at -N_emit (log(1 - p) ~ -p for the many small token probabilities behind the initial counts)
            self.logq0_emit, self.logq0_emit_b = -N_emit, np.zeros((W, K))
        self.learn, self.extra = (False, False, False), {}

    def local(self, counts, b):
        run, data, opts, items, em = self.run, self.data, self.opts, self.batches[b], self.run.core.emission
        self.prior = run.sigma * self.G_state
        params = (self.prior, run.sigma, em.pseudo_counts(), em.concentration, opts.qc_code, int(opts.qc_samples),
                  int(self.rng.integers(2**31 - 1)))
        outs = (self.trans_b, self.emit_b, self.logq0_b[b], self.logq0_row_b[b])
        if self.cluster is not None:
            ll = self.cluster(b, *counts, *params, *outs, self.logq0_emit_b if opts.learn_emission else None)
        else:
            ll = hdp_minibatch_pass(*counts, data.tokens, data.offsets, items, *params, *outs, *self.memory,
                                    self.logq0_emit_b if opts.learn_emission else _NO_EMIT_Q0)
        return ll, (self.trans_b, self.emit_b), self.I / len(items), len(items)

    def blend(self, counts, rho: float, stats, scale: float) -> None:
        super().blend(counts, rho, stats, scale)  # thesis eq. 3.103-3.104
        N_trans, N_emit = counts
        self.G_state = self.run.global_step(N_trans, N_emit, self.logq0_b, self.logq0_row_b, self.prior, self.u,
                                            self.v, rho, self.learn[0], self.learn[1])
        if self.opts.learn_emission:
            blend(self.logq0_emit, self.logq0_emit_b, rho, scale)
            if self.learn[2]:  # thesis 5.5.3 with the steps of 5.40
                em = self.run.core.emission
                self.extra = {"emission_tables": em.stochastic_step(N_emit, self.logq0_emit, rho),
                              "beta": em.concentration, "new_word_mass": em.new_mass}


def _cluster(data: Sequences, opts, batches: list):
    """scvi's local steps on the fixed minibatches ``batches`` on the workers of ``opts.client``
    (:mod:`induce.distributed.hdp`), or ``None``."""
    if opts.client is None:
        return None
    from ..distributed import ClusterHDPMinibatch

    return ClusterHDPMinibatch(worker_corpus(opts.client, data, opts.vocab), batches)


@register_hdp("scvi")
class HDPSCVI(Algorithm):
    """Stochastic CVI: counts as SCVI for HMMs, HDP hyperparameters and sticks by eq. 5.40.  ``opts`` as
    :class:`CVIRun`'s, and ``memory`` (keep the sentence memory), ``merges`` (``merge_moves`` with ``Dir(beta)``),
    ``tau``, ``kappa``, ``batch_size``, ``planned_epochs``, ``client``, ``vocab`` as :class:`HDPSVI`'s."""

    cluster = True

    def fit(self, core: HDPCore, data: Sequences, loop, opts) -> Fitted:
        K, W, run = core.K, data.W, _SCVIRun(core, data, loop, opts)
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        rng = np.random.default_rng(int(loop.seeds[0]))
        # global counts from exponential distributions (thesis eq. 3.106-3.107)
        N_trans = exponential_init(rng, (K + 1, K), N / K**2)
        N_emit = exponential_init(rng, (W, K), N / (K * W))
        # the minibatches are fixed so that each one's q(C^m = 0) can be replaced (thesis 5.3)
        size = resolve_batch_size(opts.batch_size, 100, I, None, opts.planned_epochs, opts.client)
        batches = [b.astype(np.int64) for b in minibatches(I, size, rng, 1)]
        updater = _Updater(run, data, opts, batches, N_emit, rng, _cluster(data, opts, batches))
        loop.meter = getattr(updater.cluster, "meter", None)
        m, rho = 0, None

        def one_pass(it: int) -> float:
            """One epoch over the fixed minibatches in a random order; returns its summed log-likelihood."""
            nonlocal m, rho
            ll = 0.0
            updater.learn = tuple(loop.learns(name, it, core.fixed) for name in ("gamma", "sigma", "emission"))
            updater.extra = {}
            for b in rng.permutation(len(batches)):
                rho, batch_ll, _ = step(updater, (N_trans, N_emit), b, m, opts.tau, opts.kappa)
                ll += batch_ll
                m += 1
            return ll

        def settle(it: int, stop: bool) -> dict:
            """After the verdict: the memoized round on the sentence memory, or the instant merges, when due."""
            extra, u, v = updater.extra, updater.u, updater.v
            logq0_b, logq0_row_b, memory = updater.logq0_b, updater.logq0_row_b, updater.memory
            if run.moves is not None and run.moves.due(it, stop):
                updater.G_state, moves = run.memo_round(loop.seeds[it], it, memory, N_trans, N_emit, u, v, batches,
                                                        logq0_b, logq0_row_b, updater.G_state)
                extra |= moves
            elif run.moves is None and run.instant_due(it, stop):
                extra["merges"] = run.instant_merges(N_trans, N_emit, updater.G_state, logq0_b, logq0_row_b, memory)
            return loop.entries(N_emit.sum(axis=0), run.gamma, run.sigma, step=rho, **extra)

        loop.waits = run.waits
        loop.run("minibatch_log_likelihood", one_pass, settle=settle)
        order, u, v = hdp.usage_order(N_emit.sum(axis=0)), updater.u, updater.v
        extra = {"qc_positive_": hdp.q_positive(updater.logq0_b.sum(axis=0)), "gamma_": run.gamma,
                 "sigma_": run.sigma, "batch_size_": size} | sticks(u[order], v[order], order, run.sigma)
        extra |= emission_attributes(core.emission)
        return Fitted(N_trans, N_emit, None, loop.last, loop.max_iter, loop.monitor, loop.trace, loop.meter, extra)

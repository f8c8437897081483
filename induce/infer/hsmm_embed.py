"""Negative binomial HSMMs through their HMM embedding (paper 002 section 5.1-5.2, eq. 14-16).

**Embedding** (section 5.1).  A duration ``d ~ NB(r, p)`` of eq. 14 (``p(d) = C(d + r - 2, d - 1)
p^(d-1) (1 - p)^r``, ``d >= 1``) is the time spent in a chain of ``r`` pseudo-states ``(i, 1..r)``:
each step stays with ``p`` or advances with ``1 - p``, and the last stage exits with ``1 - p``; the
chain is entered at stage ``k`` with ``pbar_k = C(r - 1, r - k) p^(r-k) (1 - p)^(k-1)`` (a
Binomial(r - 1, p) on ``r - k``; the paper leaves ``pbar`` to its supplement).  Summing over the entry
stage (Vandermonde's identity, ``sum_k C(r-1, r-k) C(d-1, r-k) = C(d+r-2, d-1)``) gives eq. 14
exactly, with no maximum duration.  The embedded transition matrix has the block structure of the
paper's ``Abar``: ``C_i`` bidiagonal (``p`` on the diagonal, ``1 - p`` above it) and ``Abar_ij`` the
last stage of ``i`` times ``(1 - p_i) A_ij pbar^(j)``; the start row is ``pi_j pbar^(j)``.  Every path
through a segment of duration ``d`` uses ``p`` exactly ``d - 1`` times and ``1 - p`` exactly ``r``
times, so with ``log p`` and ``log(1 - p)`` replaced by their expectations under ``q(p)`` (vi) the
chain's segment weight is ``exp E_q log p(d)``: the embedding is exact for the mean-field messages too.

The series ends with a segment (as :mod:`induce.kernels.hsmm` with ``logLast = logD``): the exit of the
last stage is multiplied into the emission row of the last step.  Messages run on the *existing* dense
scaled forward-backward (:func:`induce.kernels.hmm.forward_backward`, via
:func:`induce.infer.series.chain_posterior`) over ``N = sum_k r_k`` pseudo-states: O(T N^2) per
sequence (the kernel has no sparse path).  The sampled update runs many models per pass, so it uses a
structured forward pass, :func:`structured_forward`, O(T (N + K^2)) (the dense pass made one sample
cost twice the exact update's explicit messages in the Fig. 2 setting, docs/experiments/hsmm.md).

**Statistics** mapped back from the embedded marginals (section 5.1): state marginals (sums over each
block), the first segment's state, the expected boundaries ``i -> j`` (off-block transitions), and the
duration statistics ``(t_a, n) = (E sum (d - 1), E number of segments)`` of
:class:`induce.durations.NegBin`: a segment entered at stage ``k`` and staying ``s`` times has
``d - 1 = s + r - k``, so ``t_a = sum_k E[entries at k] (r - k) + E[stays]`` and ``n = E[entries]``
(eq. 15-16: ``q(p) = Beta(a + t_a, b + r n)``).

**Sampled update of q(r, p)** (section 5.2): with ``r`` learned (:class:`induce.durations.NegBinLearnedR`),
each pass draws ``S`` models ``(r_k, p_k) ~ q(r) q(p | r)`` per state (transitions and emissions keep
their mean-field ``exp E log`` potentials), runs the embedding of each, draws one state sequence per model
by forward filtering, backward sampling, and collects every statistic from the ``S`` sampled sequences
(``qhat(x) = 1/S sum delta``); the durations give ``(t_a, n, h_1 .. h_R)`` and so ``q(r)`` and
``q(p | r)``.  Under svi the same sampled statistics of a minibatch enter the natural-gradient step
(:class:`NBEmbedFit`).  The exact update is :class:`induce.infer.series_hsmm.HSMMFit` with the same family
(explicit-duration messages under ``D~ = exp E_{q(r,p)} log p(d)``, truncated at ``max_duration``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import digamma, gammaln

from ..durations import NegBin, NegBinLearnedR
from ..errors import ConfigError
from .series import chain_posterior, emission_rows, potentials, viterbi_path
from .series_hsmm import HSMMFit, runs


@dataclass
class NBChain:
    """Duration part of the embedding: ``r`` (K,) ints and the logs the chain uses for ``p`` and ``1 - p``
    (``log p``/``log(1 - p)`` of a point estimate, or ``E_q log p``/``E_q log(1 - p)`` for vi)."""

    r: np.ndarray
    log_p: np.ndarray
    log_q: np.ndarray
    #: the last segment is right-censored (decoding and scoring): no exit at the last step
    censored: bool = False

    @property
    def block(self) -> np.ndarray:
        """State of every pseudo-state (N,)."""
        return np.repeat(np.arange(len(self.r)), self.r)

    @property
    def stage(self) -> np.ndarray:
        """0-based stage of every pseudo-state within its block (N,)."""
        return np.concatenate([np.arange(r) for r in self.r])


def nb_chain(infer: str, durations: NegBin, Sd: np.ndarray) -> NBChain:
    """The chain of a fixed-``r`` :class:`~induce.durations.NegBin`: MAP ``p`` (em), ``E_q log`` (vi, svi),
    or for the collapsed rules (cvi2, scvi: decoding of Bayesian fits) the posterior mean ``A / (A + B)``,
    a plug-in for the beta negative binomial predictive, which is a mixture over ``p`` with no embedding."""
    K = Sd.shape[0]
    r = np.full(K, int(durations.r))
    if infer == "em":
        p = durations.point_estimate(Sd)["p"]
        return NBChain(r, np.log(p), np.log1p(-p))
    A, B = durations.posterior(np.maximum(Sd, 0.0))
    if infer in ("vi", "svi"):
        return NBChain(r, digamma(A) - digamma(A + B), digamma(B) - digamma(A + B))
    return NBChain(r, np.log(A / (A + B)), np.log(B / (A + B)))


def entry_logs(chain: NBChain) -> np.ndarray:
    """``log pbar_k`` (N,) of every pseudo-state: ``log C(r - 1, r - k) + (r - k) log p + (k - 1) log(1 - p)``."""
    blk, k = chain.block, chain.stage
    r = chain.r[blk].astype(np.float64)
    m = r - 1.0 - k  # r - k with 1-based k
    return (gammaln(r) - gammaln(m + 1.0) - gammaln(k + 1.0) + m * chain.log_p[blk] + k * chain.log_q[blk])


def embedded_transitions(logpi: np.ndarray, logA: np.ndarray, chain: NBChain) -> np.ndarray:
    """``Abar`` (N+1, N) in the layout of :func:`induce.kernels.hmm.forward_backward` (row 0 the start)."""
    blk, k = chain.block, chain.stage
    N = blk.shape[0]
    enter = entry_logs(chain)
    A = np.zeros((N + 1, N))
    with np.errstate(divide="ignore"):
        A[0] = np.exp(logpi[blk] + enter)
        n = np.arange(N)
        A[1 + n, n] = np.exp(chain.log_p[blk])  # C_i: stay
        inner = k < chain.r[blk] - 1
        A[1 + n[inner], n[inner] + 1] = np.exp(chain.log_q[blk[inner]])  # C_i: advance
        last = np.flatnonzero(~inner)  # Abar_ij = (1 - p_i) A_ij pbar^(j) from the last stage of i
        A[1 + last] = np.exp(chain.log_q[blk[last], None] + logA[blk[last]][:, blk] + enter[None, :])
        A[1 + last, last] += np.exp(chain.log_p[blk[last]])  # the diagonal of A is 0: the stay survives
    return A


def embedded_rows(rows: np.ndarray, chain: NBChain) -> np.ndarray:
    """Emission log-rows repeated per pseudo-state (T, N), with the last step's exit (``log(1 - p)`` at
    the last stage, ``-inf`` elsewhere) added: the series ends with a segment (unless ``chain.censored``:
    then the last segment may go on, and every stage may be the last step's)."""
    blk, k = chain.block, chain.stage
    out = rows[:, blk].copy()
    if not chain.censored:
        out[-1] += np.where(k == chain.r[blk] - 1, chain.log_q[blk], -np.inf)
    return out


def embed_expectations(logpi, logA, rows, chain: NBChain):
    """Expectations of one series on the embedding (section 5.1 mapped back to the HSMM).

    Returns ``(log Z, init (K,), trans (K, K), Sd (K, 2), gamma (T, K))``: ``log p(x)`` under the
    potentials (equal to the explicit HSMM's with untruncated durations), the first segment's state, the
    expected boundaries ``i -> j``, the duration statistics ``(t_a, n)`` and the state marginals.
    """
    K = len(chain.r)
    blk, k = chain.block, chain.stage
    M = np.eye(K)[blk]  # (N, K) block membership
    logz, g, tr = chain_posterior(embedded_transitions(logpi, logA, chain), embedded_rows(rows, chain))
    P = tr[1:] * (blk[:, None] != blk[None, :])  # off-block transitions: segment boundaries
    entries = tr[0] + P.sum(axis=0)
    stays = np.diag(tr[1:])
    Sd = np.stack([M.T @ (entries * (chain.r[blk] - 1 - k) + stays), M.T @ entries], axis=1)
    return logz, tr[0] @ M, M.T @ P @ M, Sd, g @ M


def embed_posterior(logpi, logA, rows, chain: NBChain):
    """``(log Z, gamma (T, K))`` of one series under the embedding's potentials."""
    logz, _, _, _, gamma = embed_expectations(logpi, logA, rows, chain)
    return logz, gamma


def embed_path(logpi, logA, rows, chain: NBChain) -> np.ndarray:
    """Viterbi path of the embedded chain mapped to states: the most probable pseudo-state sequence
    (for ``r > 1`` this maximises over stage paths too, not only over segmentations)."""
    path = viterbi_path(embedded_transitions(logpi, logA, chain), embedded_rows(rows, chain))
    return chain.block[path]


@njit(cache=True)
def backward_sample(A, fwd, T, u, path):
    """Backward sampling after the scaled forward pass (forward filtering, backward sampling):
    ``x_T ~ fwd[T]``, ``x_t ~ fwd[t, n] A[n+1, x_{t+1}]``; ``u`` (T,) uniform draws."""
    N = fwd.shape[1]
    w = np.empty(N)
    for t in range(T - 1, -1, -1):
        tot = 0.0
        for n in range(N):
            w[n] = fwd[t, n] if t == T - 1 else fwd[t, n] * A[n + 1, path[t + 1]]
            tot += w[n]
        target = u[t] * tot
        acc = 0.0
        pick = N - 1
        for n in range(N):
            acc += w[n]
            if acc >= target and w[n] > 0.0:
                pick = n
                break
        path[t] = pick


@njit(cache=True)
def structured_forward(pi, A, stay, adv, enter, blk, first, last, E, fwd):
    """Scaled forward pass on the embedding in O(N + K^2) per step (paper 002 section 5.1's O(T N R + T N^2)
    bound, here O(T (N + K^2))): ``pred[m] = stay alpha[m] + adv alpha[m-1] (within a block) +
    pbar[m] sum_i alpha[last_i] adv_i A[i, blk(m)]``; returns ``log Z`` of the potentials ``E`` (T, N).

    ``pi`` (K,), ``A`` (K, K), ``stay``/``adv`` (K,) the chain's ``p`` and ``1 - p`` weights, ``enter``
    (N,) ``pbar``, ``blk`` (N,) block of each pseudo-state, ``first`` (N,) whether it is stage 1, ``last``
    (K,) index of each block's last stage.
    """
    T, N = E.shape
    K = A.shape[0]
    out = np.empty(K)
    total = 0.0
    for t in range(T):
        if t == 0:
            for m in range(N):
                fwd[0, m] = pi[blk[m]] * enter[m] * E[0, m]
        else:
            for j in range(K):
                acc = 0.0
                for i in range(K):
                    acc += fwd[t - 1, last[i]] * adv[i] * A[i, j]
                out[j] = acc
            for m in range(N):
                b = blk[m]
                v = fwd[t - 1, m] * stay[b] + out[b] * enter[m]
                if not first[m]:
                    v += fwd[t - 1, m - 1] * adv[b]
                fwd[t, m] = v * E[t, m]
        s = 0.0
        for m in range(N):
            s += fwd[t, m]
        if s < 1e-300:
            s = 1e-300
        total += np.log(s)
        for m in range(N):
            fwd[t, m] /= s
    return total


def sample_states(logpi, logA, rows, chain: NBChain, rng: np.random.Generator, Abar=None):
    """``(log Z, states (T,))``: one state sequence from the embedded chain's posterior by the structured
    forward pass and backward sampling (``Abar``: :func:`embedded_transitions`, computed when not given)."""
    if Abar is None:
        Abar = embedded_transitions(logpi, logA, chain)
    E, offset = potentials(embedded_rows(rows, chain))
    T, N = E.shape
    blk, k = chain.block, chain.stage
    with np.errstate(divide="ignore"):
        fwd = np.empty((T, N))
        logz = structured_forward(np.exp(logpi), np.exp(logA), np.exp(chain.log_p), np.exp(chain.log_q),
                                  np.exp(entry_logs(chain)), blk, k == 0, np.cumsum(chain.r) - 1, E, fwd)
    path = np.empty(T, dtype=np.int64)
    backward_sample(Abar, fwd, T, rng.random(T), path)
    return logz + offset, blk[path]


def uses_embedding(durations) -> bool:
    """Fixed integer ``r`` negative binomial durations run on the embedding (no maximum duration); a
    non-integer ``r`` has no embedding and keeps the explicit-duration messages."""
    return isinstance(durations, NegBin) and float(durations.r).is_integer()


class NBEmbedFit(HSMMFit):
    """em/vi/svi of the negative binomial HSMM on the embedding: fixed ``r`` (:class:`~induce.durations.NegBin`,
    statistics from the embedded marginals) or learned ``r`` with the sampled update of section 5.2
    (:class:`~induce.durations.NegBinLearnedR`, vi or svi, ``n_samples`` models per pass or minibatch).

    Both share :meth:`_minibatch_statistics`: batch vi replaces the global statistics with those of all items;
    svi (:meth:`HSMMFit._stochastic_pass`, :mod:`induce.algorithms.minibatch`, paper 002 section 3.2) blends the
    minibatch's, scaled by all steps / minibatch steps, into the transition, emission and duration statistics alike
    -- with learned ``r`` the sampled ``(t_a, n, h_1 .. h_R)`` take the place of the expected ones (section 5.2), so
    the step moves the ``q(p | r)`` Beta parameters and the ``q(r)`` weights as it moves the other globals.

    With fixed ``r`` the vi objective is the ELBO (never decreases); the sampled update's objective is the
    mean over samples of ``sum log Z`` minus the KL terms, a noisy quantity that is not checked for
    monotonicity (``qhat(x)`` does not maximise the bound, section 5.2).
    """

    n_samples: int = 1
    algorithms = ("em", "vi", "svi")

    def __init__(self, *args, n_samples: int = 1, **kw):
        super().__init__(*args, **kw)
        self.n_samples = int(n_samples)
        if isinstance(self.durations, NegBinLearnedR):
            if self.infer not in ("vi", "svi"):
                raise ConfigError(f"the sampled update of q(r, p) needs infer='vi' or 'svi', got {self.infer!r}")
            if self.n_samples < 1:
                raise ConfigError(f"negbin samples must be at least 1, got {n_samples}")
            self.elbo = False
        elif not uses_embedding(self.durations):
            raise ConfigError(f"the HMM embedding needs negbin durations with an integer r, got "
                              f"{self.durations.header()}")

    def _pass(self, state) -> float:
        """One em/vi pass: the statistics of all items replace the global ones."""
        C, S, Sd = state["C"], state["S"], state["Sd"]
        total, (state["C"], state["S"], state["Sd"]) = self._minibatch_statistics(
            self.infer, state, range(len(state["bounds"])))
        if self.infer == "vi":
            total -= self.transition_bound(C) + self.family.kl(S) + self.durations.kl(Sd)
        return total

    def _minibatch_statistics(self, rule: str, state, items):
        """``(sum log Z, (C, S, Sd))`` of the items on the embedding under the ``rule`` potentials: the embedded
        marginals (fixed ``r``) or the sampled update (learned ``r``)."""
        C, S, Sd = state["C"], state["S"], state["Sd"]
        if isinstance(self.durations, NegBinLearnedR):
            return self._sampled_stats(state, items, C, S, Sd)
        logpi, logA = self.transitions(rule, C)
        chain = nb_chain(rule, self.durations, Sd)
        bC, bS, bSd = np.zeros_like(C), np.zeros_like(S), np.zeros_like(Sd)
        total = 0.0
        for i in items:
            lo, hi = state["bounds"][i]
            X = state["stacked"][lo:hi]
            logz, init, trans, sd, gamma = embed_expectations(logpi, logA, emission_rows(rule, self.family, X, S),
                                                              chain)
            total += logz
            bC[0] += init
            bC[1:] += trans
            bSd += sd
            bS += self.family.stats(X, gamma)
        return total, (bC, bS, bSd)

    def _sampled_stats(self, state, items, C, S, Sd):
        """Section 5.2 over the items: ``S`` models ``(r, p) ~ q(r) q(p | r)``, one sampled state sequence
        per model and item, statistics averaged over the models (``qhat(x) = 1/S sum delta``)."""
        K, n = self.n_states, self.n_samples
        logpi, logA = self.transitions("vi", C)
        data = [state["stacked"][lo:hi] for lo, hi in (state["bounds"][i] for i in items)]
        rows = [emission_rows("vi", self.family, X, S) for X in data]
        onehot = [np.zeros_like(r) for r in rows]
        bC, durs = np.zeros_like(C), [[] for _ in range(K)]
        total = 0.0
        for _ in range(n):
            params = self.durations.sample(Sd, self.rng)
            chain = NBChain(params["r"].astype(np.int64), np.log(params["p"]), np.log1p(-params["p"]))
            Abar = embedded_transitions(logpi, logA, chain)
            for r, hot in zip(rows, onehot):
                logz, states = sample_states(logpi, logA, r, chain, self.rng, Abar)
                total += logz / n
                hot[np.arange(len(states)), states] += 1.0 / n
                segs = runs(states)
                bC[0, segs[0][2]] += 1.0 / n
                for (s, e, k), nxt in zip(segs, segs[1:] + [None]):
                    durs[k].append(e - s)
                    if nxt is not None:
                        bC[k + 1, nxt[2]] += 1.0 / n
        width = max(max(d, default=1) for d in durs)
        N = np.zeros((K, width))
        for k, d in enumerate(durs):
            np.add.at(N[k], np.asarray(d, dtype=np.int64) - 1, 1.0 / n)
        bS = sum((self.family.stats(X, hot) for X, hot in zip(data, onehot)), np.zeros_like(S))
        return total, (bC, bS, self.durations.stats(N))

"""Stochastic inference for the Bayesian HMM: SVI and SCVI, for many sequences or one long one.

The text tagger's form (categorical emissions) of the minibatch algorithms of :mod:`induce.algorithms.minibatch`
(the step sizes, the local rule, the blend of thesis eq. 3.103).  Global state (:class:`GlobalCounts`):
transition counts ``N_{j,k}`` (K+1, K; row 0 = start) and emission counts ``N_{k,w}`` (stored (W, K) by word),
initialised from exponential distributions with means ``I*T/K^2`` and ``I*T/(K*W)`` (thesis eq. 3.106-3.107).
The algorithms differ in the parameters of the local step and in what a minibatch is:

* ``svi``, ``scvi``: minibatches of sentences (:class:`SentenceUpdater`), no per-sentence statistics kept;
* ``scvi3``: one long sequence cut into subsequences of length ``T``; minibatches
  of ``M`` subsequences; the guarded sum-product of
  :mod:`induce.kernels.subchain` with the neighbours' boundary
  marginals (paper 001 eq. 6-21; the only per-subsequence memory is
  ``q(z_1)`` and ``q(z_T)``);
* ``scvi3-vanilla``: as ``scvi3`` but every subsequence starts from the
  stationary distribution and has no right guard;
* ``svi-buffered``: SVI on subsequences padded with ``B`` observations on each
  side (Foti et al. 2014), started from the stationary distribution;
  statistics from the inner range only;
* ``svi-vanilla``: as ``svi-buffered`` with ``B = 0``.

Emission counts are stored as ``factor * table`` so that the decay
``(1 - rho)`` is one scalar multiply and a minibatch touches only the rows of
its words: memory is ``O(K^2 + K W + minibatch)`` and time per minibatch is
independent of the vocabulary size.

:func:`induce.algorithms.minibatch.run` drives any of them over an iterator of minibatches with held-out
predictive log-likelihood (thesis eq. 3.108-3.109, :meth:`GlobalCounts.heldout_loglik`) in the trace, atomic
checkpoints (:meth:`GlobalCounts.checkpoint_schema`) and resumption, and clean stops on SIGINT / SIGTERM.
"""

from __future__ import annotations

import numba
import numpy as np

from ..algorithms.minibatch import LOCAL_RULE, Updater
from ..corpus.corpus import distinct, gather_sentences
from ..errors import ConfigError
from ..kernels.subchain import guard_messages, stationary_distribution, subchain_batch_pass
from ..modelfile import Field, Schema
from ..names import SINGLE_SEQUENCE, STOCHASTIC
from . import hmm_passes as passes
from .cvi3 import subsequence_offsets
from .estimators import params_from_counts, selected_params
from .schedules import blend, exponential_init, minibatches

_NO_MASK = np.zeros((0, 0), dtype=np.uint8)
_RENORMALISE_BELOW = 1e-100
_TOKENS_PER_THREAD = 50_000


#: arrays of a checkpoint: GlobalCounts.arrays() and, for the single-sequence updaters, the boundary marginals (for
#: the cluster's rounds, the minibatches handed to the updater, which size its rounds)
_CHECKPOINT_FIELDS = (
    Field("counts.trans", "f8", ("K+1", "K"), nonnegative=True),
    Field("counts.emit_scaled", "f8", ("W", "K"), nonnegative=True),
    Field("counts.emit_factor", "f8", (), positive=True),  # divides the scaled emission counts
    Field("counts.emit_totals", "f8", ("K",), nonnegative=True),
    Field("updater.boundary", "f4", (None, 2, "K"), nonnegative=True, optional=True),
    Field("updater.minibatches", "i8", (), nonnegative=True, optional=True),  # rounds on a cluster: handed so far
)


def _checkpoint_schema(header: dict) -> Schema:
    """Checkpoint fields, sized by the run's ``n_states`` / ``n_words`` settings where it has them."""
    settings = header["meta"]["settings"]
    names = {"K": "n_states", "W": "n_words"}
    return Schema(_CHECKPOINT_FIELDS, {k: int(settings[v]) for k, v in names.items() if v in settings})


class GlobalCounts:
    """Stochastic expected counts ``N``: transitions (K+1, K) and emissions ``factor * emit_scaled`` (W, K)."""

    def __init__(self, trans: np.ndarray, emit: np.ndarray):
        self.trans = np.array(trans, dtype=np.float64)
        self.emit_scaled = np.array(emit, dtype=np.float64)
        self.emit_factor = 1.0
        self.emit_totals = self.emit_scaled.sum(axis=0)

    @classmethod
    def exponential(cls, rng: np.random.Generator, K: int, W: int, n_tokens: int) -> "GlobalCounts":
        """Thesis eq. 3.106-3.107: ``N_{j,k} ~ Exp(IT/K^2)``, ``N_{k,w} ~ Exp(IT/(KW))``."""
        trans = exponential_init(rng, (K + 1, K), n_tokens / K**2)
        emit = exponential_init(rng, (W, K), n_tokens / (K * W))
        return cls(trans, emit)

    @property
    def n_states(self) -> int:
        return self.trans.shape[1]

    @property
    def n_words(self) -> int:
        return self.emit_scaled.shape[0]

    def emission_rows(self, ids: np.ndarray) -> np.ndarray:
        """Emission counts of the words ``ids`` (ids equal to ``W`` are unseen words: zero counts)."""
        ids = np.asarray(ids)
        known = ids < self.n_words
        if known.all():  # (a round's words on a worker, a minibatch's in training: one gather, no mask)
            rows = self.emit_scaled[ids]
            rows *= self.emit_factor
            return rows
        rows = np.zeros((len(ids), self.n_states))
        rows[known] = self.emit_factor * self.emit_scaled[ids[known]]
        return rows

    def emissions(self) -> np.ndarray:
        return self.emit_factor * self.emit_scaled

    def update(self, rho: float, trans_stats: np.ndarray, trans_scale: float,
               ids: np.ndarray, emit_stats: np.ndarray, emit_scale: float) -> None:
        """Thesis eq. 3.103 on every count; ``ids`` (unique) are the words with statistics ``emit_stats``."""
        blend(self.trans, trans_stats, rho, trans_scale)
        blend(self.emit_totals, emit_stats.sum(axis=0), rho, emit_scale)
        # the same blend on the (W, K) table in factored form: N = f * S, so
        # (1 - rho) N is f <- (1 - rho) f and rho * s * X is S[ids] += rho * s * X / f
        if rho >= 1.0:
            self.emit_scaled[:] = 0.0
            self.emit_factor = 1.0
        else:
            self.emit_factor *= 1.0 - rho
        self.emit_scaled[ids] += (rho * emit_scale / self.emit_factor) * emit_stats
        self.renormalise()

    def renormalise(self) -> None:
        """Fold the factor into the table once it falls below ``1e-100`` (the column totals re-summed)."""
        if self.emit_factor < _RENORMALISE_BELOW:
            self.emit_scaled *= self.emit_factor
            self.emit_factor = 1.0
            self.emit_totals = self.emit_scaled.sum(axis=0)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"trans": self.trans, "emit_scaled": self.emit_scaled,
                "emit_factor": np.array(self.emit_factor), "emit_totals": self.emit_totals}

    #: the checkpoint's arrays (:func:`induce.algorithms.minibatch.run`)
    checkpoint_schema = staticmethod(_checkpoint_schema)

    def heldout_loglik(self, alpha: float, beta: float, tokens: np.ndarray, offsets: np.ndarray) -> float:
        """:func:`heldout_loglik` of these counts (the held-out records of :func:`induce.algorithms.minibatch.run`)."""
        return heldout_loglik(self, alpha, beta, tokens, offsets)

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        if arrays["trans"].shape != self.trans.shape or arrays["emit_scaled"].shape != self.emit_scaled.shape:
            raise ConfigError(f"checkpoint counts have shapes {arrays['trans'].shape}/{arrays['emit_scaled'].shape}, "
                              f"this run needs {self.trans.shape}/{self.emit_scaled.shape}")
        self.trans = np.array(arrays["trans"], dtype=np.float64)
        self.emit_scaled = np.array(arrays["emit_scaled"], dtype=np.float64)
        self.emit_factor = float(arrays["emit_factor"])
        self.emit_totals = np.array(arrays["emit_totals"], dtype=np.float64)


def local_parameters(counts: GlobalCounts, estimator: str, alpha: float, beta: float, ids: np.ndarray):
    """Transition table (K+1, K) and emission rows of ``ids`` (len(ids), K) for a local step."""
    A = params_from_counts(estimator, counts.trans, alpha)
    P = selected_params(estimator, counts.emission_rows(ids), counts.emit_totals, beta, counts.n_words)
    return np.ascontiguousarray(A), np.ascontiguousarray(P)


def dictionary_rows(allowed: np.ndarray, ids: np.ndarray, K: int) -> np.ndarray:
    """The tag dictionary's rows ``allowed[ids]`` (words past its end: unconstrained); empty without one."""
    if not allowed.shape[0]:
        return _NO_MASK
    mask = np.ones((len(ids), K), dtype=np.uint8)
    known = ids < allowed.shape[0]
    mask[known] = allowed[ids[known]]
    return mask


def local_statistics(A: np.ndarray, P: np.ndarray, mask: np.ndarray, local: np.ndarray, offsets: np.ndarray):
    """Forward-backward over sentences (CSR ``local``/``offsets``) under fixed ``A`` and emission rows ``P``.

    Returns ``(trans_stats (K+1, K), emit_stats (len(P), K), log-likelihood)``;
    the threads follow :func:`_threads`.  Runs wherever the minibatch is (in
    this process, or on a dask worker: :mod:`induce.distributed`).
    """
    K = A.shape[1]
    trans_stats = np.zeros((K + 1, K))
    emit_stats = np.zeros((P.shape[0], K))
    n = _threads(len(local))
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        ll = passes.batch_pass(A, P, mask, local, np.ascontiguousarray(offsets, dtype=np.int64), trans_stats,
                               emit_stats, np.empty((0, K)), n)
    finally:
        numba.set_num_threads(before)
    return trans_stats, emit_stats, ll


def sentence_statistics(counts: GlobalCounts, estimator: str, alpha: float, beta: float,
                        tokens: np.ndarray, offsets: np.ndarray, allowed: np.ndarray = _NO_MASK):
    """Local step on a minibatch of sentences (CSR): forward-backward (:func:`local_statistics`) under the
    parameters of ``estimator`` (:func:`local_parameters`) for the distinct words ``ids`` of ``tokens``, with
    their tag-dictionary rows (:func:`dictionary_rows`).

    Returns ``(trans_stats (K+1, K), ids, emit_stats (len(ids), K), log-likelihood)``.
    """
    ids, local = distinct(tokens)
    A, P = local_parameters(counts, estimator, alpha, beta, ids)
    trans_stats, emit_stats, ll = local_statistics(A, P, dictionary_rows(allowed, ids, counts.n_states),
                                                   local.astype(np.int32).reshape(-1), offsets)
    return trans_stats, ids, emit_stats, ll


def _threads(n_tokens: int) -> int:
    """Threads for a local step: one per ``_TOKENS_PER_THREAD`` tokens, at most numba's threads in use (on a
    cluster worker its share of the cores: :func:`induce.distributed.cluster.claim_threads`).  Waking numba's
    thread pool costs more than a small minibatch's forward-backward (measured: ~0.3 ms serial vs
    ~100 ms with two threads for 200 tokens on a loaded 2-core machine)."""
    return max(1, min(numba.get_num_threads(), n_tokens // _TOKENS_PER_THREAD))


def heldout_loglik(counts: GlobalCounts, alpha: float, beta: float, tokens: np.ndarray, offsets: np.ndarray) -> float:
    """Per-token predictive log-likelihood (nats) of held-out sequences, thesis eq. 3.108-3.109.

    ``theta = (N + a) / (N. + K a)`` and ``phi = (N + b) / (N. + W b)``; word id
    ``W`` stands for words unseen in training (zero counts).
    """
    if len(tokens) == 0:
        raise ConfigError("the held-out set is empty")
    _, _, _, ll = sentence_statistics(counts, "cvi", alpha, beta, tokens, offsets)
    return float(ll / len(tokens))


def heldout_sentences(lengths: np.ndarray, fraction: float, max_tokens: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted ids of a seeded random ``fraction`` of the sentences (rounded; cut to at most ``max_tokens`` tokens,
    but at least one sentence): the held-out set a fit stops on.  Empty when the share rounds to no sentence; an
    error when it would leave none to train on."""
    n = len(lengths)
    n_held = int(round(fraction * n))
    if n_held == 0:
        return np.zeros(0, dtype=np.int64)
    if n_held >= n:
        raise ConfigError(f"a held-out fraction of {fraction:g} of {n} sentences leaves none to train on")
    pick = rng.permutation(n)[:n_held]
    fits = int(np.searchsorted(np.cumsum(lengths[pick]), max_tokens, side="right"))
    return np.sort(pick[:max(1, fits)]).astype(np.int64)


def sentence_batches(tokens, offsets, batch_size: int, n_epochs: int, rng: np.random.Generator):
    """Seeded minibatches of whole sentences of an in-memory corpus, epoch after epoch."""
    for idx in minibatches(len(offsets) - 1, batch_size, rng, n_epochs):
        yield gather_sentences(tokens, offsets, np.sort(idx))


class CountsUpdater(Updater):
    """The categorical family's global step (:class:`induce.algorithms.minibatch.Updater`): eq. 3.103 on the
    transition counts and, in factored form, on the rows of the minibatch's words (:meth:`GlobalCounts.update`);
    ``stats`` are ``(transition statistics, word ids, their emission statistics)``, ``scale`` the transitions' and
    the emissions' scales."""

    def blend(self, counts: GlobalCounts, rho: float, stats, scale) -> None:
        (ts, ids, es), (trans_scale, emit_scale) = stats, scale
        counts.update(rho, ts, trans_scale, ids, es, emit_scale)


class SentenceUpdater(CountsUpdater):
    """``svi`` / ``scvi`` on minibatches of sentences (gathered rows, lockstep forward-backward); the scale is
    ``I / |B|`` (thesis eq. 3.103)."""

    def __init__(self, algorithm: str, alpha: float, beta: float, n_sentences: int, allowed: np.ndarray = _NO_MASK):
        if algorithm not in STOCHASTIC:
            raise ConfigError(f"sentence minibatches serve {STOCHASTIC}, not {algorithm!r}")
        self.estimator = LOCAL_RULE[algorithm]
        self.alpha, self.beta = alpha, beta
        self.n_sentences = int(n_sentences)
        self.allowed = allowed

    def local(self, counts: GlobalCounts, batch):
        tokens, offsets = batch
        ts, ids, es, ll = self.statistics(counts, tokens, offsets)
        scale = self.n_sentences / max(1, len(offsets) - 1)
        return ll, (ts, ids, es), (scale, scale), len(tokens)

    def statistics(self, counts: GlobalCounts, tokens: np.ndarray, offsets: np.ndarray):
        """The minibatch's local step: :func:`sentence_statistics` (on a dask cluster:
        :class:`induce.distributed.WorkerSentenceUpdater`)."""
        return sentence_statistics(counts, self.estimator, self.alpha, self.beta, tokens, offsets, self.allowed)

    def arrays(self) -> dict[str, np.ndarray]:
        return {}

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        return None


class SubchainUpdater(CountsUpdater):
    """Single-sequence algorithms on minibatches of subsequence ids (see the module docstring).

    ``tokens`` is the one long training sequence, cut into subsequences of
    ``length``.  ``scvi3`` keeps the boundary marginals ``q(z_1)``, ``q(z_T)`` of
    every subsequence (float32, initially uniform) as the guards of its
    neighbours (thesis eq. 3.72, 3.76).
    """

    def __init__(self, algorithm: str, alpha: float, beta: float, tokens: np.ndarray, length: int,
                 buffer: int, n_states: int):
        if algorithm not in SINGLE_SEQUENCE:
            raise ConfigError(f"subsequence minibatches serve {SINGLE_SEQUENCE}, not {algorithm!r}")
        if length < 1:
            raise ConfigError(f"subsequence length must be at least 1, got {length}")
        if algorithm != "scvi3" and length < 2:
            raise ConfigError(f"{algorithm} takes statistics from transitions inside a subsequence; length must be >= 2")
        if buffer < 0:
            raise ConfigError(f"buffer must be non-negative, got {buffer}")
        self.algorithm = algorithm
        self.estimator = LOCAL_RULE[algorithm]
        self.alpha, self.beta = alpha, beta
        self.tokens = np.ascontiguousarray(tokens, dtype=np.int32)
        self.sub_offsets = subsequence_offsets(len(self.tokens), length)
        self.n_sub = len(self.sub_offsets) - 1
        self.guarded = algorithm == "scvi3"
        self.buffer = int(buffer) if algorithm == "svi-buffered" else 0
        K = n_states
        self.boundary = (np.full((self.n_sub, 2, K), 1.0 / K, dtype=np.float32) if self.guarded
                         else np.zeros((0, 2, K), dtype=np.float32))

    def local(self, counts: GlobalCounts, sub_ids: np.ndarray):
        """The subsequences ``sub_ids``' local step; the transitions' scale counts the transitions seen."""
        K = counts.n_states
        N = len(self.tokens)
        sub_ids = np.sort(np.asarray(sub_ids, dtype=np.int64))
        starts = self.sub_offsets[sub_ids]
        ends = self.sub_offsets[sub_ids + 1]
        wlo = np.maximum(starts - self.buffer, 0)
        whi = np.minimum(ends + self.buffer, N)
        win = np.zeros(len(sub_ids) + 1, dtype=np.int64)
        np.cumsum(whi - wlo, out=win[1:])
        pos = np.repeat(wlo - win[:-1], whi - wlo) + np.arange(win[-1], dtype=np.int64)
        ids, local = distinct(self.tokens[pos])
        A, P = local_parameters(counts, self.estimator, self.alpha, self.beta, ids)
        M = len(sub_ids)
        C = np.ascontiguousarray(counts.trans[1:])
        if self.guarded:
            has_prev = sub_ids > 0
            has_next = sub_ids < self.n_sub - 1
            q0 = np.zeros((M, K))
            q0[has_prev] = self.boundary[sub_ids[has_prev] - 1, 1]
            qn = np.zeros((M, K))
            qn[has_next] = self.boundary[sub_ids[has_next] + 1, 0]
            left = np.empty((M, K))
            right = np.empty((M, K))
            guard_messages(q0, qn, C, counts.trans[0], self.alpha, has_prev, has_next, left, right)
            edge = np.where(has_prev, 2, 1).astype(np.int8)
        else:
            pi = stationary_distribution(A)
            left = np.repeat(pi[None, :], M, axis=0)
            right = np.ones((M, K))
            edge = np.zeros(M, dtype=np.int8)
            q0 = np.zeros((M, K))
        trans_stats = np.zeros((K + 1, K))
        emit_stats = np.zeros((len(ids), K))
        first = np.zeros((M, K))
        last = np.zeros((M, K))
        ll = subchain_batch_pass(A, P, local.astype(np.int32).reshape(-1), win, starts - wlo, ends - wlo,
                                 left, right, edge, q0, C, self.alpha, trans_stats, emit_stats, first, last)
        if self.guarded:
            self.boundary[sub_ids, 0] = first
            self.boundary[sub_ids, 1] = last
            # every subsequence contributes its entering transition: L transitions per L tokens
            trans_scale = N / float(np.sum(ends - starts))
        else:
            trans_scale = max(N - 1, 1) / max(1.0, float(np.sum(ends - starts - 1)))
        emit_scale = N / float(np.sum(ends - starts))
        return ll, (trans_stats, ids, emit_stats), (trans_scale, emit_scale), int(np.sum(ends - starts))

    def arrays(self) -> dict[str, np.ndarray]:
        return {"boundary": self.boundary}

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        if arrays["boundary"].shape != self.boundary.shape:
            raise ConfigError("checkpoint boundary marginals do not match this sequence / subsequence length")
        self.boundary = np.array(arrays["boundary"], dtype=np.float32)


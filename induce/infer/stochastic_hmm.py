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

:func:`run` drives any of them over an iterator of minibatches with held-out
predictive log-likelihood (thesis eq. 3.108-3.109) in the trace, atomic
checkpoints and resumption, and clean stops on SIGINT / SIGTERM.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numba
import numpy as np

from ..checkpoint import CheckpointPolicy, StopRequest, load_checkpoint, save_checkpoint
from ..corpus.corpus import gather_sentences
from ..errors import ConfigError
from .convergence import ConvergenceMonitor
from ..modelfile import Field, Schema, reading
from ..kernels.subchain import guard_messages, stationary_distribution, subchain_batch_pass
from . import hmm_passes as passes
from .cvi3 import subsequence_offsets
from .estimators import params_from_counts, selected_params
from .schedules import blend, exponential_init, minibatches
from ..names import SINGLE_SEQUENCE, STOCHASTIC
from ..algorithms.minibatch import LOCAL_RULE, Updater, step as minibatch_step
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
    ids, local = np.unique(tokens, return_inverse=True)
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
        ids, local = np.unique(self.tokens[pos], return_inverse=True)
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


@dataclass
class RunResult:
    trace: list[dict] = field(default_factory=list)
    batches: int = 0
    tokens_seen: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    converged: bool = False  # the stopping rule fired (``monitor`` of :func:`run`)
    alpha: float = 0.0  # the priors the run ended with (learned ones: ``hyper`` of :func:`run`)
    beta: float = 0.0


def saved_settings(checkpoint: str | None) -> dict:
    """The settings a checkpoint was made with (``{}`` when there is none to read; :func:`_resume` says why and
    checks its arrays)."""
    if not checkpoint or not Path(checkpoint).exists():
        return {}
    return dict(load_checkpoint(checkpoint, "stochastic_hmm")[0]["settings"])


def _resume(checkpoint: str | None, meta: dict, counts: GlobalCounts, updater, result: RunResult) -> None:
    """Reload ``checkpoint`` into ``counts``, the ``updater``'s state and ``result`` (minibatches done,
    tokens seen, training seconds, trace), after checking that it was made with the settings ``meta``."""
    if not checkpoint:
        raise ConfigError("--resume needs --checkpoint FILE")
    if not Path(checkpoint).exists():
        raise ConfigError(f"no checkpoint to resume from at {checkpoint}")
    saved, arrays = load_checkpoint(checkpoint, "stochastic_hmm", _checkpoint_schema)
    with reading(checkpoint, "checkpoint header"):
        for key, value in meta.items():
            if saved["settings"].get(key) != value:
                raise ConfigError(f"checkpoint {checkpoint} was made with {key}={saved['settings'].get(key)!r}, "
                                  f"this run has {key}={value!r}")
        result.batches = int(saved["batches"])
        result.tokens_seen = int(saved["tokens_seen"])
        result.seconds = float(saved["seconds"])
        result.trace = list(saved["trace"])
        counts.load({k[7:]: v for k, v in arrays.items() if k.startswith("counts.")})
        updater.load({k[8:]: v for k, v in arrays.items() if k.startswith("updater.")})


def _save(checkpoint: str, meta: dict, counts: GlobalCounts, updater, result: RunResult) -> None:
    """Write the counts, the updater's state, the trace and the progress of ``result`` atomically."""
    arrays = {f"counts.{k}": v for k, v in counts.arrays().items()}
    arrays.update({f"updater.{k}": v for k, v in updater.arrays().items()})
    save_checkpoint(checkpoint, "stochastic_hmm",
                    {"settings": meta, "batches": result.batches, "tokens_seen": result.tokens_seen,
                     "seconds": result.seconds, "trace": result.trace}, arrays)


class _Evaluation:
    """A trace record: minibatch, tokens seen, training and wall seconds, step size, the minibatch's
    per-token log-likelihood and the held-out per-token predictive log-likelihood (thesis eq.
    3.108-3.109, when there is a held-out set), with ``extra`` entries, passed to ``callback``."""

    def __init__(self, counts: GlobalCounts, heldout, alpha: float, beta: float, callback, wall0: float):
        self.counts, self.heldout, self.alpha, self.beta = counts, heldout, alpha, beta
        self.callback, self.wall0 = callback, wall0

    def __call__(self, result: RunResult, rho: float, batch_ll: float, batch_tokens: int,
                 epoch: int | None = None, **extra) -> None:
        rec = {"batch": result.batches, "tokens_seen": result.tokens_seen, "seconds": round(result.seconds, 4),
               "wall_seconds": round(time.perf_counter() - self.wall0, 4), "rho": rho}
        if epoch is not None:
            rec["epoch"] = epoch
        if batch_tokens:
            rec["minibatch_log_likelihood_per_token"] = batch_ll / batch_tokens
        if self.heldout is not None:
            rec["heldout_log_likelihood_per_token"] = heldout_loglik(self.counts, self.alpha, self.beta, *self.heldout)
        rec.update(extra)
        result.trace.append(rec)
        if self.callback is not None:
            self.callback(rec)


def _remaining(batches: Iterable, done: int, max_batches: int | None) -> Iterator:
    """The minibatches still to run: ``batches`` without the ``done`` ones, up to ``max_batches`` in all."""
    it: Iterator = iter(batches)
    if done:
        it = itertools.islice(it, done, None)
    if max_batches is not None:
        it = itertools.islice(it, max(0, max_batches - done))
    return it


def _progress_bar(done: int, max_batches: int | None, total_batches: int | None, desc: str):
    """A tqdm bar over minibatches whose total is where the run will stop (unknown: none)."""
    from ..progress import ProgressBar as tqdm

    bound = [n for n in (max_batches, total_batches) if n]
    return tqdm(total=min(bound) if bound else None, initial=done, desc=desc, unit="batch", dynamic_ncols=True)


def _step(counts: GlobalCounts, updater, batch, result: RunResult, tau: float, kappa: float) -> tuple[float, float, int]:
    """One minibatch (:func:`induce.algorithms.minibatch.step`: ``rho_m``, the updater's local and global steps,
    thesis eq. 3.103-3.104) and its training time.  Returns ``(rho, log-likelihood, tokens)``."""
    t0 = time.perf_counter()
    rho, ll, ntok = minibatch_step(updater, counts, batch, result.batches, tau, kappa)
    result.seconds += time.perf_counter() - t0
    result.batches += 1
    result.tokens_seen += ntok
    return rho, ll, ntok


class _Run:
    """One :func:`run`'s state: the counts, the updater, the result so far, its checkpoint and its evaluation."""

    def __init__(self, counts: GlobalCounts, updater, result: RunResult, meta: dict, checkpoint: str | None,
                 policy: CheckpointPolicy, evaluate: _Evaluation):
        self.counts, self.updater, self.result, self.meta = counts, updater, result, meta
        self.checkpoint, self.policy, self.evaluate = checkpoint, policy, evaluate

    def write(self) -> None:
        """Checkpoint now (:func:`_save`), if the run has a checkpoint file."""
        if self.checkpoint:
            _save(self.checkpoint, self.meta, self.counts, self.updater, self.result)
            self.policy.written()

    def set_priors(self, a: float, b: float) -> None:
        """The priors the next local steps and held-out evaluations use."""
        self.result.alpha = self.updater.alpha = self.evaluate.alpha = a
        self.result.beta = self.updater.beta = self.evaluate.beta = b

    def show(self, bar) -> None:
        """One minibatch more on the progress ``bar``, with the last held-out score and a cluster's meter."""
        bar.update(1)
        shown = dict(self.updater.meter.postfix()) if hasattr(self.updater, "meter") else {}  # on a dask cluster
        trace = self.result.trace
        if trace and "heldout_log_likelihood_per_token" in trace[-1]:
            shown["heldout"] = f"{trace[-1]['heldout_log_likelihood_per_token']:.4f}"
        if shown:
            bar.set_postfix(shown)

    def steps(self, batches: Iterator, stop, bar, *, tau: float, kappa: float, heldout_every: int,
              epoch_tokens: int | None, monitor: ConvergenceMonitor | None, hyper, stop_after: int | None):
        """The minibatches of :func:`run` (``monitor``: ``None`` without a stopping rule); returns the last step's
        ``(rho, log-likelihood, tokens)`` and whether it was evaluated."""
        counts, updater, result = self.counts, self.updater, self.result
        rho, ll, ntok = 0.0, 0.0, 0
        evaluated_last = True
        owed = False  # a checkpoint due while a round of local steps was still open (see below)
        for batch in batches:
            rho, ll, ntok = _step(counts, updater, batch, result, tau, kappa)
            epoch_end = ((monitor is not None or hyper is not None) and bool(epoch_tokens) and ntok > 0
                         and result.tokens_seen % epoch_tokens == 0)
            evaluated_last = epoch_end or (heldout_every > 0 and result.batches % heldout_every == 0)
            if evaluated_last:
                ll = _settle(counts, updater, result, ll)
            boundary = _at_boundary(updater)
            if epoch_end and hyper is not None:
                self.set_priors(*hyper(counts, result.alpha, result.beta))
            if evaluated_last:
                priors = dict(alpha=result.alpha, beta=result.beta) if epoch_end and hyper is not None else {}
                self.evaluate(result, rho, ll, ntok, epoch=result.tokens_seen // epoch_tokens if epoch_end else None,
                              **priors)
            if bar is not None:
                self.show(bar)
            if epoch_end and monitor is not None and monitor.update(
                    result.trace[-1]["heldout_log_likelihood_per_token"]):
                result.converged = monitor.converged
                break
            if boundary and (stop.requested or (stop_after is not None and result.batches >= stop_after)):
                result.interrupted = True
                break  # (run settles the rounds in flight)
            owed = owed or bool(self.checkpoint) and self.policy.due(result.batches)
            if owed and boundary:
                ll = _settle(counts, updater, result, ll)
                self.write()
                owed = False
        return rho, ll, ntok, evaluated_last


def run(counts: GlobalCounts, updater, batches: Iterable, *, tau: float, kappa: float,
        heldout: tuple[np.ndarray, np.ndarray] | None = None, heldout_every: int = 0,
        alpha: float = 0.1, beta: float = 0.1, max_batches: int | None = None,
        checkpoint: str | None = None, checkpoint_every: int = 0, checkpoint_minutes: float = 0.0,
        resume: bool = False, meta: dict | None = None,
        callback: Callable[[dict], None] | None = None, progress: bool = False,
        stop_after: int | None = None, total_batches: int | None = None,
        epoch_tokens: int | None = None, monitor: ConvergenceMonitor | None = None,
        hyper: Callable[[GlobalCounts, float, float], tuple[float, float]] | None = None) -> RunResult:
    """Apply ``updater`` to ``counts`` for each minibatch of ``batches`` (an iterator that the
    same seed reproduces), with step sizes ``rho_m = (tau + m + 1)^-kappa``.

    Every ``heldout_every`` minibatches (and at the start and the end) the held-out per-token log-likelihood
    (3.108-3.109) is added to the trace against tokens seen and training seconds (held-out evaluation time
    excluded; ``wall_seconds`` includes it).  With ``checkpoint`` the counts, the updater's state, the trace and
    the number of minibatches done are written atomically every ``checkpoint_every`` minibatches /
    ``checkpoint_minutes`` minutes, at the end, and when SIGINT / SIGTERM arrives (the run then stops and returns
    ``interrupted=True``).  ``resume`` reloads the checkpoint (made with the settings ``meta``) and skips the
    minibatches already done, so an interrupted and resumed run ends with the same counts as an uninterrupted
    one.  ``total_batches`` is the progress bar's total, capped by ``max_batches``; ``stop_after`` stops (as if
    interrupted) after that many minibatches in total (tests use it).

    Epochs: every schedule visits each training token once an epoch and no minibatch spans two, so an epoch
    ends where the tokens seen reach a multiple of ``epoch_tokens``.  There the held-out log-likelihood is traced
    (with the record's ``epoch``) and fed to ``monitor`` (:class:`~induce.infer.convergence.ConvergenceMonitor`);
    the run stops when it says so (``converged``).  A resumed run replays the traced epochs into the monitor.

    An updater that runs rounds of local steps on a cluster (:func:`_settled`) is settled before every held-out
    evaluation and at the end; checkpoints, stops and ``stop_after`` wait for the end of its open round.

    ``hyper`` (empirical Bayes of the priors): at each epoch's end ``hyper(counts, alpha, beta)`` gives the priors
    the next epoch's local steps (and the held-out evaluation) use; the epoch's record holds them, and a resumed
    run takes them from its last such record.  ``alpha``, ``beta`` of the result are the final ones.  Steps:
    :func:`_resume`, :meth:`_Run.steps`, :func:`_step`, :class:`_Evaluation`, :func:`_save`.
    """
    meta = dict(meta or {})
    result = RunResult()
    if resume:
        _resume(checkpoint, meta, counts, updater, result)
    start_batch = result.batches
    state = _Run(counts, updater, result, meta, checkpoint, CheckpointPolicy(checkpoint_every, checkpoint_minutes),
                 _Evaluation(counts, heldout, alpha, beta, callback, time.perf_counter() - result.seconds))
    learned = [rec for rec in result.trace if "beta" in rec]  # a resumed run: the priors learned so far
    state.set_priors(*((learned[-1]["alpha"], learned[-1]["beta"]) if learned else (alpha, beta)))
    if start_batch == 0 and (heldout is not None and heldout_every > 0):
        state.evaluate(result, 0.0, 0.0, 0)
    stopping = monitor is not None and heldout is not None and bool(epoch_tokens)
    if stopping:
        for rec in result.trace:  # a resumed run: the epochs already done
            if "epoch" in rec:
                monitor.update(rec["heldout_log_likelihood_per_token"])
        result.converged = monitor.converged
    bar = _progress_bar(start_batch, max_batches, total_batches, meta.get("infer", "stochastic")) if progress else None
    with StopRequest() if checkpoint else _NoStop() as stop:
        rho, ll, ntok, evaluated_last = state.steps(
            iter(()) if result.converged else _remaining(batches, start_batch, max_batches), stop, bar, tau=tau,
            kappa=kappa, heldout_every=heldout_every, epoch_tokens=epoch_tokens, monitor=monitor if stopping else None,
            hyper=hyper, stop_after=stop_after)
    if bar is not None:
        bar.close()
    ll = _settle(counts, updater, result, ll)
    if not evaluated_last and not result.interrupted:
        state.evaluate(result, rho, ll, ntok)
    state.write()
    return result


def _settled(updater) -> bool:
    """Whether ``counts`` hold every minibatch the updater was given: always, but for an updater that runs rounds
    of local steps on a cluster (:class:`induce.distributed.rounds.WorkerRoundsUpdater`) while a round is open or
    in flight."""
    return getattr(updater, "settled", True)


def _at_boundary(updater) -> bool:
    """Whether no minibatch waits for its round to be submitted (always, but for an updater that runs rounds of
    local steps on a cluster inside a round): where checkpoints and stops may settle the run (:func:`_settle`)."""
    return getattr(updater, "between_rounds", True)


def _settle(counts: GlobalCounts, updater, result: RunResult, ll: float) -> float:
    """End an open round of local steps (:func:`_settled`) so that ``counts`` hold every minibatch: where the run
    reads the counts (held-out evaluation, the epoch's end, the end of the run).  Returns the last minibatch's
    log-likelihood (``ll`` when nothing was open); the time counts as training."""
    if _settled(updater):
        return ll
    t0 = time.perf_counter()
    ll = updater.settle(counts)
    result.seconds += time.perf_counter() - t0
    return ll


class _NoStop:
    requested = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

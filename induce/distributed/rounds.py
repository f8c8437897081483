"""``svi`` / ``scvi`` in rounds of local steps on the workers' shards, merged by adding count deltas (thesis eq.
3.103 run locally; streaming distributed Bayesian updating, Broderick et al. 2013; docs/experiments/distributed.md,
"Local rounds").

:class:`~induce.distributed.minibatch.WorkerSentenceUpdater` ships the emission rows of every minibatch's words to
the workers and their statistics back, at every step.  Here a worker runs ``R`` consecutive minibatches
(``sync_every``) on its piece of each, against its own copy of the counts, and the rows travel once a round:

1. the worker cuts its pieces of the round's ``R`` minibatches from its shard and names their distinct words
   ``T_j`` (:func:`_cut_round`);
2. the client sends it the counts of ``T_j`` (plus the transitions and the emission column totals);
3. the worker runs thesis eq. 3.103 ``N <- (1 - rho_m) N + rho_m (I / |b_m^j|) E[C^{b_m^j}]`` for each minibatch
   ``m`` of the round on its piece ``b_m^j`` (extrapolated to the corpus, so that its copy keeps the mass of the
   whole counts), with the client's ``rho_m``, and the local step of
   :func:`induce.infer.stochastic_hmm.sentence_statistics` under its copy (:func:`_run_round`); with one shard it
   hands back its counts, and the run is the single-process run bit for bit;
4. with several shards each returns its delta ``pi_j (N_j^{end} - prod_m (1 - rho_m) N^{start})`` (rows ``T_j``;
   ``pi_j`` its share of the round's sentences; the decay is common to all and replayed by the client); the
   deltas are summed pairwise on the workers (a tree, :func:`_add`) down to at most two partial sums, which the
   client adds (:data:`CLIENT_SUMS`):
   ``N^{end} = prod_m (1 - rho_m) N^{start} + sum_j delta_j``.

What this optimises.  With ``R = 1`` step 4 is eq. 3.103 on the whole minibatch exactly (``pi_j (I / |b^j|)
E[C^{b^j}] = (I / |B|) E[C^{b^j}]``, and the minibatch's statistics are the sum of its pieces'); that is what
:class:`~induce.distributed.minibatch.WorkerSentenceUpdater` computes.  With ``R > 1`` each worker runs SCVI on
its own stream of pieces from the round's start (local SGD / parameter mixing on the same stochastic
approximation), and the merge is the share-weighted average of the workers' copies: the same fixed point (the
collapsed variational objective of thesis eq. 3.98-3.100 for scvi, the ELBO for svi) with bounded staleness, a
worker's local step seeing the others' statistics up to the round's start only, at most ``R - 1`` minibatches
old (as in AD-LDA, Newman et al. 2009; the merge by adding the shards' count deltas is streaming distributed
Bayesian updating, Broderick et al. 2013, with the SCVI decay).  Several shards exchange their rows and deltas
packed (:func:`pack`: float16 mantissas under a power of two a row, a relative error of at most ``2^-11``; one
shard: float64, exact); the client keeps the counts in float64, so the rounding does not accumulate beyond what
one round's delta carries.

Bytes a round per worker: ``|T_j|`` rows of ``2 K + 2`` bytes (:func:`row_bytes`) and their word ids (2 bytes
below ``2^16`` words, :func:`word_ids`) each way, where ``T_j`` grows sublinearly with the round's
``R M / w`` sentences per worker (Heaps' law), so bytes per token fall as ``R`` or ``M`` grow, and do not grow
with the number of workers at a fixed number of sentences per worker and round.
"""

from __future__ import annotations

import itertools
import time
from collections import deque

import numpy as np

from ..corpus.corpus import gather_sentences
from ..infer import stochastic_hmm as stochastic
from .cluster import Meter, nbytes, submit, timed_carried, tree_reduce
from .shards import WorkerCorpus


class ShardCounts(stochastic.GlobalCounts):
    """On a worker for one round: the counts of the words ``T_j`` only (rows ``0..|T_j|-1``), with the run's
    ``W`` (the emission normaliser's ``W beta``) and column totals.  The factor is never folded into the rows
    here (the client does that between rounds, :meth:`GlobalCounts.renormalise`): the column totals of all
    ``W`` words cannot be re-summed from ``T_j``."""

    def __init__(self, trans, rows, factor: float, totals, n_words: int):
        self.trans = np.array(trans, dtype=np.float64)
        self.emit_scaled = np.array(rows, dtype=np.float64)
        self.emit_factor = float(factor)
        self.emit_totals = np.array(totals, dtype=np.float64)
        self._n_words = int(n_words)

    @property
    def n_words(self) -> int:
        return self._n_words

    def renormalise(self) -> None:
        return None


def decayed(x: np.ndarray, rhos) -> np.ndarray:
    """``prod_m (1 - rho_m) x`` as eq. 3.103 computes it with no statistics (``x *= 1 - rho``, in turn)."""
    x = np.array(x, dtype=np.float64)
    for rho in rhos:
        x *= 1.0 - rho
    return x


#: the rows' values on the wire (several shards): float16 mantissas of each row scaled by a power of two, the
#: exponent an int16 a row (docs/experiments/distributed.md, "Third session")
WIRE, EXPONENT = np.float16, np.int16


def pack(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows for the wire: ``(q, e)`` with ``rows[r] ~ q[r] 2^e[r]``, ``2^e[r]`` the power of two above the row's
    largest magnitude (:func:`numpy.frexp`) and ``q`` float16 (round to nearest), so that an entry keeps a
    relative error of at most ``2^-11`` down to ``2^-13`` of its row's largest magnitude, and an absolute error of
    at most ``2^-24`` of it below: ``2 K + 2`` bytes a row against ``8 K`` in float64."""
    rows = np.asarray(rows, dtype=np.float64)
    _, e = np.frexp(np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows)))
    return np.ldexp(rows, -e[:, None]).astype(WIRE), e.astype(EXPONENT)


def unpack(packed: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The float64 rows of :func:`pack`'s ``(q, e)``: ``q 2^e`` (a product by a power of two, exact; ``ldexp`` on
    the broadcast exponents takes ~6x longer)."""
    q, e = packed
    return q.astype(np.float64) * np.ldexp(1.0, e.astype(np.int64))[:, None]


def row_bytes(K: int) -> int:
    """Bytes a row of :func:`pack` takes on the wire (its word id apart: :func:`word_ids`)."""
    return K * np.dtype(WIRE).itemsize + np.dtype(EXPONENT).itemsize


def word_ids(words: np.ndarray) -> np.ndarray:
    """Sorted word ids in the narrowest type that holds the largest: uint16 below ``2^16`` words, else int32."""
    return words.astype(np.uint16 if not len(words) or words[-1] < 2**16 else np.int32)


def _cut_round(shard, pieces):
    """On a worker, phase 1: the round's pieces (local sentence indices, one array per minibatch) as ``(words,
    [(tokens as indices into words, offsets)])``: ``words`` their sorted distinct word ids ``T_j``."""
    cut = [gather_sentences(shard[0], shard[1], idx) for idx in pieces]
    tokens = np.concatenate([t for t, _ in cut])
    # np.unique(tokens, return_inverse=True) by a table over the ids: O(n + W) against a sort (~10x faster on a
    # round's 350k tokens; the cut waits in front of the next round whenever it is not cut ahead)
    present = np.zeros(int(tokens.max()) + 1 if len(tokens) else 0, dtype=bool)
    present[tokens] = True
    words, local = word_ids(np.flatnonzero(present)), (np.cumsum(present, dtype=np.int32) - 1)[tokens]
    ends = np.cumsum([len(t) for t, _ in cut])
    return words, [(local[e - len(t):e], o) for (t, o), e in zip(cut, ends)]


def _words(cut):
    return cut[0], sum(len(t) for t, _ in cut[1])


def _run_round(cut, start, mask, schedule, settings):
    """On a worker, phase 3: eq. 3.103 for each ``(rho, scale)`` of ``schedule = (steps, weight)`` on the pieces of
    ``cut`` under :class:`ShardCounts` made from ``start = (trans, rows of T_j, factor, totals)``.  ``settings =
    (estimator, alpha, beta, W, exact)``.  Exact (one shard): the end counts ``(trans, rows, factor, totals)`` and
    the pieces' log-likelihoods; else (the rows of ``start`` packed, :func:`pack`) the delta ``(T_j, packed rows,
    trans, totals, log-likelihoods)`` of :func:`_delta`, times ``weight``."""
    estimator, alpha, beta, W, exact = settings
    steps, weight = schedule
    trans0, rows0, factor, totals0 = start
    if not exact:
        start = (trans0, unpack(rows0), factor, totals0)
    counts = ShardCounts(*start, W)
    K = counts.n_states
    lls = np.zeros(len(steps))
    for i, ((tokens, offsets), (rho, scale)) in enumerate(zip(cut[1], steps)):
        if len(offsets) > 1:
            ts, ids, es, lls[i] = stochastic.sentence_statistics(counts, estimator, alpha, beta, tokens, offsets,
                                                                 mask)
        else:  # no sentence of this minibatch here: the decay only
            ts, ids, es = np.zeros((K + 1, K)), np.zeros(0, dtype=np.int64), np.zeros((0, K))
        counts.update(rho, ts, scale, ids, es, scale)
    if exact:
        return (counts.trans, counts.emit_scaled, counts.emit_factor, counts.emit_totals), lls
    return _delta(cut[0], counts, start, [rho for rho, _ in steps], weight, lls)


def _delta(words, counts: ShardCounts, start, rhos, weight: float, lls):
    """A shard's change over the round, times ``weight``: its rows ``T_j`` as ``N^{end} - prod (1 - rho)
    N^{start}`` (natural scale: the factor at the end times the change of the scaled rows; after a step with
    ``rho >= 1`` the start is zero, as eq. 3.103 leaves it), packed (:func:`pack`); the transitions and column
    totals likewise, float64."""
    trans0, rows0, _, totals0 = start
    base = 0.0 if any(rho >= 1.0 for rho in rhos) else rows0
    rows = pack(weight * counts.emit_factor * (counts.emit_scaled - base))
    return (words, rows, weight * (counts.trans - decayed(trans0, rhos)),
            weight * (counts.emit_totals - decayed(totals0, rhos)), lls)


def _add(a, b):
    """Two deltas (or sums of deltas) added: rows on the union of their words (a step of the tree reduction),
    summed in float64 and packed again."""
    words = np.union1d(a[0], b[0])
    rows = np.zeros((len(words), a[1][0].shape[1]))
    rows[np.searchsorted(words, a[0])] += unpack(a[1])
    rows[np.searchsorted(words, b[0])] += unpack(b[1])
    return (words, pack(rows), a[2] + b[2], a[3] + b[3], a[4] + b[4])


#: the tree of deltas stops at this many partial sums, which the client gathers and merges one after the other:
#: with two workers no delta travels between them (a round has one dependent hop less), and whatever the number
#: of workers the client's link carries at most two sums a round
CLIENT_SUMS = 2


def tree_sum(client, futures: list, words: list[np.ndarray], K: int):
    """The pairwise sum of the deltas ``futures`` (:func:`_add`; rows ``words[j]``), in shard order, computed on the
    workers (:func:`~.cluster.tree_reduce`) down to :data:`CLIENT_SUMS` partial sums, which the client receives.
    Returns ``(futures, bytes moved between workers)``, counting the second operand of each addition as the one
    that travels (packed rows, :func:`row_bytes`, and their word ids; the float64 transitions and totals)."""
    sums, levels = tree_reduce(client, futures, _add, keep=CLIENT_SUMS)
    moved, level = 0, list(words)
    for pairs in levels:
        moved += sum(len(level[j]) * row_bytes(K) + level[j].nbytes + 8 * (K + 2) * K for _, j in pairs)
        level = [np.union1d(level[i], level[j]) for i, j in pairs] + ([level[-1]] if len(level) % 2 else [])
    return sums, moved


def merge(counts, words, rows, dtrans, dtotals) -> None:
    """Add the summed deltas (rows of ``words`` at natural scale, packed on the wire: :func:`pack`) to the client's
    decayed counts: ``N^{end} = prod (1 - rho) N^{start} + sum_j delta_j``, the rows divided by the factor in
    float64 (in float32, ``rows / factor`` overflowed once the factor fell below ~1e-34: after ~25 epochs of
    Brown)."""
    counts.trans += dtrans
    counts.emit_totals += dtotals
    counts.emit_scaled[words] += unpack(rows) / counts.emit_factor


class WorkerRoundsUpdater(stochastic.SentenceUpdater):
    """``svi`` / ``scvi`` over a :class:`WorkerCorpus` in rounds of ``sync_every`` minibatches (see the module
    docstring).  :func:`induce.algorithms.minibatch.run` hands it one minibatch at a time (global sentence
    indices); it runs a round when it has ``sync_every`` of them or when the run settles it (held-out
    evaluation, an epoch's end, the end).  Between rounds the client's counts are the run's."""

    def __init__(self, corpus: WorkerCorpus, algorithm: str, alpha: float, beta: float, sync_every: int,
                 allowed: np.ndarray = stochastic._NO_MASK, n_sentences: int | None = None):
        super().__init__(algorithm, alpha, beta, corpus.n_sentences if n_sentences is None else n_sentences,
                         allowed)
        self.corpus = corpus
        self.client = corpus.client
        self.sync_every = max(1, int(sync_every))
        self.lengths = corpus.lengths()
        self.meter = Meter()
        self._open: list = []  # (global sentence indices, rho) of the round so far
        self._coming: deque = deque()  # the minibatches after the one being run (see batches)
        self._ahead = None  # (minibatches, shards, pieces, cut futures, word futures) of the next round, cut early

    def batches(self, indices):
        """The minibatches (global sentence indices), read ``sync_every`` ahead so that the next round's pieces
        are cut on the workers while this round runs (phase 1 off the critical path; a round cut short by the
        run leaves the early cut unused)."""
        it = iter(indices)
        while True:
            self._coming.extend(itertools.islice(it, self.sync_every + 1 - len(self._coming)))
            if not self._coming:
                return
            yield self._coming.popleft()

    @property
    def settled(self) -> bool:
        return not self._open

    def __call__(self, counts, rho: float, idx) -> tuple[float, int]:
        self._open.append((idx, rho))
        ll = self.settle(counts) if len(self._open) == self.sync_every else 0.0
        return ll, int(self.lengths[idx].sum())

    def _cut(self, batches: list):
        """Phase 1 of a round of ``batches``: ``(batches, shards touched, pieces per shard, cut futures, word
        futures)``, submitted now and gathered when the round runs."""
        b = self.corpus.sentence_bounds
        sorted_ = [np.asarray(idx, dtype=np.int64) for idx in batches]
        pieces = [[idx[np.searchsorted(idx, b[j]):np.searchsorted(idx, b[j + 1])] - b[j] for idx in sorted_]
                  for j in range(self.corpus.n_shards)]
        shards = [j for j in range(self.corpus.n_shards) if any(len(p) for p in pieces[j])]
        cuts = [submit(self.client, _cut_round, self.corpus.shards[j], pieces[j]) for j in shards]
        self.meter.traffic(0, nbytes([pieces[j] for j in shards]), 0)
        return batches, shards, pieces, cuts, [submit(self.client, _words, c) for c in cuts]

    def settle(self, counts) -> float:
        """Run the open round and merge it into ``counts``; the log-likelihood of its last minibatch."""
        t0 = time.perf_counter()
        steps, self._open = self._open, []
        rhos = [rho for _, rho in steps]
        ahead, self._ahead = self._ahead, None
        same = ahead is not None and len(ahead[0]) == len(steps) and all(a is i for a, (i, _) in zip(ahead[0], steps))
        _, shards, pieces, cuts, word_futures = ahead if same else self._cut([idx for idx, _ in steps])
        words = self.client.gather(word_futures)
        exact = self.corpus.n_shards == 1
        sent = 0
        settings = (self.estimator, self.alpha, self.beta, counts.n_words, exact)
        futures = []
        for j, c, (w, _) in zip(shards, cuts, words):
            start = self._start(counts, w, exact)
            mask = stochastic.dictionary_rows(self.allowed, w, counts.n_states)
            schedule = self._schedule(steps, pieces[j])
            sent += nbytes(start) + nbytes(mask) + nbytes(schedule)
            futures.append(submit(self.client, timed_carried, _run_round, c, start, mask, schedule, settings))
        if len(self._coming) >= self.sync_every:  # the next round, if the run does not cut it short
            self._ahead = self._cut(list(itertools.islice(self._coming, self.sync_every)))
        self._decay(counts, rhos)
        if exact:
            (end, lls), timings = self.client.gather(futures[0])
            received, moved = nbytes((end, lls)), 0
            counts.trans, rows, counts.emit_factor, counts.emit_totals = end
            counts.emit_scaled[words[0][0]] = rows
        else:
            sums, moved = tree_sum(self.client, futures, [w for w, _ in words], counts.n_states)
            received, lls, timings = 0, 0.0, []
            for (w, rows, dtrans, dtotals, ll), timing in self.client.gather(sums):
                merge(counts, w, rows, dtrans, dtotals)
                received, lls, timings = received + nbytes((w, rows, dtrans, dtotals, ll)), lls + ll, timings + timing
        received += sum(nbytes(w) for w, _ in words)
        counts.renormalise()
        self.meter.add(time.perf_counter() - t0, [(None, *t) for t in timings], [n for _, n in words])
        self.meter.traffic(len(steps), sent, received, moved)
        return float(lls[-1])

    def _schedule(self, steps, pieces) -> tuple[list, float]:
        """A shard's ``([(rho_m, I / |b_m^j|)], pi_j)``: its local steps extrapolate its piece ``b_m^j`` of each
        minibatch to the corpus, so that its copy keeps the mass of the whole counts (a piece scaled by ``I /
        |B_m|`` would leave it with the share ``|b_m^j| / |B_m|`` of each step's new counts); its delta then
        counts with the weight ``pi_j = sum_m |b_m^j| / sum_m |B_m|``, its share of the round.  For a round of one
        minibatch the weighted sum ``pi_j (I / |b^j|) E[C^{b^j}]`` is ``(I / |B|) E[C^{b^j}]``: eq. 3.103 on the
        whole minibatch exactly; one shard has ``pi = 1`` and the single-process scale."""
        scales = [(rho, self.n_sentences / max(1, len(p))) for (_, rho), p in zip(steps, pieces)]
        return scales, sum(len(p) for p in pieces) / max(1, sum(len(idx) for idx, _ in steps))

    @staticmethod
    def _start(counts, words, exact: bool):
        """What a shard starts its round from: ``(trans, rows of words, factor, totals)``; exact (one shard) the
        scaled rows and the factor in float64, else the rows at their natural scale packed (:func:`pack`; factor
        1)."""
        if exact:
            return counts.trans, counts.emit_scaled[words], counts.emit_factor, counts.emit_totals
        return counts.trans, pack(counts.emit_factor * counts.emit_scaled[words]), 1.0, counts.emit_totals

    @staticmethod
    def _decay(counts, rhos) -> None:
        """The round's decay on the client's counts (eq. 3.103 with no statistics: a step with ``rho >= 1``
        zeroes the table), as every shard's copy made it."""
        for rho in rhos:
            if rho >= 1.0:
                counts.emit_scaled[:] = 0.0
                counts.emit_factor = 1.0
            else:
                counts.emit_factor *= 1.0 - rho
        counts.trans = decayed(counts.trans, rhos)
        counts.emit_totals = decayed(counts.emit_totals, rhos)

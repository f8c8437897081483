"""``svi`` / ``scvi`` in rounds of local steps on the workers' shards, merged by adding count deltas (thesis eq.
3.103 run locally; streaming distributed Bayesian updating, Broderick et al. 2013; docs/experiments/distributed.md,
"Local rounds").

:class:`~induce.distributed.minibatch.WorkerSentenceUpdater` ships the emission rows of every minibatch's words to
the workers and their statistics back, at every step.  Here a worker runs ``R`` consecutive minibatches
(``sync_every``) on its piece of each, against its own copy of the counts, and the rows travel once a round:

Each shard keeps a copy of the counts on its worker between rounds (:func:`_resident`): made there once from the
run's seed (:class:`Recipe`), or sent by the client on a resumed run or after a copy was lost (:class:`StateLost`,
:meth:`WorkerRoundsUpdater._recover`).  A round:

Rounds grow: a round that starts after ``s`` minibatches of the run holds at most ``s + 1``
(:meth:`WorkerRoundsUpdater.round_size`: 1, 2, 4, ... up to ``R``).

1. the worker cuts its pieces of the round's minibatches from its shard and names their distinct words
   ``T_j`` (:func:`_cut_round`, in the round's task: a task of its own cost the scheduler and the workers more
   CPU than the cut itself, docs/experiments/distributed.md, "Seventh session");
2. the worker advances its copy by the previous round (:func:`advance`: its decay and partial sums, which dask
   brings from the workers holding them, added on the rows of its shard's words only) and takes the rows of
   ``T_j`` (plus the transitions and the emission column totals) from it;
3. the worker runs thesis eq. 3.103 ``N <- (1 - rho_m) N + rho_m (I / |b_m^j|) E[C^{b_m^j}]`` for each minibatch
   ``m`` of the round on its piece ``b_m^j`` (extrapolated to the corpus, so that its copy keeps the mass of the
   whole counts), with the client's ``rho_m``, and the local step of
   :func:`induce.infer.stochastic_hmm.sentence_statistics` under those rows (:func:`_run_round`); with one shard
   it hands back its end counts, and the run is the single-process run bit for bit;
4. with several shards each returns its delta ``pi_j (N_j^{end} - prod_m (1 - rho_m) N^{start})`` (rows ``T_j``;
   ``pi_j`` its share of the round's sentences; the decay is common to all and replayed by every copy); the
   deltas are summed pairwise on the workers (a tree, :func:`_add`) down to at most two partial sums
   (:data:`CLIENT_SUMS`), which the next round's tasks (above two workers from copies made along a tree,
   :func:`spread`) and the client add, in the same order:
   ``N^{end} = prod_m (1 - rho_m) N^{start} + sum_j delta_j``.

With ``staleness = 1`` (:class:`WorkerRoundsUpdater`, :func:`stale_start`) step 2 advances the copy by the round
before the previous one and adds the shard's own delta of the previous round, so no worker waits for the others'
round to end.

The client submits round ``r + 1`` (task graphs: sentence indices) before it merges round ``r`` into its own
counts, which it needs only for held-out evaluation, checkpoints and seeding copies again: it is off the rounds'
critical path, and its traffic is the partial sums whatever the number of workers.

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

Bytes a round: each partial sum's rows (``2 K + 2`` bytes a row, :func:`row_bytes`, and a word id of 2 bytes
below ``2^16`` words, :func:`word_ids`) to the client and to every other worker, on the words of the round
(Heaps' law: sublinear in the round's ``R M`` sentences), so bytes per token fall as ``R`` or ``M`` grow.
"""

from __future__ import annotations

import time
import uuid
import zlib
from collections import deque

import numpy as np

from ..corpus.corpus import distinct, gather_sentences
from ..infer import stochastic_hmm as stochastic
from ..kernels.wire import HALF_VALUES, add_rows, pack_rows
from .cluster import RETRIES, Meter, nbytes, same, submit, timed_carried, tree_reduce
from .shards import WorkerCorpus


class ShardCounts(stochastic.GlobalCounts):
    """On a worker for one round: the counts of the words ``T_j`` only (rows ``0..|T_j|-1``), with the run's
    ``W`` (the emission normaliser's ``W beta``) and column totals.  The factor is never folded into the rows
    here (the client does that between rounds, :meth:`GlobalCounts.renormalise`): the column totals of all
    ``W`` words cannot be re-summed from ``T_j``.  ``rows`` are taken as they are (float64: a gather of a copy's
    rows is already a copy of its own; ~9 MB a round on Brown); the transitions and totals are copied."""

    def __init__(self, trans, rows, factor: float, totals, n_words: int):
        self.trans = np.array(trans, dtype=np.float64)
        self.emit_scaled = np.asarray(rows, dtype=np.float64)
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


def pack(rows: np.ndarray, base: np.ndarray | None = None, coef: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Rows for the wire: ``(q, e)`` with ``rows[r] ~ q[r] 2^e[r]``, ``2^e[r]`` the power of two above the row's
    largest magnitude (:func:`numpy.frexp`) and ``q`` float16 (round to nearest), so that an entry keeps a
    relative error of at most ``2^-11`` down to ``2^-13`` of its row's largest magnitude, and an absolute error of
    at most ``2^-24`` of it below: ``2 K + 2`` bytes a row against ``8 K`` in float64.  Bit for bit
    ``np.ldexp(rows, -e[:, None]).astype(np.float16)``, in one pass (:func:`~induce.kernels.wire.pack_rows`: numpy
    converts float64 to float16 in software, ~19 ms for 25,000 rows of 45, a third of a round's delta).  With
    ``base`` / ``coef``: the rows ``coef * (rows - base)`` packed, bit for bit, without making them (a round's
    delta of 25,000 rows of 45: 8.0 ms made then packed, 2.0 ms so; load ~2)."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    base = np.zeros((0, rows.shape[1])) if base is None else np.ascontiguousarray(base, dtype=np.float64)
    q, e = np.empty(rows.shape, dtype=np.uint16), np.empty(len(rows), dtype=np.int64)
    pack_rows(rows, base, float(coef), q, e)
    return q.view(WIRE), e.astype(EXPONENT)


def unpack(packed: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The float64 rows of :func:`pack`'s ``(q, e)``: ``q 2^e`` (``q`` decoded by
    :data:`~induce.kernels.wire.HALF_VALUES`, numpy's float16 conversion exactly; a product by a power of two,
    exact; ``ldexp`` on the broadcast exponents takes ~6x longer)."""
    q, e = packed
    return HALF_VALUES[q.view(np.uint16)] * np.ldexp(1.0, e.astype(np.int64))[:, None]


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
    words, local = distinct(np.concatenate([t for t, _ in cut]))
    words, local = word_ids(words), local.astype(np.int32)
    ends = np.cumsum([len(t) for t, _ in cut])
    return words, [(local[e - len(t):e], o) for (t, o), e in zip(cut, ends)]


class StateLost(RuntimeError):
    """A round's task found no copy of its shard's counts at the round it follows on its worker (the worker was
    replaced, or dask ran the task elsewhere): the client seeds the copies again from its own counts and runs the
    rounds it has not merged once more (:meth:`WorkerRoundsUpdater._recover`)."""


#: on a worker process: the counts each shard's rounds start from, by ``(run token, shard)``: ``[round, counts,
#: tag dictionary]`` (:func:`_resident`); the copies of at most :data:`RESIDENT_RUNS` runs are kept (the oldest
#: run's dropped when another run seeds its copies: a run that finds its copy gone seeds it again)
_RESIDENT: dict = {}
RESIDENT_RUNS = 2


def _resident(key, r: int, seed, previous: list, exact: bool, shard=None):
    """On a worker: the shard's copy of the counts at the start of round ``r`` and the tag dictionary.  ``seed =
    (counts, allowed)`` (the client's counts as ``(trans, scaled rows, factor, totals)`` in float64, or a
    :class:`Recipe` of them) and the shard ``(tokens, offsets)``: the copy made from it, with the shard's
    vocabulary (:func:`vocabulary`); else the copy at the start of round ``r - len(previous)`` advanced by
    those rounds' results ``previous = [(rhos, results)]`` in turn (:func:`advance`, the same arithmetic as the client's, on the rows of
    the shard's vocabulary only: the copy equals the client's counts bit for bit on those rows, the transitions
    and the column totals, and no round of the shard reads another row); :class:`StateLost` when there is no such
    copy here."""
    if seed is not None:
        made, allowed = seed
        counts = made.counts() if isinstance(made, Recipe) else _counts(*made)
        runs = list(dict.fromkeys(k[0] for k in _RESIDENT))
        for old in runs[:len(runs) - RESIDENT_RUNS + 1] if key[0] not in runs else ():
            for k in [k for k in _RESIDENT if k[0] == old]:
                del _RESIDENT[k]
        _RESIDENT[key] = [r, counts, allowed, None if exact else vocabulary(shard[0], counts.n_words)]
        return counts, allowed
    state = _RESIDENT.get(key)
    if state is None or state[0] != r - len(previous):
        raise StateLost(f"no copy of shard {key[1]}'s counts at round {r - len(previous)} on this worker")
    for rhos, results in previous:
        advance(state[1], rhos, [out for out, _ in results], exact, state[3])
    state[0] = r
    return state[1], state[2]


def _seed_copy(key, r: int, seed, exact: bool, shard) -> str:
    """On a worker: the shard's copy made from ``seed`` for round ``r`` (:func:`_resident`); returns the worker's
    address (where the shard's rounds must run)."""
    from distributed import get_worker

    _resident(key, r, seed, [], exact, shard)
    return get_worker().address


def vocabulary(tokens: np.ndarray, W: int) -> np.ndarray:
    """The words of a shard as a mask over the ``W`` words: the rows its rounds can read (every round's ``T_j`` is
    a subset)."""
    member = np.zeros(W, dtype=bool)
    member[tokens] = True
    return member


def _counts(trans, scaled, factor, totals) -> stochastic.GlobalCounts:
    """A :class:`GlobalCounts` holding copies of these arrays (float64) and this factor."""
    counts = stochastic.GlobalCounts(trans, scaled)
    counts.emit_factor, counts.emit_totals = float(factor), np.array(totals, dtype=np.float64)
    return counts


def checksum(counts) -> int:
    """CRC-32 of the counts' arrays and factor (bit for bit)."""
    crc = 0
    for a in (counts.trans, counts.emit_scaled, np.array(counts.emit_factor), counts.emit_totals):
        crc = zlib.crc32(np.ascontiguousarray(a).view(np.uint8), crc)
    return crc


class Recipe:
    """How a fresh run made its initial counts (thesis eq. 3.106-3.107 from a seed: ``GlobalCounts.exponential
    (default_rng(seed), K, W, n_tokens)``), so that the workers make their copies themselves instead of
    receiving ``W K`` float64 counts (20 MB on Brown); :meth:`counts` raises :class:`StateLost` (the client then
    sends its counts) unless the copy has the client's :func:`checksum`."""

    def __init__(self, seed, K: int, W: int, n_tokens: int, crc: int | None = None):
        self.seed, self.K, self.W, self.n_tokens, self.crc = seed, int(K), int(W), int(n_tokens), crc

    def counts(self) -> stochastic.GlobalCounts:
        counts = stochastic.GlobalCounts.exponential(np.random.default_rng(self.seed), self.K, self.W, self.n_tokens)
        if checksum(counts) != self.crc:
            raise StateLost("the counts made from the run's seed differ from the client's")
        return counts


def advance(counts, rhos, outs: list, exact: bool, member: np.ndarray | None = None) -> None:
    """``counts`` at a round's start made the counts at its end from the round's results ``outs`` (the client's
    copy and every worker's: the same operations in the same order, so the copies stay equal bit for bit): the
    round's decay (:meth:`WorkerRoundsUpdater._decay`), then one shard's end counts assigned (``exact``) and the
    factor folded if it fell below 1e-100 (:meth:`GlobalCounts.renormalise`), or the partial sums of the deltas
    added in shard order (:func:`merge`; on a worker only the rows of ``member``, its shard's words) and the factor
    folded with the column totals kept (:func:`fold`: they cannot be re-summed from the rows of one shard)."""
    WorkerRoundsUpdater._decay(counts, rhos)
    if exact:
        (words, (trans, rows, factor, totals)), _ = outs[0]
        counts.trans, counts.emit_factor = np.array(trans, dtype=np.float64), float(factor)
        counts.emit_totals = np.array(totals, dtype=np.float64)
        counts.emit_scaled[words] = rows
        counts.renormalise()
        return
    for w, rows, dtrans, dtotals, *_ in outs:
        merge(counts, w, rows, dtrans, dtotals, member)
    fold(counts)


def fold(counts) -> None:
    """The factor folded into the table once it falls below 1e-100, as :meth:`GlobalCounts.renormalise` does, but
    the column totals kept as eq. 3.103 left them (a copy holding current rows of one shard's words only cannot
    re-sum them)."""
    if counts.emit_factor < stochastic._RENORMALISE_BELOW:
        counts.emit_scaled *= counts.emit_factor
        counts.emit_factor = 1.0


def _run_round(shard, pieces, key, r: int, seed, previous, schedule, settings, own=None):
    """On a worker, round ``r`` for shard ``key[1]`` (its ``(tokens, offsets)``): its ``pieces`` cut
    (:func:`_cut_round`), then eq. 3.103 for each ``(rho, scale)`` of ``schedule = (steps, weight)`` on them under
    :class:`ShardCounts` made from the rows of their words ``T_j`` in the shard's copy of the counts
    (:func:`_resident`; the copy itself stays at the round's start until the next round advances it).
    ``settings = (estimator, alpha, beta, W, exact)``.  With ``own = (rhos, result)`` (staleness 1: the
    shard's own task of round ``r - 1``, on this worker) the copy stands at the start of round ``r - 1`` and the
    round starts from it decayed by round ``r - 1`` plus the shard's own delta of it (:func:`stale_start`).
    Exact (one shard): ``((T_j,
    end counts (trans, rows, factor, totals)), log-likelihoods)``; else the delta ``(T_j, packed rows, trans,
    totals, log-likelihoods)`` of :func:`_delta`, times ``weight``."""
    estimator, alpha, beta, W, exact = settings
    steps, weight = schedule
    cut = _cut_round(shard, pieces)
    copy, allowed = _resident(key, r if own is None else r - 1, seed, previous, exact, shard)
    words = cut[0]
    start = ShardCounts(copy.trans, copy.emit_scaled[words], copy.emit_factor, copy.emit_totals, W)
    if own is not None:
        stale_start(start, words, own[0], own[1][0])
    counts = ShardCounts(start.trans, start.emit_scaled.copy(), start.emit_factor, start.emit_totals, W)
    start = (start.trans, start.emit_scaled, start.emit_factor, start.emit_totals)
    K = counts.n_states
    mask = stochastic.dictionary_rows(allowed, words, K)
    lls = np.zeros(len(steps))
    for i, ((tokens, offsets), (rho, scale)) in enumerate(zip(cut[1], steps)):
        if len(offsets) > 1:
            ts, ids, es, lls[i] = stochastic.sentence_statistics(counts, estimator, alpha, beta, tokens, offsets,
                                                                 mask)
        else:  # no sentence of this minibatch here: the decay only
            ts, ids, es = np.zeros((K + 1, K)), np.zeros(0, dtype=np.int64), np.zeros((0, K))
        counts.update(rho, ts, scale, ids, es, scale)
    if exact:
        return (words, (counts.trans, counts.emit_scaled, counts.emit_factor, counts.emit_totals)), lls
    return _delta(words, counts, start, [rho for rho, _ in steps], weight, lls)


def stale_start(counts: ShardCounts, words: np.ndarray, rhos, delta) -> None:
    """Staleness 1: the rows ``words`` of a copy at the start of round ``r - 1`` (``counts``) made the start of
    round ``r`` without the others' round ``r - 1``: the round's decay (:meth:`WorkerRoundsUpdater._decay`) and
    the shard's own delta of it (:func:`_delta`, rows on its ``T_j``) added.  So the copy shard ``j`` starts round
    ``r`` from is ``C_r^j = D_{r-1} N_{r-1} + delta_j^{r-1} = N_r - O_{r-1}^j``, the client's counts
    ``N_r = D_{r-1} N_{r-1} + sum_i delta_i^{r-1}`` (thesis eq. 3.103 over the round, ``D`` its decay ``prod (1 -
    rho_m)``) less the others' deltas ``O_{r-1}^j = sum_{i != j} delta_i^{r-1}``, which reach it one round late,
    decayed by the round they missed (:func:`advance` of round ``r - 1`` on the copy before round ``r + 1``)."""
    WorkerRoundsUpdater._decay(counts, rhos)
    own, (q, e), dtrans, dtotals = delta[:4]
    at = np.minimum(np.searchsorted(words, own), max(len(words) - 1, 0))
    hit = words[at] == own if len(words) else np.zeros(len(own), dtype=bool)
    merge(counts, at[hit], (q[hit], e[hit]), dtrans, dtotals)


def _delta(words, counts: ShardCounts, start, rhos, weight: float, lls):
    """A shard's change over the round, times ``weight``: its rows ``T_j`` as ``N^{end} - prod (1 - rho)
    N^{start}`` (natural scale: the factor at the end times the change of the scaled rows; after a step with
    ``rho >= 1`` the start is zero, as eq. 3.103 leaves it), packed (:func:`pack`); the transitions and column
    totals likewise, float64; the bytes moved between workers to make it (none: :func:`_add` counts them)."""
    trans0, rows0, _, totals0 = start
    base = None if any(rho >= 1.0 for rho in rhos) else rows0
    rows = pack(counts.emit_scaled, base, weight * counts.emit_factor)
    return (words, rows, weight * (counts.trans - decayed(trans0, rhos)),
            weight * (counts.emit_totals - decayed(totals0, rhos)), lls, 0)


def _add(a, b):
    """Two deltas (or sums of deltas) added: rows on the union of their words (a step of the tree reduction),
    summed in float64 and packed again; the bytes moved are both operands' and the second's arrays (the one
    that travels to the first's worker)."""
    words = np.union1d(a[0], b[0])
    rows = np.zeros((len(words), a[1][0].shape[1]))
    rows[np.searchsorted(words, a[0])] += unpack(a[1])
    rows[np.searchsorted(words, b[0])] += unpack(b[1])
    return (words, pack(rows), a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5] + nbytes(b[:4]))


#: the tree of deltas stops at this many partial sums, which the client gathers and merges one after the other:
#: with two workers no delta travels between them (a round has one dependent hop less), and whatever the number
#: of workers the client's link carries at most two sums a round
CLIENT_SUMS = 2


def tree_sum(client, futures: list):
    """The pairwise sum of the deltas ``futures`` (:func:`_add`), in shard order, computed on the workers
    (:func:`~.cluster.tree_reduce`) down to :data:`CLIENT_SUMS` partial sums (futures, in shard order); each
    carries the bytes its additions moved between workers."""
    return tree_reduce(client, futures, _add, keep=CLIENT_SUMS)[0]


#: the partial sums reach the workers along a binary tree of copies (:func:`spread`) above this many workers;
#: up to it every worker fetches them from their holders (two workers: each the other's, one hop either way)
TREE_ABOVE = 2


def spread(client, results: list, homes: list) -> dict:
    """Copies of the partial sums ``results`` (futures) on the distinct workers of ``homes`` (a shard's worker, or
    None), made along a binary tree: the copy on the ``i``-th worker is fetched from the ``(i - 1) // 2``-th's, so
    every worker's link carries at most three transfers a sum (one in, two out) and the last copy arrives after
    ``ceil(log2 w)`` hops, instead of the ``w - 1`` transfers through the holder's link that dask makes when every
    task fetches the sum itself (docs/experiments/distributed.md, the step model's ``g(w)``).  Returns ``{worker:
    [copies in the order of results]}``; empty up to :data:`TREE_ABOVE` workers.  The copies are
    :func:`~.cluster.same` tasks (a copy lost with its worker is made again from its parent)."""
    order = list(dict.fromkeys(h for h in homes if h is not None))
    if len(order) <= TREE_ABOVE:
        return {}
    near = {order[0]: [client.submit(same, f, pure=False, workers=[order[0]], allow_other_workers=True)
                       for f in results]}
    for i, worker in enumerate(order[1:], start=1):
        near[worker] = [client.submit(same, f, pure=False, workers=[worker], allow_other_workers=True)
                        for f in near[order[(i - 1) // 2]]]
    return near


def merge(counts, at, rows, dtrans, dtotals, member: np.ndarray | None = None) -> None:
    """Add summed deltas to decayed counts: ``N^{end} = prod (1 - rho) N^{start} + sum_j delta_j``, the rows
    (natural scale, packed on the wire: :func:`pack`) onto the rows ``at`` of ``counts.emit_scaled`` (word ids
    in the client's table or a copy; positions in a round's :class:`ShardCounts`: :func:`stale_start`), divided by
    the factor in float64 (in float32, ``rows / factor`` overflowed once the factor fell below ~1e-34: after ~25
    epochs of Brown); with ``member`` (a worker's copy) the rows of its shard's words only."""
    counts.trans += dtrans
    counts.emit_totals += dtotals
    q, e = rows
    add_rows(counts.emit_scaled, np.asarray(at, dtype=np.int64), q.view(np.uint16), e.astype(np.int64),
             float(counts.emit_factor), np.ones(0, dtype=bool) if member is None else member, HALF_VALUES)


class _Round:
    """A round submitted and not yet merged into the client's counts: its minibatches ``steps`` ``[(indices,
    rho)]``, the shards' pieces (local sentence indices), the futures the client merges (``results``: the partial sums,
    or one shard's end counts) and the tokens each shard runs."""

    def __init__(self, number: int, steps: list, pieces: list, tokens: list[int]):
        self.number, self.steps, self.pieces, self.tokens = number, steps, pieces, tokens
        self.rhos = [rho for _, rho in steps]
        self.results: list = []
        self.tasks: list = []  # the shards' tasks, in shard order (staleness 1: the next round's own deltas)
        self.sent = self.moved = self.received = 0
        self.followed = False  # a later round's tasks take this round's results to their workers


class WorkerRoundsUpdater(stochastic.SentenceUpdater):
    """``svi`` / ``scvi`` over a :class:`WorkerCorpus` in rounds of ``sync_every`` minibatches (see the module
    docstring).  :func:`induce.algorithms.minibatch.run` hands it one minibatch at a time (global sentence
    indices); it submits a round when it has ``sync_every`` of them or when the run settles it (held-out
    evaluation, an epoch's end, the end).

    The counts stay on the workers between rounds: each shard keeps a copy (:func:`_resident`, seeded once from
    the client's counts), and a round's task advances it by the previous round's results, which dask moves from
    worker to worker (the task's dependencies), before its local steps.  So the client sends task graphs, and a
    round is submitted before the previous one is merged into the client's counts (:meth:`launch`): the client
    receives the previous round's partial sums (at most :data:`CLIENT_SUMS`, whatever the number of workers)
    and merges them (:func:`advance`) while the workers run the next round.  Between :meth:`settle` and the next
    round the client's counts are the run's.

    ``staleness = 1`` (several shards): rounds that never wait.  A shard's task of round ``r`` starts from its copy
    advanced by round ``r - 2``'s partial sums plus its own round ``r - 1`` delta (:func:`stale_start`), so it
    depends on its own previous task (same worker) and on sums that finished a round earlier, not on the other
    workers' round ``r - 1``; the others' deltas reach it a round late, decayed by the round they missed, so the
    client's counts stay ``N_{r+1} = D_r N_r + sum_j delta_j^r`` and the copies equal them once every delta is in
    (bounded staleness of one round, as in stale-synchronous parameter servers, Ho et al. 2013).  After
    :meth:`settle` the next round starts fresh (staleness 0), so checkpoints and held-out evaluations see the
    run's counts; a lost copy is seeded again from the client's counts, a fresh start for the rounds run again
    (not bit for bit the run that lost nothing)."""

    def __init__(self, corpus: WorkerCorpus, algorithm: str, alpha: float, beta: float, sync_every: int,
                 allowed: np.ndarray = stochastic._NO_MASK, n_sentences: int | None = None, staleness: int = 0):
        super().__init__(algorithm, alpha, beta, corpus.n_sentences if n_sentences is None else n_sentences,
                         allowed)
        self.corpus = corpus
        self.client = corpus.client
        self.sync_every = max(1, int(sync_every))
        if staleness not in (0, 1):
            raise ValueError(f"staleness must be 0 or 1, got {staleness!r}")
        self.staleness = staleness if corpus.n_shards > 1 else 0  # (one shard: its delta is the whole sum)
        self.lengths = corpus.lengths()
        self.meter = Meter()
        self._token = uuid.uuid4().hex  # this run's copies on the workers
        self._open: list = []  # (global sentence indices, rho) of the round so far
        self._handed = 0  # minibatches handed to the updater in the run (a resumed run: load)
        self._flight: deque = deque()  # rounds submitted, not merged into the client's counts (:class:`_Round`)
        self._rounds = 0  # rounds submitted
        self._seed = True  # the next round seeds the workers' copies from the client's counts
        self._mark = 0.0  # when the interval the meter charges to the next merged round began
        self._ll = 0.0  # the last merged minibatch's log-likelihood
        #: a fresh run's :class:`Recipe` of its initial counts (set by the caller): the first round's seed
        self.recipe: Recipe | None = None
        self._homes: dict[int, str] = {}  # shard -> the worker holding its copy
        self._behind: list = []  # rounds submitted whose results the copies have not taken (oldest first)

    def batches(self, indices):
        """The minibatches (global sentence indices) as given: a round's task cuts its pieces itself."""
        return iter(indices)

    @property
    def between_rounds(self) -> bool:
        """No minibatch is waiting for its round (checkpoints and stops wait for this, then :meth:`settle`)."""
        return not self._open

    @property
    def settled(self) -> bool:
        """The client's counts hold every minibatch the updater was given."""
        return not self._open and not self._flight

    def __call__(self, counts, rho: float, idx) -> tuple[float, int]:
        self._open.append((idx, rho))
        self._handed += 1
        if len(self._open) == self.round_size(self._handed - len(self._open)):
            self.launch(counts)
        return 0.0, int(self.lengths[idx].sum())

    def round_size(self, start: int) -> int:
        """The minibatches of a round that starts after ``start`` minibatches of the run: ``min(R, start + 1)``,
        so rounds grow 1, 2, 4, ... up to ``R = sync_every``: a local step is never staler than the minibatches
        before its round (the early steps, with the largest ``rho``, move the counts most).  Measured, one epoch,
        2 workers: held-out +0.0037 / +0.0031 nats a token at ``R = 16`` (Brown / 2M stream), +0.016 / +0.0086
        at ``R = 64`` (docs/experiments/distributed.md, "Fourth session"); over 8 seeds on Brown at ``R = 64``, +0.015
        against a single round (standard error 0.0025, "Fifth session")."""
        return min(self.sync_every, start + 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """The checkpoint's state: the minibatches handed so far (a resumed run sizes its rounds as one run
        does)."""
        return {"minibatches": np.array(self._handed, dtype=np.int64)}

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        """A checkpoint's state (:meth:`arrays`; one written before rounds grew: taken as past the growth)."""
        self._handed = int(arrays["minibatches"]) if "minibatches" in arrays else self.sync_every

    def _pieces(self, batches: list) -> list:
        """Each shard's pieces of the minibatches ``batches`` (global sentence indices) as its local sentence
        indices; every shard takes part in every round (its copy advances a round at a time), with no sentence
        if need be."""
        b = self.corpus.sentence_bounds
        sorted_ = [np.asarray(idx, dtype=np.int64) for idx in batches]
        return [[idx[np.searchsorted(idx, b[j]):np.searchsorted(idx, b[j + 1])] - b[j] for idx in sorted_]
                for j in range(self.corpus.n_shards)]

    def launch(self, counts) -> None:
        """Submit the open round (its tasks wait on the workers for the previous round's results), then merge
        every earlier round into ``counts`` while it runs."""
        steps, self._open = self._open, []
        pieces = self._pieces([idx for idx, _ in steps])
        b = self.corpus.sentence_bounds
        tokens = [int(sum(self.lengths[b[j] + p].sum() for p in ps)) for j, ps in enumerate(pieces)]
        self._submit(counts, _Round(self._rounds, steps, pieces, tokens))
        self._rounds += 1
        while len(self._flight) > 1:
            self._collect(counts)

    def settle(self, counts) -> float:
        """Submit the open round and merge every round into ``counts``; the log-likelihood of the last
        minibatch."""
        if self._open:
            self.launch(counts)
        while self._flight:
            self._collect(counts)
        return self._ll

    def prepare(self, counts) -> None:
        """Make the workers' copies of ``counts`` now, before the run's first minibatch, as the single process
        makes its counts before its run (a fresh run's setup, not its training; each copy from the run's
        :class:`Recipe` on its worker), so that the first round advances them like any other.  A copy that cannot
        be made now (its worker died) is made by the first round instead, as after a lost copy."""
        seed, size = self._seeding(counts)
        exact = self.corpus.n_shards == 1
        made = [self.client.submit(_seed_copy, (self._token, j), self._rounds, seed, exact, shard, pure=False,
                                   retries=0, workers=[self._homes[j]] if j in self._homes else None,
                                   allow_other_workers=j in self._homes) for j, shard in enumerate(self.corpus.shards)]
        try:
            self._homes = dict(enumerate(self.client.gather(made)))
        except Exception:  # (a worker lost: the first round seeds the copies, _submit)
            self._seed = True
            return
        self.meter.traffic(0, size, 0, (self.corpus.n_shards - 1) * size)

    def _seeding(self, counts):
        """The seed of the workers' copies, ``(future, bytes)``: a fresh run's :class:`Recipe` (once), else
        ``counts`` themselves; the shards' workers asked of the scheduler.  The rounds after it advance the
        copies."""
        held = self.client.who_has(self.corpus.shards)
        self._homes = {j: held[f.key][0] for j, f in enumerate(self.corpus.shards) if held.get(f.key)}
        recipe, self.recipe = self.recipe, None  # (once: a copy lost later is seeded from the counts)
        if recipe is not None:
            recipe.crc = checksum(counts)
        made = recipe or (counts.trans, counts.emit_scaled, counts.emit_factor, counts.emit_totals)
        self._seed, self._behind = False, []
        return submit(self.client, same, (made, self.allowed)), nbytes((made, self.allowed))

    def _submit(self, counts, rd: _Round) -> None:
        """Submit round ``rd``'s tasks, one a shard: seeded from ``counts`` (the first round, or after a lost
        copy), else advancing the shard's copy by the round in flight before it."""
        if not self._flight:
            self._mark = time.perf_counter()
        exact = self.corpus.n_shards == 1
        settings = (self.estimator, self.alpha, self.beta, counts.n_words, exact)
        seed, previous, own = None, [], None
        if self._seed:
            seed, size = self._seeding(counts)
            rd.sent += size
            rd.moved += (self.corpus.n_shards - 1) * size
        else:  # the rounds before the copies' next start: in flight, or merged (they advance as the next round runs)
            own = self._flight[-1] if self.staleness and self._flight else None
            at = rd.number - (own is not None)
            taken, self._behind = [b for b in self._behind if b.number < at], [b for b in self._behind if b.number >= at]
            for b in taken:
                if b not in self._flight and not b.followed:  # merged already: its results now travel to every worker
                    self.meter.traffic(0, 0, 0, self._broadcast(b))
                b.followed = True
            previous = [(b.rhos, b.results) for b in taken]
        homes = [self._homes.get(j) for j in range(self.corpus.n_shards)]
        near = [spread(self.client, results, homes) for _, results in previous]
        futures = []
        for j, pieces in enumerate(rd.pieces):
            schedule = self._schedule(rd.steps, pieces)
            rd.sent += nbytes((pieces, schedule))
            # on the worker holding the shard's copy (dask would take it to the larger inputs; none while a lost
            # shard is being read again); no retries: a task run elsewhere finds no copy (StateLost) and the client
            # recovers (_recover)
            home = [self._homes[j]] if j in self._homes else None
            given = [(rhos, tree[home[0]] if home and home[0] in tree else results)
                     for (rhos, results), tree in zip(previous, near)]
            mine = (own.rhos, own.tasks[j]) if own is not None else None
            futures.append(self.client.submit(timed_carried, _run_round, self.corpus.shards[j], pieces,
                                              (self._token, j), rd.number, seed, given, schedule, settings, mine,
                                              pure=False, retries=0, workers=home,
                                              allow_other_workers=home is not None))
        rd.tasks = futures
        if exact:
            rd.results = futures
        else:
            rd.results = tree_sum(self.client, futures)
        self._flight.append(rd)
        self._behind.append(rd)

    def _collect(self, counts) -> None:
        """Merge the oldest round in flight into ``counts`` (:func:`advance`), recovering lost copies
        (:meth:`_recover`) at most :data:`~.cluster.RETRIES` times."""
        for attempt in range(RETRIES + 1):
            rd = self._flight[0]
            try:
                outs = self.client.gather(rd.results)
                break
            except Exception:  # a lost copy (StateLost), a killed worker: the rounds run again from counts
                if attempt == RETRIES:
                    raise
                self._recover(counts)
        done = self._flight.popleft()
        done.tasks = []  # (recovery runs only the rounds in flight again)
        exact = self.corpus.n_shards == 1
        advance(counts, rd.rhos, [out for out, _ in outs], exact)
        self._ll = float(sum(out[1] if exact else out[4] for out, _ in outs)[-1])
        received = nbytes([out for out, _ in outs])
        tree = 0 if exact else sum(out[5] for out, _ in outs)
        rd.received = received
        moved = rd.moved + tree + (self._broadcast(rd) if rd.followed else 0)
        now = time.perf_counter()
        wall, self._mark = now - self._mark, now
        timings = [t for _, timing in outs for t in timing]  # in shard order
        self._homes = {j: t[1] for j, t in enumerate(timings)}
        self.meter.add(wall, [(None, *t) for t in timings], rd.tokens)
        self.meter.traffic(len(rd.steps), rd.sent, received, moved)

    def _broadcast(self, rd: _Round) -> int:
        """Bytes that carry round ``rd``'s results to the workers whose copies advance by them: every shard's but
        the one holding each (an estimate: shards on one worker share a transfer)."""
        return (self.corpus.n_shards - 1) * rd.received

    def _recover(self, counts) -> None:
        """Run the rounds in flight again, the first seeding every shard's copy from ``counts`` (which hold every
        round before it): a copy lost with its worker, or a task that ran where its copy is not."""
        rounds, self._flight = list(self._flight), deque()
        self._seed = True
        for rd in rounds:
            self._submit(counts, _Round(rd.number, rd.steps, rd.pieces, rd.tokens))

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

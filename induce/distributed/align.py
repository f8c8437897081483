"""IBM-1 and HMM word alignment ``em`` / ``vi`` with the E-step mapped over shards of sentence pairs
(docs/experiments/distributed.md).

The pairs are cut into contiguous shards, one per worker, each held on its
worker as offsets and its cells renumbered to the distinct table entries it
touches (``ids``).  When the pairs were read from files
(:class:`induce.align.aligner.PairSource`) the workers read their own line
ranges of the files (:func:`read_pairs`, :func:`~.shards.line_cuts`) and
look their cells up in the table (:func:`induce.kernels.align.lookup_cells`),
sending back ``ids`` only; otherwise (pairs in memory) the client ships each
worker its pairs once.  Per pass the client sends each worker the parameters
of its entries only, ``vals[ids]``, every worker runs the existing kernel
(:func:`induce.kernels.align.ibm1_batch_pass` or
:func:`~induce.kernels.align.hmm_batch_pass`) over its pairs, and the entry
counts (and jump statistics) are summed as a tree on the workers, in shard
order, on the union of the shards' entries; the client gathers the one sum.
"""

from __future__ import annotations

import operator
import time
import warnings
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..align.direction import _Trainer, encode_side
from ..corpus.read_lines import _opener
from ..errors import InduceError
from ..kernels import align as K
from ..kernels.wire import add_sparse
from . import cluster
from .cluster import Meter, nbytes, rerun, same, submit, timed_carried, tree_reduce
from .rounds import CLIENT_SUMS
from .shards import checksum, file_ranges, line_cuts, range_file, shard_bounds


def _pairs(src_off, tgt_off, cell_off, cells, lo, hi):
    """Pairs ``lo .. hi-1``: rebased offsets, their table entries ``ids`` (int32: they travel with each pass's
    counts, :func:`_add`) and their cells as indices into ``ids``."""
    c0, c1 = cell_off[lo], cell_off[hi]
    ids, local = np.unique(cells[c0:c1], return_inverse=True)
    return ((src_off[lo:hi + 1] - src_off[lo], tgt_off[lo:hi + 1] - tgt_off[lo], cell_off[lo:hi + 1] - c0,
             local.astype(cells.dtype).reshape(-1)), ids.astype(np.int32))


def read_pairs(client, source, src_vocab, tgt_vocab, n_shards: int | None = None) -> list | None:
    """Futures of the kept pairs of ``source`` (a :class:`~induce.align.aligner.PairSource`) in about equal
    line ranges, one per worker by default, each read by its worker and encoded with the vocabularies as
    ``(src_tok, src_off, tgt_tok, tgt_off)``; ``None`` when the input is not regular uncompressed files (the
    pairs are then shipped)."""
    files = [f for f in (source.src, source.tgt) if f is not None]
    if not all(Path(f).is_file() and _opener(f)[1] == "file" for f in files):
        return None
    n = n_shards or cluster.n_workers(client)
    cuts = line_cuts(source.src, source.tgt, n) if source.tgt is not None else \
        [(ranges[0], None) for ranges in file_ranges(source.src, "plain", n)]
    return [submit(client, _read_pairs, source, a, b, src_vocab, tgt_vocab) for a, b in cuts]


def _read_pairs(source, src_range, tgt_range, src_vocab, tgt_vocab):
    """On a worker: the kept pairs of byte ranges of the source's file(s), encoded (:func:`encode_side`)."""
    with range_file(*src_range) as src, (range_file(*tgt_range) if tgt_range else nullcontext()) as tgt:
        part = replace(source, src=src, tgt=tgt)
        pairs = part.pairs()
    pairs = [pairs[k] for k in part.kept(pairs)]
    return (*encode_side((s for s, _ in pairs), src_vocab, False), *encode_side((t for _, t in pairs), tgt_vocab,
                                                                                 False))


def _n_pairs(shard) -> int:
    return len(shard[1]) - 1


def _lookup(shard, swapped: bool, row_ptr, cols):
    """On a worker: a read shard's pairs in the direction's layout (:func:`_pairs`) and their ``ids``, the cells
    looked up in the direction's table."""
    src_tok, src_off, tgt_tok, tgt_off = shard
    if swapped:
        src_tok, src_off, tgt_tok, tgt_off = tgt_tok, tgt_off, src_tok, src_off
    cells, cell_off = K.lookup_cells(row_ptr, cols, src_tok, src_off, tgt_tok, tgt_off)
    return _pairs(src_off, tgt_off, cell_off, cells.astype(np.int32), 0, len(src_off) - 1)


def _ibm1_task(shard, ids, vals):
    """On a worker: a shard's IBM-1 E-step under its entries' parameters ``vals``, as a term of :func:`_add`."""
    src_off, tgt_off, cell_off, cells = shard
    counts = np.zeros(len(vals))
    ll = K.ibm1_batch_pass(np.arange(len(src_off) - 1, dtype=np.int64), src_off, tgt_off, cell_off, cells, vals,
                           counts)
    return ids, counts, ll, np.zeros(0), np.zeros(0), 0


def _hmm_task(shard, ids, vals, weights, null_prob, max_jump):
    """On a worker: a shard's HMM E-step under its entries' parameters ``vals``, as a term of :func:`_add`."""
    src_off, tgt_off, cell_off, cells = shard
    counts, jumps, denom = np.zeros(len(vals)), np.zeros(len(weights)), np.zeros(len(weights))
    ll = K.hmm_batch_pass(np.arange(len(src_off) - 1, dtype=np.int64), src_off, tgt_off, cell_off, cells, vals,
                          weights, null_prob, max_jump, counts, jumps, denom)
    return ids, counts, ll, jumps, denom, 0


def _add(a, b):
    """Two shards' (or sums of shards') E-step statistics added: the entry counts on the union of their table
    entries ``ids``, the log-likelihoods and the jump statistics; the bytes moved are both operands' and the
    second's statistics (which travel to the first's worker)."""
    ids, counts = add_sparse(a[0], a[1], b[0], b[1])
    return ids, counts, a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5] + nbytes(b[:5])


class ClusterTrainer(_Trainer):
    """The batch trainer of one alignment direction with its E-steps on the workers of ``client``; use as
    ``train_direction(..., trainer=functools.partial(ClusterTrainer, client))`` (``meter``: where the steps are
    recorded, shared by the directions; ``pairs``: the shards of :func:`read_pairs`, ``swapped`` for the
    reverse direction, else the client ships the pairs)."""

    def __init__(self, client, *args, n_shards: int | None = None, meter: Meter | None = None,
                 pairs: list | None = None, swapped: bool = False):
        super().__init__(*args)
        self.client = client
        self.meter = meter if meter is not None else Meter()
        self.shards = self._read(pairs, swapped) if pairs is not None else None
        if self.shards is None:
            bounds = shard_bounds(self.cell_off, n_shards or cluster.n_workers(client))
            pieces = [self._piece(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
            self.shards = [submit(client, same, *shard) for shard, _ in pieces]
            self.ids = [ids for _, ids in pieces]
            self.id_futures = [submit(client, same, ids) for ids in self.ids]
            self.n_pairs = np.diff(bounds)

    def _piece(self, lo, hi):
        return _pairs(self.b.src_off, self.b.tgt_off, self.cell_off, self.cells, lo, hi)

    def _read(self, pairs: list, swapped: bool) -> list | None:
        """The shards the workers read, their cells looked up in this direction's table; checked against the
        client's pairs (sizes, ``ids`` and a CRC-32 per shard); ``None``, with a warning, if they differ (the
        files changed since the client read them) or the workers cannot read the files."""
        c, t = self.client, self.table
        try:
            sizes = np.array(c.gather([submit(c, _n_pairs, p) for p in pairs]), dtype=np.int64)
        except (OSError, InduceError) as exc:  # e.g. the files are not at that path on the workers' machines
            warnings.warn(f"the workers cannot read the parallel files ({exc}): the pairs are shipped to them")
            return None
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        looked = [submit(c, _lookup, p, swapped, t.row_ptr, t.cols) for p in pairs]
        shards = [submit(c, operator.getitem, f, 0) for f in looked]
        if bounds[-1] == self.b.n_pairs:
            ids = c.gather([submit(c, operator.getitem, f, 1) for f in looked])
            crcs = c.gather([submit(c, checksum, s) for s in shards])
            pieces = [self._piece(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
            if all(np.array_equal(i, p[1]) and crc == checksum(p[0]) for i, crc, p in zip(ids, crcs, pieces)):
                self.ids, self.n_pairs = ids, sizes
                self.id_futures = [submit(c, operator.getitem, f, 1) for f in looked]
                return shards
        warnings.warn("the parallel files are not what was read from them: the pairs are shipped to the workers")
        return None

    def _reduced(self, task, vals, counts, *args) -> tuple:
        """``task`` on every shard with its entries' parameters, the statistics summed as a tree on the workers
        (:func:`~.cluster.tree_reduce`, in shard order) down to :data:`~.rounds.CLIENT_SUMS` partial sums, which
        the client adds (two shards: no addition on the workers, no hop more than the client's own sum, and the
        same floats in the same order) to ``counts`` (zeros); returns ``(log-likelihood, jump statistics, their
        denominators)``."""
        t0 = time.perf_counter()
        sent = [(vals[ids], *args) for ids in self.ids]

        def run():
            futures = [submit(self.client, timed_carried, task, s, i, *a)
                       for s, i, a in zip(self.shards, self.id_futures, sent)]
            return self.client.gather(tree_reduce(self.client, futures, _add, keep=CLIENT_SUMS)[0])

        parts = rerun(run)
        (ids, summed, ll, jumps, denom, moved), timings = parts[0]
        for (more_ids, more, l, j, d, m), t in parts[1:]:
            ids, summed = add_sparse(ids, summed, more_ids, more)
            ll, jumps, denom, moved, timings = ll + l, jumps + j, denom + d, moved + m, timings + t
        self.progress(int(self.n_pairs.sum()))
        self.meter.add(time.perf_counter() - t0, [(None, *t) for t in timings], self.n_pairs)
        self.meter.traffic(0, nbytes(sent), nbytes([part[:5] for part, _ in parts]), moved)
        counts[ids] += summed
        return ll, jumps, denom

    def ibm1_estep(self, order, vals, counts) -> float:
        return self._reduced(_ibm1_task, vals, counts)[0]

    def hmm_estep(self, order, vals, weights, counts, jumps, denom) -> float:
        ll, j, d = self._reduced(_hmm_task, vals, counts, weights, self.cfg.null_prob, self.cfg.max_jump)
        jumps += j
        denom += d
        return ll

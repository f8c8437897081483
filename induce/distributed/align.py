"""IBM-1 and HMM word alignment ``em`` / ``vi`` with the E-step mapped over shards of sentence pairs
(docs/experiments/distributed.md).

The client cuts the pairs into contiguous shards of about equal cells (one
per worker) and ships each worker its pairs once: the offsets, and its cells
renumbered to the distinct table entries it touches (``ids``).  Per pass the
client sends each worker the parameters of its entries only, ``vals[ids]``,
every worker runs the existing kernel (:func:`induce.kernels.align.ibm1_batch_pass`
or :func:`~induce.kernels.align.hmm_batch_pass`) over its pairs, and the
client adds the returned entry counts (and jump statistics) in shard order.
"""

from __future__ import annotations

import time

import numpy as np

from ..align.direction import _Trainer
from ..kernels import align as K
from . import cluster
from .cluster import Meter, rerun, same, submit, timed
from .shards import shard_bounds


def _pairs(src_off, tgt_off, cell_off, cells, lo, hi):
    """Pairs ``lo .. hi-1``: rebased offsets, their table entries ``ids`` and their cells as indices into ``ids``."""
    c0, c1 = cell_off[lo], cell_off[hi]
    ids, local = np.unique(cells[c0:c1], return_inverse=True)
    return ((src_off[lo:hi + 1] - src_off[lo], tgt_off[lo:hi + 1] - tgt_off[lo], cell_off[lo:hi + 1] - c0,
             local.astype(cells.dtype).reshape(-1)), ids)


def _ibm1_task(shard, vals):
    src_off, tgt_off, cell_off, cells = shard
    counts = np.zeros(len(vals))
    ll = K.ibm1_batch_pass(np.arange(len(src_off) - 1, dtype=np.int64), src_off, tgt_off, cell_off, cells, vals,
                           counts)
    return ll, counts


def _hmm_task(shard, vals, weights, null_prob, max_jump):
    src_off, tgt_off, cell_off, cells = shard
    counts, jumps, denom = np.zeros(len(vals)), np.zeros(len(weights)), np.zeros(len(weights))
    ll = K.hmm_batch_pass(np.arange(len(src_off) - 1, dtype=np.int64), src_off, tgt_off, cell_off, cells, vals,
                          weights, null_prob, max_jump, counts, jumps, denom)
    return ll, counts, jumps, denom


class ClusterTrainer(_Trainer):
    """The batch trainer of one alignment direction with its E-steps on the workers of ``client``; use as
    ``train_direction(..., trainer=functools.partial(ClusterTrainer, client))`` (``meter``: where the steps are
    recorded, shared by the directions)."""

    def __init__(self, client, *args, n_shards: int | None = None, meter: Meter | None = None):
        super().__init__(*args)
        self.client = client
        b = self.b
        bounds = shard_bounds(self.cell_off, n_shards or cluster.n_workers(client))
        self.n_pairs = np.diff(bounds)
        pieces = [_pairs(b.src_off, b.tgt_off, self.cell_off, self.cells, lo, hi)
                  for lo, hi in zip(bounds[:-1], bounds[1:])]
        self.shards = [submit(client, same, *shard) for shard, _ in pieces]
        self.ids = [ids for _, ids in pieces]
        self.meter = meter if meter is not None else Meter()

    def _map(self, task, vals, *args):
        """``task`` on every shard with its entries' parameters; the results in shard order."""
        t0 = time.perf_counter()
        results = rerun(lambda: self.client.gather([submit(self.client, timed, task, s, vals[ids], *args)
                                                    for s, ids in zip(self.shards, self.ids)]))
        self.progress(int(self.n_pairs.sum()))
        return self.meter.add(time.perf_counter() - t0, results, self.n_pairs)

    def ibm1_estep(self, order, vals, counts) -> float:
        ll = 0.0
        for (l, c), ids in zip(self._map(_ibm1_task, vals), self.ids):
            ll += l
            counts[ids] += c
        return ll

    def hmm_estep(self, order, vals, weights, counts, jumps, denom) -> float:
        ll = 0.0
        for (l, c, j, d), ids in zip(self._map(_hmm_task, vals, weights, self.cfg.null_prob, self.cfg.max_jump),
                                     self.ids):
            ll += l
            counts[ids] += c
            jumps += j
            denom += d
        return ll

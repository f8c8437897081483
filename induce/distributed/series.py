"""Time-series ``svi`` / ``scvi`` (:class:`induce.series.HMMSegmenter`) with each minibatch's local step on the
workers (docs/experiments/distributed.md, "Time-series svi / scvi on the workers").

The items (subsequences) are shipped once, one contiguous block of about equal steps per worker
(:func:`induce.distributed.shards.shard_bounds` over the items' step offsets).  Per minibatch the client forms
the transitions and sends them with the global emission statistics ``S`` and, to each worker holding some of
the minibatch's items, their indices in its block; the worker runs the single-process local step
:func:`induce.infer.series.local_statistics` (emission rows, forward-backward, the family's statistics) on them
and returns ``(sum log Z, transition statistics, emission statistics)``; the client adds them in worker order and
takes the global step (thesis eq. 3.103-3.104) exactly as in one process.  With one worker the run is the
single-process run, bit for bit; with more, only the order of the sums differs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..infer.series import SeriesFit, local_statistics
from . import cluster
from .cluster import Meter, nbytes, same, submit, timed
from .shards import piece, shard_bounds


def _block_statistics(block, local: str, family, A, S, idx):
    """On a worker: :func:`local_statistics` of the items ``idx`` (in that order) of its block ``(steps,
    item offsets)``.  The finite HMM has no per-item ``qc`` (:meth:`SeriesFit._item_qc` is ``None``)."""
    X, offsets = block
    return local_statistics(local, family, A, S, [X[offsets[i]:offsets[i + 1]] for i in idx], [None] * len(idx))


@dataclass
class ClusterSeriesFit(SeriesFit):
    """:class:`SeriesFit` for ``svi`` / ``scvi`` whose minibatch local steps run on the workers of ``client``
    (see the module docstring); ``meter`` records the step overhead and the workers' steps per second."""

    client: object = None
    #: ``resolve_batch_size(n_items)`` gives the minibatch size once the items are cut
    #: (:meth:`induce.base.InduceEstimator._resolve_batch_size`: the estimator's own, or one planned for the cluster)
    resolve_batch_size: object = None

    def _items(self, sequences):
        """The items, shipped to the workers once: one block per worker."""
        items = super()._items(sequences)
        offsets = np.concatenate([[0], np.cumsum([X.shape[0] for X in items])])
        self.item_bounds = shard_bounds(offsets, cluster.n_workers(self.client))
        stacked = np.vstack(items)
        self.blocks = [submit(self.client, same, *piece(stacked, offsets, lo, hi))
                       for lo, hi in zip(self.item_bounds[:-1], self.item_bounds[1:])]
        self.family_f = submit(self.client, same, self.family)
        self.meter = Meter()
        self.batch_size = self.resolve_batch_size(len(items))
        return items

    def _minibatch_statistics(self, local, state, batch):
        """The minibatch's items split by block (batch order kept within a block); the blocks' statistics
        added in block order."""
        A, S, items = self._global_transitions(local, state["C"]), state["S"], state["items"]
        t0 = time.perf_counter()
        block = np.searchsorted(self.item_bounds, batch, side="right") - 1
        touched = [j for j in range(len(self.blocks)) if (block == j).any()]
        sent = [(A, S, batch[block == j] - self.item_bounds[j]) for j in touched]
        futures = [submit(self.client, timed, _block_statistics, self.blocks[j], local, self.family_f, *arrays)
                   for j, arrays in zip(touched, sent)]
        gathered = self.client.gather(futures)
        results = self.meter.add(time.perf_counter() - t0, gathered,
                                 [sum(items[i].shape[0] for i in batch[block == j]) for j in touched])
        self.meter.traffic(1, nbytes(sent), nbytes(results))
        total, trans, stats = results[0]
        for logz, t, s in results[1:]:
            total, trans, stats = total + logz, trans + t, stats + s
        return total, (trans, stats)

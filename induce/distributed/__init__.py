"""Training on a dask.distributed cluster: the one package that knows about dask (docs/experiments/distributed.md).

An estimator given ``client=`` (a :class:`dask.distributed.Client`) runs its
E-steps on the cluster's workers and everything else on the client; without
it nothing here is imported, and dask need not be installed
(``pip install induce[distributed]``).  Every worker runs the existing
kernels; this package only moves arrays:

* :mod:`.cluster`: the client session, submitting with retries, and the
  :class:`~.cluster.Meter` of step overhead, per-worker throughput and memory;
* :mod:`.shards`: the corpus as shards held in the workers' memory, read by
  the workers from byte ranges of the files (or shipped once by the client
  when the data was given in memory);
* :mod:`.batch`: batch ``em`` / ``vi``, the E-step mapped over the shards;
* :mod:`.cvi2`: block-parallel cvi2, the local statistics kept on the workers;
* :mod:`.hdp`: HDP-HMM ``scvi`` and ``svi``, each minibatch's local step on the workers;
* :mod:`.minibatch`: ``svi`` / ``scvi``, each minibatch's local step on the
  workers' shards, returning sparse statistics;
* :mod:`.rounds`: ``svi`` / ``scvi`` in rounds of local steps on the workers' shards against copies of the counts
  kept on the workers, merged by adding count deltas summed as a tree among them (``sync_every``);
* :mod:`.series`: time-series ``svi`` / ``scvi`` (``HMMSegmenter``), each minibatch's local step on the
  workers' blocks of subsequences;
* :mod:`.align`: IBM-1 / HMM alignment ``em`` / ``vi`` over shards of sentence
  pairs, read by the workers from the parallel files.

Tasks are submitted with ``retries``: a task lost with its worker is run again
elsewhere (shards and layouts are tasks too, so dask recomputes a lost one).
"""

#: where each public name lives; imported on first use (PEP 562), so that ``from induce.distributed import
#: cluster`` (the command line's options) loads no kernel
_EXPORTS = {"ClusterEStep": "batch", "ClusterCVI2": "cvi2", "ClusterHDPMinibatch": "hdp", "ClusterHDPSVI": "hdp",
            "ClusterSeriesFit": "series",
            "RETRIES": "cluster", "Meter": "cluster", "n_workers": "cluster", "session": "cluster",
            "WorkerSentenceUpdater": "minibatch", "WorkerRoundsUpdater": "rounds",
            "WorkerCorpus": "shards", "file_ranges": "shards", "shard_bounds": "shards"}
__all__ = sorted(_EXPORTS)


_MODULES = ("align", "batch", "cluster", "cvi2", "hdp", "minibatch", "rounds", "series", "shards")


def __getattr__(name: str):
    from importlib import import_module

    if name in _MODULES:
        return import_module(f".{name}", __name__)
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)

"""Training on a dask.distributed cluster: the one package that knows about dask (docs/experiments/distributed.md).

An estimator given ``client=`` (a :class:`dask.distributed.Client`) runs its
E-steps on the cluster's workers and everything else on the client; without
it nothing here is imported, and dask need not be installed
(``pip install induce[distributed]``).  Every worker runs the existing
kernels; this package only moves arrays:

* :mod:`.cluster`: the client session, submitting with retries, and the
  :class:`~.cluster.Meter` of step overhead, per-worker throughput and memory;
* :mod:`.shards`: the corpus as shards held in the workers' memory, shipped
  once by the client or read by the workers from byte ranges of the files;
* :mod:`.batch`: batch ``em`` / ``vi``, the E-step mapped over the shards;
* :mod:`.cvi2`: block-parallel cvi2, the local statistics kept on the workers;
* :mod:`.hdp`: HDP-HMM ``scvi`` and ``svi``, each minibatch's local step on the workers;
* :mod:`.minibatch`: ``svi`` / ``scvi``, each minibatch's local step on the
  workers, returning sparse statistics.

Tasks are submitted with ``retries``: a task lost with its worker is run again
elsewhere (shards and layouts are tasks too, so dask recomputes a lost one).
"""

from .batch import ClusterEStep
from .cvi2 import ClusterCVI2
from .hdp import ClusterHDPMinibatch, ClusterHDPSVI
from .cluster import RETRIES, Meter, n_workers, session
from .minibatch import ClusterSentenceUpdater, WorkerSentenceUpdater
from .shards import WorkerCorpus, file_ranges, shard_bounds

__all__ = ["RETRIES", "ClusterCVI2", "ClusterEStep", "ClusterHDPMinibatch", "ClusterHDPSVI",
           "ClusterSentenceUpdater", "Meter", "WorkerCorpus", "WorkerSentenceUpdater",
           "file_ranges", "n_workers", "session", "shard_bounds"]

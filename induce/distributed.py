"""Training on a dask.distributed cluster: the one module that knows about dask (docs/experiments/distributed.md).

An estimator given ``client=`` (a :class:`dask.distributed.Client`) runs its
E-steps on the cluster's workers and everything else on the client; without
it nothing here is imported, and dask need not be installed
(``pip install induce[distributed]``).  Every worker runs the existing
kernels; this module only moves arrays:

* batch ``em`` / ``vi`` (:class:`ClusterEStep`): the corpus is cut once into
  contiguous shards of sentences of about equal token count, one per worker;
  each shard's lockstep layout is built on a worker and stays there.  Per
  pass the client broadcasts the parameters ``A`` (K+1, K) and ``B`` (W, K),
  every shard runs :func:`induce.infer.hmm_batched.lockstep_pass`, and the
  client sums the expected counts (in shard order, so a run is reproducible)
  and takes the M-step.  The counts are additive over sentences, so the sum
  equals the single-process E-step up to the order of float additions.
* ``svi`` / ``scvi`` (:class:`ClusterSentenceUpdater`): for each minibatch the
  client forms the local parameters from the global counts, the transition
  table and the emission rows of the minibatch's words only
  (:func:`induce.infer.stochastic_hmm.sentence_inputs`), splits the minibatch
  into ``n_shards`` pieces and runs
  :func:`induce.infer.stochastic_hmm.local_statistics` on the workers; they
  return sparse statistics (the rows of the minibatch's words, not a dense
  K x W table) and the client applies the step, thesis eq. 3.103.  With one
  shard the statistics are bit-for-bit those of the single-process run.

Tasks are submitted with ``retries``: a task lost with its worker is run again
elsewhere (the shard layouts are tasks too, so dask recomputes a lost one).
"""

from __future__ import annotations

from concurrent.futures import CancelledError
from contextlib import contextmanager

import numpy as np

from .errors import ConfigError
from .infer import hmm_passes as passes
from .infer import stochastic_hmm as stochastic
from .infer.hmm_batched import Layout, lockstep_pass

#: times a task is re-run after its worker died
RETRIES = 3


@contextmanager
def session(workers: int = 0, address: str | None = None):
    """A :class:`dask.distributed.Client` for the length of a ``with`` block: connected to the scheduler at
    ``address`` (``tcp://HOST:8786``), or to a new ``LocalCluster`` of ``workers`` single-threaded worker
    processes, which is shut down at the end."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ConfigError("training on a cluster needs dask.distributed: pip install 'induce[distributed]'") from exc
    if address:
        try:
            client = Client(address, timeout="10s")
        except OSError as exc:
            raise ConfigError(f"cannot reach the dask scheduler at {address}: {exc}") from exc
        with client:
            yield client
        return
    if workers < 1:
        raise ConfigError(f"a local cluster needs at least 1 worker, got {workers}")
    with LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        yield client


def n_workers(client) -> int:
    """Workers currently connected to the client's scheduler."""
    return len(client.scheduler_info()["workers"])


def shard_bounds(offsets: np.ndarray, n_shards: int) -> np.ndarray:
    """Sentence indices ``b[0] = 0 < ... < b[n] = I`` cutting the corpus into ``n = min(n_shards, I)`` contiguous,
    non-empty shards of about equal token count."""
    offsets = np.asarray(offsets, dtype=np.int64)
    I = len(offsets) - 1
    n = max(1, min(int(n_shards), I))
    bounds = np.searchsorted(offsets, offsets[-1] * np.arange(n + 1) / n).astype(np.int64)
    bounds[0], bounds[n] = 0, I
    for j in range(1, n):  # keep every shard non-empty
        bounds[j] = min(max(bounds[j], bounds[j - 1] + 1), I - (n - j))
    return bounds


def _shard(tokens, offsets, lo, hi):
    """Tokens and rebased offsets of sentences ``lo .. hi-1``."""
    s, e = offsets[lo], offsets[hi]
    return np.ascontiguousarray(tokens[s:e]), np.ascontiguousarray(offsets[lo:hi + 1] - s)


def _same(x):
    return x


def _layout_task(tokens, offsets, block):
    return Layout(tokens, offsets, block)


def _estep_task(A, B, allowed, lay: Layout, W: int, want_gamma: bool):
    """One shard's E-step (:func:`lockstep_pass`): ``(trans (K+1, K), emit (W, K), log-lik, gamma or None)``."""
    K = A.shape[1]
    trans = np.zeros((K + 1, K))
    emit = np.zeros((W, K))
    g = np.empty((lay.n_tokens if want_gamma else 0, K))
    ll = lockstep_pass(A, B, allowed, lay.lay_tokens, lay.lay_flat, lay.pos_start, lay.block_pos, trans, emit, g,
                       passes.n_threads())
    return trans, emit, ll, (g if want_gamma else None)


class ClusterEStep:
    """The batch em / vi E-step mapped over shards of the corpus on the workers (see the module docstring).

    ``n_shards`` defaults to the number of workers; the shards' layouts are
    built on the workers once, at construction.
    """

    def __init__(self, client, tokens: np.ndarray, offsets: np.ndarray, allowed: np.ndarray, block: int,
                 n_shards: int | None = None):
        self.client = client
        self.allowed = allowed  # (sent with each task: lost with no worker)
        bounds = shard_bounds(offsets, n_shards or n_workers(client))
        self.token_bounds = np.asarray(offsets)[bounds]
        self.layouts = [client.submit(_layout_task, *_shard(tokens, offsets, lo, hi), block, pure=False,
                                      retries=RETRIES) for lo, hi in zip(bounds[:-1], bounds[1:])]

    @property
    def n_shards(self) -> int:
        return len(self.layouts)

    def __call__(self, A, B, trans_out, emit_out, gamma_out) -> float:
        """Same contract as :func:`lockstep_pass` on the whole corpus: overwrites ``trans_out`` / ``emit_out``
        with the expected counts, fills ``gamma_out`` when it has N rows, returns ``sum_i log p(x^i)``.

        The pass is a pure function of ``A`` and ``B``: should it fail on a lost
        connection it is run again from the start (at most :data:`RETRIES` times)."""
        for attempt in range(RETRIES + 1):
            try:
                results = self._map(A, B, emit_out.shape[0], gamma_out.shape[0] > 0)
                break
            except (OSError, CancelledError):
                if attempt == RETRIES:
                    raise
        trans_out[:] = 0.0
        emit_out[:] = 0.0
        ll = 0.0
        for s, (t, e, l, g) in enumerate(results):
            trans_out += t
            emit_out += e
            ll += l
            if g is not None:
                gamma_out[self.token_bounds[s]:self.token_bounds[s + 1]] = g
        return float(ll)

    def _map(self, A, B, W, want_gamma):
        """Broadcast the parameters, run every shard's E-step, gather the results in shard order."""
        # the parameters as tasks, not scattered data: a copy lost with its worker is made again (a broadcast
        # scatter to a worker that has just died waits for it forever)
        A_f, B_f = (self.client.submit(_same, x, pure=False, retries=RETRIES) for x in (A, B))
        futures = [self.client.submit(_estep_task, A_f, B_f, self.allowed, lay, W, want_gamma, pure=False,
                                      retries=RETRIES) for lay in self.layouts]
        return self.client.gather(futures)


class ClusterSentenceUpdater(stochastic.SentenceUpdater):
    """``svi`` / ``scvi`` with each minibatch's local step on the workers (see the module docstring).

    The minibatch is cut into ``n_shards`` pieces (default: the number of
    workers) of about equal token count; given the seed and ``n_shards`` a run
    is reproducible, and with ``n_shards=1`` it equals the single-process run.
    """

    def __init__(self, client, algorithm: str, alpha: float, beta: float, n_sentences: int,
                 allowed: np.ndarray = stochastic._NO_MASK, n_shards: int | None = None):
        super().__init__(algorithm, alpha, beta, n_sentences, allowed)
        self.client = client
        self.n_shards = int(n_shards or n_workers(client))

    def statistics(self, counts, tokens, offsets):
        """Sparse statistics ``(trans (K+1, K), ids, rows (len(ids), K), log-lik)`` summed over the pieces."""
        ids, local, A, P, mask = stochastic.sentence_inputs(counts, self.estimator, self.alpha, self.beta, tokens,
                                                            self.allowed)
        offsets = np.asarray(offsets, dtype=np.int64)
        bounds = shard_bounds(offsets, self.n_shards)
        futures = [self.client.submit(stochastic.local_statistics, A, P, mask, *_shard(local, offsets, lo, hi),
                                      pure=False, retries=RETRIES) for lo, hi in zip(bounds[:-1], bounds[1:])]
        results = self.client.gather(futures)
        trans = results[0][0]
        emit = results[0][1]
        ll = results[0][2]
        for t, e, l in results[1:]:
            trans = trans + t
            emit = emit + e
            ll += l
        return trans, ids, emit, ll

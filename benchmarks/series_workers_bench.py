"""Time-series svi on dask workers against one process: seconds per epoch (docs/experiments/distributed.md,
"Time-series svi / scvi on the workers").

A series of ``--steps`` steps sampled from a sticky Gaussian HMM (3 states, means -3, 0, 3, sd 1) is fitted with
``HMMSegmenter(infer="svi", n_states=K)``, items of 1000 steps, minibatches of 100 items, in one process, on a
1-worker and on a 2-worker ``LocalCluster``, alternated for ``--rounds`` rounds.  Reported per fit: seconds per
epoch (the epochs only: not the initialisation nor shipping the items), the meter's mean step overhead, the
workers' steps per second inside their tasks, and the largest relative difference of the fitted statistics from
the single-process fit.  ``--no-trim`` starts the workers without dask's ``MALLOC_TRIM_THRESHOLD_=65536``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from induce.infer.series import SeriesFit
from induce.series import HMMSegmenter

EPOCH_SECONDS: list[float] = []
_epoch = SeriesFit._stochastic_pass


def _timed_epoch(self, items, state):
    t0 = time.perf_counter()
    out = _epoch(self, items, state)
    EPOCH_SECONDS.append(time.perf_counter() - t0)
    return out


def sticky_series(T: int, seed: int = 0) -> np.ndarray:
    """``(T, 1)`` steps of a 3-state Gaussian HMM that leaves its state with probability 0.02 per step."""
    rng = np.random.default_rng(seed)
    leave, jump = rng.random(T) < 0.02, rng.integers(1, 3, T)
    z = np.cumsum(np.where(leave, jump, 0)) % 3
    return (3.0 * (z - 1) + rng.normal(size=T)).reshape(-1, 1)


def fit(X, K: int, epochs: int, client=None):
    """Mean seconds per epoch and the fitted model."""
    EPOCH_SECONDS.clear()
    model = HMMSegmenter(n_states=K, infer="svi", n_iter=epochs, tol=0.0, batch_size=100, subsequence_length=1000,
                         client=client).fit(X)
    return float(np.mean(EPOCH_SECONDS)), model


def main() -> None:
    import warnings

    import dask
    from distributed import Client, LocalCluster

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--states", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--no-trim", action="store_true")
    args = p.parse_args()
    warnings.simplefilter("ignore")  # the iteration cap's not-converged warning
    SeriesFit._stochastic_pass = _timed_epoch
    if args.no_trim:
        dask.config.set({"distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1,
                                                                  "OPENBLAS_NUM_THREADS": 1}})
    X = sticky_series(args.steps)
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as c1, Client(c1) as one, \
            LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as c2, Client(c2) as two:
        for c in (None, one, two):  # load the numba cache in every process
            HMMSegmenter(n_states=args.states, infer="svi", n_iter=1, subsequence_length=100, client=c).fit(X[:2000])
        ref = None
        for rnd in range(args.rounds):
            for name, c in (("single", None), ("1 worker", one), ("2 workers", two)):
                seconds, m = fit(X, args.states, args.epochs, c)
                ref = m if ref is None else ref
                diff = np.abs(m.stats_ - ref.stats_).max() / np.abs(ref.stats_).max()
                meter = m.cluster_meter_.report(1) if c is not None else {"step_overhead_ms": 0.0,
                                                                           "worker_tokens_per_s": {}}
                rates = sorted(round(v / 1e6, 2) for v in meter["worker_tokens_per_s"].values())
                print(f"round {rnd} {name:9s} {seconds:6.3f} s/epoch  overhead {meter['step_overhead_ms']:5.1f} "
                      f"ms/minibatch  worker Msteps/s {rates}  max rel diff of stats {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()

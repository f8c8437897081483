"""The dask client: a session, the number of workers, and submitting with retries (docs/experiments/distributed.md)."""

from __future__ import annotations

from concurrent.futures import CancelledError
from contextlib import contextmanager

import numpy as np

from ..errors import ConfigError

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


def add_options(parser, algorithms: str) -> None:
    """The command line's ``--workers N`` / ``--cluster ADDRESS`` (for ``algorithms``, named in the help)."""
    from ..cli.common import positive_int

    c = parser.add_argument_group(f"on a dask cluster ({algorithms}; pip install 'induce[distributed]')")
    c.add_argument("--workers", type=positive_int, metavar="N",
                   help="run the E-steps on a local cluster of N worker processes")
    c.add_argument("--cluster", metavar="tcp://HOST:8786", help="run the E-steps on the workers of this dask scheduler")


@contextmanager
def from_args(args, supported: bool, what: str):
    """The client of ``--workers`` / ``--cluster`` for a ``with`` block, or ``None`` without them; a
    ``ConfigError`` when both are given or the command is not ``supported`` on a cluster (``what`` says what is)."""
    if not (args.workers or args.cluster):
        yield None
        return
    if args.workers and args.cluster:
        raise ConfigError("give --workers N (a local cluster) or --cluster ADDRESS (a running scheduler), not both")
    if not supported:
        raise ConfigError(f"--workers / --cluster run {what}")
    with session(args.workers or 0, args.cluster) as client:
        yield client


def n_workers(client) -> int:
    """Workers currently connected to the client's scheduler."""
    return len(client.scheduler_info()["workers"])


def submit(client, fn, *args):
    """``client.submit(fn, *args)``, never cached by argument value, re-run up to :data:`RETRIES` times when its
    worker dies."""
    return client.submit(fn, *args, pure=False, retries=RETRIES)


def same(*x):
    """The identity task: an array made a (recomputable) task, not scattered data.  A copy lost with its worker is
    made again; a broadcast ``scatter`` to a worker that has just died waits for it forever."""
    return x[0] if len(x) == 1 else x


def rerun(fn):
    """``fn()`` (a pure function of its inputs), run again from the start when it fails on a lost connection, at
    most :data:`RETRIES` times."""
    for attempt in range(RETRIES + 1):
        try:
            return fn()
        except (OSError, CancelledError):
            if attempt == RETRIES:
                raise


def peak_memory() -> int:
    """This process's peak resident memory in bytes: ``VmHWM`` of /proc/self/status (``ru_maxrss`` is no good
    in a worker: it keeps the parent's peak across fork and exec), else the current resident size."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        import psutil

        return psutil.Process().memory_info().rss


def timed(fn, *args):
    """On a worker: ``(fn(*args), seconds, worker address, the worker process's peak resident memory in bytes)``."""
    import time

    from distributed import get_worker

    t0 = time.perf_counter()
    out = fn(*args)
    seconds = time.perf_counter() - t0
    return out, seconds, get_worker().address, peak_memory()


class Meter:
    """Where a distributed step's time goes: its wall time on the client against the longest of its workers'
    tasks (:func:`timed`); the difference is the step overhead (sending, scheduling, gathering, the client's
    own work), measured per step."""

    def __init__(self):
        self.steps = 0
        self.wall = 0.0
        self.overhead = 0.0
        self.busy: dict[str, float] = {}   # seconds in tasks, per worker
        self.tokens: dict[str, int] = {}   # tokens processed, per worker
        self.peak: dict[str, int] = {}     # peak resident bytes, per worker

    def add(self, wall: float, results: list, tokens: list[int]) -> list:
        """Record one step of ``wall`` seconds whose tasks gave ``results`` (from :func:`timed`) over ``tokens``
        tokens each; returns the tasks' own results."""
        self.steps += 1
        self.wall += wall
        self.overhead += wall - max((r[1] for r in results), default=0.0)
        for (_, seconds, address, peak), n in zip(results, tokens):
            self.busy[address] = self.busy.get(address, 0.0) + seconds
            self.tokens[address] = self.tokens.get(address, 0) + int(n)
            self.peak[address] = max(self.peak.get(address, 0), int(peak))
        return [r[0] for r in results]

    def report(self, workers: int) -> dict:
        """``workers``, the mean step overhead (ms), tokens/s per worker while in its tasks, peak memory per
        worker (MiB)."""
        return {"workers": workers, "steps": self.steps,
                "step_overhead_ms": round(1e3 * self.overhead / max(1, self.steps), 3),
                "worker_tokens_per_s": {a: round(self.tokens[a] / s, 1) for a, s in self.busy.items() if s > 0},
                "worker_peak_memory_mb": {a: round(p / 2**20, 1) for a, p in self.peak.items()}}

    def per_step(self) -> tuple[float, float]:
        """Mean seconds a step: ``(overhead, the longest task)``."""
        n = max(1, self.steps)
        return self.overhead / n, (self.wall - self.overhead) / n

    def advice(self, batch_size: int, target: float = 0.2) -> str | None:
        """A one-line warning when the step overhead took more than half of the steps' time (at least 5 steps):
        with the overhead ``o`` per step taken as fixed and the workers' time ``c`` as proportional to the
        minibatch, a minibatch of ``M c' / c`` with ``c' = o (1 - target) / target`` brings the overhead to
        ``target`` of a step (a lower bound: the emission rows that travel grow with the minibatch too)."""
        if self.steps < 5 or self.wall <= 0 or self.overhead <= 0.5 * self.wall:
            return None
        o, c = self.per_step()
        c = max(c, 1e-9)
        suggested = int(float(f"{batch_size * o * (1 - target) / target / c:.2g}"))
        return (f"the cluster's step overhead was {self.overhead / self.wall:.0%} of training ({1e3 * o:.0f} ms a step "
                f"against {1e3 * c:.0f} ms on the workers): minibatches of at least {suggested} sentences "
                f"(--batch-size) would bring it to {target:.0%}")

    def postfix(self) -> dict:
        """The progress bar's fields: workers seen, tokens/s per worker (while in its tasks), mean step overhead."""
        busy = sum(self.busy.values())
        return {"workers": len(self.busy), "tok/s/worker": f"{sum(self.tokens.values()) / busy:.3g}" if busy else "-",
                "overhead": f"{1e3 * self.overhead / max(1, self.steps):.1f}ms"}


#: an automatic minibatch size on a cluster (:func:`calibrate`) keeps the step overhead to at most this share of a step
OVERHEAD_TARGET = 0.2
#: ... and at least this many minibatches in the run: one scvi epoch of a 5M-token HMM stream ended at held-out
#: -6.003 a token with 2,251 minibatches, -6.013 with 451, -6.152 with 226, -6.497 with 113; of 20M tokens at
#: -5.9395 with 9,069 and with 454, -5.955 with 272 (benchmarks/results/dask_bench_sizes.json); over 10 epochs
#: 276 minibatches lost 0.13 on WSJ, 1,150 nothing on Brown (RESULTS.md, "Stochastic and single sequence")
MIN_STEPS = 500


def _one_two_five(x: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... at or above ``x`` (coarse, so that timing noise seldom moves it)."""
    decade = 10 ** np.floor(np.log10(max(x, 1.0)))
    return int(next(m * decade for m in (1, 2, 5, 10) if m * decade >= x - 1e-9))


def calibrate(probe, n_items: int, floor: int, *, epochs: int = 1, repeats: int = 3) -> dict:
    """The minibatch size for a run on a cluster, from timing the run's own local step on it.

    ``probe(items, meter)`` runs the local step on the (sorted) item indices ``items``, recording it in ``meter``,
    and changes nothing.  After a warm-up step (the workers load the kernels), ``repeats`` steps of ``m0 =
    floor`` and of ``m1 = 8 floor`` evenly spread items fit the step overhead as ``a + b M`` and the longest
    task as ``c M`` (items ``M``); the overhead share ``(a + b M) / (a + b M + c M)`` is at most ``t =``
    :data:`OVERHEAD_TARGET` from ``M* = a (1 - t) / (t c - (1 - t) b)`` (never when ``t c <= (1 - t) b``: the
    rows that travel cost more than the work they bring).  The size is ``M*`` rounded up to 1, 2, 5 x 10^k,
    at least ``floor`` (the single-process default) and at most ``n_items epochs /`` :data:`MIN_STEPS` (the
    run's ``epochs`` passes over ``n_items`` items keep their minibatches); without room for a larger size
    (``n_items < 8 floor`` or the cap at ``floor``) nothing is timed.  Returns
    ``{"batch_size", ...}`` with the fit (ms) and the expected overhead share, for the run's report; the run
    is reproducible with that size given."""
    cap = max(floor, n_items * max(1, epochs) // MIN_STEPS)
    m0, m1 = floor, 8 * floor
    if cap <= floor or n_items < m1:
        return {"batch_size": floor, "calibrated": False}

    def spread(m):
        return np.unique(np.linspace(0, n_items - 1, m).round().astype(np.int64))

    probe(spread(m0), Meter())
    (o0, c0), (o1, c1) = (_timed_steps(probe, spread(m), repeats) for m in (m0, m1))
    b = max(0.0, (o1 - o0) / (m1 - m0))
    a = max(0.0, o0 - b * m0)
    c = max(c1 / m1, 1e-12)
    t = OVERHEAD_TARGET
    best = a * (1 - t) / (t * c - (1 - t) * b) if t * c > (1 - t) * b else float("inf")
    size = min(cap, max(floor, _one_two_five(best) if np.isfinite(best) else cap))
    share = (a + b * size) / (a + b * size + c * size)
    return {"batch_size": int(size), "calibrated": True, "fixed_overhead_ms": round(1e3 * a, 3),
            "overhead_ms_per_item": round(1e3 * b, 6), "worker_ms_per_item": round(1e3 * c, 6),
            "expected_overhead_share": round(share, 3), "capped": bool(size == cap and best > cap)}


def metered(owner, call):
    """A :func:`calibrate` probe: ``call(items)``, a step of ``owner`` (an object with a ``meter``) on scratch
    outputs, with its time recorded in the probe's meter instead of the run's."""

    def probe(items, meter: Meter) -> None:
        kept, owner.meter = owner.meter, meter
        try:
            call(items)
        finally:
            owner.meter = kept
    return probe


def _timed_steps(probe, items, repeats: int) -> tuple[float, float]:
    """Mean ``(overhead, longest task)`` seconds of ``repeats`` probe steps on ``items``."""
    meter = Meter()
    for _ in range(repeats):
        probe(items, meter)
    return meter.per_step()


def calibration_warning(calibration: dict) -> str | None:
    """A one-line warning when the automatic size was held at its cap while the overhead stays above half a step."""
    if not calibration.get("capped") or calibration["expected_overhead_share"] <= 0.5:
        return None
    return (f"the cluster's step overhead is expected to be {calibration['expected_overhead_share']:.0%} of a step "
            f"at minibatches of {calibration['batch_size']} (larger ones would make fewer than {MIN_STEPS} in the "
            "run): this corpus is small for a cluster; one process may well be faster")

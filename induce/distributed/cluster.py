"""The dask client: a session, the number of workers, and submitting with retries (docs/experiments/distributed.md)."""

from __future__ import annotations

from concurrent.futures import CancelledError
from contextlib import contextmanager

import numpy as np

from ..errors import ConfigError

#: times a task is re-run after its worker died
RETRIES = 3
#: seconds ``--cluster`` waits to connect to the scheduler, then for its first worker (``--cluster-timeout``)
CONNECT_TIMEOUT = 30.0
#: the address schemes of dask's communication layers
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def cluster_address(text: str) -> str:
    """``--cluster``: a scheduler address ``SCHEME://HOST:PORT`` (scheme one of :data:`SCHEMES`); anything else
    is refused before any work (argparse's one-line error)."""
    import argparse
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme not in SCHEMES or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise argparse.ArgumentTypeError(f"expected a dask scheduler address SCHEME://HOST:PORT (e.g. "
                                         f"tcp://10.0.0.5:8786; schemes {', '.join(SCHEMES)}); got {text!r}")
    return text


@contextmanager
def session(workers: int = 0, address: str | None = None, timeout: float = CONNECT_TIMEOUT):
    """A :class:`dask.distributed.Client` for the length of a ``with`` block: connected to the scheduler at
    ``address`` (``tcp://HOST:8786``; giving up after ``timeout`` seconds, and after as long again when the
    scheduler has no worker), or to a new ``LocalCluster`` of ``workers`` single-threaded worker processes,
    which is shut down at the end."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ConfigError("training on a cluster needs dask.distributed: pip install 'induce[distributed]'") from exc
    if address:
        with _connect(Client, address, timeout) as client:
            try:
                client.wait_for_workers(1, timeout=timeout)
            except (OSError, ValueError):
                raise ConfigError(f"the dask scheduler at {address} has no workers (waited {timeout:g} s, "
                                  "--cluster-timeout); start some with dask worker ADDRESS") from None
            yield client
        return
    if workers < 1:
        raise ConfigError(f"a local cluster needs at least 1 worker, got {workers}")
    import dask

    with dask.config.set(LOCAL_CONFIG), \
            LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True, dashboard_address=":0",
                         env=worker_environment(int(workers))) as cluster, Client(cluster) as client:
        yield client


#: dask settings of a local cluster (:func:`session`; the nannies hand them to their workers): the workers'
#: statistical profiler (a stack sample of the task thread every 10 ms, for a dashboard) off, the processes'
#: system monitor (psutil's CPU, memory, disk and network counters, every 0.5 s) every 10 s, and the event loops'
#: tick (which only measures how late the loop runs, to warn when it was blocked for 3 s) every second instead of
#: every 20 ms: idle, the scheduler and two workers took 0.11 CPU-seconds a second with dask's settings, 0.03
#: with these, CPU the workers' tasks then wait for on a machine without a spare core (docs/experiments/
#: distributed.md, "Seventh session"); and the memory monitors (each nanny's, which run in the client's process,
#: and each worker's: a worker's memory read from /proc against its limits) every second instead of every 100 ms:
#: idle, the client's process and two workers 0.031 -> 0.017 CPU-seconds a second (load ~0.5, "Eighth session")
LOCAL_CONFIG = {"distributed.worker.profile.enabled": False, "distributed.admin.system-monitor.interval": "10s",
                "distributed.admin.tick.interval": "1s", "distributed.worker.memory.monitor-interval": "1s"}


#: the variable that carries a local cluster worker's share of the cores (:func:`worker_environment`)
THREADS_VARIABLE = "INDUCE_WORKER_THREADS"


def worker_environment(workers: int, cpus: int | None = None) -> dict[str, str]:
    """The environment of a local cluster's worker processes: the worker's share of the machine's cores for
    numba's parallel kernels, ``max(1, cpus // workers)``, so that ``workers`` workers never run more kernel
    threads than there are cores (numba's default is one thread per core in every process: two workers on two
    cores could run four).  Each task claims the share (:func:`claim_threads`); it is not passed as
    ``NUMBA_NUM_THREADS``, because dask sets a nanny's ``env`` after the worker process has started: a worker
    that imported numba before (a user's script importing induce at its top is imported again by every spawned
    worker) kept one thread per core, and then failed its first compilation ("Cannot set NUMBA_NUM_THREADS to a
    different value once the threads have been launched").  BLAS and OpenMP stay at dask's one thread."""
    import os

    return {THREADS_VARIABLE: str(max(1, (cpus or os.cpu_count() or 1) // max(1, int(workers))))}


def claim_threads() -> int:
    """In a task on a local cluster's worker: numba's threads for this thread set to the worker's share
    (:func:`worker_environment`; at most numba's pool); elsewhere unchanged.  Returns the threads now in use."""
    import os

    import numba

    share = os.environ.get(THREADS_VARIABLE)
    if share:
        numba.set_num_threads(max(1, min(int(share), numba.config.NUMBA_NUM_THREADS)))
    return numba.get_num_threads()


def _connect(Client, address: str, timeout: float):
    """``Client(address)``, given up after ``timeout`` seconds even when the other end accepts the connection
    but never answers (dask's own timeout does not cover that handshake): the connection is made in a daemon
    thread that is abandoned if it has not finished in time."""
    import threading

    box: dict = {}

    def connect():
        try:
            box["client"] = Client(address, timeout=f"{timeout}s")
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=connect, name="induce-connect", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    error = box.get("error")
    if thread.is_alive() or isinstance(error, (OSError, ValueError)):  # no answer, refused, unreachable, bad address
        raise ConfigError(f"cannot reach the dask scheduler at {address} within {timeout:g} s (--cluster-timeout)"
                          + (f": {error}" if error else ": it accepted the connection but never answered"))
    if error is not None:
        raise error
    return box["client"]


def add_options(parser, algorithms: str) -> None:
    """The command line's ``--workers N`` / ``--cluster ADDRESS`` (for ``algorithms``, named in the help)."""
    from ..cli.common import finite_positive_float, positive_int

    c = parser.add_argument_group(f"on a dask cluster ({algorithms}; pip install 'induce[distributed]')")
    c.add_argument("--workers", type=positive_int, metavar="N",
                   help="run the E-steps on a local cluster of N worker processes")
    c.add_argument("--cluster", metavar="tcp://HOST:8786", type=cluster_address,
                   help="run the E-steps on the workers of this dask scheduler")
    c.add_argument("--cluster-timeout", type=finite_positive_float, default=CONNECT_TIMEOUT, metavar="SECONDS",
                   help="give up connecting to --cluster after this long, and again waiting for its first worker "
                        f"(default {CONNECT_TIMEOUT:g})")


@contextmanager
def from_args(args, supported: bool, what: str):
    """The client of ``--workers`` / ``--cluster`` for a ``with`` block, or ``None`` without them; a
    ``ConfigError`` when both are given or the command is not ``supported`` on a cluster (``what`` says what is)."""
    if not (args.workers or args.cluster):
        if "cluster_timeout" in getattr(args, "_given", {}):
            raise ConfigError("--cluster-timeout applies to --cluster ADDRESS")
        yield None
        return
    if args.workers and args.cluster:
        raise ConfigError("give --workers N (a local cluster) or --cluster ADDRESS (a running scheduler), not both")
    if not supported:
        raise ConfigError(f"--workers / --cluster run {what}")
    with session(args.workers or 0, args.cluster, getattr(args, "cluster_timeout", CONNECT_TIMEOUT)) as client:
        yield client


def n_workers(client) -> int:
    """Workers currently connected to the client's scheduler."""
    return len(client.scheduler_info()["workers"])


def submit(client, fn, *args, home: str | None = None):
    """``client.submit(fn, *args)``, never cached by argument value, re-run up to :data:`RETRIES` times when its
    worker dies; with ``home`` (a worker's address) run there while it lives (a loose restriction: elsewhere once
    it is gone), whatever dask's placement and work stealing would prefer."""
    if home is None:
        return client.submit(fn, *args, pure=False, retries=RETRIES)
    return client.submit(fn, *args, pure=False, retries=RETRIES, workers=[home], allow_other_workers=True)


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


def nbytes(obj) -> int:
    """Bytes of the numpy arrays in ``obj`` (nested tuples and lists; numbers count 8): what a message carries."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (tuple, list)):
        return sum(nbytes(o) for o in obj)
    return 8 if isinstance(obj, (int, float, np.number)) else 0


#: glibc ``mallopt`` parameters and the values a worker sets (:func:`keep_heap`): the ceilings of glibc's own
#: dynamic thresholds on 64-bit (``M_MMAP_THRESHOLD`` 32 MiB, ``M_TRIM_THRESHOLD`` twice that)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MALLOC_SETTINGS = {_M_MMAP_THRESHOLD: 32 * 2**20, _M_TRIM_THRESHOLD: 64 * 2**20}
_heap_kept = False


def keep_heap() -> None:
    """On a worker, once: let glibc keep freed memory below 32 MiB in the heap (``mallopt``; a no-op off glibc).
    Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also freezes the mmap threshold at
    128 KiB: every array above that (a round's ``(|T_j|, K)`` tables, each minibatch's statistics) is then
    mapped, zero-filled page by page and unmapped again.  Measured, one round of 16 local steps on Brown: 558k
    tokens per CPU-second with dask's setting against 856-873k with glibc's defaults or these
    (docs/experiments/distributed.md, "Where a round's time went")."""
    global _heap_kept
    if _heap_kept:
        return
    _heap_kept = True
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return
    for param, value in MALLOC_SETTINGS.items():
        mallopt(ctypes.c_int(param), ctypes.c_int(value))


def timed(fn, *args):
    """On a worker: ``(fn(*args), seconds, worker address, the worker process's peak resident memory in bytes,
    CPU seconds of the task's thread)`` (the CPU time stays meaningful on a machine shared with other jobs)."""
    import time

    from distributed import get_worker

    keep_heap()
    claim_threads()
    t0, c0 = time.perf_counter(), time.thread_time()
    out = fn(*args)
    seconds, cpu = time.perf_counter() - t0, time.thread_time() - c0
    return out, seconds, get_worker().address, peak_memory(), cpu


def timed_carried(fn, *args):
    """:func:`timed` with the timing carried beside the result, so that it survives a :func:`tree_reduce`:
    ``(result, [(seconds, worker, peak memory, CPU seconds)])``."""
    out, *timing = timed(fn, *args)
    return out, [tuple(timing)]


def _add_carried(add, a, b):
    return add(a[0], b[0]), a[1] + b[1]


def tree_reduce(client, futures: list, add, keep: int = 1) -> tuple[list, list]:
    """The pairwise reduction of ``futures`` (results of :func:`timed_carried`, in shard order) by ``add(a, b)``,
    computed on the workers until at most ``keep`` partial sums are left: ``ceil(log2(w / keep))`` levels, and
    the client gathers only those (the counts are not gathered to the client shard by shard).  Returns
    ``(futures of the partial sums, in shard order, levels)``: ``levels[i]`` the index pairs ``(a, b)`` added at
    level ``i`` (an odd one out goes up unchanged), for the caller's accounting of what travelled (the second
    operand of each addition)."""
    level, pairs = list(futures), []
    while len(level) > max(1, keep):
        step = [(i, i + 1) for i in range(0, len(level) - 1, 2)]
        pairs.append(step)
        level = [submit(client, _add_carried, add, level[i], level[j]) for i, j in step] + \
            ([level[-1]] if len(level) % 2 else [])
    return level, pairs


class Meter:
    """Where a distributed step's time goes: its wall time on the client against the longest of its workers'
    tasks (:func:`timed`); the difference is the step overhead (sending, scheduling, gathering, the client's
    own work), measured per step."""

    def __init__(self):
        self.steps = 0
        self.wall = 0.0
        self.overhead = 0.0
        self.busy: dict[str, float] = {}   # seconds in tasks, per worker
        self.cpu: dict[str, float] = {}    # CPU seconds in tasks (the tasks' threads), per worker
        self.tokens: dict[str, int] = {}   # tokens processed, per worker
        self.peak: dict[str, int] = {}     # peak resident bytes, per worker
        self.minibatches = 0               # minibatches run (a step may run several: local rounds)
        self.sent = 0                      # bytes of arrays the client sent, received, and
        self.received = 0                  # that moved between workers (the rounds' tree sums)
        self.moved = 0

    def add(self, wall: float, results: list, tokens: list[int]) -> list:
        """Record one step of ``wall`` seconds whose tasks gave ``results`` (from :func:`timed`) over ``tokens``
        tokens each; returns the tasks' own results."""
        self.steps += 1
        self.wall += wall
        self.overhead += wall - max((r[1] for r in results), default=0.0)
        for (_, seconds, address, peak, *cpu), n in zip(results, tokens):  # (results without CPU time: none)
            self.busy[address] = self.busy.get(address, 0.0) + seconds
            self.cpu[address] = self.cpu.get(address, 0.0) + sum(cpu)
            self.tokens[address] = self.tokens.get(address, 0) + int(n)
            self.peak[address] = max(self.peak.get(address, 0), int(peak))
        return [r[0] for r in results]

    def traffic(self, minibatches: int, sent: int, received: int, moved: int = 0) -> None:
        """Record the bytes of a step of ``minibatches`` minibatches: numpy arrays the client ``sent`` and
        ``received`` and those ``moved`` between workers (:func:`nbytes`; dask's framing not counted)."""
        self.minibatches += int(minibatches)
        self.sent += int(sent)
        self.received += int(received)
        self.moved += int(moved)

    def report(self, workers: int) -> dict:
        """``workers``, the mean step overhead (ms; per minibatch, whatever a step holds), tokens/s per worker
        while in its tasks, peak memory per worker (MiB), and the bytes on the wire per minibatch and per
        training token."""
        n, tokens = max(1, self.minibatches or self.steps), max(1, sum(self.tokens.values()))
        return {"workers": workers, "steps": self.steps, "minibatches": self.minibatches or self.steps,
                "step_overhead_ms": round(1e3 * self.overhead / n, 3),
                "worker_tokens_per_s": {a: round(self.tokens[a] / s, 1) for a, s in self.busy.items() if s > 0},
                "worker_tokens_per_cpu_s": {a: round(self.tokens[a] / s, 1) for a, s in self.cpu.items() if s > 0},
                "worker_peak_memory_mb": {a: round(p / 2**20, 1) for a, p in self.peak.items()},
                "bytes_sent_per_step": round(self.sent / n), "bytes_received_per_step": round(self.received / n),
                "bytes_between_workers_per_step": round(self.moved / n),
                "bytes_per_token": round((self.sent + self.received + self.moved) / tokens, 2)}

    def per_step(self) -> tuple[float, float]:
        """Mean seconds a step: ``(overhead, the longest task)``."""
        n = max(1, self.steps)
        return self.overhead / n, (self.wall - self.overhead) / n

    def advice(self, batch_size: int, target: float = 0.2, planned: bool = False) -> str | None:
        """A one-line warning when the step overhead took more than half of the steps' time (at least 5 steps).
        For a given size: with the overhead ``o`` per step taken as fixed and the workers' time ``c`` as
        proportional to the minibatch, a minibatch of ``M c' / c`` with ``c' = o (1 - target) / target`` brings
        the overhead to ``target`` of a step (a lower bound: the emission rows that travel grow with the
        minibatch too).  For a ``planned`` size (:func:`planned_batch_size`, already the largest the schedule
        allows): that the corpus is small for the cluster."""
        if self.steps < 5 or self.wall <= 0 or self.overhead <= 0.5 * self.wall:
            return None
        o, c = self.per_step()
        c = max(c, 1e-9)
        if planned:
            return (f"the cluster's step overhead was {self.overhead / self.wall:.0%} of training ({1e3 * o:.0f} ms a "
                    f"step against {1e3 * c:.0f} ms on the workers) with minibatches of {batch_size}, the largest "
                    f"planned for this corpus ({MIN_STEPS} minibatches): this corpus is small for a cluster; one "
                    "process may well be faster")
        suggested = int(float(f"{batch_size * o * (1 - target) / target / c:.2g}"))
        return (f"the cluster's step overhead was {self.overhead / self.wall:.0%} of training ({1e3 * o:.0f} ms a step "
                f"against {1e3 * c:.0f} ms on the workers): minibatches of at least {suggested} sentences "
                f"(--batch-size) would bring it to {target:.0%}")

    def postfix(self) -> dict:
        """The progress bar's fields: workers seen, tokens/s per worker (while in its tasks), mean step overhead, and
        bytes on the wire a training token."""
        busy = sum(self.busy.values())
        tokens = sum(self.tokens.values())
        return {"workers": len(self.busy), "tok/s/worker": f"{tokens / busy:.3g}" if busy else "-",
                "overhead": f"{1e3 * self.overhead / max(1, self.minibatches or self.steps):.1f}ms",
                "B/tok": f"{(self.sent + self.received + self.moved) / tokens:.3g}" if tokens else "-"}


#: on a cluster without a given size, the minibatch is the largest that keeps this many minibatches in the run
#: (:func:`planned_batch_size`): one scvi epoch of a 5M-token HMM stream ended at held-out -6.003 a token with
#: 2,251 minibatches, -6.013 with 451, -6.152 with 226, -6.497 with 113; of 20M tokens at -5.9395 with 9,069 and
#: with 454, -5.955 with 272 (benchmarks/results/dask_bench_sizes.json); over 10 epochs 276 minibatches lost 0.13
#: on WSJ, 1,150 nothing on Brown (RESULTS.md, "Stochastic and single sequence")
MIN_STEPS = 500


def planned_batch_size(n_items: int, floor: int, epochs: int = 1) -> int:
    """The minibatch size of a run on a cluster when none is given: the largest that keeps :data:`MIN_STEPS`
    minibatches in ``epochs`` passes over ``n_items`` items, and at least ``floor`` (the single-process
    default).  The step overhead (a fixed 30-70 ms and the rows that travel) only shrinks against the
    workers' time as minibatches grow, so the largest size the schedule allows is the one to take; a size
    from timing the cluster would make the run depend on the moment's load (a run depends on the seed and the
    number of shards only)."""
    return max(int(floor), int(n_items) * max(1, int(epochs)) // MIN_STEPS)

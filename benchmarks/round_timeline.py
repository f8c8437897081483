"""Where the wall time of scvi rounds goes on a local cluster (issue 41): a timeline of one epoch, by round.

    PYTHONPATH=. python benchmarks/round_timeline.py /tmp/scale_bench_brown.txt --workers 1,2 --seeds 0-1

One epoch of ``HMMTagger(infer="scvi", n_states=45, batch_size=1000)`` (``benchmarks/scale_bench.py``'s fit) per
worker count and seed, with the round tasks (:func:`induce.distributed.rounds._run_round`) timed on the workers
by phase (thread CPU and wall: advancing the copy, the local steps' forward-backward and count updates, the
delta) and the client's submits and merges timed in this process, and the CPU time of every thread of this
process (the client and a LocalCluster's scheduler) and of the workers read from /proc at the first submit and
after the last merge.  Per run it prints: the training interval (the run's first submit to its last merge), each
worker's time in round tasks and idle inside it (before the first task, between tasks, after the last), each
worker's idle time at each round boundary (its task of round ``r + 1`` started after its own task of round ``r``
ended: waiting for the other worker's delta, the scheduler, the client), the phases' CPU summed over workers, and
the CPU of each thread over the training interval (clock ticks of 10 ms).  ``--json FILE`` writes every number.
Records: docs/experiments/distributed.md, "Seventh session".
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scale_bench  # noqa: E402
from scale_bench import _seeds, _warm  # noqa: E402

from induce import HMMTagger  # noqa: E402
from induce import distributed as dist  # noqa: E402
from induce.distributed import rounds  # noqa: E402



def _instrument_worker() -> None:
    """In a worker process: :func:`rounds._run_round` and its phases timed into :data:`LOG` (once)."""
    from induce.infer import stochastic_hmm as sh

    if getattr(rounds, "_timeline", None) is not None:
        for log in rounds._timeline:
            log.clear()
        return
    # (kept on the module: this function travels by value, each client.run with its own globals) the round
    # tasks' (round, shard, start, end, thread CPU, {phase: [cpu, wall]}) and the cut tasks' (start, end, CPU)
    LOG, CUTS = rounds._timeline = [], []
    phases: dict = collections.defaultdict(lambda: [0.0, 0.0])

    def timed(name, fn):
        def run(*a, **k):
            c, t = time.thread_time(), time.perf_counter()
            out = fn(*a, **k)
            phases[name][0] += time.thread_time() - c
            phases[name][1] += time.perf_counter() - t
            return out
        return run

    rounds.advance = timed("advance", rounds.advance)
    rounds._resident = timed("resident", rounds._resident)
    rounds._delta = timed("delta", rounds._delta)
    rounds.stochastic.sentence_statistics = timed("forward-backward", sh.sentence_statistics)
    rounds.ShardCounts.update = timed("count update", sh.GlobalCounts.update)
    run_round = rounds._run_round

    def logged(*a, **k):
        phases.clear()
        c, t = time.thread_time(), time.perf_counter()
        out = run_round(*a, **k)
        # (the key (run token, shard) and the round follow the cut or the shard and pieces, by version)
        at = next(i for i, x in enumerate(a) if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str))
        LOG.append((a[at + 1], a[at][1], t, time.perf_counter(), time.thread_time() - c,
                    {n: list(v) for n, v in phases.items()}))
        return out

    rounds._run_round = logged
    cut_round = rounds._cut_round

    def cut(*a):
        c, t = time.thread_time(), time.perf_counter()
        out = cut_round(*a)
        CUTS.append((t, time.perf_counter(), time.thread_time() - c))
        return out

    rounds._cut_round = cut


def _worker_log() -> tuple[list, list]:
    return tuple(list(log) for log in rounds._timeline)


def _threads_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of each thread of this process from /proc, by name (the main thread ``main``;
    threads of one name summed)."""
    import threading

    out: dict[str, float] = collections.Counter()
    tick = os.sysconf("SC_CLK_TCK")
    names = {t.native_id: t.name.split("-")[0].split(" ")[0] for t in threading.enumerate()}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = "main" if int(tid) == os.getpid() else names.get(int(tid), f.read().strip())
        except OSError:  # the thread ended
            continue
        out[name] += (int(fields[11]) + int(fields[12])) / tick
    return dict(out)


def _less(b: dict, a: dict) -> dict:
    return {k: round(v - a.get(k, 0.0), 3) for k, v in b.items() if v - a.get(k, 0.0) > 0}


def _fit(path: str, client, seed: int, sync: int, staleness: int) -> dict:
    """One epoch, timed: see the module docstring (after a full garbage collection, as :func:`scale_bench._fit`)."""
    client.run(_instrument_worker)
    scale_bench._collect_garbage(client)
    events, snaps = [], []  # client: (what, round, start, end); CPU by thread at the first submit and last merge
    submit, collect = rounds.WorkerRoundsUpdater._submit, rounds.WorkerRoundsUpdater._collect

    def timed_submit(self, counts, rd):
        if not events:
            snaps.append((_threads_cpu(), client.run(_threads_cpu)))
        t = time.perf_counter()
        submit(self, counts, rd)
        events.append(("submit", rd.number, t, time.perf_counter()))

    def timed_collect(self, counts):
        t, number = time.perf_counter(), self._flight[0].number
        collect(self, counts)
        events.append(("merge", number, t, time.perf_counter()))
        if not self._flight and not self._open:  # (settled: the last merge of the run, or of the epoch)
            snaps[1:] = [(_threads_cpu(), client.run(_threads_cpu))]

    rounds.WorkerRoundsUpdater._submit, rounds.WorkerRoundsUpdater._collect = timed_submit, timed_collect
    workers = client.run(os.getpid)
    try:
        model = HMMTagger(n_states=45, infer="scvi", batch_size=1000, random_state=seed, client=client,
                          sync_every=sync, staleness=staleness, n_epochs=1, heldout_fraction=0.02,
                          heldout_max_tokens=50_000, tol=0)
        model.fit_stream(path)
    finally:
        rounds.WorkerRoundsUpdater._submit, rounds.WorkerRoundsUpdater._collect = submit, collect
    logs = client.run(_worker_log)
    t0 = min(e[2] for e in events if e[0] == "submit")
    t1 = max(e[3] for e in events if e[0] == "merge")
    out = {"seed": seed, "workers": len(workers), "sync": sync, "staleness": staleness,
           "train_seconds": model.trace_[-1]["seconds"], "tokens": model.trace_[-1]["tokens_seen"],
           "heldout_ll_per_token": model.trace_[-1]["heldout_log_likelihood_per_token"],
           "interval_s": t1 - t0, "rounds": 1 + max(e[1] for e in events), "workers_detail": [], "client": []}
    for what, number, a, b in sorted(events, key=lambda e: e[2]):
        out["client"].append({"what": what, "round": number, "start_ms": 1e3 * (a - t0), "ms": 1e3 * (b - a)})
    phases = collections.Counter()
    for address, (log, cuts) in sorted(logs.items()):
        log = sorted(log, key=lambda e: e[2])
        busy = sum(e[3] - e[2] for e in log)
        gaps = [1e3 * (b[2] - a[3]) for a, b in zip(log, log[1:])]
        for e in log:
            for name, (cpu, _) in e[5].items():
                phases[name] += cpu
        out["workers_detail"].append({
            "address": address, "tasks": len(log), "busy_s": busy, "task_cpu_s": sum(e[4] for e in log),
            "first_start_ms": 1e3 * (log[0][2] - t0), "after_last_ms": 1e3 * (t1 - log[-1][3]),
            "boundary_gaps_ms": gaps, "cut_cpu_ms": 1e3 * sum(c[2] for c in cuts if t0 <= c[0] <= t1),
            "tasks_ms": [(e[0], 1e3 * (e[2] - t0), 1e3 * (e[3] - e[2]), 1e3 * e[4]) for e in log]})
    out["phase_cpu_s"] = dict(phases)
    (c0, w0), (c1, w1) = snaps
    out["client_thread_cpu_s"] = _less(c1, c0)
    out["worker_thread_cpu_s"] = {a: _less(w1[a], w0[a]) for a in w1}
    return out


def _show(run: dict) -> None:
    print(f"seed {run['seed']} workers {run['workers']} R {run['sync']} stale {run['staleness']}: train "
          f"{run['train_seconds']:.3f} s, interval {run['interval_s']:.3f} s, {run['rounds']} rounds, "
          f"{run['tokens'] / run['train_seconds'] / 1e3:.0f}k tokens/s, held-out {run['heldout_ll_per_token']:.4f}")
    for w in run["workers_detail"]:
        print(f"  worker: tasks {w['busy_s']:.3f} s wall, {w['task_cpu_s']:.3f} s CPU; idle before first "
              f"{w['first_start_ms']:.1f} ms, at boundaries {sum(w['boundary_gaps_ms']):.1f} ms "
              f"({', '.join(f'{g:.1f}' for g in w['boundary_gaps_ms'])}), after last {w['after_last_ms']:.1f} ms; "
              f"cutting pieces {w['cut_cpu_ms']:.1f} ms CPU")
        print("    tasks (round, start ms, wall ms, cpu ms): "
              + "; ".join(f"{r} {s:.0f} {d:.1f} {c:.1f}" for r, s, d, c in w["tasks_ms"]))
    print("  client: " + "; ".join(f"{e['what']} {e['round']} @{e['start_ms']:.0f} {e['ms']:.1f}ms"
                                   for e in run["client"]))
    print("  phase CPU s (all workers): " + ", ".join(f"{k} {v:.3f}" for k, v in
                                                       sorted(run["phase_cpu_s"].items(), key=lambda kv: -kv[1])))
    total = sum(run["client_thread_cpu_s"].values()) + sum(sum(t.values()) for t in run["worker_thread_cpu_s"].values())
    print(f"  CPU s by thread over the interval ({total:.2f} in all): client {run['client_thread_cpu_s']}")
    for a, threads in run["worker_thread_cpu_s"].items():
        print(f"    worker {a}: {threads}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--sync", default="64", help="minibatches a round R, comma-separated (default 64)")
    ap.add_argument("--staleness", type=int, default=0)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--dask-defaults", action="store_true",
                    help="the local cluster with dask's own settings (not induce.distributed.cluster.LOCAL_CONFIG)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    if args.dask_defaults:
        dist.cluster.LOCAL_CONFIG = {}
    runs = []
    for n in (int(w) for w in args.workers.split(",")):
        with dist.session(n) as client:
            client.wait_for_workers(n)
            _warm(args.path, client)
            for seed in _seeds(args.seeds):
                for sync in (int(v) for v in args.sync.split(",")):
                    runs.append(_fit(args.path, client, seed, sync, args.staleness if n > 1 else 0))
                    _show(runs[-1])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load": os.getloadavg(), "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()

"""Timing discipline shared by the speed modes of ``series_bench.py`` and ``hmm_bench.py``.

Every timing records the 1-minute load average before and after it and the process CPU time beside the wall
time (CPU time is what a quiet core would take, summed over threads); a timing that started or ended with the
load average above :data:`LOADED` is marked ``loaded``.  Peers are timed in rounds, the order rotated every
round, so that each peer's timings are spread over the same stretch of the run (:func:`alternate`); every timing
callable does its own warm-up (a fit or pass that is not timed) first.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

#: load average above which a timing is marked ``loaded`` (the quiet-machine tables need it below)
LOADED = 1.5


def load() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def clock() -> tuple[float, float]:
    """``(wall, cpu)`` seconds now (``perf_counter``, ``process_time``)."""
    return time.perf_counter(), time.process_time()


def per_iteration(stamps: list[tuple[float, float]], skip: int = 1) -> tuple[float, float]:
    """Median wall and CPU seconds between consecutive ``(wall, cpu)`` stamps, the first ``skip`` intervals
    (warm-up iterations) left out."""
    wall = [b[0] - a[0] for a, b in zip(stamps, stamps[1:])][skip:]
    cpu = [b[1] - a[1] for a, b in zip(stamps, stamps[1:])][skip:]
    return statistics.median(wall), statistics.median(cpu)


def measure(run) -> dict:
    """``run()`` returns ``(wall, cpu)`` seconds per iteration; add the load average before and after."""
    before = load()
    wall, cpu = run()
    after = load()
    return {"wall": wall, "cpu": cpu, "load_before": before, "load_after": after,
            "loaded": max(before, after) > LOADED}


def alternate(peers: dict, rounds: int, log=print) -> dict:
    """Time every peer (name -> callable for :func:`measure`) ``rounds`` times, the order rotated each round;
    returns name -> summary (:func:`summarize`) with every timing under ``"runs"``."""
    names = list(peers)
    runs = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            m = measure(peers[name])
            runs[name].append(m)
            log(f"  round {r} {name:24s} {m['wall']:.5f} s/it wall {m['cpu']:.5f} cpu  load "
                f"{m['load_before']:.2f}->{m['load_after']:.2f}{'  LOADED' if m['loaded'] else ''}")
    return {n: summarize(v) for n, v in runs.items()}


def summarize(runs: list[dict]) -> dict:
    """Median, min and max wall and CPU seconds over the rounds, the highest load average, and the runs."""
    wall = [r["wall"] for r in runs]
    cpu = [r["cpu"] for r in runs]
    return {"wall": statistics.median(wall), "cpu": statistics.median(cpu), "wall_min": min(wall),
            "wall_max": max(wall), "cpu_min": min(cpu), "cpu_max": max(cpu),
            "max_load": max(max(r["load_before"], r["load_after"]) for r in runs),
            "loaded": any(r["loaded"] for r in runs), "runs": runs}


def machine() -> dict:
    """Processor, core count, Python and numba thread count of this run."""
    import numba

    return {"processor": platform.processor() or platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "numba_threads": numba.get_num_threads()}


def write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` (parent folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, default=float))

"""Compact summaries of ``hdp_bench.py recovery`` traces, for ``benchmarks/results/``.

A recovery trace (``benchmarks/out/hdp_recovery*.json``, up to 18 MB) holds, for every run, the effective number of
states and the cumulative seconds after every iteration.  The tables of ``docs/experiments/hdp.md`` need less: the
effective-state trajectory, which changes rarely and is stored run-length encoded ``[[states, iterations], ...]``
(exact: every "exactly the truth at iteration i", mean at iteration i and final count can be read from it), the
iteration after which it no longer changes with the seconds it took to get there, and the seconds per run.

    python benchmarks/recovery_summary.py benchmarks/out/hdp_recovery*.json

adds (or replaces) one entry per trace, keyed by the trace's file name, in
``benchmarks/results/hdp_recovery_summary.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SUMMARY = Path(__file__).resolve().parent / "results" / "hdp_recovery_summary.json"


def run_length(values: list[int]) -> list[list[int]]:
    """``[3, 3, 4]`` -> ``[[3, 2], [4, 1]]``."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return runs


def summarise_run(run: dict) -> dict:
    """One run of a trace: the run-length encoded trajectory, settle iteration / seconds, seconds in all."""
    rle = run_length(run["effective_states"])
    settle = sum(n for _, n in rle[:-1]) + 1  # first iteration of the last run of equal values (1-based)
    out = {"dataset": run["dataset"], "final": rle[-1][0], "effective_states_rle": rle,
           "settle_iteration": settle, "settle_seconds": round(run["seconds"][settle - 1], 4),
           "seconds": round(run["seconds"][-1], 4)}
    if "fit_seconds" in run:
        out["fit_seconds"] = round(run["fit_seconds"], 4)
    if run.get("init_objectives"):
        out["init_objectives"] = run["init_objectives"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=SUMMARY)
    args = parser.parse_args()
    summary = json.loads(args.out.read_text()) if args.out.exists() else {}
    for path in args.traces:
        trace = json.loads(path.read_text())
        summary[path.name] = {"machine": trace["machine"], "date": trace["date"], "args": trace["args"],
                              "results": {name: {infer: [summarise_run(r) for r in runs] for infer, runs in algs.items()}
                                          for name, algs in trace["results"].items()}}
    args.out.write_text(json.dumps(dict(sorted(summary.items())), separators=(",", ":")))


if __name__ == "__main__":
    main()

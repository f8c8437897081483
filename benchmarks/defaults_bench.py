"""What a new user gets: ``induce tag CORPUS`` with no flags, against the tuned cvi2 setting, in one run.

Usage::

    python benchmarks/defaults_bench.py --corpora ptb-sample,tr_imst --seeds 3 [--tuned] [--flags "..."] [--tag _x]

Each run is the CLI itself (``induce.cli.main``), so the numbers are exactly
what ``induce tag CORPUS -o OUT`` prints: the gold column and K are the CLI's
choices, training stops on convergence.  No flags is the feature model since issue 36
(docs/experiments/features.md); ``--flags "--emission categorical"`` gives the categorical
default of docs/experiments/defaults.md (cvi2 learns beta, alpha held at 1).  ``--tuned``
adds, per corpus and seed, the tuned setting of docs/experiments/tagging.md
(``--alpha 1 --beta 0.003 --iterations 200 --tol 0 --learn-hyper none``: the best cvi2
point of the thesis grid on WSJ held-out data) with the same K.  Writes a
summary JSON (mean, sd and the runs) under ``benchmarks/results/``, rewritten after every run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import statistics
import tempfile
from pathlib import Path

from induce.cli import main

ROOT = Path(__file__).resolve().parent
CORPORA = Path(os.environ.get("INDUCE_CORPORA", ROOT.parent.parent / "shared" / "corpora"))
#: corpus name -> path under the corpora folder (UD: train where shared has it, else dev)
NAMED = {
    "ptb-sample": "ptb-sample",
    "ewt": "ud/en_ewt/en_ewt-ud-train.conllu",
    "brown": "brown",
    "tr_imst": "ud/tr_imst/tr_imst-ud-train.conllu",
    "hu_szeged": "ud/hu_szeged/hu_szeged-ud-train.conllu",
    "vi_vtb": "ud/vi_vtb/vi_vtb-ud-train.conllu",
    "el_gdt": "ud/el_gdt/el_gdt-ud-train.conllu",
    "de_gsd": "ud/de_gsd/de_gsd-ud-dev.conllu",
    "fr_gsd": "ud/fr_gsd/fr_gsd-ud-dev.conllu",
    "zh_gsdsimp": "ud/zh_gsdsimp/zh_gsdsimp-ud-dev.conllu",
    "ja_gsd": "ud/ja_gsd/ja_gsd-ud-dev.conllu",
}
TUNED = ["--alpha", "1", "--beta", "0.003", "--iterations", "200", "--tol", "0", "--learn-hyper", "none"]
METRICS = ("m1", "m1_cv", "1to1", "vi", "vm", "iterations", "alpha", "beta", "seconds")


def run_cli(path: Path, seed: int, extra: list[str], keep_trace: bool = False) -> dict:
    """One ``induce tag`` run; its JSON result (with the warnings it recorded; the per-pass trace if
    ``keep_trace``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        argv = ["tag", str(path), "--seed", str(seed), "--quiet", "--json", str(out), *extra]
        with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        if code != 0:
            raise SystemExit(f"induce {' '.join(argv)} failed ({code}): {err.getvalue()}")
        result = json.loads(out.read_text())
    if not keep_trace:
        result.pop("trace", None)
    return result


def summarise(runs: list[dict]) -> dict:
    """Mean and sd of every metric over the runs (sd 0 for one run)."""
    out = {}
    for key in METRICS:
        values = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
        if values:
            out[key] = {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0}
    out["warnings"] = sum(len(r.get("warnings", [])) for r in runs)
    out["converged"] = sum(bool(r.get("converged")) for r in runs)
    return out


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default="ptb-sample", help=f"comma-separated: {', '.join(NAMED)}")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed-base", type=int, default=0)
    parser.add_argument("--tuned", action="store_true", help="also run the tuned cvi2 setting (see tagging.md)")
    parser.add_argument("--flags", default="", help="CLI flags added to every run, e.g. '--learn-hyper none'")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    report = {}
    out = ROOT / "results" / f"defaults{args.tag}.json"
    for name in args.corpora.split(","):
        path = CORPORA / NAMED[name]
        settings = {"defaults": shlex.split(args.flags)} | ({"tuned": TUNED} if args.tuned else {})
        report[name] = {}
        for label, extra in settings.items():
            runs = []
            for seed in range(args.seed_base, args.seed_base + args.seeds):
                r = run_cli(path, seed, extra)
                runs.append(r)
                print(f"{name:11s} {label:8s} seed {seed}: M-1 {r.get('m1', float('nan')):.3f} "
                      f"VM {r.get('vm', float('nan')):.3f} K {r['states']} passes {r['iterations']} "
                      f"alpha {r['alpha']:.3g} beta {max(r['beta']) if isinstance(r['beta'], list) else r['beta']:.3g} "
                      f"{r['seconds']:.0f} s "
                      f"warnings {len(r.get('warnings', []))}", flush=True)
                report[name][label] = {"summary": summarise(runs), "runs": runs}
                out.write_text(json.dumps(report, indent=1, default=float))  # after every run: a cut-off run keeps its seeds
    print(f"wrote {out}")


if __name__ == "__main__":
    main_bench()

"""PCFG-LA benchmark: EM, VI and CVI for H latent subtypes on the PTB sample (thesis Figure 4.2).

Fixed split of ``ptb-sample`` by file number (full WSJ sections 02-21/22/23 are
not available): train ``wsj_0001-0159``, dev ``wsj_0160-0179``, test
``wsj_0180-0199``.  For every ``H`` and algorithm one grammar is trained to
convergence (at most ``--max-iter`` passes, relative log-likelihood change
below 1e-4 from pass 20 on) from the same 1%-perturbed start (seed 0); for vi
and cvi at the ``--grid-at`` sizes the prior is chosen on dev from
{1, 0.1, 0.01, 0.001} (thesis section 4.5.3), other sizes reuse the prior chosen
at the largest grid size.  Each configuration runs in its own process so that
its peak resident memory can be reported.

    nice -n 5 python benchmarks/pcfg_la_bench.py --subtypes 1 2 4 8 --grid-at 2 4

Prints a table and writes ``benchmarks/results/pcfg_la.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPLIT = {"train": (1, 159), "dev": (160, 179), "test": (180, 199)}
GRID = (1.0, 0.1, 0.01, 0.001)
#: thesis Figure 4.2 (full WSJ, section 23): F1 per H, and P/R/exact at H = 2
THESIS_F1 = {"em": {2: 74.35, 4: 82.59, 8: 85.48, 16: 87.42},
             "vi": {2: 75.11, 4: 82.62, 8: 85.46, 16: 87.33},
             "cvi": {2: 77.90, 4: 83.36, 8: 86.55, 16: 88.06}}
THESIS_H2 = {"em": (75.84, 72.92, 11.13), "vi": (76.98, 73.32, 11.49), "cvi": (78.85, 76.98, 12.56)}


def _trees(root: Path, part: str):
    from induce.corpus.read_ptb import read_ptb

    lo, hi = SPLIT[part]
    return [s.tree for f in range(lo, hi + 1) for s in read_ptb(root / f"wsj_{f:04d}.mrg")]


def run_one(args) -> None:
    """One configuration (child process): train, parse dev (optional) and test, print JSON."""
    from induce.eval.brackets import bracket_scores
    from induce.parsers import LatentPCFGParser

    root = Path(args.corpus)
    train, test = _trees(root, "train"), _trees(root, "test")
    model = LatentPCFGParser(n_subtypes=args.one_h, infer=args.one_infer, prior=args.one_prior,
                             n_iter=args.max_iter, random_state=0).fit(train)
    out = {"H": args.one_h, "infer": args.one_infer, "prior": args.one_prior, "train_seconds": model.train_seconds_,
           "iterations": model.n_iter_, "train_log_likelihood": model.history_[-1]["log_likelihood"]}
    if args.with_dev:
        dev = _trees(root, "dev")
        out["dev_f1"] = bracket_scores(model.parse(dev), dev)["f1"]
    start = time.perf_counter()
    pred = model.parse(test)
    seconds = time.perf_counter() - start
    out["parse_seconds"] = seconds
    out["sentences_per_second"] = len(test) / seconds
    for name, cutoff in (("all", None), ("le40", 40)):
        s = bracket_scores(pred, test, max_length=cutoff)
        out[name] = {k: s[k] for k in ("precision", "recall", "f1", "exact", "sentences")}
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def child(args, h: int, infer: str, prior: float, with_dev: bool) -> dict:
    cmd = [sys.executable, __file__, "--corpus", args.corpus, "--max-iter", str(args.max_iter), "--one-h", str(h),
           "--one-infer", infer, "--one-prior", str(prior)] + (["--with-dev"] if with_dev else [])
    env = dict(os.environ, PYTHONPATH=str(REPO))
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"  H={h} {infer:3s} alpha={prior:<6g} dev F1={out.get('dev_f1', float('nan')):.4f} "
          f"test F1={out['all']['f1']:.4f} train {out['train_seconds']:.0f}s ({out['iterations']} it) "
          f"{out['sentences_per_second']:.1f} sent/s {out['peak_rss_mb']:.0f} MB", flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpora" / "ptb-sample"))
    p.add_argument("--subtypes", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--infer", nargs="+", default=["em", "vi", "cvi"])
    p.add_argument("--grid-at", type=int, nargs="*", default=[2, 4], help="H values where alpha is tuned on dev")
    p.add_argument("--alpha", nargs="*", default=[], metavar="INFER=VALUE",
                   help="prior of vi/cvi outside --grid-at (default: chosen at the largest grid size, else 0.01)")
    p.add_argument("--max-iter", type=int, default=100)
    p.add_argument("--jobs", type=int, default=1, help="configurations trained at the same time (processes)")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pcfg_la.json"))
    p.add_argument("--one-h", type=int, help=argparse.SUPPRESS)
    p.add_argument("--one-infer", help=argparse.SUPPRESS)
    p.add_argument("--one-prior", type=float, default=1.0, help=argparse.SUPPRESS)
    p.add_argument("--with-dev", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one_h is not None:
        run_one(args)
        return
    rows, candidates = [], []
    chosen = {k: float(v) for k, v in (a.split("=", 1) for a in args.alpha)}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for h in args.subtypes:  # the configurations of one H run concurrently (--jobs processes)
            jobs = {}
            for infer in args.infer:
                if infer == "em":
                    jobs[infer] = [pool.submit(child, args, h, infer, 1.0, False)]
                elif h in args.grid_at:
                    jobs[infer] = [pool.submit(child, args, h, infer, a, True) for a in GRID]
                else:
                    jobs[infer] = [pool.submit(child, args, h, infer, chosen.get(infer, 0.01), False)]
            for infer in args.infer:
                runs = [job.result() for job in jobs[infer]]
                if infer != "em" and h in args.grid_at:
                    candidates += runs
                    best = max(runs, key=lambda r: r["dev_f1"])
                    chosen[infer] = best["prior"]
                    rows.append(best)
                else:
                    rows.append(runs[0])
    print(f"\n{'H':>3} {'infer':5} {'alpha':>6} {'LP':>6} {'LR':>6} {'F1':>6} {'F1<=40':>7} {'exact':>6} "
          f"{'thesis F1':>9} {'train s':>8} {'iters':>5} {'sent/s':>7} {'MB':>6}")
    for r in rows:
        a = r["all"]
        thesis = THESIS_F1.get(r["infer"], {}).get(r["H"])
        print(f"{r['H']:>3} {r['infer']:5} {r['prior']:>6g} {100 * a['precision']:6.2f} {100 * a['recall']:6.2f} "
              f"{100 * a['f1']:6.2f} {100 * r['le40']['f1']:7.2f} {100 * a['exact']:6.2f} "
              f"{thesis if thesis else '-':>9} {r['train_seconds']:8.1f} {r['iterations']:5d} "
              f"{r['sentences_per_second']:7.1f} {r['peak_rss_mb']:6.0f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "split": SPLIT, "rows": rows,
                   "grid_candidates": candidates, "thesis_f1": THESIS_F1, "thesis_h2_p_r_exact": THESIS_H2},
                  handle, indent=1)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()

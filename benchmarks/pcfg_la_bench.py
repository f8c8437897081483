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
sys.path.insert(0, str(REPO))  # the in-process modes (--seeds) use this checkout's induce
SPLIT = {"train": (1, 159), "dev": (160, 179), "test": (180, 199)}
GRID = (1.0, 0.1, 0.01, 0.001)
#: thesis Figure 4.2 (full WSJ, section 23): F1 per H, and P/R/exact at H = 2
THESIS_F1 = {"em": {2: 74.35, 4: 82.59, 8: 85.48, 16: 87.42},
             "vi": {2: 75.11, 4: 82.62, 8: 85.46, 16: 87.33},
             "cvi": {2: 77.90, 4: 83.36, 8: 86.55, 16: 88.06}}
#: alpha of vi/cvi in the cross-validation: the values chosen on dev in the fixed split (docs/experiments/pcfg_la.md)
CV_ALPHA = {1: {"vi": 0.01, "cvi": 0.01}, 2: {"vi": 1.0, "cvi": 0.1}, 4: {"vi": 0.1, "cvi": 0.1},
            8: {"vi": 0.01, "cvi": 0.01}}
THESIS_H2 = {"em": (75.84, 72.92, 11.13), "vi": (76.98, 73.32, 11.49), "cvi": (78.85, 76.98, 12.56)}


def _trees(root: Path, part: str):
    lo, hi = SPLIT[part]
    return _read(root, range(lo, hi + 1))


def _read(root: Path, files) -> list:
    from induce.corpus.read_ptb import read_ptb

    return [s.tree for f in files for s in read_ptb(root / f"wsj_{f:04d}.mrg")]


def cv_folds(k: int, first: int = 1, last: int = 199) -> list[list[int]]:
    """``k`` folds of consecutive file numbers ``first..last`` (sizes differ by at most one)."""
    files = list(range(first, last + 1))
    size, extra = divmod(len(files), k)
    folds, start = [], 0
    for f in range(k):
        end = start + size + (1 if f < extra else 0)
        folds.append(files[start:end])
        start = end
    return folds


def _scores(pred, gold) -> dict:
    from induce.eval.brackets import bracket_scores

    out = {}
    for name, cutoff in (("all", None), ("le40", 40)):
        s = bracket_scores(pred, gold, max_length=cutoff)
        out[name] = {k: s[k] for k in ("precision", "recall", "f1", "exact", "sentences")}
    return out


def _configs(args, train, test, seed: int, extra: dict) -> list[dict]:
    """Train every (H, infer) of ``args`` (alpha from ``CV_ALPHA``) on ``train`` and parse ``test`` with one
    coarse pass shared by all grammars; one row per grammar (``extra`` added to each)."""
    from induce.parsers import LatentPCFGParser

    rows, pruning = [], None
    for h in args.subtypes:
        for infer in args.infer:
            prior = CV_ALPHA[h][infer] if infer != "em" else 1.0
            model = LatentPCFGParser(n_subtypes=h, infer=infer, alpha=prior, n_iter=args.max_iter,
                                     random_state=seed).fit(train)
            start = time.perf_counter()
            if pruning is None:
                pruning = model.coarse_pruning(test)
            pred = model.parse(test, pruning=pruning)
            rows.append({**extra, "seed": seed, "H": h, "infer": infer, "prior": prior,
                         "train_seconds": model.train_seconds_, "iterations": model.n_iter_,
                         "parse_seconds": time.perf_counter() - start, **_scores(pred, test)})
            print(f"  {extra} seed {seed} H={h} {infer:3s} F1={rows[-1]['all']['f1']:.4f}", file=sys.stderr,
                  flush=True)
    return rows


def run_fold(args) -> None:
    """One cross-validation fold (child process): train every configuration on the other folds, parse the
    fold's files (one coarse pass shared by all grammars), print a JSON list of rows."""
    root = Path(args.corpus)
    folds = cv_folds(args.cv)
    test_files = folds[args.one_fold]
    train = _read(root, [f for fold in folds for f in fold if f not in test_files])
    test = [t for t in _read(root, test_files) if args.cv_max_length is None or len(t.leaves()) <= args.cv_max_length]
    print(json.dumps(_configs(args, train, test, 0, {"fold": args.one_fold,
                                                     "files": [test_files[0], test_files[-1]]})))


def seeds(args) -> None:
    """``--seeds``: the fixed split, every configuration once per seed (the seed of the 1% perturbation and
    of CVI's tree order), all in this process with one shared coarse pass; mean and sd per configuration."""
    import numpy as np

    root = Path(args.corpus)
    train, test = _trees(root, "train"), _trees(root, "test")
    rows = [r for seed in args.seeds for r in _configs(args, train, test, seed, {})]
    summary = []
    for h in args.subtypes:
        for infer in args.infer:
            rs = [r for r in rows if r["H"] == h and r["infer"] == infer]
            summary.append({"H": h, "infer": infer, "prior": rs[0]["prior"], "seeds": len(rs),
                            **{k: {"mean": float(np.mean(v)), "sd": float(np.std(v, ddof=1))}
                               for k, v in (("f1", [r["all"]["f1"] for r in rs]),
                                            ("f1_le40", [r["le40"]["f1"] for r in rs]),
                                            ("exact", [r["all"]["exact"] for r in rs]))}})
            e = summary[-1]
            print(f"{h:>3} {infer:5} {e['prior']:>6g} " + " ".join(
                f"{100 * e[k]['mean']:6.2f}+-{100 * e[k]['sd']:4.2f}" for k in ("f1", "f1_le40", "exact")))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "split": SPLIT,
                               "seeds": args.seeds, "max_iter": args.max_iter, "alpha": CV_ALPHA,
                               "summary": summary, "rows": rows}, indent=1), encoding="utf-8")
    print(f"wrote {out}")


def run_one(args) -> None:
    """One configuration (child process): train, parse dev (optional) and test, print JSON."""
    from induce.eval.brackets import bracket_scores
    from induce.parsers import LatentPCFGParser

    root = Path(args.corpus)
    train, test = _trees(root, "train"), _trees(root, "test")
    model = LatentPCFGParser(n_subtypes=args.one_h, infer=args.one_infer, alpha=args.one_prior,
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
    out.update(_scores(pred, test))
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


def fold_child(args, fold: int) -> list[dict]:
    cmd = [sys.executable, __file__, "--corpus", args.corpus, "--max-iter", str(args.max_iter), "--cv", str(args.cv),
           "--one-fold", str(fold), "--subtypes", *map(str, args.subtypes), "--infer", *args.infer]
    if args.cv_max_length is not None:
        cmd += ["--cv-max-length", str(args.cv_max_length)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def cv_summary(rows: list[dict], subtypes, infers) -> list[dict]:
    """Mean and sd over folds per configuration, and per H the folds where cvi > vi > em in F1."""
    import numpy as np

    summary = []
    for h in subtypes:
        for infer in infers:
            rs = [r for r in rows if r["H"] == h and r["infer"] == infer]
            if not rs:
                continue
            entry = {"H": h, "infer": infer, "prior": rs[0]["prior"], "folds": len(rs)}
            for key, values in (("f1", [r["all"]["f1"] for r in rs]), ("f1_le40", [r["le40"]["f1"] for r in rs]),
                                ("exact", [r["all"]["exact"] for r in rs]), ("train_seconds",
                                                                             [r["train_seconds"] for r in rs])):
                entry[key] = {"mean": float(np.mean(values)), "sd": float(np.std(values, ddof=1)) if len(rs) > 1
                              else 0.0}
            by_fold = {r["fold"]: {x["infer"]: x["all"]["f1"] for x in rows if x["H"] == h and x["fold"] == r["fold"]}
                       for r in rs}
            entry["folds_cvi_gt_vi_gt_em"] = sum(1 for f in by_fold.values() if {"em", "vi", "cvi"} <= f.keys()
                                                 and f["cvi"] > f["vi"] > f["em"])
            summary.append(entry)
    return summary


def cross_validate(args) -> None:
    """``--cv K``: one process per fold (``--jobs`` at a time); JSON rewritten after every fold."""
    folds = args.folds if args.folds else list(range(args.cv))
    out = Path(args.out if args.out != str(REPO / "benchmarks" / "results" / "pcfg_la.json")
               else REPO / "benchmarks" / "results" / f"pcfg_la_cv{args.cv}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    own: list[dict] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for fold_rows in pool.map(lambda f: fold_child(args, f), folds):
            own += fold_rows
            rows = list(own)
            for path in args.merge or []:  # folds written by another invocation (other --folds), read now
                rows += [r for r in json.loads(Path(path).read_text(encoding="utf-8"))["rows"] if r["fold"] not in folds]
            summary = cv_summary(rows, args.subtypes, args.infer)
            print(f"fold {fold_rows[0]['fold']} done ({len({r['fold'] for r in rows})} of {args.cv})", flush=True)
            with open(out, "w", encoding="utf-8") as handle:
                json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cv": args.cv,
                           "folds": cv_folds(args.cv), "max_iter": args.max_iter, "max_length": args.cv_max_length,
                           "alpha": CV_ALPHA, "summary": summary, "rows": sorted(rows, key=lambda r: r["fold"])},
                          handle, indent=1)
    print(f"\n{'H':>3} {'infer':5} {'alpha':>6} {'folds':>5} {'F1':>13} {'F1<=40':>13} {'exact':>13} "
          f"{'cvi>vi>em':>9}")
    for e in summary:
        print(f"{e['H']:>3} {e['infer']:5} {e['prior']:>6g} {e['folds']:>5} "
              + " ".join(f"{100 * e[k]['mean']:6.2f}+-{100 * e[k]['sd']:4.2f}" for k in ("f1", "f1_le40", "exact"))
              + f" {e['folds_cvi_gt_vi_gt_em']:>9}")
    print(f"\nwrote {out}")


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
    p.add_argument("--cv", type=int, help="K-fold cross-validation over files (alpha fixed to CV_ALPHA)")
    p.add_argument("--folds", type=int, nargs="*", help="with --cv: only these folds (0-based)")
    p.add_argument("--cv-max-length", type=int, help="with --cv: parse only test sentences up to this length")
    p.add_argument("--merge", nargs="*", help="with --cv: JSON files of earlier --cv runs whose other folds are kept")
    p.add_argument("--seeds", type=int, nargs="*", help="fixed split, alpha from CV_ALPHA, once per seed")
    p.add_argument("--one-fold", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one_h is not None:
        run_one(args)
        return
    if args.one_fold is not None:
        run_fold(args)
        return
    if args.cv:
        cross_validate(args)
        return
    if args.seeds:
        seeds(args)
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

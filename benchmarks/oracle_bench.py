"""The HMM priors against the oracle: the best point of the thesis' 6 x 6 grid on the test corpus itself.

Usage::

    python benchmarks/oracle_bench.py run --corpus wsj1k --algorithms cvi2,vi,em --jobs 16 --out benchmarks/out/oracle
    python benchmarks/oracle_bench.py summary --corpus wsj1k --out benchmarks/out/oracle

For each algorithm (docs/experiments/defaults.md, "Against the oracle"):

* ``grid``: the 6 x 6 alpha x beta grid (0.003 .. 1, thesis sec. 3.6) at ``--grid-seeds`` seeds (100, 101, ...,
  disjoint from the evaluation seeds); ``em`` is MAP with pseudo-counts ``alpha - 1``, ``beta - 1`` over the
  same grid (plain maximum likelihood has no prior);
* ``oracle``: ``--seeds`` seeds (0, 1, ...) at the grid point with the best mean M-1 on this corpus;
* ``default``: ``HMMTagger`` with no priors given (:data:`induce.taggers.hmm.DEFAULT_PRIORS`, and for cvi2 since
  2026-11-24 beta learned per state, for svi since 2026-11-25 both priors learned,
  :data:`~induce.taggers.hmm.DEFAULT_LEARNING`; the ``default`` runs in the JSON files committed before then
  are the grid's point held, today's ``fixed``);
* ``fixed``: the default priors held (``learn_hyper=False``);
* ``eb-beta``, ``eb``: empirical Bayes of beta (alpha at its default) or of both (``learn_hyper=True``);
  not for ``em``, whose MAP priors are floored at 1 and learn to plain maximum likelihood;
* ``eb-state``, ``eb-state-beta`` (cvi2 only): an emission concentration ``beta_k`` per state, each learned from
  its row (``learn_hyper="per-state"``), with alpha learned or held at its default.

``--variants`` picks the non-grid variants to run (default: all that apply).

Every run has the CLI's stopping rule (tol 1e-5, cap ``--cap``; ``svi`` / ``scvi``: the default epoch cap and
held-out stop, ``passes`` their epochs) and K = the number of gold tags.  Runs go to a
process pool (one numba thread each); every finished run is appended to ``OUT/oracle_<corpus>.jsonl`` at once,
and a run already there is skipped, so an interrupted invocation resumes.  ``summary`` writes
``benchmarks/results/<name of OUT>_<corpus>.json`` (``oracle_<corpus>.json``; an algorithm of that file which the
runs do not hold is kept): mean and sd of M-1 and V-M per
variant, and the paired differences from the oracle (from the default when no grid was run, ``--grid-seeds 0``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
LEARNED = ("eb-beta", "eb", "eb-state", "eb-state-beta")
PER_STATE = ("eb-state", "eb-state-beta")
_CORPUS = {}


def _corpus(name):
    """The corpus and gold column, loaded once per worker process."""
    if name not in _CORPUS:
        from hmm_bench import corpus_by_name

        _CORPUS[name] = corpus_by_name(name)
    return _CORPUS[name]


def _model(task: dict, K: int):
    from induce.taggers import HMMTagger
    from induce.taggers.hmm import default_priors

    # tol None: the CLI's stopping rule (1e-5 of the progress; svi / scvi: 1e-4 of the best held-out
    # log-likelihood over 3 epochs, at most 50, on 5% of the sentences held out)
    common = dict(n_states=K, infer=task["infer"], n_iter=task["cap"], tol=None, random_state=task["seed"])
    if task["variant"] in ("grid", "oracle"):
        return HMMTagger(alpha=task["alpha"], beta=task["beta"], map_estimate=task["infer"] == "em", **common)
    if task["variant"] == "default":
        return HMMTagger(**common)
    if task["variant"] == "fixed":  # the default priors held (the default of every algorithm before cvi2 learned)
        return HMMTagger(learn_hyper=False, **common)
    held = {"alpha": default_priors(task["infer"])[0]} if task["variant"] in ("eb-beta", "eb-state-beta") else {}
    return HMMTagger(learn_hyper="per-state" if task["variant"] in PER_STATE else True, **held, **common)


def run_one(task: dict) -> dict:
    """Fit one model and score it against the gold tags (M-1, cross-validated M-1, V-M)."""
    import warnings

    from induce.eval.tagging import tagging_report

    corpus, column = _corpus(task["corpus"])
    K = len(corpus.tag_vocabs[column])
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _model(task, K).fit(corpus)
    scores = tagging_report(model.labels_, corpus.tags[column], corpus.offsets)
    beta = np.asarray(model.beta_, dtype=float)  # per-state: the median, and the range in beta_range
    return {**task, "K": K, "m1": scores["m1"], "m1_cv": scores["m1_cv"], "vm": scores["vm"],
            "states_used": scores["states"], "alpha_": model.alpha_, "beta_": float(np.median(beta)),
            "beta_range": [float(beta.min()), float(beta.max())], "passes": model.n_iter_,
            "converged": bool(model.converged_), "seconds": time.perf_counter() - t0}


def _key(task: dict) -> tuple:
    return tuple(task.get(k) for k in ("infer", "variant", "alpha", "beta", "seed"))


def grid_tasks(corpus, infer, seeds, cap):
    shift = 1.0 if infer == "em" else 0.0
    return [dict(corpus=corpus, infer=infer, variant="grid", alpha=shift + a, beta=shift + b, seed=100 + s, cap=cap)
            for a in GRID for b in GRID for s in range(seeds)]


def fixed_tasks(corpus, infer, seeds, cap, wanted=("default",) + LEARNED):
    variants = ("default", "fixed") if infer == "em" else ("default", "fixed") + LEARNED
    variants = [v for v in variants if v in wanted and (v not in PER_STATE or infer == "cvi2")]
    return [dict(corpus=corpus, infer=infer, variant=v, alpha=None, beta=None, seed=s, cap=cap)
            for v in variants for s in range(seeds)]


def best_point(runs, infer):
    """The grid point with the best mean M-1 (``None`` until the grid is complete)."""
    points = {}
    for r in runs:
        if r["infer"] == infer and r["variant"] == "grid":
            points.setdefault((r["alpha"], r["beta"]), []).append(r["m1"])
    if len(points) < len(GRID) ** 2:
        return None
    return max(points, key=lambda p: statistics.fmean(points[p]))


def load_runs(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def run(args) -> None:
    out = Path(args.out) / f"oracle_{args.corpus}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    runs = load_runs(out)
    done = {_key(r) for r in runs}
    algorithms = args.algorithms.split(",")

    def pending(tasks):
        return [t for t in tasks if _key(t) not in done]

    def oracle_tasks():
        tasks = []
        for infer in algorithms:
            point = best_point(runs, infer)
            if point is not None:
                tasks += [dict(corpus=args.corpus, infer=infer, variant="oracle", alpha=point[0], beta=point[1],
                               seed=s, cap=args.cap) for s in range(args.seeds)]
        return pending(tasks)

    first = pending([t for infer in algorithms for t in grid_tasks(args.corpus, infer, args.grid_seeds, args.cap)
                     + fixed_tasks(args.corpus, infer, args.seeds, args.cap, args.variants.split(","))])
    os.environ["NUMBA_NUM_THREADS"] = "1"
    with ProcessPoolExecutor(args.jobs) as pool, out.open("a") as sink:
        first += oracle_tasks()  # algorithms whose grid an earlier invocation completed
        submitted = {_key(t) for t in first}
        futures = {pool.submit(run_one, t) for t in first}
        while futures:
            finished = next(as_completed(futures))
            futures.remove(finished)
            r = finished.result()
            runs.append(r)
            done.add(_key(r))
            sink.write(json.dumps(r) + "\n")
            sink.flush()
            print(f"{r['infer']:4s} {r['variant']:13s} a={r['alpha']} b={r['beta']} seed {r['seed']}: M-1 {r['m1']:.3f} "
                  f"V-M {r['vm']:.3f} passes {r['passes']} {r['seconds']:.0f} s", flush=True)
            for t in oracle_tasks():  # an algorithm's grid just completed
                if _key(t) not in submitted:
                    submitted.add(_key(t))
                    futures.add(pool.submit(run_one, t))


def summary(args) -> None:
    runs = load_runs(Path(args.out) / f"oracle_{args.corpus}.jsonl")
    report = {"corpus": args.corpus, "algorithms": {}}
    for infer in dict.fromkeys(r["infer"] for r in runs):
        point = best_point(runs, infer)
        # oracle runs at a point the grid no longer names (more grid seeds moved it) are left out
        runs = [r for r in runs if not (r["infer"] == infer and r["variant"] == "oracle" and point is not None
                                        and (r["alpha"], r["beta"]) != point)]
        # differences are paired with the oracle's seeds, or where no grid was run (--grid-seeds 0) the held
        # priors' (fixed) or the default's
        ref = next((v for v in ("oracle", "fixed") if any(r["infer"] == infer and r["variant"] == v for r in runs)),
                   "default")
        oracle = {r["seed"]: r for r in runs if r["infer"] == infer and r["variant"] == ref}
        rows = {}
        for variant in ("oracle", "fixed", "default") + LEARNED:
            mine = sorted((r for r in runs if r["infer"] == infer and r["variant"] == variant), key=lambda r: r["seed"])
            if not mine:
                continue
            row = {"seeds": len(mine), "converged": sum(r["converged"] for r in mine)}
            for k in ("m1", "vm", "passes", "alpha_", "beta_"):
                values = [r[k] for r in mine]
                row[k] = [statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0]
            row["beta_range"] = [min(r.get("beta_range", [r["beta_"]])[0] for r in mine),
                                 max(r.get("beta_range", [r["beta_"]])[-1] for r in mine)]
            paired = [(r["m1"] - oracle[r["seed"]]["m1"], r["vm"] - oracle[r["seed"]]["vm"])
                      for r in mine if r["seed"] in oracle]
            if paired and variant != ref:
                row["diff_m1"] = statistics.fmean(d[0] for d in paired)
                row["diff_vm"] = statistics.fmean(d[1] for d in paired)
                row["diff_m1_sd"] = statistics.stdev(d[0] for d in paired) if len(paired) > 1 else 0.0
            rows[variant] = row
            print(f"{args.corpus} {infer:4s} {variant:13s} M-1 {100 * row['m1'][0]:.1f} ± {100 * row['m1'][1]:.1f} "
                  f"V-M {100 * row['vm'][0]:.1f} ± {100 * row['vm'][1]:.1f} "
                  f"(vs {ref} {100 * row.get('diff_m1', 0):+.1f} / {100 * row.get('diff_vm', 0):+.1f}) "
                  f"alpha {row['alpha_'][0]:.3g} beta {row['beta_'][0]:.3g} "
                  f"[{row['beta_range'][0]:.3g}, {row['beta_range'][1]:.3g}] passes {row['passes'][0]:.0f} "
                  f"converged {row['converged']}/{row['seeds']}")
        report["algorithms"][infer] = {"best_point": point, "reference": ref, "variants": rows}
    path = ROOT / "results" / f"{Path(args.out).name}_{args.corpus}.json"  # --out .../oracle: oracle_<corpus>.json
    if path.exists():  # the algorithms of an earlier summary that these runs do not hold are kept
        report["algorithms"] = {**json.loads(path.read_text())["algorithms"], **report["algorithms"]}
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("run", "summary"))
    parser.add_argument("--corpus", default="wsj1k", help="wsj1k | wsj | ewt | brown (hmm_bench.py's names)")
    parser.add_argument("--algorithms", default="cvi2,vi,em")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--grid-seeds", type=int, default=1)
    parser.add_argument("--variants", default=",".join(("default",) + LEARNED),
                        help="the non-grid variants to run (comma-separated)")
    parser.add_argument("--cap", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--out", default=str(ROOT / "out" / "oracle"))
    args = parser.parse_args()
    (run if args.mode == "run" else summary)(args)


if __name__ == "__main__":
    main()

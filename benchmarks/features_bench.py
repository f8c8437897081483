"""The log-linear (feature) emission family against the categorical default (issue 36; docs/experiments/features.md).

Usage::

    python benchmarks/features_bench.py speed [--iterations 5]
    python benchmarks/features_bench.py accuracy --corpora ptb-sample --seeds 3 [--flags "..."] [--categorical]
    python benchmarks/features_bench.py grid --corpora ptb-sample --settings "--feature-l2 1;--feature-l2 3"
    python benchmarks/features_bench.py unseen --iterations 100

``speed``: CPU (process time between the ends of passes, from the tagger's callback) and wall seconds of one pass of ``em`` with the categorical family and of the feature family
(``--feature-fit em``: E-step + L-BFGS M-step; ``--feature-fit direct``: one L-BFGS iteration, an E-step per
function evaluation) on ptb-sample, K = 45, alternated in one process (median over the passes after the first,
the load average before and after), and the ratios.
``accuracy``: ``induce tag CORPUS --emission features`` (plus ``--flags``) through the CLI itself
(:func:`defaults_bench.run_cli`) over seeds; ``--categorical`` adds the categorical default
(``--emission categorical``: cvi2) on the same corpora and seeds (``--no-features``: only it); ``--common`` flags go to every setting (``--gold-column upos``;
``--eval-every N`` keeps the M-1 / V-M of every N-th pass as ``checkpoints``); beside them the trivial baselines
(one state; the K - 1 most frequent words) with the same gold column and K.  ``grid``: one accuracy run per ``;``-separated flag setting.  ``unseen``: a feature model trained on the first half
of ptb-sample tags the second, unseen words by their features against one shared row (:func:`unseen`).  Each mode prints a table
and writes JSON under ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from defaults_bench import CORPORA, NAMED, ROOT, summarise  # noqa: E402
from defaults_bench import run_cli as defaults_run_cli  # noqa: E402

from induce.corpus.formats import load_corpus  # noqa: E402
from induce.eval.tagging import many_to_one, v_measure  # noqa: E402
from induce.taggers import HMMTagger  # noqa: E402

SPEED_SETTINGS = {"categorical em": {}, "features em": {"emission": "features", "feature_fit": "em"},
                  "features direct": {"emission": "features", "feature_fit": "direct"}}


def speed(iterations: int, repeats: int) -> dict:
    """Seconds per pass of each setting, alternated ``repeats`` times (see the module docstring)."""
    corpus = load_corpus(CORPORA / "ptb-sample")
    load_before = os.getloadavg()
    times = {name: {"cpu": [], "wall": []} for name in SPEED_SETTINGS}
    for _ in range(repeats):
        for name, kw in SPEED_SETTINGS.items():
            stamps = [time.process_time()]  # the CPU clock at the end of every pass (the callback)
            model = HMMTagger(n_states=45, infer="em", n_iter=iterations, tol=0, random_state=0,
                              callback=lambda rec: stamps.append(time.process_time()), **kw).fit(corpus)
            walls = [r["seconds"] for r in model.trace_[1:]]
            times[name]["wall"].append(statistics.median(walls))
            times[name]["cpu"].append(statistics.median(np.diff(stamps[1:])))  # passes 2.. (CPU s)
    out = {"load_before": load_before, "load_after": os.getloadavg(), "iterations": iterations, "settings": {}}
    base = statistics.median(times["categorical em"]["wall"])
    base_cpu = statistics.median(times["categorical em"]["cpu"])
    for name, t in times.items():
        wall, cpu = statistics.median(t["wall"]), statistics.median(t["cpu"])
        out["settings"][name] = {"wall_per_pass": wall, "cpu_per_pass": cpu, "ratio_wall": wall / base,
                                 "ratio_cpu": cpu / base_cpu}
        print(f"{name:16s} {wall:.3f} s/pass (wall, median)  ratio {wall / base:.2f}   {cpu:.3f} CPU s/pass "
              f"(median of passes 2..)  ratio {cpu / base_cpu:.2f}")
    print(f"load average before {load_before}, after {out['load_after']}")
    return out


def run_cli(path: Path, seed: int, extra: list[str]) -> dict:
    """One ``induce tag`` run through the CLI; its JSON result, the trace cut to the M-1 / V-M of the passes the
    run scored (``--eval-every``) as ``checkpoints``."""
    result = defaults_run_cli(path, seed, extra, keep_trace=True)
    trace = result.pop("trace", None) or []
    result["checkpoints"] = [[r["iteration"], r["m1"], r["vm"]] for r in trace if "m1" in r]
    return result


def trivial_baselines(path: Path, column: str, k: int) -> dict:
    """M-1 and V-M of two tagger-free baselines with the runs' gold column and K: ``one state`` (every token the
    same state: M-1 is the share of the most frequent tag, V-M 0) and ``frequent words`` (each of the K - 1 most
    frequent word types its own state, every other word the K-th)."""
    corpus = load_corpus(path)
    gold = np.asarray(corpus.tags[column])
    counts = np.bincount(corpus.tokens)
    state = np.full(len(counts), k - 1)
    state[np.argsort(-counts, kind="stable")[:k - 1]] = np.arange(min(k - 1, len(counts)))
    out = {}
    for label, pred in (("one state", np.zeros_like(gold)), ("frequent words", state[corpus.tokens])):
        out[label] = {"m1": many_to_one(pred, gold), "vm": v_measure(pred, gold)[2], "gold_column": column,
                      "states": k}
        print(f"{path.name[:11]:11s} {'baseline: ' + label:28s} M-1 {out[label]['m1']:.3f} VM {out[label]['vm']:.3f}",
              flush=True)
    return out


def accuracy(corpora: list[str], seeds: int, seed_base: int, settings: dict[str], out: Path) -> dict:
    """Per corpus and setting, the CLI's runs over the seeds and their summary, and after the first run the
    trivial baselines with its gold column and K (:func:`trivial_baselines`); JSON rewritten after each run."""
    report: dict = {}
    for name in corpora:
        report[name] = {}
        for label, flags in settings.items():
            runs = []
            for seed in range(seed_base, seed_base + seeds):
                load = os.getloadavg()[0]
                r = run_cli(CORPORA / NAMED[name], seed, shlex.split(flags)) | {"load_before": load}
                runs.append(r)
                if "baselines" not in report[name] and r.get("gold_column"):
                    report[name]["baselines"] = trivial_baselines(CORPORA / NAMED[name], r["gold_column"], r["states"])
                print(f"{name:11s} {label:28s} seed {seed}: M-1 {r.get('m1', float('nan')):.3f} "
                      f"VM {r.get('vm', float('nan')):.3f} K {r['states']} passes {r['iterations']} "
                      f"{r['seconds']:.0f} s load {load:.1f}", flush=True)
                report[name][label] = {"flags": flags, "summary": summarise(runs), "runs": runs}
                out.write_text(json.dumps(report, indent=1, default=float))
    return report


def unseen(iterations: int, seed: int) -> dict:
    """Train on the first half of ptb-sample (K = 45), tag the second half: M-1 over all its tokens and over the
    tokens of words unseen in training, with each unseen word scored by its features against all of them
    sharing one unseen-word row (the mean probability of the training hapaxes)."""
    corpus = load_corpus(CORPORA / "ptb-sample")
    half = corpus.n_sentences // 2
    train, test = corpus.head(half), corpus.subset(np.arange(half, corpus.n_sentences))
    load_before = os.getloadavg()
    model = HMMTagger(n_states=45, infer="em", emission="features", n_iter=iterations, random_state=seed).fit(train)
    gold = np.asarray(test.tags["pos"])
    new = ~np.isin(np.asarray(test.vocab.itos, dtype=object)[test.tokens], np.asarray(model.vocab_.itos, dtype=object))
    out = {"iterations": iterations, "seed": seed, "test_tokens": int(len(gold)), "unseen_tokens": int(new.sum()),
           "load_before": load_before}
    for label, states in (("features", model.predict_flat(test)),
                          ("shared row", model._decode(*model._encode(test)))):
        states = np.asarray(states)
        m1_all = many_to_one(states, gold)
        mapping = {k: np.bincount(gold[states == k]).argmax() for k in np.unique(states)}
        m1_new = float(np.mean([mapping[k] == g for k, g in zip(states[new], gold[new])]))
        out[label] = {"m1": m1_all, "m1_unseen": m1_new}
        print(f"{label:10s} M-1 {m1_all:.3f}  M-1 on the {int(new.sum())} unseen tokens {m1_new:.3f}")
    out["load_after"] = os.getloadavg()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("speed", "accuracy", "grid", "unseen"))
    parser.add_argument("--corpora", default="ptb-sample", help=f"comma-separated: {', '.join(NAMED)}")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed-base", type=int, default=0)
    parser.add_argument("--flags", default="", help="CLI flags added to --emission features")
    parser.add_argument("--settings", default="", help="grid: ';'-separated flag settings")
    parser.add_argument("--categorical", action="store_true", help="accuracy: also the categorical default")
    parser.add_argument("--no-features", action="store_true", help="accuracy: only the categorical default")
    parser.add_argument("--common", default="", help="CLI flags added to every setting (e.g. --gold-column upos)")
    parser.add_argument("--iterations", type=int, default=5, help="speed: passes per fit")
    parser.add_argument("--repeats", type=int, default=2, help="speed: alternations")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    out = ROOT / "results" / f"features_{args.mode}{args.tag}.json"
    if args.mode == "speed":
        out.write_text(json.dumps(speed(args.iterations, args.repeats), indent=1))
    elif args.mode == "unseen":
        out.write_text(json.dumps(unseen(args.iterations, args.seed_base), indent=1, default=float))
    else:
        if args.mode == "grid":
            settings = {s.strip(): f"--emission features {s.strip()}" for s in args.settings.split(";")}
        else:
            settings = {} if args.no_features else {"features": f"--emission features {args.flags}".strip()}
            if args.categorical or args.no_features:
                settings["categorical default"] = "--emission categorical"  # (cvi2; no flags is the feature model)
        settings = {label: f"{flags} {args.common}".strip() for label, flags in settings.items()}
        accuracy(args.corpora.split(","), args.seeds, args.seed_base, settings, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()

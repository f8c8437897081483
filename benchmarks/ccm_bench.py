"""CCM and DMV+CCM on WSJ10: unlabeled bracket F1 against the branching baselines, seconds per pass.

Evaluation: ptb-sample's WSJ10 trees (punctuation removed, at most 10 words:
555 sentences), under Klein & Manning's convention (:mod:`induce.eval.km_brackets`)
and evalb's default (:mod:`induce.eval.brackets`, unlabeled).  Training text:
the tag sequences of CoNLL-2000's WSJ10 sentences (train + test, other WSJ
sections, Brill tags) plus ptb-sample's own (``--text sample`` trains on
ptb-sample's alone).  Dependencies of DMV+CCM are scored on wsj-dep-sample
(the same sentences).  Sections (``--sections``):

* ``main``    -- CCM em / vi / cvi and DMV+CCM at the defaults, seeds 0..``--seeds``-1 (only cvi's
  sentence order depends on the seed);
* ``choices`` -- the CCM's design choices with em: priors, start, decoder (evidence for
  docs/experiments/ccm.md);
* ``orders``  -- DMV+CCM with each attachment order (right-first, left-first, any interleaving).

    nice -n 10 python benchmarks/ccm_bench.py --out benchmarks/results/ccm.json

Prints a markdown table and writes the JSON (with ``os.getloadavg()`` at start and end).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from induce.atomic import atomic_write
from induce.corpus.corpus import Corpus
from induce.corpus.formats import load_corpus
from induce.eval.brackets import bracket_scores
from induce.parsers.ccm import CCMParser
from induce.eval.km_brackets import branching_baselines, km_bracket_scores
from induce.parsers.dmv_ccm import DMVCCMParser

CORPORA = os.environ.get("INDUCE_CORPORA", "/work/shared/corpora")


def data(text: str):
    test = load_corpus(f"{CORPORA}/ptb-sample", wsj10=True)
    deps = load_corpus(f"{CORPORA}/wsj-dep-sample", wsj10=True)
    extra = [] if text == "sample" else [s for f in ("train.txt", "test.txt")
                                         for s in load_corpus(f"{CORPORA}/conll2000/{f}", wsj10=True).sentences]
    return Corpus.from_sentences(extra + list(test.sentences)), test, deps


def scores(trees, gold) -> dict:
    return {"km_f1": km_bracket_scores(trees, gold)["f1"], "evalb_f1": bracket_scores(trees, gold, labeled=False)["f1"]}


def fit_row(model, train, test, deps) -> dict:
    start = time.perf_counter()
    model.fit(train)
    seconds = time.perf_counter() - start
    gold = [s.tree for s in test.sentences]
    row = {"iterations": model.n_iter_, "seconds": seconds,
           "s_per_iteration": float(np.median([h["seconds"] for h in model.history_])),
           "converged": model.converged_}
    if isinstance(model, DMVCCMParser):
        heads, trees = model.parse_both(test)
        row["directed"] = float(np.mean(np.concatenate(heads) == deps.heads))
    else:
        trees = model.parse(test)
    return {**row, **scores(trees, gold)}


def run_main(args, train, test, deps) -> list[dict]:
    rows = []
    gold = [s.tree for s in test.sentences]
    for name, trees in branching_baselines(gold).items():
        rows.append({"model": name, **scores(trees, gold)})
    for infer in ("em", "vi", "cvi"):
        for seed in range(args.seeds if infer == "cvi" else 1):
            rows.append({"model": f"ccm {infer}", "seed": seed,
                         **fit_row(CCMParser(infer=infer, tag_column="pos", random_state=seed), train, test, deps)})
            print(rows[-1], flush=True)
    rows.append({"model": "dmv+ccm em", "seed": 0, **fit_row(DMVCCMParser(tag_column="pos"), train, test, deps)})
    print(rows[-1], flush=True)
    return rows


def run_choices(args, train, test, deps) -> list[dict]:
    rows = []
    variants = [{"constituent_prior": a, "distituent_prior": b} for a, b in ((2, 8), (1, 4), (0.5, 2), (10, 50))]
    variants += [{"init": "tree"}, {"decode": "mbr"}]
    for params in variants:
        rows.append({"model": "ccm em", **params,
                     **fit_row(CCMParser(tag_column="pos", **params), train, test, deps)})
        print(rows[-1], flush=True)
    return rows


def run_orders(args, train, test, deps) -> list[dict]:
    rows = []
    for order in ("right-first", "left-first", "any"):
        rows.append({"model": "dmv+ccm em", "order": order,
                     **fit_row(DMVCCMParser(order=order, tag_column="pos"), train, test, deps)})
        print(rows[-1], flush=True)
    return rows


def table(rows) -> str:
    """Markdown: one row per fit or baseline (variant parameters after the model name)."""
    keys = ("constituent_prior", "distituent_prior", "init", "decode", "order")
    lines = ["| model | seed | K&M F1 | evalb F1 | directed | iterations | s/iteration |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        name = " ".join([r["model"]] + [f"{k}={r[k]}" for k in keys if k in r])
        cells = [name, r.get("seed", ""), f"{100 * r['km_f1']:.1f}", f"{100 * r['evalb_f1']:.1f}",
                 f"{100 * r['directed']:.1f}" if "directed" in r else "", r.get("iterations", ""),
                 f"{r['s_per_iteration']:.3f}" if "s_per_iteration" in r else ""]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sections", default="main,choices,orders")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--text", choices=("conll2000+sample", "sample"), default="conll2000+sample")
    p.add_argument("--out", default="benchmarks/results/ccm.json")
    p.add_argument("--report", action="store_true", help="print the tables of --out and exit")
    args = p.parse_args()
    if args.report:
        with open(args.out) as f:
            saved = json.load(f)
        for section in ("main", "choices", "orders"):
            if section in saved:
                print(table(saved[section]))
        return
    train, test, deps = data(args.text)
    result = {"load_start": os.getloadavg(), "train_sentences": train.n_sentences, "test_sentences": test.n_sentences}
    for section in args.sections.split(","):
        result[section] = {"main": run_main, "choices": run_choices, "orders": run_orders}[section](args, train, test, deps)
        print(table(result[section]))
    result["load_end"] = os.getloadavg()
    with atomic_write(args.out) as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()

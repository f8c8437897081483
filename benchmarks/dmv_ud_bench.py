"""The default DMV against the chain baselines on every shared dependency treebank.

For each treebank (the nine UD treebanks in ``corpora/ud``, all their files; the
WSJ dependency sample; the CoNLL 2007 Basque and Spanish train+test files) and
each length cutoff (``--lengths``, default 10 and 20 words): punctuation removed,
sentences of at most that many words kept, the DMV fitted with every default
(as ``induce parse DIR --use-tags --wsj10``; the tag column UPOS for UD, the PTB
tags for WSJ, CPOS for CoNLL 2007) for seeds ``0 .. --seeds - 1`` (the seed orders
cvi's sentences), trained and scored on the same sentences (as Klein & Manning's
WSJ10).  Prints directed accuracy of the model (mean over seeds, and min-max), of
the left chain (head = previous word) and of the right chain (head = next word),
and the model without the universal rules (``rules="none"``, the old default, seed 0).
``--shares B ...`` instead fits seed 0 at each rule share ``B`` (the grid behind the default);
``--pairs`` prints, per treebank, the gold (head UPOS, dependent UPOS) pairs the model gets wrong
most often, with and without the rules.

    nice -n 10 python benchmarks/dmv_ud_bench.py --lengths 10 --out benchmarks/results/dmv_ud_10.json
    nice -n 10 python benchmarks/dmv_ud_bench.py --lengths 10 --shares 0.7 0.8 0.85 0.9
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

import numpy as np

from induce.atomic import atomic_write
from induce.corpus.formats import load_corpus
from induce.eval.baselines import dependency_baselines
from induce.eval.dependencies import attachment_scores
from induce.parsers import DMVParser

CORPORA = Path(os.environ.get("INDUCE_CORPORA", Path(__file__).resolve().parents[2] / "shared" / "corpora"))
UD = ("en_ewt", "de_gsd", "fr_gsd", "el_gdt", "hu_szeged", "tr_imst", "vi_vtb", "zh_gsdsimp", "ja_gsd")
#: (name, path relative to CORPORA, tag column, encoding)
TREEBANKS = tuple((name, f"ud/{name}", "upos", "utf-8") for name in UD) + (
    ("wsj", "wsj-dep-sample", "pos", "utf-8"),
    ("conll07_eus", "conll2007/eus.train", "cpos", "latin-1"),
    ("conll07_esp", "conll2007/esp.train", "cpos", "utf-8"),
)


def gold_heads(corpus) -> np.ndarray:
    return np.concatenate([np.asarray(s.heads, dtype=np.int64) for s in corpus.sentences])


def run_one(path: Path, column: str, encoding: str, length: int, seeds: int) -> dict:
    corpus = load_corpus(path, encoding=encoding, strip_punct=True, max_length=length)
    gold = gold_heads(corpus)
    row = {"sentences": corpus.n_sentences, "tokens": corpus.n_tokens,
           **{k: v["directed"] for k, v in dependency_baselines(gold, corpus.offsets).items()}}
    runs = []
    for seed in range(seeds):
        start = time.perf_counter()
        model = DMVParser(tag_column=column, random_state=seed).fit(corpus)
        score = attachment_scores(model.predict_flat(corpus), gold, corpus.offsets)
        runs.append({"seed": seed, "directed": score["directed"], "undirected": score["undirected"],
                     "seconds": time.perf_counter() - start, "iterations": model.n_iter_,
                     "rule_column": model.rule_column_, "rule_lambda": model.rule_lambda_})
    plain = DMVParser(tag_column=column, random_state=0, rules="none").fit(corpus)
    row["no_rules"] = attachment_scores(plain.predict_flat(corpus), gold, corpus.offsets)["directed"]
    row["runs"] = runs
    row["directed"] = float(np.mean([r["directed"] for r in runs]))
    return row


def pair_errors(corpus, pred: np.ndarray, gold: np.ndarray, top: int = 8) -> list[tuple]:
    """The gold (head UPOS or ROOT, dependent UPOS) pairs with the most wrong heads: (pair, count, wrong)."""
    upos = np.asarray(corpus.tag_vocabs["upos"].itos)[corpus.tags["upos"]]
    start = np.repeat(corpus.offsets[:-1], corpus.lengths)
    head = np.where(gold == 0, "ROOT", upos[np.maximum(start + gold - 1, 0)])
    count = collections.Counter(zip(head, upos))
    wrong = collections.Counter(p for p, bad in zip(zip(head, upos), pred != gold) if bad)
    return [(f"{h}->{d}", count[(h, d)], n) for (h, d), n in wrong.most_common(top)]


def run_shares(path: Path, column: str, encoding: str, length: int, shares: list[float]) -> dict:
    corpus = load_corpus(path, encoding=encoding, strip_punct=True, max_length=length)
    gold = gold_heads(corpus)
    row = {k: v["directed"] for k, v in dependency_baselines(gold, corpus.offsets).items()}
    for share in shares:
        model = DMVParser(tag_column=column, random_state=0, rule_share=share).fit(corpus)
        row[f"share_{share}"] = {"directed": attachment_scores(model.predict_flat(corpus), gold, corpus.offsets)["directed"],
                                 "rule_lambda": model.rule_lambda_}
    return row


def run_pairs(path: Path, length: int) -> dict:
    corpus = load_corpus(path, strip_punct=True, max_length=length)
    gold = gold_heads(corpus)
    return {rules: pair_errors(corpus, DMVParser(tag_column="upos", random_state=0, rules=rules).fit(corpus)
                               .predict_flat(corpus), gold) for rules in ("none", "auto")}


def table(results: dict) -> str:
    lines = ["| treebank | <= | sent. | DMV directed (min-max) | left chain | right chain | margin | no rules |",
             "|---|---|---|---|---|---|---|---|"]
    for key, row in results.items():
        name, length = key.rsplit("@", 1)
        d = [r["directed"] for r in row["runs"]]
        margin = row["directed"] - max(row["left_chain"], row["right_chain"])
        lines.append(f"| {name} | {length} | {row['sentences']} | {100 * row['directed']:.1f} "
                     f"({100 * min(d):.1f}-{100 * max(d):.1f}) | {100 * row['left_chain']:.1f} | "
                     f"{100 * row['right_chain']:.1f} | {100 * margin:+.1f} | {100 * row['no_rules']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lengths", type=int, nargs="+", default=[10, 20])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--only", nargs="+", help="treebank names to run (default all)")
    p.add_argument("--shares", type=float, nargs="+", help="fit seed 0 at each of these rule shares instead")
    p.add_argument("--pairs", action="store_true", help="print the most frequent wrong gold UPOS pairs (UD only)")
    p.add_argument("--out", type=Path, help="write the results as JSON")
    args = p.parse_args()
    results = {}
    for length in args.lengths:
        for name, rel, column, encoding in TREEBANKS:
            if args.only and name not in args.only or args.pairs and column != "upos":
                continue
            if args.pairs:
                row = run_pairs(CORPORA / rel, length)
            elif args.shares:
                row = run_shares(CORPORA / rel, column, encoding, length, args.shares)
            else:
                row = run_one(CORPORA / rel, column, encoding, length, args.seeds)
            results[f"{name}@{length}"] = row
            print(name, length, json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
    if not (args.shares or args.pairs):
        print(table(results))
    if args.out:
        with atomic_write(args.out) as out:
            json.dump({"load_average": os.getloadavg(), "results": results}, out, indent=1)


if __name__ == "__main__":
    main()

"""How many passes the DMV (or the PCFG) needs: accuracy and the objective's relative change per pass.

Runs em, vi and cvi (harmonic start, prior 1) for a fixed number of passes (``tol=0``)
on the WSJ10 version of a dependency corpus, scoring the Viterbi parses after every
pass, then prints for each tolerance the pass at which the stopping rule of
:class:`induce.infer.convergence.ConvergenceMonitor` (relative change below ``tol``
for 3 passes) would stop and the accuracy there.  The trace goes to ``--out`` (JSON).

    python benchmarks/dmv_convergence.py ../shared/corpora/wsj-dep-sample --column pos --passes 300

``--model pcfg`` does the same for the PCFG benchmark of ``parse_bench.py`` (10
nonterminals over the tags of the WSJ10 of ptb-sample, priors em 1, vi/cvi 0.1),
scoring unlabeled bracket F1 (``--seed`` seeds the random start):

    python benchmarks/dmv_convergence.py ../shared/corpora/ptb-sample --model pcfg --passes 300
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from induce.corpus.formats import load_corpus
from induce.eval.dependencies import attachment_scores
from induce.infer.convergence import PATIENCE, ConvergenceMonitor
from induce.eval.brackets import bracket_scores
from induce.parsers import DMVParser, PCFGInducer

TOLS = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6)
PCFG_PRIORS = {"em": 1.0, "vi": 0.1, "cvi": 0.1}  # parse_bench.py's PCFG rows


def trace_pcfg(corpus, column: str, passes: int, seed: int, nonterminals: int = 10) -> dict:
    out = {}
    gold = [s.tree for s in corpus.sentences]
    for infer, prior in PCFG_PRIORS.items():
        accuracy: list[float] = []

        def score(model, _):
            accuracy.append(bracket_scores(model.parse(corpus), gold, labeled=False)["f1"])

        model = PCFGInducer(n_nonterminals=nonterminals, infer=infer, n_iter=passes, tol=0, alpha=prior,
                            tag_column=column, random_state=seed)
        model.fit(corpus, callback=score)
        out[infer] = {"accuracy": accuracy, "objective": [h["log_likelihood"] for h in model.history_[1:]]}
    return out


def trace(corpus, column: str, passes: int, prior: float, seed: int) -> dict:
    out = {}
    for infer in ("em", "vi", "cvi"):
        accuracy: list[float] = []

        def score(model, _):
            accuracy.append(attachment_scores(model.predict_flat(corpus), corpus.heads, corpus.offsets)["directed"])

        model = DMVParser(infer=infer, n_iter=passes, tol=0, alpha=prior, tag_column=column, random_state=seed)
        model.fit(corpus, callback=score)
        out[infer] = {"accuracy": accuracy, "objective": [h["log_likelihood"] for h in model.history_]}
    return out


def stopping_pass(objective: list[float], tol: float) -> int | None:
    monitor = ConvergenceMonitor(tol, PATIENCE)
    for k, value in enumerate(objective):
        if monitor.update(value):
            return k
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus")
    parser.add_argument("--column", default="pos")
    parser.add_argument("--passes", type=int, default=300)
    parser.add_argument("--prior", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", default="auto")
    parser.add_argument("--model", choices=("dmv", "pcfg"), default="dmv")
    parser.add_argument("--out", help="JSON trace file")
    args = parser.parse_args()
    corpus = load_corpus(args.corpus, args.format, wsj10=True, strip_punct=args.model == "pcfg")
    print(f"{corpus.n_sentences} sentences, {corpus.n_tokens} words; accuracy after pass "
          f"{', '.join(map(str, (1, 10, 20, 40, 100, args.passes)))}:")
    if args.model == "pcfg":
        result = trace_pcfg(corpus, args.column, args.passes, args.seed)
    else:
        result = trace(corpus, args.column, args.passes, args.prior, args.seed)
    for infer, t in result.items():
        acc = np.asarray(t["accuracy"]) * 100
        print(f"  {infer:4s}", " ".join(f"{acc[k - 1]:.1f}" for k in (1, 10, 20, 40, 100, args.passes) if k <= len(acc)))
    metric = "F1" if args.model == "pcfg" else "directed"
    print("| tol | " + " | ".join(f"{i} passes : {metric}" for i in result) + " |")
    for tol in TOLS:
        cells = []
        for t in result.values():
            k = stopping_pass(t["objective"], tol)
            cells.append(f"{k} : {100 * t['accuracy'][k - 1]:.1f}" if k else f"> {args.passes}")
        print(f"| {tol:.0e} | " + " | ".join(cells) + " |")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(result, handle)


if __name__ == "__main__":
    main()

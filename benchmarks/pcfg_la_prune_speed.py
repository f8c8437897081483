"""Parsing speed of a PCFG-LA grammar with and without a shared coarse pass (docs/experiments/pcfg_la.md).

Trains (or loads, ``--model``) a vi grammar with ``H`` subtypes on ``wsj_0001-0159``,
then parses the test files ``wsj_0180-0199`` three ways: ``parse(test)`` (coarse
pass + fine pass), ``coarse_pruning(test)`` alone, and ``parse(test, pruning=...)``
(fine pass only, what every further grammar of the same treebank costs), and
checks that the trees are identical.

    nice -n 5 python benchmarks/pcfg_la_prune_speed.py --subtypes 8

Writes ``benchmarks/results/pcfg_la_prune_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    from induce.corpus.read_ptb import read_ptb
    from induce.parsers import LatentPCFGParser

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpora" / "ptb-sample"))
    p.add_argument("--subtypes", type=int, default=8)
    p.add_argument("--model", help="saved grammar to load instead of training one")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pcfg_la_prune_speed.json"))
    args = p.parse_args()
    root = Path(args.corpus)
    read = lambda lo, hi: [s.tree for f in range(lo, hi + 1) for s in read_ptb(root / f"wsj_{f:04d}.mrg")]
    test = read(180, 199)
    if args.model:
        model = LatentPCFGParser.load(args.model)
    else:
        model = LatentPCFGParser(n_subtypes=args.subtypes, infer="vi", alpha=0.01, n_iter=60,
                                 random_state=0).fit(read(1, 159))
    model.parse(test[:2])  # compile the kernels
    t0 = time.perf_counter()
    full = model.parse(test)
    t1 = time.perf_counter()
    pruning = model.coarse_pruning(test)
    t2 = time.perf_counter()
    fine = model.parse(test, pruning=pruning)
    t3 = time.perf_counter()
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "H": model.n_subtypes, "sentences": len(test),
           "parse_seconds": t1 - t0, "coarse_seconds": t2 - t1, "fine_with_pruning_seconds": t3 - t2,
           "identical": [str(x) for x in full] == [str(x) for x in fine]}
    print(f"H={out['H']}: parse {len(test) / out['parse_seconds']:.1f} sent/s; coarse pass alone "
          f"{out['coarse_seconds']:.1f} s; with a shared coarse pass {len(test) / out['fine_with_pruning_seconds']:.1f} "
          f"sent/s; identical trees: {out['identical']}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

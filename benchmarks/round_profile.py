"""Where a round task's CPU time goes on a worker (issue 41): its phases timed in this process, one numba thread.

    PYTHONPATH=. python benchmarks/round_profile.py /tmp/scale_bench_brown.txt --sync 16
    PYTHONPATH=. python benchmarks/round_profile.py /tmp/scale_bench_brown.txt --sync 16 --all-rows

The plain-text corpus is cut in two halves (two shards); ``--rounds`` rounds of ``--sync`` minibatches of
``--batch-size`` sentences (each shard's piece: half of them, drawn at random, seed 1) run through
:func:`induce.distributed.rounds._run_round` for both shards in turn, the second and later rounds advancing the
copies by both shards' deltas, as two workers do.  Prints the CPU seconds (``time.process_time``) of the cut, the
forward-backward, the per-step count update, advancing the copy, the delta and its packing, and the whole task,
per token and as shares of the task.  ``--all-rows``: the copies add every row of the sums (the design before
the shard-only adds) instead of their shard's words.  Records: docs/experiments/distributed.md, "Fifth session".
"""

from __future__ import annotations

import argparse
import collections
import time

import numba
import numpy as np

from induce.corpus import stream
from induce.distributed import rounds
from induce.infer import stochastic_hmm as sh

SPENT: collections.Counter = collections.Counter()


def _timed(name: str, fn):
    def run(*args, **kw):
        t = time.process_time()
        out = fn(*args, **kw)
        SPENT[name] += time.process_time() - t
        return out
    return run


def _halves(path: str):
    info = stream.scan(path, "plain", heldout_fraction=0.0, heldout_max_tokens=1, seed=0)
    tokens, offsets = [], [0]
    for t, o in stream.sentence_chunks(path, "plain", info.vocab, chunk_sentences=100_000):
        tokens.append(t)
        offsets.extend((o[1:] + offsets[-1]).tolist())
    tokens, offsets = np.concatenate(tokens).astype(np.int32), np.array(offsets, dtype=np.int64)
    half = (len(offsets) - 1) // 2
    return len(info.vocab), tokens, offsets, [(tokens[:offsets[half]], offsets[:half + 1].copy()),
                                              (tokens[offsets[half]:], offsets[half:] - offsets[half])]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--sync", type=int, default=16, help="minibatches a round R (default 16)")
    ap.add_argument("--batch-size", type=int, default=1000, help="sentences a minibatch M (default 1000)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--all-rows", action="store_true", help="copies add every row of the sums")
    args = ap.parse_args()
    numba.set_num_threads(1)
    if args.all_rows:
        rounds.vocabulary = lambda tokens, W: np.ones(W, dtype=bool)
    W, tokens, offsets, shards = _halves(args.path)
    I, K, R, piece = len(offsets) - 1, 45, args.sync, args.batch_size // 2
    rounds.advance = _timed("advance the copy", rounds.advance)
    rounds._delta = _timed("delta and pack", rounds._delta)
    rounds._cut_round = _timed("cut", rounds._cut_round)
    rounds.stochastic.sentence_statistics = _timed("forward-backward", sh.sentence_statistics)
    rounds.ShardCounts.update = _timed("count update", sh.GlobalCounts.update)
    counts = sh.GlobalCounts.exponential(np.random.default_rng(0), K, W, len(tokens))
    seed = ((counts.trans, counts.emit_scaled, counts.emit_factor, counts.emit_totals), sh._NO_MASK)
    rng, previous, done = np.random.default_rng(1), [], 0
    for r in range(args.rounds):
        outs = []
        steps = [((done + i + 2.0) ** -0.5, I / piece) for i in range(R)]  # rho (tau 1, kappa 0.5), scale
        for j, shard in enumerate(shards):
            n = len(shard[1]) - 1
            pieces = [np.sort(rng.choice(n, piece, replace=False)) for _ in range(R)]
            t = time.process_time()
            outs.append((rounds._run_round(shard, pieces, ("profile", j), r, seed if r == 0 else None, previous,
                                           (steps, 0.5), ("cvi", 0.1, 1e-4, W, False)), None))
            SPENT["task"] += time.process_time() - t
        previous, done = [([rho for rho, _ in steps], outs)], done + R
    n_tokens = args.rounds * R * 2 * piece * len(tokens) / I
    print(f"{args.path}: R {R}, M {args.batch_size}, W {W}, {args.rounds} rounds of 2 shards"
          f"{', every row added' if args.all_rows else ''}")
    for name, seconds in SPENT.most_common():
        print(f"  {name:18s} {seconds:7.3f} s  {1e9 * seconds / n_tokens:7.1f} ns/token  "
              f"{100 * seconds / SPENT['task']:5.1f}% of the task")


if __name__ == "__main__":
    main()

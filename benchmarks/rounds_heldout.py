"""Held-out log-likelihood of the cluster's rounds against one process, by seed and round schedule (issue 41).

    PYTHONPATH=. python benchmarks/rounds_heldout.py /tmp/scale_bench_hmm10000000.txt 0:1:-,2:1:-,2:64:grow \
        --seeds 0-7 --out heldout.jsonl
    PYTHONPATH=. python benchmarks/rounds_heldout.py /tmp/scale_bench_brown.txt 2:64:flat,2:64:exact64 --seeds 0

Each run is ``workers:R:variant[:shards[:staleness]]``, fitted once a seed (``HMMTagger(infer="scvi",
n_states=45)``, M = 1,000, one epoch: :func:`scale_bench._fit`), on one cluster a worker count (0: this
process).  The variant changes only ``WorkerRoundsUpdater.round_size`` in this process (the client decides the
rounds) or the single process's shuffle buffer, to measure what the default does against alternatives:

- ``-`` / ``grow``: the default (rounds 1, 2, 4, ... up to R);
- ``exactN``: rounds of one minibatch for the first N minibatches, then the default;
- ``flat``: rounds of R from the start; ``first``: one minibatch, then rounds of R;
- ``growF``: rounds that grow F-fold (at most ``(F - 1) s + 1`` after ``s`` minibatches: 1, F, F^2, ... up to R);
- ``rhoC``: rounds as long as their sum of ``rho`` (tau = 1, kappa = 0.5) stays at most C;
- ``bufN`` (one process): a shuffle buffer of N sentences (default 10,000).

``shards`` (default: one a worker) cuts the corpus into that many shards on the run's workers: a shard is the
unit of the rounds' arithmetic (its own copy, pieces, delta, place in the tree of sums), wherever it runs, so
``1:64:grow:32`` gives the held-out log-likelihood of 32 workers on one (docs/experiments/distributed.md,
"Eighth session"); ``staleness`` 1: rounds that never wait (default 0).

Writes one JSON line a run to ``--out`` (seed, workers, R, variant, held-out LL per token, tokens/s, rounds,
bytes per token, load average before and after); held-out values do not depend on the machine's load.  Records:
docs/experiments/distributed.md, "Fifth session".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scale_bench  # noqa: E402

from induce import HMMTagger  # noqa: E402
from induce import distributed as dist  # noqa: E402
from induce.distributed import rounds  # noqa: E402

DEFAULT = rounds.WorkerRoundsUpdater.round_size
WORKERS = dist.cluster.n_workers
#: the single process's shuffle buffer for the next run (``bufN``; 0: the default)
BUFFER = [0]


class _Tagger(HMMTagger):
    """The benchmark's tagger with the shuffle buffer of the variant."""

    def fit_stream(self, *args, **kw):
        if BUFFER[0]:
            kw["buffer_sentences"] = BUFFER[0]
        return super().fit_stream(*args, **kw)


scale_bench.HMMTagger = _Tagger


def _rho_bounded(limit: float):
    def size(self, start: int) -> int:
        total, n = 0.0, 0
        while n < self.sync_every:
            total += (start + n + 2.0) ** -0.5
            if total > limit and n:
                break
            n += 1
        return n
    return size


def variant(name: str) -> None:
    """Set the round schedule (or the buffer) of ``name`` (the module docstring)."""
    BUFFER[0] = int(name[3:]) if name.startswith("buf") else 0
    if name.startswith("exact"):
        first = int(name[5:])
        size = lambda self, start: 1 if start < first else DEFAULT(self, start)  # noqa: E731
    elif name == "flat":
        size = lambda self, start: self.sync_every  # noqa: E731
    elif name == "first":
        size = lambda self, start: 1 if start == 0 else self.sync_every  # noqa: E731
    elif name.startswith("grow") and name != "grow":
        fold = int(name[4:])
        size = lambda self, start: min(self.sync_every, (fold - 1) * start + 1)  # noqa: E731
    elif name.startswith("rho"):
        size = _rho_bounded(float(name[3:]))
    elif name in ("-", "grow") or name.startswith("buf"):
        size = DEFAULT
    else:
        raise SystemExit(f"rounds_heldout.py: error: unknown variant {name!r}")
    rounds.WorkerRoundsUpdater.round_size = size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="plain-text corpus (scale_bench.py writes Brown's and the streams to $TMPDIR)")
    ap.add_argument("runs", help="workers:R:variant, comma-separated (e.g. 0:1:-,2:1:-,2:64:grow)")
    ap.add_argument("--seeds", default="0", help="the runs' seeds, e.g. 0-7 or 0,3 (default 0)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--out", required=True, help="JSON lines, appended")
    args = ap.parse_args()
    runs = [(int(w), int(R), v, int(rest[0]) if rest else 0, int(rest[1]) if len(rest) > 1 else 0)
            for w, R, v, *rest in (r.split(":") for r in args.runs.split(","))]
    with contextlib.ExitStack() as stack:
        clients = {}
        scale_bench._warm(args.path, None)
        for w in sorted({w for w, *_ in runs if w}):
            clients[w] = stack.enter_context(dist.session(w))
            clients[w].wait_for_workers(w)
            scale_bench._warm(args.path, clients[w])
        for seed in scale_bench._seeds(args.seeds):
            for w, R, name, shards, staleness in runs:
                variant(name)
                load = os.getloadavg()[0]
                dist.cluster.n_workers = (lambda client, n=shards: n) if shards else WORKERS
                try:
                    r = scale_bench._fit(args.path, clients.get(w), 1000, R, seed, args.epochs, staleness)
                finally:
                    dist.cluster.n_workers = WORKERS
                row = {"seed": seed, "workers": w, "shards": shards or w, "R": R, "staleness": staleness,
                       "variant": name, "ll": r["heldout_ll_per_token"],
                       "tokens_per_s": r["tokens_per_s"], "rounds": r.get("steps"),
                       "bytes_per_token": r.get("bytes_per_token"), "load": [load, os.getloadavg()[0]]}
                print(json.dumps(row), flush=True)
                with open(args.out, "a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

"""The step model of local rounds (issue 41), fitted to ``scale_bench.py --json`` runs, and its prediction.

    python benchmarks/step_model.py benchmarks/results/scale_packed_loaded.json \
        --timing benchmarks/results/scale_accept_quiet.json --link-mb-s 1000
    python benchmarks/step_model.py benchmarks/results/scale_packed_loaded.json \
        --resident benchmarks/results/scale_resident_loaded.json --link-mb-s 1000

Two designs.  The client's (``--timing``; the rounds up to issue 41's fourth session: the client sends each
worker the rows of its words and merges the partial sums before the next round starts).  A round of ``R``
minibatches of ``M`` sentences on ``w`` workers takes

    T(w) = o0 + o1 ceil(log2(w / 2)) + c (B_client(w) + B_tree(w)) + R M L / (w r)

(docs/experiments/distributed.md, "The step model"): a fixed latency ``o0`` a round (scheduling, gathering, the
client's packing and merging), ``o1`` a level of the tree of deltas on the workers (none with two workers: the
client merges two partial sums, :data:`induce.distributed.rounds.CLIENT_SUMS`), the bytes through the client's
link at ``c`` seconds a byte (serialisation and copies included), ``B_client(w) = (w T(R M / w) + 2 T(R M / 2))
b`` (every worker's start rows out, two partial sums back; ``b`` bytes a packed row), ``B_tree(w) = sum_l T(R M
2^l / w) b`` the rows one worker receives over the tree's levels (the pairs of a level work in parallel), and the
workers' compute at ``r`` tokens per CPU-second each, ``L`` tokens a sentence.  ``T(n)``, the distinct words of
``n`` sentences, is Heaps' law ``a n^h`` (at most ``W``) fitted to the rows the runs sent.  ``o0`` and ``c`` are
the least-squares fit of the measured overhead per round (``step_overhead_ms x R``) against the bytes per round
through the client over the two-worker runs in rounds, ``r`` the median of the workers' tokens per CPU-second
in their tasks; ``o1`` is given (``--hop-ms``).  The efficiency printed is the share of a round the workers
compute, ``R M L / (w r T(w))``, at ``M`` and ``R`` as given, with ``c`` fitted and (``--link-mb-s``) as given.

The resident design (``--resident JSON``: the counts stay on the workers, :mod:`induce.distributed.rounds`; the
client is off the critical path: it submits round ``r + 1`` before it merges round ``r``).  A round takes

    T(w) = o0 + levels (o1 + c T(R M / 2) b) + c g(w) T(R M / 2) b + a 2 T(R M / 2) K + R M L / (w r)

on the workers: ``o0`` the latency of a round's chain of dependent tasks (a task ends, the scheduler starts the
next round's, which fetch the partial sums), ``levels = ceil(log2(w / 2))`` levels of the tree of deltas (each a
hop and, at most, a sum of a half of the round's rows), then the :data:`CLIENT_SUMS` partial sums to every
worker: ``g(w) = w - 1`` row transfers through the holder's link as dask does it (every worker fetches from the
holder), ``ceil(log2 w)`` with a tree broadcast (``--tree-broadcast``, as built above two workers:
:func:`induce.distributed.rounds.spread`), then each worker adds both sums to its copy (or, ``--shard-rows``, as
built, only the rows of its shard's words) at ``a`` seconds an entry
(:func:`induce.distributed.rounds.merge`, measured 1.8 ns, load ~2), then its compute.  ``o0`` and ``c`` are the
least-squares fit of the measured overhead per round against the bytes per
round between the workers over the two-worker runs of ``--resident``.  The client must keep up: it merges the
same two sums (``a 2 T(R M / 2) K``) and receives them (``c 2 T(R M / 2) b``) in a round's time (printed).

With ``--staleness 1`` (rounds that never wait, :func:`induce.distributed.rounds.stale_start`: round ``r + 1``
starts from the sums of round ``r - 1`` and its own delta of round ``r``) a round's exchange (``o0``, the tree of
deltas, the spread of the sums) runs while the next round computes, and a round takes ``max(compute + adds,
exchange)``.  This assumes a worker's transfers proceed beside its compute thread (a spare core or the network's
own time), which the 2-core machine does not give: there staleness 1 measured no faster (distributed.md, "Sixth
session").
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

#: bytes of a packed row and its word id (induce.distributed.rounds.row_bytes(45): float16 x 45, int16, int32)
ROW_BYTES = 96


def _two_worker_rounds(result: dict) -> list:
    return [(c["corpus"], r) for c in result["corpora"] for r in c["runs"]
            if r["workers"] == 2 and (r["sync"] or 1) > 1]


def fit(result: dict, timing: dict, corpus: str) -> dict:
    """``o0`` (s), ``c`` (s/byte), ``r`` (tokens per CPU-s), ``L`` from the two-worker runs in rounds of ``timing``
    (``scale_bench.py --json`` outputs pooled; ``o0 >= 0``: else ``c`` alone, through the origin), and Heaps' ``(a,
    h)`` from those of ``result`` on the corpus whose path contains ``corpus`` (rows of :data:`ROW_BYTES`)."""
    runs = [r for _, r in _two_worker_rounds(timing)]
    pairs = _two_worker_rounds(result)
    over = np.array([r["step_overhead_ms"] * r["sync"] / 1e3 for r in runs])
    byts = np.array([(r["bytes_sent_per_step"] + r["bytes_received_per_step"]) * r["sync"] for r in runs])
    (o0, c), *_ = np.linalg.lstsq(np.column_stack([np.ones(len(runs)), byts]), over, rcond=None)
    if o0 < 0:
        o0, c = 0.0, float(over @ byts / (byts @ byts))
    own = [r for name, r in pairs if corpus in name]
    n = np.array([r["sync"] * r["batch_size"] / r["workers"] for r in own])
    rows = np.array([r["bytes_sent_per_step"] * r["sync"] / r["workers"] / ROW_BYTES for r in own])
    h, log_a = np.polyfit(np.log(n), np.log(rows), 1)
    return {"o0_s": float(o0), "c_s_per_byte": float(c),
            "r_tokens_per_cpu_s": float(np.median([v for r in runs for v in r["worker_tokens_per_cpu_s"]])),
            "L": float(np.median([r["tokens"] / (r["minibatches"] * r["batch_size"]) for r in runs])),
            "heaps_a": float(np.exp(log_a)), "heaps_h": float(h), "runs": len(runs)}


def efficiency(p: dict, w: int, R: int, M: int, W: float, hop_s: float) -> float:
    """The share of a round on ``w`` workers that they compute (the module docstring's ``T(w)``)."""
    T = lambda n: min(W, p["heaps_a"] * n ** p["heaps_h"])  # noqa: E731
    levels = max(0, math.ceil(math.log2(w / 2))) if w > 2 else 0
    client = (w * T(R * M / w) + min(w, 2) * T(R * M / min(w, 2))) * ROW_BYTES
    tree = sum(T(R * M * 2**level / w) for level in range(levels)) * ROW_BYTES
    compute = R * M * p["L"] / (w * p["r_tokens_per_cpu_s"])
    return compute / (p["o0_s"] + hop_s * levels + p["c_s_per_byte"] * (client + tree) + compute)


#: seconds a (float64) entry to unpack and add a packed sum into a copy of the counts (merge of 25,000 x 45 rows,
#: the halves decoded by a table: 2.05 ms, load ~2; docs/experiments/distributed.md, "Eighth session"; 6 ns with
#: numpy's float16 conversion, "Fourth session")
ADD_S = 1.8e-9


def fit_resident(runs: list) -> dict:
    """``o0`` (s) and ``c`` (s/byte) of the resident design: the overhead per round against the bytes moved between
    the workers per round, two-worker runs in rounds (``o0 >= 0``, ``c >= 0``: else the mean overhead as ``o0``)."""
    over = np.array([r["step_overhead_ms"] * r["sync"] / 1e3 for r in runs])
    byts = np.array([r["bytes_between_workers_per_step"] * r["sync"] for r in runs])
    (o0, c), *_ = np.linalg.lstsq(np.column_stack([np.ones(len(runs)), byts]), over, rcond=None)
    if o0 < 0 or c < 0:
        o0, c = float(over.mean()), 0.0
    return {"o0_s": float(o0), "c_s_per_byte": float(c), "runs": len(runs),
            "r_tokens_per_cpu_s": float(np.median([v for r in runs for v in r["worker_tokens_per_cpu_s"]]))}


def efficiency_resident(p: dict, w: int, R: int, M: int, W: float, hop_s: float, K: int = 45,
                        tree_broadcast: bool = False, shard_sentences: float = 0.0,
                        staleness: int = 0) -> tuple[float, float]:
    """The share of a round on ``w`` workers that they compute in the resident design (the module docstring), and
    the client's time a round (receiving and merging the partial sums) over the round's; with ``staleness`` 1 a
    round's exchange beside the next round's compute."""
    T = lambda n: min(W, p["heaps_a"] * n ** p["heaps_h"])  # noqa: E731
    half = T(R * M / min(w, 2))
    levels = max(0, math.ceil(math.log2(w / 2))) if w > 2 else 0
    fanout = max(1, math.ceil(math.log2(w))) if tree_broadcast else w - 1
    tree = sum(hop_s + p["c_s_per_byte"] * T(R * M * 2**level / w) * ROW_BYTES for level in range(levels))
    # a worker adds every row of the sums, or (shard_sentences) only those of its shard's vocabulary
    # T(I / w), taken as a random share of the W words
    added = 2 * half * (min(1.0, T(shard_sentences / w) / W) if shard_sentences else 1.0)
    exchange = p["o0_s"] + tree + p["c_s_per_byte"] * fanout * half * ROW_BYTES  # the sums reach every worker
    adds = ADD_S * added * K  # on the worker's compute thread
    compute = R * M * p["L"] / (w * p["r_tokens_per_cpu_s"])
    total = max(compute + adds, exchange) if staleness else exchange + adds + compute
    client = p["c_s_per_byte"] * 2 * half * ROW_BYTES + ADD_S * 2 * half * K
    return compute / total, client / total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+", help="scale_bench.py --json outputs of this design (their runs pooled)")
    ap.add_argument("--timing", nargs="+", metavar="JSON",
                    help="fit o0, c and r to these runs instead (e.g. a quiet machine's; default: the same)")
    ap.add_argument("--resident", nargs="+", metavar="JSON",
                    help="also the resident design, o0 and c fitted to these runs (scale_bench.py --json)")
    ap.add_argument("--tree-broadcast", action="store_true",
                    help="resident design: the partial sums spread to the workers as a tree (as built; else from "
                         "the holder)")
    ap.add_argument("--shard-rows", type=float, default=0.0, metavar="I",
                    help="resident design: each worker adds only the rows of its shard's words (as built), a "
                         "corpus of I sentences (Brown: 57340)")
    ap.add_argument("--staleness", type=int, default=0, choices=(0, 1),
                    help="resident design: 1, a round's exchange beside the next round's compute (default 0)")
    ap.add_argument("--link-mb-s", type=float, default=0.0, help="also predict with this client link (MB/s)")
    ap.add_argument("--hop-ms", type=float, default=5.0, help="o1, the latency of a tree level (default 5 ms)")
    ap.add_argument("--o0-ms", type=float, default=None, help="with --link-mb-s: this o0 instead of the fitted one")
    ap.add_argument("--corpus", default="brown", help="the runs whose vocabulary growth T(n) is fitted (a part of "
                                                       "the corpus path; default: brown)")
    ap.add_argument("--vocabulary", type=float, default=56_057, help="W, the cap of T(n) (default: Brown's)")
    ap.add_argument("--sync", default="16,64,256", help="R values to predict (default 16,64,256)")
    ap.add_argument("--batch-size", type=int, default=1000, help="M (default 1000)")
    ap.add_argument("--workers", default="2,4,8,16,32", help="w values to predict (default 2,4,8,16,32)")
    args = ap.parse_args()
    pool = lambda files: {"corpora": [c for f in files for c in json.load(open(f))["corpora"]]}  # noqa: E731
    p = fit(pool(args.json), pool(args.timing or args.json), args.corpus)
    print(json.dumps(p))
    given = {"c_s_per_byte": 1e-6 / args.link_mb_s} if args.link_mb_s else {}
    if given and args.o0_ms is not None:
        given["o0_s"] = args.o0_ms / 1e3
    cases = [("c fitted", p)] + ([(f"c = 1 / ({args.link_mb_s:g} MB/s)", {**p, **given})] if given else [])
    for name, q in cases:
        for R in (int(v) for v in args.sync.split(",")):
            cells = [f"{w}: {efficiency(q, w, R, args.batch_size, args.vocabulary, args.hop_ms / 1e3):.0%}"
                     for w in (int(v) for v in args.workers.split(","))]
            print(f"{name}, o0 = {1e3 * q['o0_s']:.1f} ms, M = {args.batch_size}, R = {R}, efficiency by workers: "
                  + ", ".join(cells))
    if not args.resident:
        return
    runs = [r for _, r in _two_worker_rounds(pool(args.resident))]
    res = {**p, **fit_resident(runs)}
    print("resident:", json.dumps({k: res[k] for k in ("o0_s", "c_s_per_byte", "r_tokens_per_cpu_s", "runs")}))
    cases = [("resident, c fitted", res)] + ([(f"resident, c = 1 / ({args.link_mb_s:g} MB/s)", {**res, **given})]
                                              if given else [])
    for name, q in cases:
        for R in (int(v) for v in args.sync.split(",")):
            cells = []
            for w in (int(v) for v in args.workers.split(",")):
                e, client = efficiency_resident(q, w, R, args.batch_size, args.vocabulary, args.hop_ms / 1e3,
                                                tree_broadcast=args.tree_broadcast,
                                                shard_sentences=args.shard_rows, staleness=args.staleness)
                cells.append(f"{w}: {e:.0%} (client {client:.0%})")
            print(f"{name}, o0 = {1e3 * q['o0_s']:.1f} ms, M = {args.batch_size}, R = {R}, staleness "
                  f"{args.staleness}, efficiency by workers: " + ", ".join(cells))


if __name__ == "__main__":
    main()

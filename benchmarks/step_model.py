"""The step model of local rounds (issue 41), fitted to ``scale_bench.py --json`` runs, and its prediction.

    python benchmarks/step_model.py benchmarks/results/scale_packed_loaded.json \
        --timing benchmarks/results/scale_accept_quiet.json --link-mb-s 1000
    python benchmarks/step_model.py benchmarks/results/scale_packed_loaded.json \
        --resident benchmarks/results/scale_resident_loaded.json --link-mb-s 1000
    python benchmarks/step_model.py benchmarks/results/scale_packed_loaded.json --corpus hmm --vocabulary 20000 \
        --link-mb-s 1000 --o0-ms 14 --tree-broadcast --measured benchmarks/results/scale_16core_h41f_stream_*.json

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
:func:`induce.distributed.rounds.spread`; each of its levels also a hop ``o1``: a task that waits on its parent's
copy), then each worker adds both sums to its copy (or, ``--shard-rows``, as
built, only the rows of its shard's words) at ``a`` seconds an entry
(:func:`induce.distributed.rounds.merge`, measured 1.8 ns, load ~2), then its compute.  ``o0`` and ``c`` are the
least-squares fit of the measured overhead per round against the bytes per
round between the workers over the two-worker runs of ``--resident``.  The client must keep up: it merges the
same two sums (``a 2 T(R M / 2) K``) and receives them (``c 2 T(R M / 2) b``) in a round's time (printed).

``--measured JSON``: runs on more workers (a machine with more cores) next to the model, each run's efficiency
split into the workers' rate in their tasks against one worker's and the share of the run they computed, beside
the model's share for the run's own rounds (growing ones included); then ``o0`` and ``o1`` refitted to them and
the prediction (docs/experiments/distributed.md, "Ninth session").

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


def resident_round(p: dict, w: int, n: int, M: int, W: float, hop_s: float, K: int = 45,
                   tree_broadcast: bool = False, shard_sentences: float = 0.0) -> dict:
    """A round of ``n`` minibatches on ``w`` workers in the resident design (the module docstring), in seconds:
    ``exchange`` on the critical path (``o0``, ``hops`` dependent tasks and ``bytes`` through the links), a worker's
    ``adds`` of the partial sums, its ``compute``, and the ``client``'s receiving and merging of the sums."""
    T = lambda x: min(W, p["heaps_a"] * x ** p["heaps_h"])  # noqa: E731
    half = T(n * M / min(w, 2))
    levels = max(0, math.ceil(math.log2(w / 2))) if w > 2 else 0
    fanout = max(1, math.ceil(math.log2(w))) if tree_broadcast else w - 1
    # dependent hops: the tree of deltas, then (tree broadcast above two workers) one a level of the spread
    hops = levels + (fanout if tree_broadcast and w > 2 else 0)
    # the tree of deltas, then the sums reach every worker
    path = (sum(T(n * M * 2**level / w) for level in range(levels)) + fanout * half) * ROW_BYTES
    # a worker adds every row of the sums, or (shard_sentences) only those of its shard's vocabulary
    # T(I / w), taken as a random share of the W words
    added = 2 * half * (min(1.0, T(shard_sentences / w) / W) if shard_sentences else 1.0)
    return {"hops": hops, "bytes": path, "exchange": p["o0_s"] + hops * hop_s + p["c_s_per_byte"] * path,
            "adds": ADD_S * added * K, "compute": n * M * p["L"] / (w * p["r_tokens_per_cpu_s"]),
            "client": p["c_s_per_byte"] * 2 * half * ROW_BYTES + ADD_S * 2 * half * K}


def efficiency_resident(p: dict, w: int, R: int, M: int, W: float, hop_s: float, K: int = 45,
                        tree_broadcast: bool = False, shard_sentences: float = 0.0,
                        staleness: int = 0) -> tuple[float, float]:
    """The share of a round on ``w`` workers that they compute in the resident design (the module docstring), and
    the client's time a round (receiving and merging the partial sums) over the round's; with ``staleness`` 1 a
    round's exchange beside the next round's compute."""
    x = resident_round(p, w, R, M, W, hop_s, K, tree_broadcast, shard_sentences)
    total = max(x["compute"] + x["adds"], x["exchange"]) if staleness else x["exchange"] + x["adds"] + x["compute"]
    return x["compute"] / total, x["client"] / total


def round_sizes(minibatches: int, R: int) -> list[int]:
    """The rounds of a run of ``minibatches`` in rounds of ``R``, growing (1, 2, 4, ... up to ``R``: a round that
    starts after ``s`` minibatches holds at most ``s + 1``, :meth:`induce.distributed.WorkerRoundsUpdater.round_size`)
    and the last one cut at the run's end."""
    sizes, done = [], 0
    while done < minibatches:
        sizes.append(min(R, done + 1, minibatches - done))
        done += sizes[-1]
    return sizes


def measured(files: list, p: dict, W: float, tree_broadcast: bool) -> list[dict]:
    """Each staleness-0 run in rounds on two or more workers of ``files`` (``scale_bench.py --json``) next to the
    model: its efficiency (tokens/s over ``w`` times the one-worker run's on the same corpus and epochs) as the
    product of the workers' rate in their tasks against one worker's (tokens per CPU-second: the machine's cores
    shared, which the model does not hold) and the share of the run they computed (``busy``: tokens over ``w``,
    the rate, the training seconds); the model's share for the run's own rounds (:func:`round_sizes`) at that
    rate; and what :func:`refit` needs (the overhead: the training seconds less the compute; rounds, hops, bytes
    on the critical path and adds by the model)."""
    runs = [(c["corpus"], r) for f in files for c in json.load(open(f))["corpora"] for r in c["runs"]]
    epochs = lambda r: len(r["heldout_ll_per_epoch"])  # noqa: E731
    one = {(name, epochs(r)): r for name, r in runs if r["workers"] == 1}
    rows = []
    for name, r in runs:
        base = one.get((name, epochs(r)))
        if r["workers"] < 2 or (r["sync"] or 1) < 2 or r.get("staleness", 0) or base is None:
            continue
        w, rate1 = r["workers"], float(np.mean(base["worker_tokens_per_cpu_s"]))
        rate = float(np.mean(r["worker_tokens_per_cpu_s"]))
        compute = r["tokens"] / w / rate
        q = {**p, "r_tokens_per_cpu_s": rate, "L": r["tokens"] / (r["minibatches"] * r["batch_size"])}
        parts = [resident_round(q, w, n, r["batch_size"], W, p["hop_s"], tree_broadcast=tree_broadcast)
                 for n in round_sizes(r["minibatches"], r["sync"])]
        rows.append({"corpus": name, "workers": w, "R": r["sync"], "epochs": epochs(r), "rate1": rate1, "L": q["L"],
                     "efficiency": r["tokens_per_s"] / (w * base["tokens_per_s"]), "rate": rate / rate1,
                     "busy": compute / r["train_seconds"],
                     "model_busy": compute / (compute + sum(x["exchange"] + x["adds"] for x in parts)),
                     "overhead_s": r["train_seconds"] - compute, "rounds": len(parts), "hops": parts[0]["hops"],
                     "bytes_path": sum(x["bytes"] for x in parts), "adds_s": sum(x["adds"] for x in parts)})
    return rows


def refit(rows: list, c: float) -> dict:
    """``(o0, o1)`` by least squares (each at least 0) of the runs' overhead (less the adds and the bytes at ``c``
    seconds a byte) against their rounds and rounds times dependent hops (:func:`measured`).  The overhead is
    the training seconds less the compute, so it holds the wait for the slowest worker too (not in the model: the
    timeline of 16 workers had the longest task of a round ~25% above the mean); ``c`` is given: the bytes on the
    critical path grow with the hops from run to run, and these runs do not tell them apart."""
    from scipy.optimize import nnls

    X = np.array([[r["rounds"], r["rounds"] * r["hops"]] for r in rows])
    y = np.array([r["overhead_s"] - r["adds_s"] - c * r["bytes_path"] for r in rows])
    (o0, o1), _ = nnls(X, y)
    return {"o0_s": float(o0), "hop_s": float(o1), "c_s_per_byte": c, "runs": len(rows)}


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
    ap.add_argument("--measured", nargs="+", metavar="JSON",
                    help="resident design: these runs (scale_bench.py --json, a machine with more cores) next to "
                         "the model with --o0-ms, --hop-ms and --link-mb-s, then the model refitted to them")
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
    if args.measured:
        _print_measured(args, p, given)
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


def _print_measured(args, p: dict, given: dict) -> None:
    """``--measured``: each run against the model (:func:`measured`), the refit (:func:`refit`) and its prediction
    for steady rounds, at one worker's rate and at the rate of the most workers measured."""
    q = {**p, **given, "hop_s": args.hop_ms / 1e3}
    rows = measured(args.measured, q, args.vocabulary, args.tree_broadcast)
    print(f"measured (o0 = {1e3 * q['o0_s']:.1f} ms, hop = {args.hop_ms:g} ms, c = {1e9 * q['c_s_per_byte']:.2f} "
          "ns/B): workers | R | epochs | rounds | efficiency | = rate vs one worker | x busy | model busy")
    for r in rows:
        print(f"  {r['workers']} | {r['R']} | {r['epochs']} | {r['rounds']} | {r['efficiency']:.0%} | {r['rate']:.2f}"
              f" | {r['busy']:.0%} | {r['model_busy']:.0%}")
    fitted = {**q, **refit(rows, q["c_s_per_byte"])}
    print("refitted:", json.dumps({k: fitted[k] for k in ("o0_s", "hop_s", "c_s_per_byte", "runs")}))
    most = max(r["workers"] for r in rows)
    slow = float(np.mean([r["rate"] for r in rows if r["workers"] == most]))
    rate1, L = float(np.mean([r["rate1"] for r in rows])), float(np.mean([r["L"] for r in rows]))
    for name, scale in (("one worker's rate", 1.0), (f"the rate of {most} workers", slow)):
        at = {**fitted, "r_tokens_per_cpu_s": scale * rate1, "L": L}
        for R in (int(v) for v in args.sync.split(",")):
            cells = []
            for w in (int(v) for v in args.workers.split(",")):
                busy, _ = efficiency_resident(at, w, R, args.batch_size, args.vocabulary, at["hop_s"],
                                              tree_broadcast=args.tree_broadcast, staleness=args.staleness)
                cells.append(f"{w}: {scale * busy:.0%}")
            print(f"refitted, {name} ({scale:.2f} x {rate1 / 1e3:.0f}k tokens per CPU-s), M = {args.batch_size}, "
                  f"R = {R}, staleness {args.staleness}: " + ", ".join(cells))

if __name__ == "__main__":
    main()

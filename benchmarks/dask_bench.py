"""scvi on a dask LocalCluster vs the single-process run, with the workers reading their own shards (issue 23).

    PYTHONPATH=. python benchmarks/dask_bench.py --corpus PATH [--workers 0,1,2] [--batch-size 1000|auto|100,1000] [--rounds 2]
    PYTHONPATH=. python benchmarks/dask_bench.py --generate 10000000 --corpus benchmarks/out/hmm10M.txt
    PYTHONPATH=. python benchmarks/dask_bench.py --generate 100000000 --generate-jobs 16 --rounds 0 --corpus F

``--generate N`` first writes a plain-text corpus of about ``N`` tokens sampled
(seed ``--seed``) from a known HMM (:func:`sample_corpus`) to ``--corpus``
(``--generate-jobs J``: in J processes; ``--rounds 0`` only writes it).

Then, ``--rounds`` times in alternation: one epoch of
``HMMTagger(infer="scvi", K=45).fit_stream(corpus)`` in this process (worker
count 0) and on a LocalCluster of each other ``--workers`` count (single-threaded worker processes reading their byte
ranges of the corpus, :class:`induce.distributed.WorkerCorpus`).  Per run:
tokens/s of training (the trace's seconds: the stream's reading is inside it
for the single process, the workers' one read of their shards is not) and of
the wall time (scan and reads included), the held-out log-likelihood per token
after the epoch, and the cluster's meter (:class:`induce.distributed.Meter`):
mean step overhead, tokens/s per worker while in its tasks, peak memory per
worker.  The cluster runs exchange every minibatch exactly (``--sync-every 1``, as the recorded runs did; the
model's default rounds of 16 are measured by ``scale_bench.py``).  ``--overhead-batches`` adds short runs at a
second minibatch size
(``--small-batch``) to fit the step overhead as ``o0 + o1 M``.  Kernels are
compiled before timing.  Prints one JSON object; ``--out FILE`` writes it too.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from induce import HMMTagger
from induce import distributed as dist


def _known_hmm(rng: np.random.Generator, K: int, W: int) -> tuple[np.ndarray, np.ndarray]:
    """The generating HMM of :func:`sample_corpus`: ``A`` (K+1, K) rows ~ Dir(0.1); state k's emissions ~
    Dir(0.05) over its own ``W / K``-word block plus 1/10 of its mass on a shared Zipfian head of 200 words."""
    A = rng.dirichlet(np.full(K, 0.1), size=K + 1)
    block = W // K
    head = 1.0 / np.arange(1, 201)
    B = np.zeros((K, W))
    for k in range(K):
        B[k, k * block:(k + 1) * block] = 0.9 * rng.dirichlet(np.full(block, 0.05))
        B[k, W - 200:] += 0.1 * head / head.sum()
    return A, B


def _sample_part(path: str, n_tokens: int, seed, A: np.ndarray, B: np.ndarray, mean_len: float) -> tuple[int, int]:
    """Sentences of about ``n_tokens`` from ``(A, B)`` with the generator ``seed`` (lengths 1 + Poisson(mean_len
    - 1)), written as plain text (``w<id>`` words) to ``path``: ``(sentences, tokens)``."""
    rng = np.random.default_rng(seed)
    K, W = B.shape
    n_sent = int(n_tokens / mean_len)
    lengths = 1 + rng.poisson(mean_len - 1, size=n_sent)
    cumA = np.cumsum(A, axis=1)
    z = np.empty(lengths.sum(), dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    state = np.minimum((rng.random(n_sent)[:, None] > cumA[0]).sum(axis=1), K - 1)
    live = np.arange(n_sent)
    for t in range(lengths.max()):  # vectorised over the sentences still running
        keep = lengths[live] > t
        live, state = live[keep], state[keep]
        z[offsets[live] + t] = state
        state = np.minimum((rng.random(len(live))[:, None] > cumA[1 + state]).sum(axis=1), K - 1)
    words = np.empty(len(z), dtype=np.int64)
    for k in range(K):
        at = np.flatnonzero(z == k)
        words[at] = rng.choice(W, size=len(at), p=B[k])
    names = np.array([f"w{i}" for i in range(W)], dtype=object)
    with open(path, "w") as f:
        for lo in range(0, n_sent, 10_000):
            sent = [" ".join(names[words[offsets[i]:offsets[i + 1]]]) for i in range(lo, min(n_sent, lo + 10_000))]
            f.write("\n".join(sent) + "\n")
    return n_sent, int(len(z))


def sample_corpus(path: str, n_tokens: int, seed: int, K: int = 45, W: int = 20_000, mean_len: float = 22.0,
                  jobs: int = 1) -> dict:
    """About ``n_tokens`` tokens of sentences from a known HMM (:func:`_known_hmm`) written as plain text to
    ``path``; the model is drawn from the generator ``seed``.  The sentences follow from the same generator, or,
    with ``jobs`` > 1, are drawn in ``jobs`` parts by a process pool, part j from the generator
    ``SeedSequence(seed).spawn(jobs)[j]``, and concatenated in part order."""
    from concurrent.futures import ProcessPoolExecutor

    rng = np.random.default_rng(seed)
    A, B = _known_hmm(rng, K, W)
    if jobs <= 1:
        sizes = [_sample_part(path, n_tokens, rng, A, B, mean_len)]
    else:
        parts = [(f"{path}.part{j}", n_tokens // jobs, s) for j, s in enumerate(np.random.SeedSequence(seed).spawn(jobs))]
        with ProcessPoolExecutor(jobs) as pool:
            sizes = list(pool.map(_sample_part, *zip(*parts), *([x] * jobs for x in (A, B, mean_len))))
        with open(path, "wb") as out:
            for part, _, _ in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(1 << 24):
                        out.write(chunk)
                os.remove(part)
    return {"sentences": sum(n for n, _ in sizes), "tokens": sum(t for _, t in sizes), "states": K, "words": W,
            "seed": seed, "parts": max(1, jobs)}


def _run(path, client, batch_size, max_batches=None, sync_every=1) -> dict:
    model = HMMTagger(n_states=45, infer="scvi", batch_size=batch_size, random_state=0, client=client,
                      max_batches=max_batches, n_epochs=1, heldout_fraction=0.02, heldout_max_tokens=50_000,
                      sync_every=sync_every)
    t0 = time.perf_counter()
    model.fit_stream(path)
    wall = time.perf_counter() - t0
    last = model.trace_[-1]
    out = {"tokens_seen": last["tokens_seen"], "train_seconds": round(last["seconds"], 3),
           "wall_seconds": round(wall, 3), "tokens_per_s": round(last["tokens_seen"] / last["seconds"], 1),
           "wall_tokens_per_s": round(last["tokens_seen"] / wall, 1),
           "heldout_ll_per_token": last["heldout_log_likelihood_per_token"], "minibatches": model.n_batches_,
           "batch_size": model.batch_size_,
           "client_peak_memory_mb": round(dist.cluster.peak_memory() / 2**20, 1)}
    if client is not None:
        out.update(model.cluster_meter_.report(dist.n_workers(client)))
    return out


def main() -> None:
    root = os.environ.get("INDUCE_CORPORA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpora"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=os.path.join(root, "brown"))
    ap.add_argument("--generate", type=int, default=0, metavar="N")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--generate-jobs", type=int, default=1, metavar="J", help="draw the sentences in J processes")
    ap.add_argument("--workers", default="0,1,2", help="worker counts in turn, 0: this process")
    ap.add_argument("--warm", default=None, help="small corpus that compiles the kernels (default: CoNLL-2000 test)")
    ap.add_argument("--batch-size", default="1000",
                    help="sentences per minibatch, or 'auto' (none given: 100 in one process, the planned size on a cluster); "
                         "comma-separated: each size in turn")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--sync-every", type=int, default=1, metavar="R",
                    help="minibatches per round on the workers (default 1: the exact exchange its records measured; "
                         "the model's default is 16: benchmarks/scale_bench.py)")
    ap.add_argument("--small-batch", type=int, default=100)
    ap.add_argument("--overhead-batches", type=int, default=0, metavar="N")
    ap.add_argument("--out")
    args = ap.parse_args()
    sizes = [None if v == "auto" else int(v) for v in args.batch_size.split(",")]
    result = {"corpus": args.corpus, "batch_size": args.batch_size, "cpus": os.cpu_count(), "runs": []}
    if args.generate:
        result["generated"] = sample_corpus(args.corpus, args.generate, args.seed, jobs=args.generate_jobs)
    warm = args.warm or os.path.join(root, "conll2000", "test.txt")
    if args.rounds:
        HMMTagger(n_states=45, infer="scvi", batch_size=50, max_batches=2).fit_stream(warm)  # compile the kernels
    workers = [int(x) for x in args.workers.split(",")]
    for r in range(args.rounds):
        for n in workers:
            if n == 0:
                for size in sizes:
                    result["runs"].append({"round": r, "workers": 0, **_run(args.corpus, None, size)})
                    print(json.dumps(result["runs"][-1]), flush=True)
                continue
            with dist.session(n) as client:
                HMMTagger(n_states=45, infer="scvi", batch_size=50, max_batches=2, client=client,
                          sync_every=args.sync_every).fit_stream(warm)
                for size in sizes:
                    result["runs"].append({"round": r, "workers": n,
                                           **_run(args.corpus, client, size, sync_every=args.sync_every)})
                    print(json.dumps(result["runs"][-1]), flush=True)
                if args.overhead_batches and r == 0 and n == min(w for w in workers if w):
                    result["small_batch"] = {"batch_size": args.small_batch, **_run(
                        args.corpus, client, args.small_batch, args.overhead_batches, args.sync_every)}
    report(result, args.out)


def report(result: dict, out: str | None) -> None:
    """Print ``result`` as JSON, and write it to ``out`` (atomically) when given."""
    from induce.atomic import atomic_write

    text = json.dumps(result, indent=1)
    print(text)
    if out:
        with atomic_write(out) as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

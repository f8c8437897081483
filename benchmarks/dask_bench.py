"""Throughput of induce on a dask LocalCluster vs the single-process run, and the per-step overhead (issue 23).

    PYTHONPATH=. python benchmarks/dask_bench.py [--corpus PATH] [--workers 1,2] [--batch-size 1000]

Measures, on one corpus (default CoNLL-2000 train):

* the per-step overhead of a cluster step: median wall time of the svi/scvi
  local step (:meth:`induce.distributed.ClusterSentenceUpdater.statistics`) on a
  one-sentence minibatch, minus the same step in this process;
* tokens/s of one scvi epoch and of em passes: single process, then a
  LocalCluster of each ``--workers`` count (single-threaded worker processes;
  kernels warmed up first, so numba's compilation is not timed), and the
  final held-out / training objectives to show the runs agree.

Prints one JSON object; ``--out FILE`` writes it too.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from induce import HMMTagger
from induce import distributed as dist
from induce.corpus.formats import load_corpus
from induce.infer import stochastic_hmm as sh


def _overhead(client, corpus, steps: int) -> dict:
    counts = sh.GlobalCounts.exponential(np.random.default_rng(0), 45, len(corpus.vocab), corpus.n_tokens)
    lo, hi = corpus.offsets[0], corpus.offsets[1]
    tokens, offsets = corpus.tokens[lo:hi], np.array([0, hi - lo])
    upd = dist.ClusterSentenceUpdater(client, "scvi", 0.1, 0.1, corpus.n_sentences, n_shards=1)
    local, remote = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        sh.sentence_statistics(counts, "cvi", 0.1, 0.1, tokens, offsets)
        local.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        upd.statistics(counts, tokens, offsets)
        remote.append(time.perf_counter() - t0)
    return {"local_step_ms": 1e3 * float(np.median(local)), "cluster_step_ms": 1e3 * float(np.median(remote)),
            "overhead_ms": 1e3 * float(np.median(remote) - np.median(local))}


def _runs(corpus, heldout, client, batch_size, em_iter) -> dict:
    out = {}
    model = HMMTagger(n_states=45, infer="scvi", batch_size=batch_size, random_state=0, client=client)
    t0 = time.perf_counter()
    model.fit(corpus)
    sec = time.perf_counter() - t0
    out["scvi_epoch_seconds"] = round(sec, 3)
    out["scvi_tokens_per_s"] = round(corpus.n_tokens / sec, 1)
    out["scvi_heldout_ll"] = model.predictive_log_likelihood(heldout)
    model = HMMTagger(n_states=45, infer="em", n_iter=em_iter, tol=0, random_state=0, client=client)
    t0 = time.perf_counter()
    model.fit(corpus)
    sec = time.perf_counter() - t0
    out["em_seconds"] = round(sec, 3)
    out["em_tokens_per_s"] = round(corpus.n_tokens * em_iter / sec, 1)
    out["em_log_likelihood"] = model.trace_[-1]["log_likelihood"]
    return out


def main() -> None:
    root = os.environ.get("INDUCE_CORPORA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpora"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=os.path.join(root, "conll2000", "train.txt"))
    ap.add_argument("--heldout", default=os.path.join(root, "conll2000", "test.txt"))
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--em-iter", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--out")
    args = ap.parse_args()
    corpus, heldout = load_corpus(args.corpus), load_corpus(args.heldout)
    small = corpus.subset(np.arange(200))
    HMMTagger(n_states=45, infer="scvi", batch_size=50, max_batches=2).fit(small)  # compile the kernels here
    result = {"corpus": args.corpus, "sentences": corpus.n_sentences, "tokens": corpus.n_tokens,
              "batch_size": args.batch_size, "cpus": os.cpu_count(), "runs": {}}
    result["runs"]["single_process"] = _runs(corpus, heldout, None, args.batch_size, args.em_iter)
    for n in (int(x) for x in args.workers.split(",")):
        with dist.session(n) as client:
            HMMTagger(n_states=45, infer="scvi", batch_size=50, max_batches=2, client=client).fit(small)  # warm up
            HMMTagger(n_states=45, infer="em", n_iter=1, client=client).fit(small)
            if n == 1:
                result["overhead"] = _overhead(client, corpus, args.steps)
            result["runs"][f"{n}_workers"] = _runs(corpus, heldout, client, args.batch_size, args.em_iter)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        from induce.atomic import atomic_write

        with atomic_write(args.out) as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()

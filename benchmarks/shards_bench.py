"""Workers reading their shards vs the client shipping them: batch em on a dask LocalCluster (issue 23).

    PYTHONPATH=. python benchmarks/shards_bench.py --corpus /work/shared/corpora/brown [--workers 2] [--rounds 2]

The client reads the corpus (:func:`induce.corpus.formats.load_corpus`, as
``induce tag`` does), then ``--rounds`` times in alternation fits
``HMMTagger(infer="em", K=--states, n_iter=--iterations, tol=0)`` on a
LocalCluster of ``--workers`` single-threaded worker processes twice: with the
corpus shipped (the same corpus less its ``source``, as for in-memory data:
:meth:`induce.distributed.WorkerCorpus.ship`) and read by the workers from
the file (:meth:`~induce.distributed.WorkerCorpus.read`, checked by CRC-32).
Per fit: wall seconds, the bytes of the numpy arrays the client submits
(recorded at ``client.submit``; the pickled vocabulary sent with each read
task is counted apart), the integer (token) bytes among them, and the final
log-likelihood.  Kernels are compiled before timing.  Prints one JSON object;
``--out FILE`` writes it too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import time

import numpy as np

from benchmarks.dask_bench import report
from induce import HMMTagger
from induce.corpus.formats import load_corpus
from induce.distributed import cluster


def fit(client, corpus, args) -> dict:
    """One em fit on the cluster with the client's submitted arrays recorded."""
    sent = []
    submit = client.submit

    def recording(fn, *a, **kw):
        sent.extend(x for x in a if isinstance(x, np.ndarray))
        return submit(fn, *a, **kw)

    client.submit = recording
    try:
        t0 = time.perf_counter()
        model = HMMTagger(n_states=args.states, infer="em", n_iter=args.iterations, tol=0, random_state=0,
                          client=client).fit(corpus)
        seconds = time.perf_counter() - t0
    finally:
        client.submit = submit
    return {"seconds": round(seconds, 2), "submitted_mb": round(sum(a.nbytes for a in sent) / 2**20, 2),
            "integer_mb": round(sum(a.nbytes for a in sent if a.dtype.kind in "iu") / 2**20, 2),
            "vocabulary_mb_per_read_task": round(len(pickle.dumps(model.vocab_)) / 2**20, 2),
            "log_likelihood": model.trace_[-1]["log_likelihood"],
            "step_overhead_ms": model.cluster_meter_.report(args.workers)["step_overhead_ms"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--states", type=int, default=45)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out")
    args = p.parse_args()
    t0 = time.perf_counter()
    corpus = load_corpus(args.corpus)
    result = {"corpus": args.corpus, "sentences": corpus.n_sentences, "tokens": corpus.n_tokens,
              "client_read_seconds": round(time.perf_counter() - t0, 2), "workers": args.workers,
              "states": args.states, "iterations": args.iterations, "runs": []}
    assert corpus.source is not None, "the corpus must be read from files the workers can read"
    shipped = dataclasses.replace(corpus, source=None)
    small = load_corpus(args.corpus).head(50)
    HMMTagger(n_states=args.states, infer="em", n_iter=1).fit(small)  # compile the kernels here
    with cluster.session(args.workers) as client:
        HMMTagger(n_states=args.states, infer="em", n_iter=1, client=client).fit(small)  # ... and on the workers
        for r in range(args.rounds):
            for name, c in (("shipped", shipped), ("read", corpus)):
                result["runs"].append({"round": r, "corpus": name, **fit(client, c, args)})
                print(json.dumps(result["runs"][-1]), flush=True)
    report(result, args.out)


if __name__ == "__main__":
    main()

"""Workers reading their shards vs the client shipping them, and this code against another checkout: batch em on a
dask LocalCluster (issue 23).

    PYTHONPATH=. python benchmarks/shards_bench.py --corpus /work/shared/corpora/brown [--workers 2] [--rounds 2]
    PYTHONPATH=. python benchmarks/shards_bench.py --corpus /work/shared/corpora/brown --compare /tmp/base

The client reads the corpus (:func:`induce.corpus.formats.load_corpus`, as
``induce tag`` does), then ``--rounds`` times in alternation fits
``HMMTagger(infer=--infer (em), K=--states, n_iter=--iterations, tol=0)`` on a
LocalCluster of ``--workers`` single-threaded worker processes twice: with the
corpus shipped (the same corpus less its ``source``, as for in-memory data:
:meth:`induce.distributed.WorkerCorpus.ship`) and read by the workers from
the file (:meth:`~induce.distributed.WorkerCorpus.read`, checked by CRC-32).
With ``--compare TREE`` the two fits of a round are instead the read fit with
this checkout's ``induce`` and with the one at ``TREE`` (e.g. ``git archive``
of main unpacked there), each in its own process and cluster.
Per fit: wall seconds and seconds per pass (passes 2..n), the bytes of the
numpy arrays the client submits (recorded at ``client.submit``; the pickled
vocabulary sent with each read task is counted apart) and receives (at
``client.gather``), in all and per pass (passes 2..n; the rest is the set-up),
the integer (token) bytes among those submitted, and the final log-likelihood
(cvi2: predictive).
With ``--compare`` also each shard's vocabulary size against W.  Kernels are
compiled before timing.  Prints one JSON object; ``--out FILE`` writes it too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import subprocess
import sys
import time

import numpy as np

from induce import HMMTagger
from induce.corpus.formats import load_corpus
from induce.distributed import cluster


def nbytes(x) -> int:
    """Bytes of the numpy arrays in a (nested) task result."""
    if isinstance(x, np.ndarray):
        return x.nbytes
    if isinstance(x, (tuple, list)):
        return sum(nbytes(y) for y in x)
    return 0


def fit(client, corpus, args) -> dict:
    """One fit on the cluster with the client's submitted and gathered arrays recorded, in all and per pass."""
    sent, ints, got, marks = [0], [0], [0], []
    submit, gather = client.submit, client.gather

    def recording(fn, *a, **kw):
        arrays = [x for x in a if isinstance(x, np.ndarray)]
        sent[0] += sum(x.nbytes for x in arrays)
        ints[0] += sum(x.nbytes for x in arrays if x.dtype.kind in "iu")
        return submit(fn, *a, **kw)

    def gathering(futures, *a, **kw):
        out = gather(futures, *a, **kw)
        got[0] += nbytes(out)
        return out

    client.submit, client.gather = recording, gathering
    try:
        t0 = time.perf_counter()
        model = HMMTagger(n_states=args.states, infer=args.infer, n_iter=args.iterations, tol=0, random_state=0,
                          client=client, callback=lambda record: marks.append((sent[0], got[0]))).fit(corpus)
        seconds = time.perf_counter() - t0
    finally:
        client.submit, client.gather = submit, gather
    per_pass = np.diff(np.array(marks, dtype=float), axis=0).mean(axis=0) / 2**20  # passes 2..n
    return {"seconds": round(seconds, 2),
            "seconds_per_pass": round(float(np.mean([r["seconds"] for r in model.trace_[1:]])), 3),
            "submitted_mb": round(sent[0] / 2**20, 2), "received_mb": round(got[0] / 2**20, 2),
            "submitted_mb_per_pass": round(per_pass[0], 3), "received_mb_per_pass": round(per_pass[1], 3),
            "integer_mb": round(ints[0] / 2**20, 2),
            "vocabulary_mb_per_read_task": round(len(pickle.dumps(model.vocab_)) / 2**20, 2),
            "log_likelihood": next(v for k, v in model.trace_[-1].items() if k.endswith("log_likelihood")),
            "step_overhead_ms": model.cluster_meter_.report(args.workers)["step_overhead_ms"]}


def compile_kernels(client, args) -> None:
    """Run one pass on a few sentences, on the client and on the workers, so that no timed fit compiles."""
    small = load_corpus(args.corpus).head(50)
    HMMTagger(n_states=args.states, infer=args.infer, n_iter=1).fit(small)
    HMMTagger(n_states=args.states, infer=args.infer, n_iter=1, client=client).fit(small)


def child(args) -> None:
    """``--child``: one read fit on a fresh cluster with the ``induce`` on ``PYTHONPATH``; prints its JSON."""
    corpus = load_corpus(args.corpus)
    with cluster.session(args.workers) as client:
        compile_kernels(client, args)
        print(json.dumps(fit(client, corpus, args)), flush=True)


def shard_vocabularies(corpus, workers: int) -> dict:
    """``|V_s|`` of each shard the workers read (:meth:`induce.distributed.WorkerCorpus.local`) against W."""
    from induce.distributed import WorkerCorpus

    path, fmt, lowercase = corpus.source
    with cluster.session(workers) as client:
        sizes = [len(v) for v in WorkerCorpus.read(client, path, fmt, corpus.vocab, lowercase=lowercase,
                                                   keep_empty=True).local()[1]]
    W = len(np.unique(corpus.tokens))
    return {"W": W, "shard_words": sizes, "fraction_of_W": [round(n / W, 3) for n in sizes]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--infer", choices=("em", "cvi2"), default="em")
    p.add_argument("--states", type=int, default=45)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--compare", metavar="TREE", help="another checkout whose induce the read fits are compared with")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out")
    args = p.parse_args()
    if args.child:
        child(args)
        return
    from benchmarks.dask_bench import report

    t0 = time.perf_counter()
    corpus = load_corpus(args.corpus)
    result = {"corpus": args.corpus, "sentences": corpus.n_sentences, "tokens": corpus.n_tokens,
              "client_read_seconds": round(time.perf_counter() - t0, 2), "workers": args.workers,
              "infer": args.infer, "states": args.states, "iterations": args.iterations, "runs": []}
    assert corpus.source is not None, "the corpus must be read from files the workers can read"
    if args.compare:
        result["shards"] = shard_vocabularies(corpus, args.workers)
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        argv = [sys.executable, os.path.abspath(__file__), "--child", "--corpus", args.corpus, "--infer", args.infer]
        argv += [f"--{o}={getattr(args, o)}" for o in ("workers", "states", "iterations")]
        for r in range(args.rounds):
            for name, tree in (("this", here), ("compare", os.path.abspath(args.compare))):
                env = dict(os.environ, PYTHONPATH=tree)
                out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
                result["runs"].append({"round": r, "code": name, "tree": tree,
                                       **json.loads(out.strip().splitlines()[-1])})
                print(json.dumps(result["runs"][-1]), flush=True)
        report(result, args.out)
        return
    shipped = dataclasses.replace(corpus, source=None)
    with cluster.session(args.workers) as client:
        compile_kernels(client, args)
        for r in range(args.rounds):
            for name, c in (("shipped", shipped), ("read", corpus)):
                result["runs"].append({"round": r, "corpus": name, **fit(client, c, args)})
                print(json.dumps(result["runs"][-1]), flush=True)
    report(result, args.out)


if __name__ == "__main__":
    main()

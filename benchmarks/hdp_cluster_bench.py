"""HDP-HMM scvi on LocalClusters: bytes on the wire per token and tokens/s against the single process (issue 41).

    PYTHONPATH=. python benchmarks/hdp_cluster_bench.py --sentences 20000 --workers 0,1,2 --batch-size 100,1000

For each minibatch size ``M`` (``--batch-size``) and worker count (0: this process), ``--passes`` passes of
``HDPHMMTagger(infer="scvi")`` (its defaults otherwise) on the first ``--sentences`` sentences of Brown (in memory:
the corpus is shipped to the workers once, before the timing).  Per run: tokens/s of training, the last pass's
minibatch log-likelihood per token, the states in use, and on a cluster the meter's bytes per step and per
training token (sent by the client, received by it, moved between workers).  Next to them, the bytes per token the
design before the tenth session moved (the whole ``W x K`` emission table to the cluster and to every other worker
a minibatch, the statistics back), computed from the run's own ``W``, ``K`` and steps: ``8 (W K + (K + 1) K) w``
a step on ``w`` workers.  Prints a table (load average before and after); ``--json FILE`` writes every number.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from induce import HDPHMMTagger
from induce import distributed as dist
from induce.corpus.formats import load_corpus


def _fit(corpus, client, batch_size: int, passes: int, seed: int) -> dict:
    model = HDPHMMTagger(infer="scvi", batch_size=batch_size, n_iter=passes, random_state=seed, tol=0,
                         client=client, scvi_memory=False)
    t0 = time.perf_counter()
    model.fit(corpus)
    seconds = time.perf_counter() - t0
    last = model.trace_[-1]
    tokens = passes * corpus.n_tokens
    out = {"batch_size": batch_size, "seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 1),
           "minibatch_ll_per_token": last["minibatch_log_likelihood"] / corpus.n_tokens,
           "states": int(model.effective_states_)}
    if client is not None:
        workers = dist.n_workers(client)
        rep = model.cluster_meter_.report(workers)
        out.update({k: rep[k] for k in ("steps", "step_overhead_ms", "bytes_sent_per_step",
                                        "bytes_received_per_step", "bytes_between_workers_per_step",
                                        "bytes_per_token")})
        K, W = model.emission_counts_.shape[1], model.emission_counts_.shape[0]
        before = 8 * (W * K + (K + 1) * K) * workers + rep["bytes_received_per_step"]
        out["bytes_per_token_before"] = round(before * rep["steps"] / tokens, 2)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = os.environ.get("INDUCE_CORPORA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpora"))
    parser.add_argument("--corpus", default=os.path.join(root, "brown"), help="a corpus file or directory (Brown)")
    parser.add_argument("--sentences", type=int, default=20_000, help="the corpus cut to its first sentences")
    parser.add_argument("--workers", default="0,1,2", help="worker counts, 0: this process")
    parser.add_argument("--batch-size", default="100,1000", help="sentences per minibatch, comma-separated")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    corpus = load_corpus(args.corpus, lowercase=True)
    corpus = corpus.subset(np.arange(min(args.sentences, corpus.n_sentences)))
    sizes = [int(m) for m in args.batch_size.split(",")]
    load0, runs = os.getloadavg(), []
    HDPHMMTagger(infer="scvi", batch_size=50, n_iter=1, random_state=0).fit(corpus.subset(np.arange(200)))  # compile
    for workers in [int(w) for w in args.workers.split(",")]:
        if workers == 0:
            runs += [{"workers": 0, **_fit(corpus, None, m, args.passes, args.seed)} for m in sizes]
            continue
        with dist.session(workers) as client:
            HDPHMMTagger(infer="scvi", batch_size=50, n_iter=1, random_state=0, client=client,
                         scvi_memory=False).fit(corpus.subset(np.arange(200)))
            runs += [{"workers": workers, **_fit(corpus, client, m, args.passes, args.seed)} for m in sizes]
    load1 = os.getloadavg()
    print("workers | M | tokens/s | x 1 proc | LL/token | states | B/token (before) | B/step sent, received, moved")
    single = {r["batch_size"]: r["tokens_per_s"] for r in runs if r["workers"] == 0}
    for r in runs:
        wire = (f"{r['bytes_per_token']} ({r['bytes_per_token_before']}) | {r['bytes_sent_per_step']:.0f}, "
                f"{r['bytes_received_per_step']:.0f}, {r['bytes_between_workers_per_step']:.0f}"
                if r["workers"] else "- | -")
        ratio = r["tokens_per_s"] / single[r["batch_size"]] if r["batch_size"] in single else float("nan")
        print(f"{r['workers']} | {r['batch_size']} | {r['tokens_per_s']:.0f} | {ratio:.2f} | "
              f"{r['minibatch_ll_per_token']:.4f} | {r['states']} | {wire}")
    print(f"load average {load0[0]:.2f} -> {load1[0]:.2f}")
    if args.json:
        from induce.atomic import atomic_write

        with atomic_write(args.json) as f:
            f.write(json.dumps({"corpus": os.path.basename(os.path.normpath(args.corpus)),
                                "sentences": corpus.n_sentences, "passes": args.passes, "seed": args.seed,
                                "load_average": [load0, load1], "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()

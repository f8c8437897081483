"""A round's latency on a local cluster, client vs workers (issue 41): scvi rounds of R = 2 and 8 minibatches of
100 sentences (400 minibatches) on a stream, so that a round's compute is small and the rest shows.  Per round:
the training seconds, the longest worker's task seconds, their difference (the workers' idle time: the latency
chain and the client's serial work) and the client's CPU (the whole fit, the file's scan included).  Prints one
JSON line per R.

    PYTHONPATH=. python benchmarks/round_latency.py 2 /tmp/scale_bench_hmm2000000.txt
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    from induce import HMMTagger
    from induce import distributed as dist

    n, path = int(sys.argv[1]), sys.argv[2]
    with dist.session(n) as client:
        client.wait_for_workers(n)
        HMMTagger(n_states=45, infer="scvi", batch_size=50, max_batches=4, client=client, sync_every=2,
                  heldout_fraction=0).fit_stream(path)  # compile the kernels on the workers
        for R in (2, 8):
            model = HMMTagger(n_states=45, infer="scvi", batch_size=100, max_batches=400, random_state=0,
                              client=client, sync_every=R, n_epochs=1, heldout_fraction=0, tol=0)
            cpu = time.process_time()
            model.fit_stream(path)
            cpu = time.process_time() - cpu
            meter, seconds = model.cluster_meter_, model.trace_[-1]["seconds"]
            busy, rounds = max(meter.busy.values()), meter.steps
            print(json.dumps({"R": R, "rounds": rounds, "train_s": seconds,
                              "ms_per_round": round(1e3 * seconds / rounds, 2),
                              "longest_worker_busy_ms_per_round": round(1e3 * busy / rounds, 2),
                              "idle_ms_per_round": round(1e3 * (seconds - busy) / rounds, 2),
                              "client_cpu_ms_per_round": round(1e3 * cpu / rounds, 2)}), flush=True)


if __name__ == "__main__":
    main()

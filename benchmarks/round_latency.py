"""A round's latency on a local cluster, client vs workers (issue 41): scvi rounds of R = 2 and 8 minibatches of
100 sentences (400 minibatches) on a stream, so that a round's compute is small and the rest shows: per round the
training seconds, the longest worker's task seconds, their difference (the workers' idle time: the latency chain
and the client's serial work) and the client's CPU (the whole fit, the file's scan included).

    PYTHONPATH=. python benchmarks/round_latency.py 2 /tmp/scale_bench_hmm2000000.txt
"""
import os, sys, time, json
def main():
    from induce import HMMTagger
    from induce import distributed as dist
    n = int(sys.argv[1]); path = sys.argv[2]
    with dist.session(n) as client:
        client.wait_for_workers(n)
        HMMTagger(n_states=45, infer="scvi", batch_size=50, max_batches=4, client=client, sync_every=2,
                  heldout_fraction=0).fit_stream(path)
        for R in (2, 8):
            m = HMMTagger(n_states=45, infer="scvi", batch_size=100, max_batches=400, random_state=0, client=client,
                          sync_every=R, n_epochs=1, heldout_fraction=0, tol=0)
            c0 = time.process_time()
            m.fit_stream(path)
            c1 = time.process_time()
            meter = m.cluster_meter_
            busy = max(meter.busy.values())
            print(json.dumps({"R": R, "rounds": meter.steps, "train_s": m.trace_[-1]["seconds"],
                              "ms_per_round": round(1e3 * m.trace_[-1]["seconds"] / meter.steps, 2),
                              "longest_worker_busy_ms_per_round": round(1e3 * busy / meter.steps, 2),
                              "idle_ms_per_round": round(1e3 * (m.trace_[-1]["seconds"] - busy) / meter.steps, 2),
                              "client_cpu_ms_per_round": round(1e3 * (c1 - c0) / meter.steps, 2)}), flush=True)
if __name__ == "__main__":
    main()

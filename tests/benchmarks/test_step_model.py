"""benchmarks/step_model.py: the rounds it models are the updater's, and a measured run splits into rate x busy."""

import json
import types

from induce.distributed.rounds import WorkerRoundsUpdater


def _run(workers, tokens_per_s, cpu_rate, sync=64, minibatches=100):
    tokens = 2_000_000
    return {"workers": workers, "sync": sync, "staleness": 0, "batch_size": 1000, "minibatches": minibatches,
            "tokens": tokens, "tokens_per_s": tokens_per_s, "train_seconds": tokens / tokens_per_s,
            "heldout_ll_per_epoch": [-6.0], "worker_tokens_per_cpu_s": [cpu_rate] * workers}


def test_rounds_grow_as_the_updater_sizes_them_and_efficiency_is_rate_times_busy(tmp_path, benchmark_script):
    model = benchmark_script("step_model")
    for R, n in ((64, 453), (256, 1359), (4, 3), (1, 5)):
        sizes, start = [], 0
        updater = types.SimpleNamespace(sync_every=R)
        while start < n:  # the updater's rule, minibatch by minibatch, the last round cut at the run's end
            sizes.append(min(WorkerRoundsUpdater.round_size(updater, start), n - start))
            start += sizes[-1]
        assert model.round_sizes(n, R) == sizes and sum(sizes) == n
    assert model.round_sizes(453, 64)[:8] == [1, 2, 4, 8, 16, 32, 64, 64]
    # one worker busy all the time at 1M tokens/s; 4 workers at half that rate each, computing 80% of the run
    runs = [_run(1, 1e6, 1e6), _run(4, 4 * 0.5e6 * 0.8, 0.5e6)]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"corpora": [{"corpus": "stream", "runs": runs}]}))
    p = {"o0_s": 0.01, "hop_s": 0.005, "c_s_per_byte": 1e-9, "heaps_a": 96.0, "heaps_h": 0.45}
    (row,) = model.measured([path], p, 20_000, tree_broadcast=True)
    assert abs(row["efficiency"] - 0.4) < 1e-12 and abs(row["rate"] - 0.5) < 1e-12 and abs(row["busy"] - 0.8) < 1e-12
    assert row["hops"] == 1 + 2 and row["rounds"] == len(model.round_sizes(100, 64))
    # the model's exchange (o0, three hops, the bytes) in each of the 7 rounds against 1 s of compute a worker
    assert 0.8 < row["model_busy"] < 1.0

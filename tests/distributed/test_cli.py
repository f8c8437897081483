"""``induce tag --workers N`` / ``--cluster ADDRESS`` (issue 23)."""

import json

import numpy as np
import pytest

pytest.importorskip("distributed")

from induce.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(25)]
    path = tmp_path_factory.mktemp("dask") / "text.txt"
    path.write_text("".join(" ".join(rng.choice(words, size=rng.integers(3, 12))) + "\n" for _ in range(150)))
    return str(path)


def _tag(capsys, *argv):
    assert main(["tag", *argv, "--quiet", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cluster_address_em_equals_single_process(client, text, capsys):
    argv = [text, "--infer", "em", "--states", "3", "--iterations", "4", "--tol", "0"]
    ref = _tag(capsys, *argv)
    got = _tag(capsys, *argv, "--cluster", client.scheduler.address)
    assert got["workers"] == 2 and "workers" not in ref
    assert got["log_posterior"] == pytest.approx(ref["log_posterior"], rel=1e-9)  # em: MAP by default


def test_local_workers_scvi_equals_single_process(text, capsys, monkeypatch):
    from induce.distributed.cluster import Meter

    shares = []  # the overhead's share of training, as the meter saw it when the run asked for advice
    advice = Meter.advice
    monkeypatch.setattr(Meter, "advice", lambda self, *a, **k: shares.append(self.overhead / self.wall)
                        or advice(self, *a, **k))
    argv = [text, "--infer", "scvi", "--states", "3", "--batch-size", "20", "--epochs", "2", "--heldout", "0"]
    ref = _tag(capsys, *argv)
    got = _tag(capsys, *argv, "--workers", "1", "--sync-every", "1")  # the exact exchange: one step a minibatch
    assert got["workers"] == 1 and got["tokens_per_s_per_worker"] == got["tokens_per_s"]
    assert got["steps"] == 2 * 8 and got["step_overhead_ms"] > 0  # 150 sentences / 20 per minibatch, 2 epochs
    (address, rate), = got["worker_tokens_per_s"].items()
    assert rate > 0 and got["worker_peak_memory_mb"][address] > 10
    assert got["minibatch_log_likelihood_per_token"] == ref["minibatch_log_likelihood_per_token"]
    # 20-sentence minibatches are milliseconds of work against a round trip: the run says so, with a size to use,
    # whenever the overhead took over half of training (nearly always; not on a machine so loaded that the
    # workers' own time swells past the round trips)
    assert len(shares) == 1 and not ref.get("warnings")
    warned = any("step overhead" in w and "--batch-size" in w for w in got.get("warnings", []))
    assert warned == (shares[0] > 0.5)


def test_meter_advises_a_larger_minibatch_when_the_overhead_dominates():
    from induce.distributed.cluster import Meter

    meter = Meter()
    meter.steps, meter.wall, meter.overhead = 10, 1.0, 0.8
    # o = 80 ms, c = 20 ms a step; 20% overhead needs c' = 80 x 0.8 / 0.2 = 320 ms: 100 x 320 / 20 = 1600 sentences
    message = meter.advice(100)
    assert "80% of training (80 ms a step against 20 ms" in message and "at least 1600 sentences" in message
    meter.overhead = 0.5
    assert meter.advice(100) is None
    meter.steps, meter.overhead = 4, 0.9
    assert meter.advice(100) is None


@pytest.mark.parametrize("extra", [["--infer", "cvi1", "--workers", "1"],
                                   ["--infer", "em", "--workers", "1", "--cluster", "tcp://127.0.0.1:1"],
                                   ["--model", "hdp-hmm", "--infer", "cvi", "--workers", "1"]])
def test_unsupported_cluster_options_are_usage_errors(text, capsys, extra):
    assert main(["tag", text, "--quiet", *extra]) == 2
    assert "induce: error:" in capsys.readouterr().err


def test_stream_hdp_and_align_report_the_cluster(client, text, tmp_path, capsys):
    got = _tag(capsys, text, "--infer", "scvi", "--stream", "--states", "3", "--batch-size", "20", "--epochs", "1",
               "--heldout", "0", "--cluster", client.scheduler.address)
    # the default rounds of 64 minibatches, growing 1, 2, 4, ...: the epoch's 8 minibatches in rounds of 1, 2, 4, 1
    assert got["workers"] == 2 and len(got["worker_peak_memory_mb"]) == 2 and got["steps"] == 4
    assert got["minibatches"] == 8
    got = _tag(capsys, text, "--model", "hdp-hmm", "--infer", "svi", "--truncation", "4", "--iterations", "1",
               "--batch-size", "50", "--cluster", client.scheduler.address)
    assert got["workers"] == 2 and got["steps"] == 3 and got["bytes_sent_per_step"] > 0 < got["bytes_per_token"]
    out = tmp_path / "a.txt"
    assert main(["align", text, text, "-o", str(out), "--infer", "em", "--model", "ibm1", "--iterations", "2",
                 "--cluster", client.scheduler.address, "--quiet", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["workers"] == 2 and got["steps"] == 2 * 2  # two passes in each of two directions
    assert got["bytes_sent_per_step"] > 0 and got["bytes_received_per_step"] > 0 and got["bytes_per_token"] > 0
    assert main(["align", text, text, "-o", str(out), "--infer", "cvi", "--workers", "1", "--quiet"]) == 2

"""The minibatch size chosen on a cluster by timing the run's own local step (issue 23)."""

import json

import numpy as np
import pytest

from induce.distributed import cluster
from induce.distributed.cluster import Meter, calibrate


def _model_probe(a: float, b: float, c: float, seen: list):
    """A probe whose steps take ``a + b M`` seconds of overhead and ``c M`` in the longest task (``M`` items)."""

    def probe(items, meter: Meter):
        seen.append(np.asarray(items))
        m = len(items)
        meter.add(a + b * m + c * m, [(None, c * m, "w", 0)], [m])
    return probe


def test_calibrate_solves_the_overhead_model():
    seen = []
    # a = 60 ms fixed, b = 0.01 ms an item, c = 0.05 ms an item: M* = a (1 - t) / (t c - (1 - t) b) at t = 0.2
    got = calibrate(_model_probe(0.060, 1e-5, 5e-5, seen), 10_000_000, 100, epochs=5)  # at most 100,000
    best = 0.060 * 0.8 / (0.2 * 5e-5 - 0.8 * 1e-5)  # 24,000 items
    assert got["calibrated"] and got["batch_size"] == 50_000  # rounded up to 1, 2, 5 x 10^k
    assert got["batch_size"] >= best
    assert got["fixed_overhead_ms"] == pytest.approx(60.0) and got["overhead_ms_per_item"] == pytest.approx(0.01)
    assert got["worker_ms_per_item"] == pytest.approx(0.05)
    share = (0.060 + 1e-5 * 50_000) / (0.060 + 1e-5 * 50_000 + 5e-5 * 50_000)
    assert got["expected_overhead_share"] == pytest.approx(share, abs=1e-3) and share <= 0.2
    assert not got["capped"] and cluster.calibration_warning(got) is None
    # a warm-up step, then 3 of 100 and 3 of 800 items, spread over the corpus and sorted
    assert [len(s) for s in seen] == [100, 100, 100, 100, 800, 800, 800]
    assert all(np.all(np.diff(s) > 0) and s[0] == 0 and s[-1] == 9_999_999 for s in seen)


def test_calibrate_keeps_500_minibatches_in_the_run_and_says_when_that_costs():
    # rows that travel cost more than the work they bring (t c <= (1 - t) b): no size reaches 20%
    got = calibrate(_model_probe(0.060, 5e-5, 1e-5, []), 200_000, 100)
    assert got["batch_size"] == 400 and got["capped"]  # 200,000 items / 500 minibatches
    assert calibrate(_model_probe(0.060, 5e-5, 1e-5, []), 200_000, 100, epochs=3)["batch_size"] == 1_200
    assert got["expected_overhead_share"] > 0.5
    message = cluster.calibration_warning(got)
    assert "small for a cluster" in message and "400" in message


def test_calibrate_times_nothing_without_room_for_a_larger_size():
    seen = []
    for n in (500, 50_000):  # fewer than 8 x 100 items; a cap of 500 minibatches of 100
        assert calibrate(_model_probe(0.06, 0.0, 1e-6, seen), n, 100) == {"batch_size": 100, "calibrated": False}
    assert seen == []


def test_a_small_overhead_keeps_the_default_size():
    got = calibrate(_model_probe(0.0001, 0.0, 1e-3, []), 100_000, 100)
    assert got["batch_size"] == 100 and not got["capped"]


# ------------------------------------------------------------ on a real cluster
pytest.importorskip("distributed")


@pytest.fixture
def no_epoch_cap(monkeypatch):
    """Room for a timed size on a test-sized corpus: the floor of 500 minibatches in a run lifted."""
    monkeypatch.setattr(cluster, "MIN_STEPS", 1)


@pytest.fixture(scope="module")
def sentences():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    return [list(rng.choice(words, size=rng.integers(3, 10))) for _ in range(900)]


def test_hmm_scvi_on_a_cluster_times_its_minibatch_size(client, sentences, no_epoch_cap):
    from induce import HMMTagger

    model = HMMTagger(n_states=4, infer="scvi", n_epochs=1, random_state=1, client=client).fit(sentences)
    cal = model.batch_calibration_
    assert cal["calibrated"] and model.batch_size_ == cal["batch_size"] >= 100
    assert cal["worker_ms_per_item"] > 0 and cal["fixed_overhead_ms"] >= 0
    assert model.n_batches_ == -(-900 // model.batch_size_)  # the run used the size it chose (one epoch)
    # the probes left the model as the run with that size given leaves it
    again = HMMTagger(n_states=4, infer="scvi", n_epochs=1, random_state=1, client=client,
                      batch_size=model.batch_size_).fit(sentences)
    assert again.batch_calibration_ is None and again.batch_size_ == model.batch_size_
    np.testing.assert_array_equal(again.emissions_, model.emissions_)


def test_single_process_and_given_sizes_are_not_timed(sentences):
    from induce import HMMTagger

    model = HMMTagger(n_states=4, infer="scvi", n_epochs=1, random_state=1).fit(sentences)
    assert model.batch_size_ == 100 and model.batch_calibration_ is None and model.n_batches_ == 9


def test_hdp_scvi_and_svi_on_a_cluster_time_their_minibatch_size(client, sentences, no_epoch_cap):
    from induce import HDPHMMTagger

    for infer in ("scvi", "svi"):
        model = HDPHMMTagger(truncation=5, infer=infer, n_iter=1, random_state=2, client=client).fit(sentences)
        assert model.batch_calibration_["calibrated"] and model.batch_size_ >= 100, infer


def test_stream_resume_keeps_the_checkpoints_size(client, sentences, tmp_path, no_epoch_cap, monkeypatch):
    from induce import HMMTagger

    path = tmp_path / "text.txt"
    path.write_text("".join(" ".join(s) + "\n" for s in sentences))
    ckpt = str(tmp_path / "run.ckpt")
    kw = dict(n_states=4, infer="scvi", n_epochs=2, random_state=1, client=client, checkpoint=ckpt)
    first = HMMTagger(**kw).fit_stream(path)
    assert first.batch_calibration_["calibrated"]
    # a resumed run does not time again (it could choose another size): it takes the checkpoint's
    monkeypatch.setattr(cluster, "calibrate", lambda *a, **k: pytest.fail("timed again on resume"))
    resumed = HMMTagger(resume=True, **kw).fit_stream(path)
    assert resumed.batch_size_ == first.batch_size_ and resumed.batch_calibration_ is None


def test_series_scvi_on_a_cluster_times_its_minibatch_size(client, no_epoch_cap):
    from induce.series import HMMSegmenter

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(m, 1.0, size=(50, 1)) for m in np.tile([0.0, 5.0], 100)])
    model = HMMSegmenter(n_states=2, infer="scvi", n_iter=2, tol=0.0, subsequence_length=10, random_state=0,
                         client=client).fit(X)
    assert model.batch_calibration_["calibrated"] and model.batch_size_ >= 10


def test_cli_reports_the_timed_size(client, sentences, tmp_path, capsys, no_epoch_cap):
    from induce.cli import main

    path = tmp_path / "text.txt"
    path.write_text("".join(" ".join(s) + "\n" for s in sentences))
    assert main(["tag", str(path), "--infer", "scvi", "--states", "3", "--quiet", "--json",
                 "--cluster", client.scheduler.address]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["batch_calibration"]["calibrated"] and got["batch_size"] == got["batch_calibration"]["batch_size"] >= 100

"""The minibatch size on a cluster when none is given: the largest that keeps 500 minibatches in the run (issue 23)."""

import json

import numpy as np
import pytest

from induce.distributed import cluster
from induce.distributed.cluster import Meter, planned_batch_size


def test_planned_size_keeps_500_minibatches_in_the_run():
    assert planned_batch_size(4_545_440, 100) == 9_090        # the 100M-token stream, one epoch
    assert planned_batch_size(4_545_440, 100, epochs=3) == 27_272
    assert planned_batch_size(57_340, 100) == 114              # Brown
    assert planned_batch_size(20_000, 100) == 100              # never below the single-process default
    assert planned_batch_size(0, 10) == 10


def _meter(overhead: float, work: float, steps: int = 5) -> Meter:
    meter = Meter()
    for _ in range(steps):
        meter.add(overhead + work, [(None, work, "w", 0)], [1])
    return meter


def test_advice_for_a_planned_size_says_the_corpus_is_small_for_the_cluster():
    meter = _meter(0.080, 0.020)
    given = meter.advice(100)
    assert "--batch-size" in given and "1600" in given            # (1 - 0.2) 80 / (0.2 x 20) x 100
    planned = meter.advice(114, planned=True)
    assert "small for a cluster" in planned and "114" in planned and "--batch-size" not in planned
    assert _meter(0.010, 0.090).advice(114, planned=True) is None  # the overhead was 10% of the steps


# ------------------------------------------------------------ on a real cluster
pytest.importorskip("distributed")


@pytest.fixture
def three_steps(monkeypatch):
    """A test-sized corpus with room for a planned size: 3 minibatches in a run instead of 500."""
    monkeypatch.setattr(cluster, "MIN_STEPS", 3)


@pytest.fixture(scope="module")
def sentences():
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    return [list(rng.choice(words, size=rng.integers(3, 10))) for _ in range(900)]


def test_hmm_scvi_on_a_cluster_plans_its_minibatch_size(client, sentences, three_steps):
    from induce import HMMTagger

    model = HMMTagger(n_states=4, infer="scvi", n_epochs=2, heldout_fraction=0, random_state=1,
                      client=client).fit(sentences)
    assert model.batch_size_ == 600 and model.n_batches_ == 4  # 900 sentences x 2 epochs / 3; two a pass
    again = HMMTagger(n_states=4, infer="scvi", n_epochs=2, heldout_fraction=0, random_state=1, client=client,
                      batch_size=600).fit(sentences)
    np.testing.assert_array_equal(again.emissions_, model.emissions_)
    single = HMMTagger(n_states=4, infer="scvi", n_epochs=2, heldout_fraction=0, random_state=1).fit(sentences)
    assert single.batch_size_ == 100 and single.n_batches_ == 18  # one process keeps the default
    # with the default epoch cap (50) and stop the plan is for PLANNED_EPOCHS = 10 epochs: 900 x 10 / 3
    stopping = HMMTagger(n_states=4, infer="scvi", heldout_fraction=0, max_batches=1, random_state=1,
                         client=client).fit(sentences)
    assert stopping.batch_size_ == 3000


def test_hdp_scvi_and_svi_on_a_cluster_plan_their_minibatch_size(client, sentences, three_steps):
    from induce import HDPHMMTagger

    for infer in ("scvi", "svi"):
        model = HDPHMMTagger(truncation=5, infer=infer, n_iter=1, random_state=2, client=client).fit(sentences)
        assert model.batch_size_ == 300, infer


def test_stream_resume_keeps_the_checkpoints_size(client, sentences, tmp_path, three_steps, monkeypatch):
    from induce import HMMTagger

    path = tmp_path / "text.txt"
    path.write_text("".join(" ".join(s) + "\n" for s in sentences))
    ckpt = str(tmp_path / "run.ckpt")
    kw = dict(n_states=4, infer="scvi", n_epochs=2, heldout_fraction=0, random_state=1, client=client, checkpoint=ckpt)
    first = HMMTagger(max_batches=2, **kw).fit_stream(path)
    assert first.batch_size_ == 600
    monkeypatch.setattr(cluster, "MIN_STEPS", 9)  # a new plan would be 200: the resumed run keeps 600
    resumed = HMMTagger(resume=True, **kw).fit_stream(path)
    assert resumed.batch_size_ == 600 and resumed.n_batches_ == 4  # 2 epochs of 2, the first 2 before


def test_series_svi_on_a_cluster_plans_its_minibatch_size(client, monkeypatch):
    from induce.series import HMMSegmenter

    monkeypatch.setattr(cluster, "MIN_STEPS", 2)
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(m, 1.0, size=(50, 1)) for m in np.tile([0.0, 5.0], 50)])
    model = HMMSegmenter(n_states=2, infer="svi", n_iter=2, tol=0.0, subsequence_length=100, random_state=0,
                         client=client).fit(X)
    assert model.batch_size_ == 25  # 5,000 steps in 50 items, 2 minibatches an epoch


def test_cli_reports_the_planned_size(client, sentences, tmp_path, capsys, three_steps, monkeypatch):
    from induce.cli import main

    path = tmp_path / "text.txt"
    path.write_text("".join(" ".join(s) + "\n" for s in sentences))
    assert main(["tag", str(path), "--infer", "scvi", "--states", "3", "--quiet", "--json", "--epochs", "1",
                 "--heldout", "0", "--cluster", client.scheduler.address]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["batch_size"] == 300 and got["minibatches"] == 3
    # streamed (6 minibatches: the overhead is judged from 5 on), and the overhead warning in the JSON too
    monkeypatch.setattr(cluster, "MIN_STEPS", 6)
    assert main(["tag", str(path), "--infer", "scvi", "--states", "3", "--quiet", "--json", "--stream",
                 "--epochs", "1", "--heldout", "0", "--cluster", client.scheduler.address, "--sync-every", "1"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["batch_size"] == 150 and any("small for a cluster" in w for w in got["warnings"])

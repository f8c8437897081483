"""Time-series svi / scvi on dask workers (``HMMSegmenter(client=...)``, ``induce segment --workers``) against the
single-process fit (docs/experiments/distributed.md, "Time-series svi / scvi on the workers")."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

import induce.distributed as dist  # noqa: E402
from induce.cli import main  # noqa: E402
from induce.distributed.shards import shard_bounds  # noqa: E402
from induce.errors import ConfigError  # noqa: E402
from induce.series import HMMSegmenter, read_series  # noqa: E402

SUNSPOTS = Path(os.environ.get("INDUCE_CORPORA", Path(__file__).parents[3] / "shared" / "corpora")) / "timeseries" \
    / "sunspot_month.csv"


def _sampled_gaussian_hmm(T=1500, seed=0):
    """One 2-D series from a known 3-state Gaussian HMM (sticky transitions, well separated means)."""
    rng = np.random.default_rng(seed)
    A = np.full((3, 3), 0.05) + 0.85 * np.eye(3)
    means = np.array([[0.0, 0.0], [4.0, 4.0], [-4.0, 4.0]])
    z = np.empty(T, dtype=int)
    z[0] = 0
    for t in range(1, T):
        z[t] = rng.choice(3, p=A[z[t - 1]])
    return means[z] + rng.normal(size=(T, 2))


@pytest.fixture(scope="module", params=["sampled", "sunspots"])
def series(request):
    if request.param == "sampled":
        return _sampled_gaussian_hmm()
    if not SUNSPOTS.exists():
        pytest.skip(f"{SUNSPOTS} is absent (set INDUCE_CORPORA)")
    return read_series(str(SUNSPOTS), ["value"], None).sequences[0]


def _fit(series, infer, client=None):
    model = HMMSegmenter(n_states=3, infer=infer, n_iter=3, tol=0.0, batch_size=4, subsequence_length=100,
                         random_state=1, client=client)
    return model.fit(series)


@pytest.mark.parametrize("infer", ["svi", "scvi"])
def test_one_worker_equals_single_process(client, series, infer, monkeypatch):
    ref = _fit(series, infer)
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = _fit(series, infer, client)
    # the same items, minibatches and local steps in the same order: bit for bit
    np.testing.assert_array_equal(got.trans_counts_, ref.trans_counts_)
    np.testing.assert_array_equal(got.stats_, ref.stats_)
    assert got.trace_ == ref.trace_
    assert got.cluster_meter_.steps == 3 * -(-len(series) // 100 // 4)  # 3 epochs of ceil(items / 4) minibatches


@pytest.mark.parametrize("infer", ["svi", "scvi"])
def test_two_workers_within_rounding_of_single_process(client, series, infer, monkeypatch):
    client.wait_for_workers(2)  # (a worker killed by test_faults may still be restarting)
    blocks = []
    monkeypatch.setattr(dist.series, "shard_bounds", lambda *a: blocks.append(shard_bounds(*a)) or blocks[-1])
    ref = _fit(series, infer)
    got = _fit(series, infer, client)
    assert len(blocks[0]) == 3  # two blocks of items, one per worker
    assert sum(got.cluster_meter_.tokens.values()) == 3 * len(series)  # every step once an epoch
    rep = got.cluster_meter_.report(2)  # the transitions and statistics out, the items' statistics back
    assert rep["bytes_sent_per_step"] > 8 * got.trans_counts_.size and rep["bytes_received_per_step"] > 0
    # the same minibatches; only the order of the sums over a minibatch's items differs
    np.testing.assert_allclose(got.trans_counts_, ref.trans_counts_, rtol=1e-9)
    np.testing.assert_allclose(got.stats_, ref.stats_, rtol=1e-9)
    np.testing.assert_allclose(got.trace_, ref.trace_, rtol=1e-9)
    np.testing.assert_array_equal(got.predict(series), ref.predict(series))


@pytest.mark.parametrize("infer", ["vi", "em", "cvi2", "hdp-scvi"])
def test_other_algorithms_with_a_client_are_refused(client, infer):
    with pytest.raises(ConfigError, match="svi, scvi"):
        HMMSegmenter(infer=infer, client=client).fit(_sampled_gaussian_hmm(T=50))


def test_saved_model_has_no_client(client, tmp_path):
    model = _fit(_sampled_gaussian_hmm(T=400), "svi", client)
    model.save(tmp_path / "m.npz")
    loaded = HMMSegmenter.load(tmp_path / "m.npz")
    assert loaded.client is None and loaded.infer == "svi"
    np.testing.assert_array_equal(loaded.stats_, model.stats_)


def test_cli_workers_1(tmp_path, capsys):
    path = tmp_path / "series.csv"
    X = _sampled_gaussian_hmm(T=400)
    path.write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in X))
    argv = ["segment", str(path), "--infer", "svi", "--iterations", "2", "--subseq-length", "50", "--json"]
    assert main(argv) == 0
    ref = json.loads(capsys.readouterr().out)
    assert main(argv + ["--workers", "1"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["workers"] == 1 and "workers" not in ref
    assert got["minibatches"] == 2 and got["steps"] == 400  # 8 items, batches of 10
    assert got["train_loglik_per_step"] == ref["train_loglik_per_step"]
    assert got["state_counts"] == ref["state_counts"]


def test_cli_refuses_workers_for_other_algorithms(tmp_path, capsys):
    path = tmp_path / "series.csv"
    path.write_text("a\n" + "".join(f"{v}\n" for v in _sampled_gaussian_hmm(T=50)[:, 0]))
    assert main(["segment", str(path), "--infer", "vi", "--workers", "1"]) == 2
    assert "svi or scvi" in capsys.readouterr().err

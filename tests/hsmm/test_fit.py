"""HSMM em/vi: monotone objectives, recovery of a sampled Poisson-duration HSMM, save/load."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from induce.errors import ConfigError, ModelFormatError
from induce.series.hsmm import HSMMSegmenter

MEANS = np.array([-4.0, 0.0, 4.0])
LAMS = np.array([4.0, 14.0, 29.0])  # durations 1 + Poisson(lam): means 5, 15, 30
A = np.array([[0.0, 0.7, 0.3], [0.5, 0.0, 0.5], [0.4, 0.6, 0.0]])


def sample_hsmm(T, rng, sd=1.0):
    """One series from the 3-state HSMM above (Gaussian emissions), and its true segments."""
    x, segs, t = [], [], 0
    k = int(rng.integers(3))
    while t < T:
        d = 1 + int(rng.poisson(LAMS[k]))
        d = min(d, T - t)
        x.append(rng.normal(MEANS[k], sd, size=d))
        segs.append((t, t + d, k))
        t += d
        k = int(rng.choice(3, p=A[k]))
    return np.concatenate(x)[:, None], segs


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return [sample_hsmm(600, rng, sd=1.0) for _ in range(4)]


@pytest.mark.parametrize("infer", ["em", "vi"])
def test_objective_never_decreases(data, infer):
    model = HSMMSegmenter(3, durations="poisson", max_duration=60, infer=infer, n_iter=15, tol=0).fit(
        [x for x, _ in data])
    trace = np.array(model.trace_)
    assert np.all(np.diff(trace) >= -1e-7 * np.abs(trace[1:])), trace


@pytest.mark.parametrize("infer", ["em", "vi"])
def test_recovers_poisson_durations(data, infer):
    model = HSMMSegmenter(3, durations="poisson", max_duration=60, infer=infer, n_iter=50).fit(
        [x for x, _ in data])
    means = model.family_.point_estimate(model.stats_)["means"][:, 0]
    rows, cols = linear_sum_assignment(np.abs(means[:, None] - MEANS[None, :]))
    order = rows[np.argsort(cols)]
    np.testing.assert_allclose(means[order], MEANS, atol=0.5)
    np.testing.assert_allclose(model.mean_durations()[order], 1 + LAMS, rtol=0.15)
    # the Viterbi segmentation labels most steps right
    x, segs = data[0]
    truth = np.concatenate([[k] * (e - s) for s, e, k in segs])
    path = np.argsort(order)[model.predict(x)[0]]
    assert np.mean(path == truth) > 0.9


def test_geometric_and_negbin_run_with_poisson_emissions():
    rng = np.random.default_rng(1)
    x, _ = sample_hsmm(300, rng)
    counts = rng.poisson(np.where(x[:, 0] > 2, 9.0, np.where(x[:, 0] < -2, 1.0, 4.0)))[:, None].astype(float)
    for durations in ("geometric", "negbin"):
        model = HSMMSegmenter(3, emission="poisson", durations=durations, max_duration=40, n_iter=10, tol=0).fit(counts)
        assert np.isfinite(model.score(counts))
        proba = model.predict_proba(counts)[0]
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-8)


def test_save_load_round_trip(tmp_path, data):
    x = data[0][0]
    model = HSMMSegmenter(3, durations="negbin", r=3.0, max_duration=50, infer="vi", n_iter=5, tol=0).fit(x)
    path = tmp_path / "m.npz"
    model.save(path)
    again = HSMMSegmenter.load(path)
    assert again.score(x) == pytest.approx(model.score(x))
    assert again.segments(x) == model.segments(x)
    assert again.durations_.r == 3.0
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelFormatError):
        HSMMSegmenter.load(bad)


def test_bad_settings():
    x = np.zeros((10, 1))
    with pytest.raises(ConfigError):
        HSMMSegmenter(1).fit(x)
    with pytest.raises(ConfigError):
        HSMMSegmenter(2, infer="svi").fit(x)
    with pytest.raises(ConfigError):
        HSMMSegmenter(2, durations="weibull").fit(x)

"""NB-duration HSMM fits: the embedding fit equals the explicit-duration fit (fixed r), the exact learned-r
ELBO never decreases, and the sampled update of q(r, p) recovers r and p of sampled data."""

import numpy as np
import pytest

from induce.durations import NegBin
from induce.emissions import get_family
from induce.errors import ConfigError, ModelFormatError
from induce.infer.hsmm_embed import NBEmbedFit
from induce.infer.series_hsmm import HSMMFit
from induce.series.hsmm import HSMMSegmenter

R = np.array([1, 2, 4])
P = np.array([0.8, 0.7, 0.6])  # mean durations 1 + r p / (1 - p): 5, 5.7, 7
MEANS = np.array([-4.0, 0.0, 4.0])
A = np.array([[0.0, 0.6, 0.4], [0.5, 0.0, 0.5], [0.3, 0.7, 0.0]])


def sample_nb_hsmm(T, rng):
    """One series of the 3-state HSMM with NB(R, P) durations (paper 002 eq. 14) and Gaussian emissions."""
    x, t, k = [], 0, int(rng.integers(3))
    while t < T:
        d = min(1 + int(rng.negative_binomial(R[k], 1 - P[k])), T - t)
        x.append(rng.normal(MEANS[k], 1.0, size=d))
        t += d
        k = int(rng.choice(3, p=A[k]))
    return np.concatenate(x)[:, None]


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(1)
    return [sample_nb_hsmm(300, rng) for _ in range(2)]


@pytest.mark.parametrize("infer", ["em", "vi"])
def test_embedding_fit_equals_explicit_fit(small, infer):
    """Fixed r: every pass of the embedding fit has the explicit fit's objective (D with negligible tail)."""
    family = get_family("gaussian").default_prior(np.vstack(small))
    traces = []
    for cls in (NBEmbedFit, HSMMFit):
        fit = cls(family, NegBin(300, r=3.0), 3, infer=infer, n_iter=4, tol=0)
        traces.append(fit.run(small).trace)
    np.testing.assert_allclose(traces[0], traces[1], rtol=1e-9)


def test_exact_learned_r_elbo_never_decreases(small):
    model = HSMMSegmenter(3, durations="negbin", max_duration=60, max_r=6, infer="vi", n_iter=15, tol=0).fit(small)
    assert np.all(np.diff(model.trace_) >= -1e-8 * np.abs(model.trace_[1:]))
    assert model.dur_stats_.shape == (3, 8)


def test_sampled_update_recovers_r_and_p():
    rng = np.random.default_rng(0)
    data = [sample_nb_hsmm(3000, rng) for _ in range(4)]
    model = HSMMSegmenter(3, durations="negbin", max_r=10, negbin_samples=2, infer="vi", n_iter=25, tol=0,
                          random_state=0).fit(data)
    order = np.argsort(model.family_.point_estimate(model.stats_)["means"][:, 0])
    est = model.duration_params()
    r, p = est["r"][order], est["p"][order]
    assert np.all(np.abs(r - R) <= 1), r
    np.testing.assert_allclose(p, P, atol=0.07)
    np.testing.assert_allclose(model.mean_durations()[order], 1 + R * P / (1 - P), rtol=0.1)


def test_fixed_r_segmenter_needs_no_max_duration_and_round_trips(tmp_path, small):
    """A fixed-r model decodes on the embedding: segments longer than max_duration are allowed."""
    x = np.concatenate([np.zeros(150), np.full(150, 5.0)])[:, None] + np.random.default_rng(2).normal(0, .5, (300, 1))
    model = HSMMSegmenter(2, durations="negbin", r=2.0, max_duration=10, infer="vi", n_iter=10, tol=0).fit(x)
    segs = model.segments(x)[0]
    assert len(segs) == 2 and abs(segs[1][0] - 150) <= 2
    np.testing.assert_allclose(model.predict_proba(x).sum(axis=1), 1.0, atol=1e-8)
    learned = HSMMSegmenter(3, durations="negbin", negbin_samples=1, max_r=5, infer="vi", n_iter=3, tol=0).fit(small)
    for m in (model, learned):
        path = tmp_path / "m.npz"
        m.save(path)
        again = HSMMSegmenter.load(path)
        assert again.score(small[0]) == pytest.approx(m.score(small[0]))
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["dur_stats"] = arrays["dur_stats"][:, :4]
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)
    with pytest.raises(ModelFormatError, match="dur_stats"):
        HSMMSegmenter.load(path)


def test_bad_negbin_settings(small):
    with pytest.raises(ConfigError):
        HSMMSegmenter(3, durations="negbin", negbin_samples=2, infer="em").fit(small)
    with pytest.raises(ConfigError):
        HSMMSegmenter(3, durations="negbin", negbin_samples=-1).fit(small)
    with pytest.raises(ConfigError):
        HSMMSegmenter(3, durations="negbin", max_r=0).fit(small)


@pytest.mark.parametrize("infer", ["svi", "cvi2", "scvi"])
@pytest.mark.parametrize("r", [None, 3.0])
def test_negbin_under_stochastic_and_collapsed_fits(small, infer, r):
    """Learned r (exact update, statistics blended or swept) and fixed r (explicit messages) under svi/cvi2/scvi;
    a fixed-r model still decodes on the embedding."""
    model = HSMMSegmenter(3, durations="negbin", r=r, max_duration=60, max_r=6, infer=infer, n_iter=3, tol=0,
                          subsequence_length=150).fit(small)
    assert np.isfinite(model.score(small))
    np.testing.assert_allclose(model.predict_proba(small[0]).sum(axis=1), 1.0, atol=1e-8)
    assert model.dur_stats_.shape == (3, 8 if r is None else 2)

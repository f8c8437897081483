"""The sampled (S > 0) and exact (S = 0) updates of q(r, p) under svi (paper 002 sections 3.2 and 5.2):
the minibatch's sampled statistics replace the expected ones in the natural-gradient step."""

import numpy as np
import pytest

from induce.durations import NegBin, NegBinLearnedR
from induce.emissions import get_family
from induce.errors import ConfigError
from induce.infer.hsmm_embed import NBEmbedFit
from induce.infer.series_hsmm import HSMMFit
from induce.series.hsmm import HSMMSegmenter

from .test_embed_fit import P, R, sample_nb_hsmm


@pytest.fixture(scope="module")
def nb_data():
    rng = np.random.default_rng(0)
    return [sample_nb_hsmm(2000, rng) for _ in range(4)], [sample_nb_hsmm(2000, rng)]


def nb_model(infer, samples, seed=0, **kw):
    return HSMMSegmenter(3, durations="negbin", max_r=10, max_duration=60, negbin_samples=samples, infer=infer,
                         tol=0, random_state=seed, **kw)


SVI = dict(n_iter=5, batch_size=5, subsequence_length=400)  # 20 pieces, 4 minibatches an epoch, 20 updates


def test_sampled_svi_matches_batch_vi_and_recovers_r(nb_data):
    """S = 5: held-out log predictive per step within 0.01 nats of batch vi's (same S); r within +-1, p
    within 0.1 of the generating NB(R, P); mean durations within 10%."""
    train, test = nb_data
    vi = nb_model("vi", 5, n_iter=15).fit(train)
    svi = nb_model("svi", 5, **SVI).fit(train)
    assert abs(svi.score(test) - vi.score(test)) < 0.01
    order = np.argsort(svi.family_.point_estimate(svi.stats_)["means"][:, 0])
    est = svi.duration_params()
    assert np.all(np.abs(est["r"][order] - R) <= 1), est["r"][order]
    np.testing.assert_allclose(est["p"][order], P, atol=0.1)
    np.testing.assert_allclose(svi.mean_durations()[order], 1 + R * P / (1 - P), rtol=0.1)
    assert svi.dur_stats_.shape == (3, 12)


def test_sampled_svi_is_deterministic_per_seed(nb_data):
    train, _ = nb_data
    fits = [nb_model("svi", 2, seed=s, n_iter=1, batch_size=5, subsequence_length=400).fit(train) for s in (3, 3, 4)]
    np.testing.assert_array_equal(fits[0].dur_stats_, fits[1].dur_stats_)
    np.testing.assert_array_equal(fits[0].stats_, fits[1].stats_)
    np.testing.assert_array_equal(fits[0].trace_, fits[1].trace_)
    assert not np.array_equal(fits[0].dur_stats_, fits[2].dur_stats_)


def test_exact_update_under_svi_matches_batch_vi(nb_data):
    """S = 0: explicit-duration messages under ``D~ = exp E_q(r,p) log p(d)``, minibatch statistics blended."""
    train, test = nb_data
    vi = nb_model("vi", 0, n_iter=15).fit(train)
    svi = nb_model("svi", 0, **SVI).fit(train)
    assert abs(svi.score(test) - vi.score(test)) < 0.01
    order = np.argsort(svi.family_.point_estimate(svi.stats_)["means"][:, 0])
    assert np.all(np.abs(svi.duration_params()["r"][order] - R) <= 1)


@pytest.mark.parametrize("cls, durations", [(NBEmbedFit, NegBin(300, r=3.0)), (HSMMFit, NegBinLearnedR(60, max_r=6))])
def test_one_full_minibatch_at_rho_one_is_a_batch_pass(nb_data, cls, durations):
    """svi with one minibatch of every item, ``rho = 1`` (tau = 0) and ``s = 1`` is one batch vi pass: the
    natural-gradient step of the embedding's (fixed r) and the exact learned-r duration statistics."""
    items = [x[:150] for x in nb_data[0]] * 5  # 20 items: svi keeps whole sequences
    family = get_family("gaussian").default_prior(np.vstack(items))
    fits = [cls(family, durations, 3, infer=infer, n_iter=1, tol=0, tau=0.0, batch_size=len(items),
                rng=np.random.default_rng(0)).run(items) for infer in ("vi", "svi")]
    for name in ("trans", "stats", "dur_stats"):
        np.testing.assert_allclose(getattr(fits[1], name), getattr(fits[0], name), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("infer", ["em", "cvi2", "scvi"])
def test_sampled_update_needs_vi_or_svi(nb_data, infer):
    with pytest.raises(ConfigError, match="sampled update"):
        nb_model(infer, 2, n_iter=1).fit(nb_data[0][:1])

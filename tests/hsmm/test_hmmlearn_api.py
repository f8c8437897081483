"""hmmlearn's ``decode``, ``aic`` and ``bic`` on the HSMM segmenters (issue 39): the Viterbi path's joint
log-probability is the largest ``log p(x, z)`` over every state path of a short series, and those joint
probabilities sum to ``p(x)`` (brute-force enumeration); AIC / BIC by hand from the parameter count."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from induce.errors import ConfigError
from induce.series import HDPHSMMSegmenter, HSMMSegmenter


@pytest.fixture(scope="module")
def series():
    rng = np.random.default_rng(0)
    return np.concatenate([rng.normal(0, 1, 30), rng.normal(5, 1, 30), rng.normal(0, 1, 30)])[:, None]


def _every_path(model, x, K):
    paths = [np.array(z) for z in itertools.product(range(K), repeat=len(x))]
    return paths, np.array(model._path_log_probs([x] * len(paths), paths))


@pytest.mark.parametrize("options", [dict(max_duration=4), dict(r=2)], ids=["explicit-D4", "embedding-r2"])
def test_decode_against_every_path(series, options):
    model = HSMMSegmenter(n_states=3, n_iter=5, random_state=0, **options).fit(series)
    x = series[27:34]  # 7 steps around the first change: 3^7 state paths
    paths, joint = _every_path(model, x, 3)
    assert logsumexp(joint) == pytest.approx(model.log_likelihood(x), abs=1e-9)
    logprob, path = model.decode(x)
    assert logprob == pytest.approx(model._path_log_probs([x], [path])[0], abs=1e-12)
    if "max_duration" in options:  # the explicit messages' Viterbi: the most probable state path
        assert logprob == pytest.approx(joint.max(), abs=1e-9)
        assert np.isneginf(joint[0])  # one segment of 7 steps > D = 4: impossible
    assert model.decode(x, algorithm="map")[0] == pytest.approx(model.log_likelihood(x))
    with pytest.raises(ConfigError, match="viterbi"):
        model.decode(x, algorithm="beam")


def test_aic_bic_by_hand_and_lengths(series):
    model = HSMMSegmenter(n_states=3, n_iter=5, random_state=0).fit(series)
    # start 2 + transitions 3 x 1 (no self-transitions) + Gaussian means 3 and variances 3 + negbin r, p: 6
    assert model._n_parameters() == 2 + 3 + 6 + 6
    ll = model.log_likelihood(series)
    assert model.aic(series) == pytest.approx(-2 * ll + 2 * 17)
    assert model.bic(series) == pytest.approx(-2 * ll + 17 * np.log(90))
    fixed = HSMMSegmenter(n_states=3, n_iter=5, random_state=0, durations="poisson").fit(series)
    assert fixed._n_parameters() == 2 + 3 + 6 + 3
    parts = [series[:40], series[40:]]
    assert model.bic(series, lengths=[40, 50]) == pytest.approx(model.bic(parts))
    logprob, path = model.decode(series, lengths=[40, 50])
    assert path.shape == (90,)
    assert logprob == pytest.approx(sum(model.decode(p)[0] for p in parts))


def test_hdp_hsmm_decodes_and_counts_its_truncation(series):
    model = HDPHSMMSegmenter(n_states=4, n_iter=3, random_state=0, merge=False).fit(series)
    logprob, path = model.decode(series)
    assert logprob == pytest.approx(model._path_log_probs([series], [path])[0]) and logprob <= model.log_likelihood(series)
    assert model._n_parameters() == 3 + 4 * 2 + 8 + 8
    assert model.aic(series) == pytest.approx(-2 * model.log_likelihood(series) + 2 * model._n_parameters())

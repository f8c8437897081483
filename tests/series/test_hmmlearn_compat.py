"""hmmlearn's own GaussianHMM tutorial code with :class:`HMMSegmenter` swapped in for the learner (issue 39):
``lengths=``, ``predict`` over stacked rows, ``startprob_`` / ``transmat_`` (K x K) / ``means_`` / ``covars_``,
``sample``, ``decode``, ``score_samples``, ``aic`` / ``bic``; under ``infer="em"`` (point parameters) the
likelihood, AIC and BIC equal hmmlearn's for the same parameters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

hmm = pytest.importorskip("hmmlearn.hmm")

from induce.errors import ConfigError  # noqa: E402
from induce.series import HMMSegmenter  # noqa: E402
from induce.series.hsmm import HSMMSegmenter  # noqa: E402


def _tutorial_sample(n=100):
    """hmmlearn tutorial, "Building HMM and generating samples" (verbatim; the generator stays hmmlearn's)."""
    np.random.seed(42)
    model = hmm.GaussianHMM(n_components=3, covariance_type="full")
    model.startprob_ = np.array([0.6, 0.3, 0.1])
    model.transmat_ = np.array([[0.7, 0.2, 0.1],
                                [0.3, 0.5, 0.2],
                                [0.3, 0.3, 0.4]])
    model.means_ = np.array([[0.0, 0.0], [3.0, -3.0], [5.0, 10.0]])
    model.covars_ = np.tile(np.identity(2), (3, 1, 1))
    return model.sample(n)


def _relabelled_accuracy(Z, Z2, K=3) -> float:
    return max(np.mean(np.asarray(perm)[Z2] == Z) for perm in itertools.permutations(range(K)))


def test_hmmlearn_tutorial_runs_with_hmmsegmenter_swapped_in():
    X, Z = _tutorial_sample()
    # "Training HMM parameters and inferring the hidden states":
    # remodel = hmm.GaussianHMM(n_components=3, covariance_type="full", n_iter=100)
    remodel = HMMSegmenter(n_states=3, n_iter=100)
    remodel.fit(X)
    Z2 = remodel.predict(X)
    assert Z2.shape == (100,) and _relabelled_accuracy(Z, Z2) > 0.9
    assert remodel.startprob_.shape == (3,) and remodel.transmat_.shape == (3, 3)
    np.testing.assert_allclose(remodel.transmat_.sum(axis=1), 1.0)
    assert remodel.means_.shape == (3, 2) and remodel.covars_.shape == (3, 2, 2)
    found = sorted(map(tuple, np.round(remodel.means_)))
    assert found == [(0.0, 0.0), (3.0, -3.0), (5.0, 10.0)]
    logprob, states = remodel.decode(X)
    assert np.array_equal(states, Z2) and logprob < remodel.log_likelihood(X)  # one path < all paths
    total, posteriors = remodel.score_samples(X)
    assert total == pytest.approx(remodel.log_likelihood(X)) and posteriors.shape == (100, 3)
    assert remodel.score(X) == pytest.approx(total / 100)  # induce's score: per step
    X3, Z3 = remodel.sample(50)
    assert X3.shape == (50, 2) and Z3.shape == (50,) and set(Z3) <= {0, 1, 2}

    # "Multiple sequences"
    X1 = [[0.5], [1.0], [-1.0], [0.42], [0.24]]
    X2 = [[2.4], [4.2], [0.5], [-0.24]]
    X = np.concatenate([X1, X2])
    lengths = [len(X1), len(X2)]
    model = HMMSegmenter(n_states=3).fit(X, lengths)
    assert model.predict(X, lengths).shape == (9,) and model.predict_proba(X, lengths).shape == (9, 3)
    assert model.log_likelihood(X, lengths) == pytest.approx(model.log_likelihood([np.array(X1), np.array(X2)]))


def test_lengths_are_used_not_ignored():
    """Two sequences stacked: with lengths the boundary is not a transition (the old fit ignored lengths)."""
    X = np.r_[np.zeros(20), np.full(20, 5.0)][:, None] + np.random.default_rng(0).normal(0, 0.1, (40, 1))
    stacked = HMMSegmenter(n_states=2, n_iter=20).fit(X, lengths=[20, 20])
    as_list = HMMSegmenter(n_states=2, n_iter=20).fit([X[:20], X[20:]])
    one = HMMSegmenter(n_states=2, n_iter=20).fit(X)
    np.testing.assert_allclose(stacked.trans_counts_, as_list.trans_counts_)
    assert not np.allclose(stacked.trans_counts_, one.trans_counts_)
    assert stacked.trans_counts_[0].sum() == pytest.approx(2.0)  # two sequence starts
    positional = HMMSegmenter(n_states=2, n_iter=20).fit(X, [20, 20])  # hmmlearn passes lengths positionally
    np.testing.assert_allclose(positional.trans_counts_, stacked.trans_counts_)
    for bad in ([20, 21], [0, 40], [20.5, 19.5]):
        with pytest.raises(ConfigError, match="lengths"):
            HMMSegmenter(n_states=2).fit(X, lengths=bad)


def test_em_point_model_agrees_with_hmmlearn_on_likelihood_aic_bic():
    X, _ = _tutorial_sample(200)
    ours = HMMSegmenter(n_states=3, infer="em", n_iter=30).fit(X)
    theirs = hmm.GaussianHMM(n_components=3, covariance_type="full", init_params="", params="")
    theirs.startprob_, theirs.transmat_ = ours.startprob_, ours.transmat_
    theirs.means_, theirs.covars_ = ours.means_, ours.covars_
    assert ours.log_likelihood(X) == pytest.approx(theirs.score(X), rel=1e-9)
    assert ours.aic(X) == pytest.approx(theirs.aic(X), rel=1e-9)
    assert ours.bic(X) == pytest.approx(theirs.bic(X), rel=1e-9)
    logprob, path = ours.decode(X)
    their_logprob, their_path = theirs.decode(X)
    assert logprob == pytest.approx(their_logprob, rel=1e-9) and np.array_equal(path, their_path)


def test_hsmm_takes_lengths_and_returns_stacked_rows():
    X = np.r_[np.zeros(30), np.full(30, 5.0)][:, None] + np.random.default_rng(2).normal(0, 0.2, (60, 1))
    model = HSMMSegmenter(2, max_duration=30, n_iter=5).fit(X, lengths=[30, 30])
    assert model.predict(X, lengths=[30, 30]).shape == (60,)
    assert len(model.predict([X[:30], X[30:]])) == 2
    assert model.score(X, lengths=[30, 30]) == pytest.approx(model.log_likelihood([X[:30], X[30:]]) / 60)

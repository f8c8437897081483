"""scvi, svi and beam: they fit, recover the known HMM's states, and are deterministic given the seed."""

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from induce import HDPHMMTagger
from induce.eval.tagging import many_to_one
from induce.infer.hdp_svi import stick_gradient, truncated_step
from induce.taggers.synthetic import sample_zhang


@pytest.fixture(scope="module")
def corpus():
    return sample_zhang("neg", n_sequences=50, length=60, seed=5)


@pytest.mark.parametrize("infer,n_iter", [("scvi", 15), ("svi", 15), ("beam", 60)])
def test_recovers_states(corpus, infer, n_iter):
    kw = dict(truncation=8, infer=infer, n_iter=n_iter, gamma=1, sigma=1, beta=1, batch_size=10, random_state=2)
    model = HDPHMMTagger(**kw).fit(corpus)
    assert many_to_one(model.labels_, corpus.tags["state"]) > 0.95
    assert 4 <= model.effective_states_ <= model.n_states_
    assert all("effective_states" in r for r in model.trace_)
    again = HDPHMMTagger(**kw).fit(corpus)
    np.testing.assert_array_equal(model.labels_, again.labels_)
    np.testing.assert_allclose(model.transition_counts_, again.transition_counts_)


def test_beam_counts_are_hard_counts(corpus):
    model = HDPHMMTagger(truncation=6, infer="beam", n_iter=10, random_state=0).fit(corpus)
    assert model.transition_counts_.sum() == corpus.n_tokens
    np.testing.assert_array_equal(np.bincount(model.labels_, minlength=model.n_states_),
                                  model.emission_counts_.sum(axis=0))


def test_svi_stick_gradient_matches_finite_differences():
    K = 4
    rng = np.random.default_rng(0)
    b = rng.dirichlet(np.ones(K + 1))
    lam = rng.exponential(3, (K + 1, K + 1)) + 0.5
    sigma, gamma = 2.0, 1.5
    elog = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))

    def objective(head):
        full = np.append(head, 1 - head.sum())
        c = 1 - np.concatenate([[0], np.cumsum(full[:K])])
        a = sigma * full
        return (np.sum((gamma - 1) * np.log(c[1:]) - gamma * np.log(c[:K]))
                + np.sum(gammaln(sigma) - gammaln(a).sum() + ((a - 1) * elog).sum(axis=1)))

    eye = np.eye(K) * 1e-6
    num = [(objective(b[:K] + eye[k]) - objective(b[:K] - eye[k])) / 2e-6 for k in range(K)]
    np.testing.assert_allclose(stick_gradient(b, lam, sigma, gamma), num, rtol=1e-5)
    stepped = truncated_step(b, stick_gradient(b, lam, sigma, gamma), 10.0)
    assert np.all(stepped > 0) and stepped.sum() == pytest.approx(1.0)

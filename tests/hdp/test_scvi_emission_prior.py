"""The asymmetric emission prior Dir(beta tau) under stochastic CVI (thesis 5.3 and 5.5.3)."""

import numpy as np
import pytest

from induce.corpus.corpus import Corpus
from induce.corpus.sentence import Sentence
from induce.errors import ConfigError
from induce.infer import hdp
from induce.infer.hdp_passes import emission_log_q0, hdp_minibatch_pass
from induce.taggers import HDPHMMTagger


def _corpus(seed=0, n=40, length=8, W=12):
    rng = np.random.default_rng(seed)
    sents = [Sentence([f"w{min(rng.zipf(1.6), W)}" for _ in range(length)]) for _ in range(n)]
    return Corpus.from_sentences(sents)


def _minibatch_inputs(K=3, W=5, seed=0):
    rng = np.random.default_rng(seed)
    # sentence 0: every word once; the minibatch holds it twice, so every word has two tokens with equal q(z_t)
    tokens = np.array([0, 1, 2, 3, 4, 2, 0], dtype=np.int32)
    offsets = np.array([0, 5, 7], dtype=np.int64)
    N_trans, N_emit = rng.exponential(2.0, (K + 1, K)), rng.exponential(2.0, (W, K))
    prior, emit_prior = rng.uniform(0.2, 1.0, K), rng.uniform(0.1, 0.5, W)
    return tokens, offsets, N_trans, N_emit, prior, emit_prior


def test_minibatch_emission_q0_is_the_sum_over_tokens():
    K, W = 3, 5
    tokens, offsets, N_trans, N_emit, prior, emit_prior = _minibatch_inputs(K, W)
    items = np.array([0, 0], dtype=np.int64)
    outs = [[np.zeros((K + 1, K)), np.zeros((W, K)), np.zeros((K + 1, K)), np.zeros(K + 1)] for _ in range(2)]
    args = (N_trans, N_emit, tokens, offsets, items, prior, 2.0, emit_prior, float(emit_prior.sum()), 0, 1, 7)
    logq0_emit = np.full((W, K), 5.0)
    no_memory = (np.zeros((0, K + 1, K)), np.zeros((0, K)))
    ll_a = hdp_minibatch_pass(*args, *outs[0], *no_memory, np.zeros((0, 0)))
    ll_b = hdp_minibatch_pass(*args, *outs[1], *no_memory, logq0_emit)
    assert ll_a == ll_b
    for x, y in zip(*outs):
        np.testing.assert_array_equal(x, y)
    # two copies of each token with the same marginal q: log q(C_wk = 0) = 2 log(1 - q), E[C_wk] = 2 q
    q = outs[1][1] / 2
    np.testing.assert_allclose(logq0_emit, 2 * np.log1p(-q), rtol=1e-12)
    # and it is emission_log_q0 of the per-token marginals
    marg = q[tokens[:5]]
    ref = np.zeros((W, K))
    emission_log_q0(np.concatenate([tokens[:5], tokens[:5]]), np.vstack([marg, marg]), ref)
    np.testing.assert_allclose(logq0_emit, ref, rtol=1e-12)


def test_stochastic_step_with_unit_step_is_the_batch_update():
    rng = np.random.default_rng(1)
    W, K = 7, 3
    emit = rng.exponential(3.0, (W, K))
    logq0 = -rng.uniform(0.1, 4.0, (W, K))
    for learned in (False, True):
        a = hdp.EmissionPrior(W, 0.2 * W, 1.0, learned)
        b = hdp.EmissionPrior(W, 0.2 * W, 1.0, learned)
        assert a.update(emit, logq0) == pytest.approx(b.stochastic_step(emit, logq0, 1.0), rel=1e-12)
        assert a.concentration == pytest.approx(b.concentration, rel=1e-12)
        assert a.new_mass == pytest.approx(b.new_mass, rel=1e-12)
        np.testing.assert_allclose(a.tau, b.tau, rtol=1e-12)
    # a second, partial step blends the Dirichlet parameters of q(tau) and gamma_e
    weights, mass = b.word_weights.copy(), b.new_mass
    emit2 = rng.exponential(3.0, (W, K))
    c = hdp.EmissionPrior(W, 0.2 * W, 1.0, True)
    c.concentration, c.tau, c.new_mass = b.concentration, b.tau.copy(), b.new_mass
    tables = hdp.expected_tables(emit2.T, hdp.q_positive(logq0).T, c.pseudo_counts()).sum(axis=0)
    target = hdp.new_word_concentration(W, tables.sum(), mass)
    b.stochastic_step(emit2, logq0, 0.25)
    np.testing.assert_allclose(b.word_weights, 0.75 * weights + 0.25 * tables, rtol=1e-12)
    assert b.new_mass == pytest.approx(0.75 * mass + 0.25 * target, rel=1e-12)
    np.testing.assert_allclose(b.tau, hdp.tau_point_estimate(b.word_weights, b.new_mass), rtol=1e-12)


def test_scvi_fixed_uniform_tau_is_the_symmetric_prior():
    c = _corpus()
    kw = dict(truncation=4, infer="scvi", n_iter=3, gamma=2.0, sigma=3.0, beta=0.3, fix_hyper=True, batch_size=10,
              random_state=1, merge_moves=False)  # the instant merges are for Dir(beta) only
    a = HDPHMMTagger(emission_prior="symmetric", **kw).fit(c)
    b = HDPHMMTagger(emission_prior="asymmetric", emission_concentration="symmetric", **kw).fit(c)
    np.testing.assert_allclose(a.emissions_, b.emissions_, rtol=1e-12)
    np.testing.assert_allclose(a.transitions_, b.transitions_, rtol=1e-12)


@pytest.mark.parametrize("new_word_mass", [1.0, "learned"])
def test_scvi_learns_the_emission_prior(tmp_path, new_word_mass):
    c = _corpus(seed=3)
    kw = dict(truncation=4, infer="scvi", n_iter=4, gamma=2.0, sigma=3.0, beta=0.3, emission_prior="asymmetric",
              new_word_mass=new_word_mass, hyper_burn_in=1, batch_size=10, random_state=5)
    a = HDPHMMTagger(**kw).fit(c)
    b = HDPHMMTagger(**kw).fit(c)
    np.testing.assert_array_equal(a.emissions_, b.emissions_)
    assert a.emission_concentration_ == b.emission_concentration_
    W = len(a.vocab_)
    # burn-in: the first epoch keeps every hyperparameter; afterwards beta, tau (and gamma_e) move
    assert "beta" not in a.trace_[0] and a.trace_[0]["sigma"] == 3.0
    assert a.trace_[-1]["beta"] == a.emission_concentration_ != pytest.approx(0.3 * W)
    assert a.emission_base_.sum() == pytest.approx(1.0)
    assert np.ptp(a.emission_base_[:-1]) > 1e-3
    if new_word_mass == "learned":
        assert a.emission_new_mass_ != 1.0 and a.emission_new_mass_ > 0
    else:
        assert a.emission_new_mass_ == 1.0
    # every row a distribution over the seen words and the unseen entry (sub-normalised transitions: truncation)
    np.testing.assert_allclose(a.emissions_.sum(axis=0), 1.0, rtol=1e-10)
    path = tmp_path / "m.npz"
    a.save(path)
    m = HDPHMMTagger.load(path)
    assert m.score(c) == pytest.approx(a.score(c))


def test_asymmetric_prior_rejects_svi_and_beam():
    for infer in ("svi", "beam"):
        with pytest.raises(ConfigError, match="scvi"):
            HDPHMMTagger(infer=infer, emission_prior="asymmetric").fit(_corpus())

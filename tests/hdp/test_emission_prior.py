"""The asymmetric emission prior Dir(beta tau) of the HDP-HMM (thesis 5.5.3)."""

import itertools

import numpy as np
import pytest
from scipy.special import digamma

from induce.cli import main
from induce.corpus.corpus import Corpus
from induce.corpus.sentence import Sentence
from induce.errors import ConfigError
from induce.infer import hdp
from induce.infer.hdp_passes import emission_log_q0
from induce.taggers import HDPHMMTagger
from induce.taggers.hdp_hmm import ASYMMETRIC_BURN_IN, DEFAULT_EMISSION_CONCENTRATION
from induce.taggers.synthetic import sample_zhang


def _corpus(seed=0, n=30, length=8, W=6):
    rng = np.random.default_rng(seed)
    sents = [Sentence([f"w{rng.integers(W)}" for _ in range(length)]) for _ in range(n)]
    return Corpus.from_sentences(sents)


def test_fixed_uniform_tau_is_the_symmetric_prior():
    """With tau uniform and not learned, Dir(W beta * 1/W) is Dir(beta): identical fits."""
    c = _corpus()
    kw = dict(truncation=4, n_iter=5, gamma=2.0, sigma=3.0, beta=0.3, fix_hyper=True, random_state=1)
    a = HDPHMMTagger(emission_prior="symmetric", **kw).fit(c)
    b = HDPHMMTagger(emission_prior="asymmetric", emission_concentration="symmetric", **kw).fit(c)
    np.testing.assert_allclose(a.emissions_, b.emissions_, rtol=1e-12)
    np.testing.assert_allclose(a.transitions_, b.transitions_, rtol=1e-12)
    W = len(a.vocab_)
    assert b.emission_concentration_ == pytest.approx(0.3 * W)
    np.testing.assert_allclose(b.emission_base_, 1.0 / W)


def test_learned_emission_prior_is_deterministic_and_saves(tmp_path):
    c = _corpus(seed=3)
    kw = dict(truncation=4, n_iter=6, gamma=2.0, sigma=3.0, beta=0.3, emission_prior="asymmetric", random_state=5)
    a = HDPHMMTagger(**kw).fit(c)
    b = HDPHMMTagger(**kw).fit(c)
    np.testing.assert_array_equal(a.emissions_, b.emissions_)
    assert a.emission_concentration_ == b.emission_concentration_
    # tau is learned: a distribution over the seen words plus the unseen ones, no longer uniform
    assert a.emission_base_.sum() == pytest.approx(1.0)
    assert np.ptp(a.emission_base_[:-1]) > 1e-3
    assert a.trace_[-1]["beta"] == a.emission_concentration_
    path = tmp_path / "m.npz"
    a.save(path)
    m = HDPHMMTagger.load(path)
    np.testing.assert_array_equal(m.emission_base_, a.emission_base_)
    assert m.score(c) == pytest.approx(a.score(c))


def test_burn_in_holds_the_hyperparameters():
    c = _corpus(seed=4)
    m = HDPHMMTagger(truncation=4, n_iter=5, gamma=2.0, sigma=3.0, beta=0.3, emission_prior="asymmetric",
                     hyper_burn_in=3, random_state=0).fit(c)
    assert [r["sigma"] for r in m.trace_[:3]] == [3.0] * 3 and [r["gamma"] for r in m.trace_[:3]] == [2.0] * 3
    assert "beta" not in m.trace_[2] and "beta" in m.trace_[3]
    assert m.trace_[4]["sigma"] != 3.0
    with pytest.raises(ConfigError, match="hyper_burn_in"):
        HDPHMMTagger(hyper_burn_in=-1).fit(c)


def test_starting_emission_concentration():
    """``emission_concentration`` is beta's start (tau uniform): held fixed, it is Dir(b / W) per word."""
    c = _corpus(seed=6)
    kw = dict(truncation=4, n_iter=4, gamma=2.0, sigma=3.0, random_state=2)
    W = len(HDPHMMTagger(**kw).fit(c).vocab_)
    a = HDPHMMTagger(emission_prior="symmetric", beta=2.5 / W, fix_hyper=True, **kw).fit(c)
    b = HDPHMMTagger(emission_prior="asymmetric", emission_concentration=2.5, fix_hyper=True, **kw).fit(c)
    np.testing.assert_allclose(a.emissions_, b.emissions_, rtol=1e-12)
    assert b.emission_concentration_ == 2.5
    # the default start is DEFAULT_EMISSION_CONCENTRATION; "symmetric" is W x beta
    asym = dict(emission_prior="asymmetric", fix_hyper=True, beta=0.3, **kw)
    assert HDPHMMTagger(**asym).fit(c).emission_concentration_ == DEFAULT_EMISSION_CONCENTRATION
    assert HDPHMMTagger(emission_concentration="symmetric", **asym).fit(c).emission_concentration_ == \
        pytest.approx(0.3 * W)
    # learned after one held pass: the first update starts from 2.5, not from the default
    learned = HDPHMMTagger(emission_prior="asymmetric", emission_concentration=2.5, hyper_burn_in=1, **kw).fit(c)
    default = HDPHMMTagger(emission_prior="asymmetric", hyper_burn_in=1, **kw).fit(c)
    assert learned.emission_concentration_ != default.emission_concentration_
    for bad in (0.0, -1.0, "100", True):
        with pytest.raises(ConfigError, match="emission_concentration"):
            HDPHMMTagger(emission_prior="asymmetric", emission_concentration=bad, **kw).fit(c)
    with pytest.raises(ConfigError, match="asymmetric"):
        HDPHMMTagger(emission_concentration=100.0, **kw).fit(c)


def test_models_saved_before_the_option_keep_their_symmetric_start(tmp_path):
    """Files without ``emission_concentration`` in their parameters started Dir(beta tau) at ``W beta``."""
    from induce import modelfile

    c = _corpus(seed=7)
    m = HDPHMMTagger(truncation=4, n_iter=2, emission_prior="asymmetric", random_state=0).fit(c)
    path = tmp_path / "m.npz"
    m.save(path)
    meta, arrays = modelfile.load(path, "HDPHMMTagger", HDPHMMTagger._schema)
    del meta["params"]["emission_concentration"]
    modelfile.save(path, "HDPHMMTagger", meta, arrays)
    old = HDPHMMTagger.load(path)
    assert old.emission_concentration == "symmetric"
    assert old.score(c) == pytest.approx(m.score(c))


def test_default_burn_in_depends_on_the_emission_prior():
    """``hyper_burn_in=None``: Dir(beta) cvi adaptive (until the objective beats pass 1 by 1%), scvi 0;
    ASYMMETRIC_BURN_IN (at most n_iter / 2) for Dir(beta tau)."""
    c = _corpus(seed=8)
    kw = dict(truncation=4, n_iter=6, gamma=2.0, sigma=3.0, beta=0.3, random_state=0)
    sym = HDPHMMTagger(**(kw | {"n_iter": 40})).fit(sample_zhang("pos", n_sequences=30, length=40, seed=3))
    gain = [r["predictive_log_likelihood"] - sym.trace_[0]["predictive_log_likelihood"] for r in sym.trace_]
    first = next(i for i, g in enumerate(gain) if g > 0.01 * abs(sym.trace_[0]["predictive_log_likelihood"]))
    assert sym.hyper_burn_in_ == first and first >= 1
    assert {r["sigma"] for r in sym.trace_[:first]} == {3.0} and sym.trace_[first]["sigma"] != 3.0
    assert HDPHMMTagger()._burn_in() is None and HDPHMMTagger(infer="scvi")._burn_in() == 0
    flat = HDPHMMTagger(**kw).fit(c)  # iid words: the objective never leaves the symmetric start
    assert flat.hyper_burn_in_ == kw["n_iter"] and {r["sigma"] for r in flat.trace_} == {3.0}
    assert HDPHMMTagger(infer="scvi", batch_size=5, **kw).fit(c).trace_[0]["sigma"] != 3.0  # from the first epoch
    asym = HDPHMMTagger(emission_prior="asymmetric", **kw).fit(c)
    assert [r["sigma"] for r in asym.trace_[:3]] == [3.0] * 3 and "beta" not in asym.trace_[2]
    assert "beta" in asym.trace_[3]
    assert HDPHMMTagger(emission_prior="asymmetric", n_iter=400)._burn_in() == ASYMMETRIC_BURN_IN["cvi"]
    assert HDPHMMTagger(emission_prior="asymmetric", infer="scvi", n_iter=40)._burn_in() == ASYMMETRIC_BURN_IN["scvi"]
    assert HDPHMMTagger(emission_prior="asymmetric", hyper_burn_in=0)._burn_in() == 0


def test_asymmetric_prior_needs_cvi_or_scvi():
    with pytest.raises(ConfigError, match="cvi"):
        HDPHMMTagger(infer="svi", emission_prior="asymmetric").fit(_corpus())
    with pytest.raises(ConfigError, match="emission_prior"):
        HDPHMMTagger(emission_prior="dirichlet").fit(_corpus())


def test_emission_q0_and_tables_against_brute_force():
    """q(C_wk = 0) = prod_t (1 - q(z_t = k)); E[s] of eq. 5.35 vs the exact E_C[a (psi(a + C) - psi(a))]."""
    rng = np.random.default_rng(0)
    tokens = np.array([0, 1, 0, 0, 1, 2], dtype=np.int32)
    post = rng.dirichlet(np.ones(3), size=tokens.shape[0])
    out = np.zeros((3, 3))
    emission_log_q0(tokens, post, out)
    a = 0.7
    for w, k in itertools.product(range(3), range(3)):
        ps = post[tokens == w, k]
        # enumerate every assignment of the tokens of word w to "state k or not" (independent Bernoullis)
        p0, e_s = 0.0, 0.0
        for bits in itertools.product((0, 1), repeat=ps.shape[0]):
            pr = np.prod([p if b else 1 - p for p, b in zip(ps, bits)])
            n = sum(bits)
            p0 += pr * (n == 0)
            e_s += pr * (a * (digamma(a + n) - digamma(a)))  # exact E[s | C = n] (CRP tables)
        assert np.exp(out[w, k]) == pytest.approx(p0, rel=1e-12)
        approx = hdp.expected_tables(np.array([[ps.sum()]]), hdp.q_positive(out[w:w + 1, k:k + 1]), np.array([a]))
        assert approx[0, 0] == pytest.approx(e_s, rel=0.08)


def test_concentration_fixed_point_never_decreases_the_objective():
    """Eq. 5.20 (used for sigma and for the emission concentration) increases its objective for fixed tables."""
    rng = np.random.default_rng(2)
    for _ in range(50):
        n = rng.gamma(1.0, 50.0, size=rng.integers(1, 10))
        tables = float(rng.uniform(0.5, 1.0) * np.sum(np.minimum(n, 1 + np.log1p(n) * 3)))
        beta = float(rng.gamma(1.0, 5.0)) + 1e-3
        for _ in range(5):
            new = hdp.sigma_update(tables, n, np.ones_like(n), beta)
            assert hdp.concentration_objective(new, tables, n) >= hdp.concentration_objective(beta, tables, n) - 1e-9
            beta = new


def test_tau_point_estimate():
    tau = hdp.tau_point_estimate(np.array([3.0, 1.0, 0.0]), 1.0)
    np.testing.assert_allclose(tau, [0.6, 0.2, 0.0, 0.2])


def test_cli_emission_concentration(tmp_path):
    path = tmp_path / "m.npz"
    assert main(["tag", "demo", "--model", "hdp-hmm", "--truncation", "5", "--iterations", "2", "--quiet",
                 "--emission-prior", "asymmetric", "--emission-concentration", "7", "--fix-hyper",
                 "--save", str(path)]) == 0
    m = HDPHMMTagger.load(path)
    assert m.emission_concentration == 7 and m.emission_concentration_ == 7
    assert main(["tag", "demo", "--model", "hdp-hmm", "--iterations", "1", "--quiet",
                 "--emission-concentration", "7"]) == 2  # the symmetric prior has no beta to start

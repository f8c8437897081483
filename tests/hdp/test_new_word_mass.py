"""The learned new-word mass of Dir(beta tau): tau ~ DP(gamma_e, H) over an open vocabulary."""

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from induce.corpus.corpus import Corpus
from induce.corpus.sentence import Sentence
from induce.errors import ConfigError
from induce.infer import hdp
from induce.taggers import HDPHMMTagger


def _corpus(seed=0, n=30, length=8, W=12):
    rng = np.random.default_rng(seed)
    sents = [Sentence([f"w{min(rng.zipf(1.6), W)}" for _ in range(length)]) for _ in range(n)]
    return Corpus.from_sentences(sents)


def _objective(g, D, S):
    """Ewens log-likelihood of the dish labels in gamma_e: D log g + log Gamma(g) - log Gamma(g + S)."""
    return hdp.concentration_objective(g, D, np.array([S]))


def test_fixed_point_is_monotone_and_matches_a_grid_maximiser():
    rng = np.random.default_rng(0)
    grid = np.exp(np.linspace(np.log(1e-3), np.log(1e6), 40001))
    for _ in range(30):
        D = int(rng.integers(2, 3000))
        S = D * float(rng.uniform(1.05, 6.0))
        g = float(rng.gamma(1.0, 10.0)) + 1e-3
        for _ in range(20):  # single Minka steps (eq. 5.20 with one row) never decrease the objective
            new = hdp.sigma_update(D, np.array([S]), np.ones(1), g)
            assert _objective(new, D, S) >= _objective(g, D, S) - 1e-9 * abs(_objective(g, D, S))
            g = new
        best = hdp.new_word_concentration(D, S, 1.0)
        assert D / best == pytest.approx(digamma(best + S) - digamma(best), rel=1e-8)  # the stationarity condition
        vals = D * np.log(grid) + gammaln(grid) - gammaln(grid + S)  # _objective on the whole grid
        i = int(np.argmax(vals))
        assert grid[max(i - 1, 0)] <= best <= grid[min(i + 1, len(grid) - 1)]
        assert _objective(best, D, S) >= vals[i] - 1e-9 * abs(vals[i])


def test_no_finite_maximiser_keeps_the_start():
    """D >= S: every table serves a different word, the Ewens likelihood increases in gamma_e without bound."""
    assert hdp.new_word_concentration(10, 10.0, 3.5) == 3.5
    assert hdp.new_word_concentration(0, 5.0, 2.0) == 2.0


def test_emission_prior_update_uses_the_learned_mass():
    rng = np.random.default_rng(1)
    W, K = 7, 3
    emit = rng.gamma(1.0, 3.0, size=(W, K))
    logq0 = np.log(rng.uniform(0.01, 0.5, size=(W, K)))
    fixed = hdp.EmissionPrior(W, 0.5 * W, new_mass=1.0)
    learned = hdp.EmissionPrior(W, 0.5 * W, new_mass=1.0, learn_new_mass=True)
    S = fixed.update(emit, logq0)
    assert learned.update(emit, logq0) == S
    g = learned.new_mass
    assert g == pytest.approx(hdp.new_word_concentration(W, S, 1.0))
    assert fixed.tau[-1] == pytest.approx(1.0 / (S + 1.0))              # Teh et al. (2008): unit mass
    assert learned.tau[-1] == pytest.approx(g / (S + g))                  # the DP posterior mean
    np.testing.assert_allclose(learned.tau[:-1] * (S + g), fixed.tau[:-1] * (S + 1.0))
    assert learned.tau.sum() == pytest.approx(1.0)
    assert learned.concentration == fixed.concentration


def test_fixed_mass_is_the_unit_mass_model_and_learned_mass_fits(tmp_path):
    c = _corpus()
    kw = dict(truncation=4, n_iter=6, gamma=2.0, sigma=3.0, beta=0.3, emission_prior="asymmetric",
              hyper_burn_in=2, random_state=3)
    one = HDPHMMTagger(new_word_mass=1.0, **kw).fit(c)
    one_int = HDPHMMTagger(new_word_mass=1, **kw).fit(c)
    np.testing.assert_array_equal(one.emissions_, one_int.emissions_)
    S = one.trace_[-1]["emission_tables"]
    assert one.emission_base_[-1] == pytest.approx(1.0 / (S + 1.0))
    assert one.emission_new_mass_ == 1.0 and all(r["new_word_mass"] == 1.0 for r in one.trace_[2:])
    a = HDPHMMTagger(new_word_mass="learned", **kw).fit(c)
    b = HDPHMMTagger(new_word_mass="learned", **kw).fit(c)
    np.testing.assert_array_equal(a.emissions_, b.emissions_)  # determinism
    assert a.emission_new_mass_ == b.emission_new_mass_
    assert "new_word_mass" not in a.trace_[1] and "new_word_mass" in a.trace_[2]  # learned after the burn-in
    S = a.trace_[-1]["emission_tables"]
    g = a.emission_new_mass_
    assert g != 1.0 and a.trace_[-1]["new_word_mass"] == g
    assert a.emission_base_[-1] == pytest.approx(g / (S + g))
    path = tmp_path / "m.npz"
    a.save(path)
    m = HDPHMMTagger.load(path)
    assert m.new_word_mass == "learned" and m.emission_new_mass_ == g
    np.testing.assert_array_equal(m.emission_base_, a.emission_base_)
    assert m.score(c) == pytest.approx(a.score(c))


@pytest.mark.parametrize("bad", [0.0, -1.0, "learn", True, None])
def test_bad_new_word_mass(bad):
    with pytest.raises(ConfigError, match="new_word_mass"):
        HDPHMMTagger(emission_prior="asymmetric", new_word_mass=bad).fit(_corpus())

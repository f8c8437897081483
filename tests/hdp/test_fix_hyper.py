"""``fix_hyper`` naming single hyperparameters: the named ones stay at their start values, the others move."""

import json

import numpy as np
import pytest

from induce import HDPHMMTagger
from induce.cli import main
from induce.errors import ConfigError
from induce.taggers.synthetic import sample_zhang


@pytest.fixture(scope="module")
def corpus():
    return sample_zhang("pos", n_sequences=30, length=40, seed=3)


def _fit(corpus, infer, fix_hyper, **kw):
    # hyper_burn_in=0: learn from the first pass (6 cvi passes do not end the default adaptive burn-in)
    kw = dict(truncation=6, infer=infer, n_iter=6, gamma=2.0, sigma=3.0, beta=0.5, fix_hyper=fix_hyper,
              hyper_burn_in=0, batch_size=10, random_state=4) | kw
    return HDPHMMTagger(**kw).fit(corpus)


@pytest.mark.parametrize("infer", ["cvi", "scvi", "beam"])
def test_named_hyperparameter_is_held_the_other_learned(corpus, infer):
    hold_sigma = _fit(corpus, infer, ("sigma",))
    assert hold_sigma.sigma_ == 3.0 and hold_sigma.gamma_ != 2.0
    hold_gamma = _fit(corpus, infer, ["gamma"])
    assert hold_gamma.gamma_ == 2.0 and hold_gamma.sigma_ != 3.0
    both = _fit(corpus, infer, True)
    assert (both.gamma_, both.sigma_) == (2.0, 3.0)
    named = _fit(corpus, infer, ("gamma", "sigma", "emission"))
    np.testing.assert_array_equal(named.transition_counts_, both.transition_counts_)


def test_fixing_only_the_emission_prior_keeps_beta_and_learns_sigma(corpus):
    m = _fit(corpus, "cvi", ("emission",), emission_prior="asymmetric", emission_concentration=4.0)
    assert m.emission_concentration_ == 4.0  # beta stays at its start
    assert m.sigma_ != 3.0 and m.gamma_ != 2.0
    learned = _fit(corpus, "cvi", ("sigma",), emission_prior="asymmetric", emission_concentration=4.0)
    assert learned.emission_concentration_ != pytest.approx(4.0) and learned.sigma_ == 3.0


def test_partial_fix_survives_save_and_load(tmp_path, corpus):
    m = _fit(corpus, "cvi", ("sigma",))
    m.save(tmp_path / "m.npz")
    back = HDPHMMTagger.load(tmp_path / "m.npz")
    assert back._fixed_hyper() == frozenset({"sigma"})


def test_unknown_name_is_a_clear_error(corpus):
    with pytest.raises(ConfigError, match="unknown hyperparameter.*'alpha'"):
        _fit(corpus, "cvi", ("alpha",))


def test_cli_fix_hyper_names(tmp_path):
    out = tmp_path / "res.json"
    assert main(["tag", "demo", "--model", "hdp-hmm", "--truncation", "6", "--iterations", "4", "--quiet",
                 "--sigma", "2", "--gamma", "3", "--fix", "sigma", "--hyper-burn-in", "0", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["sigma"] == 2 and res["gamma"] != 3
    with pytest.raises(SystemExit) as exit_:  # argparse rejects the name before anything runs
        main(["tag", "demo", "--model", "hdp-hmm", "--fix", "alpha", "--quiet"])
    assert exit_.value.code == 2
    # --fix-hyper takes no value: the corpus may follow it
    assert main(["tag", "--model", "hdp-hmm", "--truncation", "4", "--iterations", "2", "--quiet", "--fix-hyper",
                 "demo", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["sigma"] == 1.0

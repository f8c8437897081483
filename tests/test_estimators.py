"""Every estimator keeps the scikit-learn contract through induce.base.InduceEstimator."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

from induce.align import WordAligner
from induce.base import InduceEstimator
from induce.parsers import DMVParser, LatentPCFGParser, PCFGInducer
from induce.taggers import HDPHMMTagger, HMMTagger

ESTIMATORS = (HMMTagger, HDPHMMTagger, PCFGInducer, DMVParser, LatentPCFGParser, WordAligner)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_clone_get_and_set_params(cls):
    model = cls()
    assert isinstance(model, InduceEstimator) and isinstance(model, BaseEstimator)
    params = model.get_params()
    assert "random_state" in params and "n_iter" in params
    copy = clone(model.set_params(random_state=7))
    assert copy is not model and copy.get_params() == model.get_params()
    assert copy.random_state == 7
    with pytest.raises(ValueError):
        model.set_params(not_a_parameter=1)


def test_fitted_tagger_reports_its_run(tmp_path):
    from induce import load_corpus

    demo = load_corpus("demo").head(300)
    model = HMMTagger(n_states=8, random_state=0)
    assert model.fit(demo) is model
    assert model.n_iter is None and model.n_iter_ == len(model.trace_) and 1 <= model.n_iter_ <= 500
    assert model.converged_ == (model.n_iter_ < 500)
    assert model.alpha_ == 1.0 and model.learned_hyper_ == ("beta",)  # cvi2's default: beta_k per state
    assert model.beta_.shape == (8,) and np.all(model.beta_ > 0) and model.beta_.max() <= 0.5
    model.save(tmp_path / "m.npz")
    back = HMMTagger.load(tmp_path / "m.npz")
    assert (back.n_iter_, back.converged_, back.warnings_) == (model.n_iter_, model.converged_, model.warnings_)
    assert np.array_equal(back.predict_flat(demo), model.predict_flat(demo))


def test_the_default_cap_is_500_passes_and_2000_for_em():
    from induce import load_corpus
    from induce.errors import ConfigError

    tiny = load_corpus("demo").head(20)
    runs = {infer: HMMTagger(n_states=3, infer=infer, tol=0, random_state=0).fit(tiny) for infer in ("em", "vi")}
    assert (runs["em"].n_iter_, runs["vi"].n_iter_) == (2000, 500)  # tol 0 runs every pass of the cap
    assert HMMTagger(n_states=3, infer="em", n_iter=7, tol=0).fit(tiny).n_iter_ == 7  # a given cap holds
    with pytest.raises(ConfigError, match="n_iter must be"):
        HDPHMMTagger(n_iter=0).fit(tiny)  # the HDP-HMM's cap: None (MAX_ITER) or a positive number of passes


def test_learn_hyper_where_nothing_can_be_learned_says_so():
    from induce import load_corpus
    from induce.infer.convergence import FitWarning

    tiny = load_corpus("demo").head(30)
    for infer in ("scvi3", "svi-buffered"):  # the single-sequence algorithms learn at their epochs' ends too
        single = HMMTagger(n_states=3, infer=infer, learn_hyper=True, n_epochs=3, tol=0, random_state=0).fit(tiny)
        assert single.learned_hyper_ == ("alpha", "beta") and single.beta_ != 0.003
        assert [r["epoch"] for r in single.trace_ if "beta" in r] == [1, 2, 3]
    with pytest.warns(FitWarning, match="maximum-likelihood em has no prior"):
        HMMTagger(n_states=3, infer="em", map_estimate=False, learn_hyper=True, n_iter=3, tol=0).fit(tiny)
    learned = HMMTagger(n_states=3, infer="vi", learn_hyper=True, n_iter=3, tol=0).fit(tiny)
    assert learned.learned_hyper_ == ("alpha", "beta") and learned.warnings_ == []


def test_the_cap_warns_and_a_collapse_is_reported():
    from sklearn.exceptions import ConvergenceWarning

    from induce import load_corpus
    from induce.infer.convergence import FitWarning

    demo = load_corpus("demo").head(300)
    with pytest.warns(ConvergenceWarning, match="not converged after 3 passes"):
        capped = HMMTagger(n_states=8, n_iter=3, random_state=0).fit(demo)
    assert not capped.converged_ and any("not converged" in w for w in capped.warnings_)
    # a flat emission prior far too large for 300 sentences merges the states
    with pytest.warns(FitWarning, match="collapsed"):
        flat = HMMTagger(n_states=40, infer="cvi2", beta=50.0, n_iter=30, random_state=0).fit(demo)
    assert any("collapsed" in w for w in flat.warnings_)


def test_taggers_take_token_lists_and_paths_and_tag_per_sentence():
    X = [["the", "dog", "barks"], ["a", "cat", "sleeps"], ["the", "cat", "barks"]] * 20
    model = HMMTagger(n_states=3, random_state=0).fit(X)
    tags = model.predict_tags([["the", "dog"], ["a", "bird", "sleeps"]])
    assert [len(t) for t in tags] == [2, 3] and all(t.startswith("S") for s in tags for t in s)
    assert tags[0] == model.predict_tags([["the", "dog"]])[0]
    assert np.array_equal(HMMTagger(n_states=4, n_iter=3, tol=0).fit("demo").labels_,
                          HMMTagger(n_states=4, n_iter=3, tol=0).fit(__import__("induce").load_corpus("demo")).labels_)
    parser = DMVParser(n_iter=2).fit([["DT", "NN", "VBZ"], ["NN", "VBZ"]])
    assert [h.tolist() for h in parser.predict([["DT", "NN", "VBZ"]])] == parser.parse([["DT", "NN", "VBZ"]])
    assert len(parser.parse([["DT", "NN", "VBZ"]])[0]) == 3

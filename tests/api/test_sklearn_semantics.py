"""scikit-learn semantics (issue 39): ``fit(X, y)`` / ``score(X, y)`` ignore ``y``; a ``Corpus`` indexes like a
list of sentences so splitters and ``GridSearchCV`` work; ``score`` is a mean per token / step; unfitted
estimators raise scikit-learn's ``NotFittedError``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from induce import DMVParser, HDPHMMTagger, HMMTagger
from induce.series import HMMSegmenter
from induce.corpus.corpus import Corpus
from induce.corpus.demo import demo_corpus
from induce.errors import ConfigError
from induce.eval import tagging_scorer
from induce.taggers import TagDictionary


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return demo_corpus(n_sentences=60, seed=0)


def _gold(corpus: Corpus) -> list[list[str]]:
    return [corpus.tag_strings("xpos", i) for i in range(len(corpus))]


def test_corpus_indexes_like_a_list_of_sentences(corpus):
    assert len(corpus) == 60 and corpus[0] == corpus.words(0) and corpus[-1] == corpus.words(59)
    part = corpus[10:13]
    assert isinstance(part, Corpus) and len(part) == 3 and part[0] == corpus.words(10)
    picked = corpus[np.array([5, 2])]
    assert [picked[0], picked[1]] == [corpus.words(5), corpus.words(2)]
    assert picked.tag_strings("xpos", 1) == corpus.tag_strings("xpos", 2)
    mask = np.zeros(60, bool)
    mask[[1, 4]] = True
    assert len(corpus[mask]) == 2
    for bad in (60, -61, [0, 99], np.zeros(3, bool), ["a"]):
        with pytest.raises(IndexError):
            corpus[bad]
    train, test = next(KFold(3).split(corpus))
    assert len(corpus[train]) == 40 and len(corpus[test]) == 20


def test_grid_search_over_hmm_tagger_with_v_measure_against_gold(corpus):
    """The documented example (docs/sklearn.md): y = gold tags per sentence, scored by V-measure."""
    gold = _gold(corpus)
    search = GridSearchCV(HMMTagger(infer="em", n_iter=3, random_state=0), {"n_states": [3, 8]},
                          scoring=tagging_scorer("vm"), cv=3).fit(corpus, y=gold)
    assert search.best_params_["n_states"] in (3, 8)
    assert 0.0 < search.best_score_ <= 1.0 and len(search.cv_results_["mean_test_score"]) == 2
    scores = cross_val_score(HMMTagger(infer="em", n_iter=2, n_states=5), corpus, gold, cv=2,
                             scoring=tagging_scorer("m1"))
    assert scores.shape == (2,) and np.all((scores > 0) & (scores <= 1))


@pytest.mark.parametrize("make, X", [
    (lambda: HMMTagger(n_states=4, infer="em", n_iter=2), "corpus"),
    (lambda: HDPHMMTagger(truncation=4, n_iter=2), "corpus"),
    (lambda: DMVParser(n_iter=2), "corpus"),
])
def test_pipeline_fit_with_y_and_score_per_token(corpus, make, X):
    gold = _gold(corpus)
    pipe = Pipeline([("keep", FunctionTransformer()), ("model", make())]).fit(corpus, gold)
    model = pipe.named_steps["model"]
    per_token = model.score(corpus, gold)
    assert per_token == model.score(corpus) and -20 < per_token < 0  # a mean per token, not a sum over 600
    assert pipe.score(corpus, gold) == pytest.approx(per_token)


def test_dmv_score_is_the_mean_per_token_of_its_log_likelihood(corpus):
    model = DMVParser(n_iter=2).fit(corpus)
    assert model.score(corpus) == pytest.approx(model.log_likelihood(corpus).sum() / corpus.n_tokens)


def test_segmenter_in_a_pipeline_with_y():
    x = np.r_[np.zeros(30), np.full(30, 5.0)][:, None] + np.random.default_rng(0).normal(0, 0.2, (60, 1))
    pipe = Pipeline([("scale", StandardScaler()), ("seg", HMMSegmenter(n_states=2, n_iter=10))]).fit(x, np.ones(60))
    assert -5 < pipe.score(x, np.ones(60)) < 5 and len(pipe.predict(x)) == 60


@pytest.mark.parametrize("model, call", [
    (HMMTagger(), lambda m, c: m.predict(c)), (HDPHMMTagger(), lambda m, c: m.score(c)),
    (DMVParser(), lambda m, c: m.predict(c)), (HMMSegmenter(), lambda m, c: m.predict(np.zeros((5, 1)))),
])
def test_unfitted_estimators_raise_sklearn_not_fitted(corpus, model, call):
    with pytest.raises(NotFittedError, match="not fitted yet"):
        call(model, corpus)
    with pytest.raises(ConfigError):  # and still an induce error (one line on the command line)
        call(model, corpus)


def test_a_tag_dictionary_as_y_is_refused_not_ignored(corpus):
    tags = TagDictionary.from_gold(corpus, "xpos")
    with pytest.raises(ConfigError, match="tag_dict="):
        HMMTagger(infer="em", n_iter=1).fit(corpus, tags)
    assert HMMTagger(infer="em", n_iter=1).fit(corpus, tag_dict=tags).n_states_ == len(tags.tags)

"""scikit-learn's ``estimator_checks`` on every estimator where they apply (docs/sklearn.md lists the rest).

The time-series segmenters take numeric ``(T, d)`` arrays, so scikit-learn's whole suite runs on them; the
two checks that permute or subset the rows cannot hold for a sequence model (a row is a time step whose
state depends on its neighbours).  The text estimators take token lists, trees or sentence pairs, not
numeric arrays: the API checks that need no numeric data run unchanged, and the fit-time contract
(``fit`` returns ``self``, leaves the hyperparameters alone, sets only ``*_`` attributes; ``clone`` of a
fitted model is unfitted; predicting before ``fit`` is refused) is checked here on tiny text inputs.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils import estimator_checks as ec
from sklearn.utils.estimator_checks import parametrize_with_checks

from induce.align import WordAligner
from induce.errors import ConfigError
from induce.parsers import DMVParser, LatentPCFGParser, PCFGInducer
from induce.series import HDPHSMMSegmenter, HMMSegmenter, HSMMSegmenter
from induce.taggers import HDPHMMTagger, HMMTagger

def failure(check, *args) -> str | None:
    """What a scikit-learn check reports: None when it holds, else its assertion message.  A check signals a
    failure by raising AssertionError (or another exception); the tests assert this returns None."""
    try:
        check(*args)
    except AssertionError as err:
        return f"{getattr(check, '__name__', check)}: {err}"
    return None


ORDER = "rows are the time steps of one sequence: a step's state depends on its neighbours, so reordering or "
SERIES_EXPECTED = {"check_methods_sample_order_invariance": ORDER + "permuting the rows changes the states",
                   "check_methods_subset_invariance": ORDER + "cutting the sequence changes the states"}


@parametrize_with_checks([HMMSegmenter(n_states=2, n_iter=3), HSMMSegmenter(n_states=2, n_iter=3, max_duration=8),
                          HDPHSMMSegmenter(n_states=3, n_iter=3, max_duration=8)],
                         expected_failed_checks=lambda est: SERIES_EXPECTED)
def test_series_estimators_pass_sklearn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert failure(check, estimator) is None


TEXT = [HMMTagger, HDPHMMTagger, DMVParser, PCFGInducer, LatentPCFGParser, WordAligner]
#: scikit-learn's checks that need no numeric data
API_CHECKS = [ec.check_estimator_cloneable, ec.check_estimator_tags_renamed, ec.check_valid_tag_types,
              ec.check_estimator_repr, ec.check_no_attributes_set_in_init,
              ec.check_do_not_raise_errors_in_init_or_set_params, ec.check_mixin_order,
              ec.check_get_params_invariance, ec.check_set_params, ec.check_parameters_default_constructible]


@pytest.mark.parametrize("cls", TEXT, ids=lambda c: c.__name__)
@pytest.mark.parametrize("check", API_CHECKS, ids=lambda c: c.__name__)
def test_text_estimators_pass_api_checks(cls, check):
    assert failure(check, cls.__name__, cls()) is None


WORDS = [s.split() for s in ["the dog barks", "a cat sleeps", "the cat barks", "a dog sleeps"]] * 3
TAGS = [s.split() for s in ["DT NN VBD DT NN", "PRP VBD DT JJ NN", "DT NN VBZ JJ", "NNP VBD IN DT NN"]]
PAIRS = [(s.split(), t.split()) for s, t in [("das haus", "the house"), ("das buch", "the book"),
                                              ("ein buch", "a book"), ("das haus ist klein", "the house is small")]]
FITS = {  # unfitted estimator, training data, a decoding method (must refuse before fit)
    "HMMTagger": (HMMTagger(n_states=3, n_iter=2, random_state=0), WORDS, "predict"),
    "HDPHMMTagger": (HDPHMMTagger(truncation=3, n_iter=2, random_state=0), WORDS, "predict"),
    "DMVParser": (DMVParser(n_iter=2, random_state=0), TAGS, "predict"),  # (cvi draws its sentence order)
    "PCFGInducer": (PCFGInducer(n_nonterminals=2, n_iter=2, random_state=0), TAGS, "parse"),
    "WordAligner": (WordAligner(n_iter=2, random_state=0), PAIRS, "align"),
}


@pytest.mark.parametrize("name", FITS)
def test_text_estimators_fit_contract(name):
    """check_estimators_fit_returns_self, check_dont_overwrite_parameters, check_estimators_overwrite_params,
    check_estimators_unfitted and check_fit_idempotent, on text input."""
    model, data, method = FITS[name]
    with pytest.raises(ConfigError, match="not fitted|fit"):
        getattr(clone(model), method)(data)
    params = copy.deepcopy(model.get_params())
    public = set(vars(model))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert model.fit(data) is model
        again = clone(model).fit(data)
    assert model.get_params() == params
    added = {k for k in set(vars(model)) - public if not k.startswith("_")}
    assert added and all(k.endswith("_") for k in added), added
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(clone(model)))
    first, second = getattr(model, method)(data), getattr(again, method)(data)
    if name in ("HMMTagger", "HDPHMMTagger", "DMVParser"):
        assert len(first) == len(data) and all(np.array_equal(a, b) for a, b in zip(first, second))
    else:
        assert [str(x) for x in first] == [str(x) for x in second]

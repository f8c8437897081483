"""Every estimator's declared hyperparameter constraints are checked at the start of fit (induce.base)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from induce.align import WordAligner
from induce.base import AnyOf, Boolean, InduceEstimator, Integer, Items, Options, Real, Seed
from induce.errors import ConfigError
from induce.parsers.ccm import CCMParser
from induce.parsers.dmv import DMVParser
from induce.parsers.dmv_ccm import DMVCCMParser
from induce.parsers.latent_pcfg import LatentPCFGParser
from induce.parsers.pcfg import PCFGInducer
from induce.series.hsmm import HSMMSegmenter
from induce.series.segmenter import HMMSegmenter
from induce.taggers import HMMTagger
from induce.taggers.hdp_hmm import HDPHMMTagger
from induce.taggers.hmm_features import FeatureSpec

ESTIMATORS = (HMMTagger, HDPHMMTagger, HMMSegmenter, HSMMSegmenter, WordAligner, PCFGInducer, DMVParser,
              LatentPCFGParser, CCMParser, DMVCCMParser)


def candidates(c) -> list:
    """Values that may lie outside the constraint ``c`` (filtered by :func:`bad_values`)."""
    if isinstance(c, Integer):
        out = [1.5, "3", True, None]
        out += [c.minimum - 1] if c.minimum is not None else []
        return out + ([c.maximum + 1] if c.maximum is not None else [])
    if isinstance(c, Real):
        lo, hi = c.bounds["minimum"], c.bounds["maximum"]
        out = ["1", math.nan, math.inf, True, None]
        out += [lo, lo - 1.0] if lo is not None else []
        return out + ([hi, hi + 1.0] if hi is not None else [])
    if isinstance(c, Options):
        return ["no-such-choice", 3, None]
    if isinstance(c, Seed):
        return [-1, 2**32, 1.5, "0"]
    if isinstance(c, Boolean):
        return ["yes", 1, None]
    if isinstance(c, Items):
        return ["x", 5, [], [math.nan] * (c.length or 1)] + ([[1.0] * (c.length + 1)] if c.length else [])
    if isinstance(c, AnyOf):
        return [v for member in c.constraints for v in candidates(member)]
    if isinstance(c, FeatureSpec):
        return [3, ["identity", 2], {"identity": 1}]
    raise AssertionError(f"no bad values for {c!r}")


def bad_values(c) -> list:
    return [v for v in candidates(c) if not c.accepts(v)]


CASES = [(cls, name, value) for cls in ESTIMATORS for name, c in cls._constraints().items()
         for value in bad_values(c)]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_constraint_names_a_parameter_and_the_defaults_pass(cls):
    own = vars(cls)["_parameter_constraints"]
    assert set(own) <= set(cls._get_param_names())
    assert own, f"{cls.__name__} declares no constraints"
    cls()._validate_params()
    for name, c in cls._constraints().items():
        assert bad_values(c), f"{cls.__name__}.{name}: no value to reject"


@pytest.mark.parametrize("cls,name,value", CASES,
                         ids=[f"{c.__name__}-{n}-{v!r}" for c, n, v in CASES])
def test_bad_hyperparameter_raises_config_error_at_fit(cls, name, value):
    est = cls().set_params(**{name: value})
    # validation comes before the data are looked at: the data argument is never read
    with pytest.raises(ConfigError) as info:
        est.fit(None)
    message = str(info.value)
    assert message.startswith(f"{name} must be ") and repr(value) in message and "\n" not in message


def test_stream_fit_validates_too_and_subclasses_extend_their_parents_table():
    with pytest.raises(ConfigError, match="kappa must be a finite number in"):
        HMMTagger(infer="svi", kappa=2.0).fit_stream("no-such-file")
    # HDPHMMTagger keeps HMMTagger's checks of the parameters it shares and overrides infer and beta
    table = HDPHMMTagger._constraints()
    assert table["order"] is HMMTagger._constraints()["order"]
    assert table["infer"].accepts("beam") and not HMMTagger._constraints()["infer"].accepts("beam")
    assert not table["beta"].accepts(None) and HMMTagger._constraints()["beta"].accepts(None)
    assert "n_states" not in table


def test_constraint_domains():
    assert Integer(1).accepts(np.int64(3)) and not Integer(1).accepts(0) and not Integer(1).accepts(2.0)
    assert Real(0.0, min_open=True).accepts(np.float32(0.5)) and not Real(0.0, min_open=True).accepts(0.0)
    assert Real(0.0, 1.0).accepts(1) and not Real(0.0, 1.0).accepts(np.nan) and not Real().accepts("1.0")
    assert Options(None, "a").accepts(None) and Options("a").accepts(np.str_("a")) and not Options("a").accepts("b")
    assert Seed().accepts(None) and Seed().accepts(2**32 - 1) and not Seed().accepts(2**32)
    assert Items(Real(0.0), 2).accepts((1, 2.0)) and not Items(Real(0.0), 2).accepts((1, 2, 3))
    assert AnyOf(Options("learned"), Real(0.0, min_open=True)).accepts("learned")
    assert issubclass(HMMTagger, InduceEstimator)

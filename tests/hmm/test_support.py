"""The algorithm x family x model support table (induce.algorithms.support): consistent with the estimators,
shown in docs/architecture.md, and the command line's one-line refusals."""

from pathlib import Path

import pytest

from induce.algorithms import support
from induce.algorithms.hsmm_sentences import SENTENCE_ALGORITHMS
from induce.algorithms.series_collapsed import COLLAPSED
from induce.cli import main
from induce.infer.series_hdp_hsmm import HDP_HSMM_ALGORITHMS
from induce.infer.series_hsmm import HSMM_ALGORITHMS
from induce.names import EMISSION_FAMILIES, HDP_ALGORITHMS, HMM_ALGORITHMS, SERIES_ALGORITHMS, SERIES_MODELS
from induce.taggers.hmm_features import FEATURE_INFER
from induce.taggers.hmm_vectors import VECTOR_ALGORITHMS

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def test_table_names_the_registered_models_and_families():
    assert set(support.MODELS) == set(SERIES_MODELS)
    assert set(EMISSION_FAMILIES) < set(support.FAMILIES)
    for row in support.TABLE:
        assert row.model in support.MODELS and set(row.runs) <= set(support.FAMILIES)
        assert all(set(cmds) <= set(support.COMMANDS) for cmds in row.runs.values())
    keys = [(r.model, r.algorithm) for r in support.TABLE]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("model, family, command, expected", [
    ("hmm", "categorical", "tag", HMM_ALGORITHMS),
    ("hmm", "features", "tag", FEATURE_INFER),
    ("hmm", "gaussian", "tag", VECTOR_ALGORITHMS),
    ("hmm", "poisson", "segment", SERIES_ALGORITHMS + tuple(COLLAPSED)),
    ("hmm", "diag-gaussian", "segment", SERIES_ALGORITHMS + tuple(COLLAPSED)),
    ("hmm", "categorical", "segment", SERIES_ALGORITHMS),
    ("hdp-hmm", "categorical", "tag", HDP_ALGORITHMS),
    ("hdp-hmm", "poisson", "segment", ("cvi", "scvi", "svi")),
    ("hsmm", "gaussian", "segment", HSMM_ALGORITHMS),
    ("hsmm", "categorical", "tag", SENTENCE_ALGORITHMS),
    ("hdp-hsmm", "diag-gaussian", "segment", HDP_HSMM_ALGORITHMS),
])
def test_table_agrees_with_the_estimators(model, family, command, expected):
    assert set(support.algorithms(model, family, command)) == set(expected)


def test_every_cell_that_does_not_run_has_a_reason():
    for row in support.TABLE:
        for family in support.FAMILIES:
            for command in support.COMMANDS:
                why = support.reason(row.model, row.algorithm, family, command)
                assert (why is None) == (command in row.runs.get(family, ()))
                assert why is None or ("\n" not in why and "{" not in why)


def test_docs_show_the_table():
    assert support.markdown() in DOC.read_text()


@pytest.mark.parametrize("argv, message", [
    (["tag", "demo", "--emission", "features", "--infer", "cvi1"], "the log-linear (features) emissions train"),
    (["tag", "demo", "--model", "hdp-hmm", "--infer", "cvi2"], "--model hdp-hmm runs --infer cvi, scvi, svi, beam"),
    (["tag", "demo", "--model", "hsmm", "--infer", "cgs"], "--model hsmm runs --infer em, vi, svi, cvi2, scvi"),
])
def test_tag_refuses_with_the_reason(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("induce: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize("extra, message", [
    (["--infer", "cvi3"], "--infer cvi3 runs on the text HMM's categorical counts only"),
    (["--infer", "cgs", "--emission", "categorical"], "its categorical family does not have yet"),
    (["--model", "hdp-hmm", "--infer", "beam"], "the beam sampler is written for the text"),
    (["--model", "hsmm", "--infer", "cgs"], "--model hsmm runs --infer em, vi, svi, cvi2, scvi"),
])
def test_segment_refuses_with_the_reason(extra, message, corpora, capsys):
    assert main(["segment", str(corpora / "timeseries" / "nile.csv")] + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("induce: error: ") and message in err and err.count("\n") == 1

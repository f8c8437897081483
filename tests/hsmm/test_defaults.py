"""The HSMM's defaults (issue 43): two long segments of very different lengths are found with no flag, and the
warning about a short ``max_duration`` fires exactly when segments reach it."""

import warnings

import numpy as np
import pytest

from induce.cli import main
from induce.infer.convergence import FitWarning
from induce.infer.series_hsmm import log_survival
from induce.series import HDPHSMMSegmenter, HSMMSegmenter


@pytest.fixture(scope="module")
def two_segments():
    """40 steps around 2, then 160 around -1 (sd 1): the old defaults (D = 50) could not hold the second."""
    rng = np.random.default_rng(3)
    return np.concatenate([rng.normal(2.0, 1.0, 40), rng.normal(-1.0, 1.0, 160)])[:, None]


def fit_quietly(model, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(x)
        segments = model.segments(x)[0]
    return segments, [str(w.message) for w in caught if issubclass(w.category, FitWarning)]


@pytest.mark.parametrize("model", [HSMMSegmenter(2, infer="vi"), HDPHSMMSegmenter(10)],
                         ids=["hsmm", "hdp-hsmm"])
def test_two_long_segments_of_different_lengths_are_found_with_the_defaults(two_segments, model):
    segments, caught = fit_quietly(model, two_segments)
    assert len(segments) == 2 and abs(segments[0][1] - 40) <= 2  # one switch, within noise of the true one
    assert model.max_duration_ >= 160 and not any("max_duration" in w for w in caught)


def test_warning_fires_when_a_segment_reaches_max_duration_and_not_otherwise(two_segments):
    _, caught = fit_quietly(HSMMSegmenter(2, infer="vi", max_duration=180), two_segments)
    assert not any("max_duration" in w for w in caught)
    segments, caught = fit_quietly(HSMMSegmenter(2, infer="vi", max_duration=30), two_segments)
    assert max(e - s for s, e, _ in segments) == 30
    assert len([w for w in caught if "max_duration" in w]) == 1  # one warning, at fit or at decoding


def test_cli_prints_one_warning_line_only_when_segments_reach_max_duration(tmp_path, capsys, two_segments):
    series = tmp_path / "s.csv"
    series.write_text("x\n" + "\n".join(f"{v:.4f}" for v in two_segments[:, 0]) + "\n")
    base = ["segment", str(series), "--model", "hsmm", "--states", "2", "--json"]
    assert main(base) == 0
    out = capsys.readouterr()
    assert "induce: warning" not in out.err and '"max_duration": 200' in out.out and "duration_choice" in out.out
    assert main(base + ["--max-duration", "30"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("induce: warning:")]
    assert len(lines) == 1 and "max_duration = 30" in lines[0] and "--max-duration" in lines[0]


def test_log_survival_is_one_minus_the_cdf():
    """``log P(d' >= d)`` of a geometric pmf truncated at D: ``d - 1`` times ``log p``, mass beyond D included."""
    p, d = 0.9, np.arange(1, 41)
    logD = np.log((1 - p) * p ** (d - 1))[None, :]
    np.testing.assert_allclose(log_survival(logD)[0], (d - 1) * np.log(p), atol=1e-12)


def test_no_warning_when_one_segment_spans_a_sequence_no_longer_than_max_duration():
    x = np.random.default_rng(0).normal(0.0, 1.0, (30, 1))
    model = HSMMSegmenter(2, infer="vi", max_duration=30).fit(x)
    model.warnings_ = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitWarning)
        model._warn_reached([np.zeros(30, dtype=np.int64)])  # the whole sequence: nothing was cut
        with pytest.raises(FitWarning):
            model._warn_reached([np.zeros(31, dtype=np.int64)])

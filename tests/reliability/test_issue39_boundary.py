"""The crashes and silent answers of issue 39 left after the readers: each is one line (status 2) or correct
behaviour -- report run files, binary --tag-dict / --grammar, tampered segment models, --states beyond the
data or memory, compare's warm-up warnings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from induce.cli import main
from induce.errors import ModelFormatError
from induce.series import HMMSegmenter


def _one_line_error(argv, capsys) -> str:
    """The command's stderr, after checking that it exits with status 2 and prints exactly one line."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("content, expected", [
    (b"{}", "the object is empty"),
    (b'{"command": "tag", "trace": "abc"}', "field 'trace': expected a list of records"),
    (b'{"command": "tag", "trace": [null, {"iteration": 1}]}', "field 'trace': expected a list of records"),
    (b'{"command": "tag", "m1": "abc"}', "metric 'm1': expected a number"),
    (b'{"command": "tag", "confusion": [1, 2]}', "field 'confusion'"),
    (b'{"command": "compare", "runs": []}', "needs both 'runs' and 'summary'"),
    (bytes(range(128, 256)), "expected a UTF-8 JSON run file"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
])
def test_bad_run_files_are_one_line_errors(tmp_path, capsys, content, expected):
    run = tmp_path / "run.json"
    run.write_bytes(content)
    assert expected in _one_line_error(["report", run, "-o", tmp_path / "r.html"], capsys)
    assert not (tmp_path / "r.html").exists()


def test_report_of_a_segment_run_file(tmp_path, capsys):
    """segment --json names its input 'series', the report's key of the coloured series: read as the input."""
    pytest.importorskip("matplotlib")
    series = tmp_path / "s.csv"
    series.write_text("v\n" + "".join(f"{v}\n" for v in [0, 0.1, 5, 5.2, 0.2, 0, 5.1, 5] * 4))
    assert main(["segment", str(series), "--iterations", "3", "--json", str(tmp_path / "seg.json")]) == 0
    assert main(["report", str(tmp_path / "seg.json"), "-o", str(tmp_path / "seg.html")]) == 0
    assert str(series) in (tmp_path / "seg.html").read_text()


@pytest.mark.parametrize("option", ["--tag-dict", "--grammar"])
def test_binary_tag_dict_and_grammar_are_located_errors(tmp_path, capsys, option):
    binary = tmp_path / "bin.txt"
    binary.write_bytes(bytes(range(256)))
    argv = (["tag", "demo", "--tag-dict", binary] if option == "--tag-dict"
            else ["parse", "demo", "-o", tmp_path / "out", "--model", "pcfg", "--grammar", binary])
    assert f"{binary}:1: expected" in _one_line_error(argv, capsys)


def test_a_segment_model_with_negative_counts_is_refused(tmp_path):
    x = np.r_[np.zeros(20), np.full(20, 5.0)][:, None] + np.random.default_rng(0).normal(0, 0.1, (40, 1))
    HMMSegmenter(2, n_iter=5).fit(x).save(tmp_path / "m.npz")
    arrays = dict(np.load(tmp_path / "m.npz"))
    arrays["stats"] = arrays["stats"].copy()
    arrays["stats"][0, 0] = -5.0  # a state's count (the statistics' first column)
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFormatError, match="negative state counts"):
        HMMSegmenter.load(tmp_path / "bad.npz")


def test_segment_states_beyond_the_steps_or_memory(tmp_path, capsys, monkeypatch):
    series = tmp_path / "s.csv"
    series.write_text("v\n" + "".join(f"{i % 7}\n" for i in range(30)))
    assert "--states 31 exceeds the 30 steps" in _one_line_error(["segment", series, "--states", "31"], capsys)
    monkeypatch.setenv("INDUCE_MEMORY_LIMIT", "1000")
    assert "use fewer --states" in _one_line_error(["segment", series, "--states", "20"], capsys)


def test_compare_warm_up_fits_print_no_warnings(tmp_path, capsys):
    corpus = tmp_path / "c.conllu"
    assert main(["corpus", "demo", "-o", str(corpus), "--sentences", "30"]) == 0
    capsys.readouterr()
    assert main(["compare", str(corpus), "--infer", "em", "--seeds", "1", "--states", "16", "--iterations", "200",
                 "--quiet", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "1 passes" not in err and "1 passes" not in out
    assert "warnings" not in json.loads(out) or all("1 passes" not in w for w in json.loads(out)["warnings"])


def test_report_draws_no_panel_for_a_hyperparameter_held_fixed():
    from induce.report.document import _moves, trace_lines

    panels = trace_lines([{"iteration": i, "objective": -10.0 + i, "alpha": 1.0} for i in range(1, 5)])
    assert _moves(panels["objective"]) and not _moves(panels["alpha"])

"""The text summary of every subcommand: readable lists (long number lists summarised) and records, rates
without spurious decimals, ``states`` meaning K with and without ``--stream``, no plain accuracy for induced
labels."""

from __future__ import annotations

import io
import json

import pytest

from induce.cli import main
from induce.cli.common import emit
from tests.conftest import CORPORA


def test_table_prints_lists_records_and_rates_readably():
    out = io.StringIO()
    emit({"m1": 0.71234, "tokens_per_s": 523.4, "pairs_per_second": 79.63, "log_likelihood": -4906.3,
          "learned": [], "columns": ["DAX", "SMI"],
          "dev_scores": [{"alpha": 1.0, "f1": 0.8123}, {"alpha": 0.1, "f1": 0.8}],
          "warnings": ["hmm cvi2: not converged after 3 passes (change of the objective below tol)"]}, False, out)
    lines = out.getvalue().splitlines()
    assert "m1                0.7123" in lines
    assert lines[1].split() == ["tokens_per_s", "523.4"] and lines[2].split() == ["pairs_per_second", "79.6"]
    assert lines[3].split() == ["log_likelihood", "-4906"]
    assert lines[4].split() == ["learned", "none"] and lines[5].split() == ["columns", "DAX,", "SMI"]
    assert lines[6:9] == ["dev_scores:", "  alpha 1.0000  f1 0.8123", "  alpha 0.1000  f1 0.8000"]
    assert lines[9:] == ["warnings:", "  - hmm cvi2: not converged after 3 passes (change of the objective below tol)"]
    assert "[" not in out.getvalue() and "{" not in out.getvalue()


def test_table_summarises_long_number_lists_and_json_keeps_them():
    """A per-state prior (K values) prints as count, range and median; a short list in full; JSON has all."""
    beta = [0.0125, 0.0003] + [0.01] * 7
    result = {"beta": beta, "alpha": [1.0, 2.0], "columns": [f"c{i}" for i in range(12)]}
    out = io.StringIO()
    emit(result, False, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split(None, 1) == ["beta", "9 values, 0.0003 to 0.0125, median 0.0100 (--json: all)"]
    assert lines[1].split() == ["alpha", "1.0000,", "2.0000"] and lines[2].count(",") == 11
    out = io.StringIO()
    emit(result, True, out)
    assert json.loads(out.getvalue())["beta"] == beta


def _run(capsys, argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.skipif(CORPORA is None, reason="shared corpora not found (INDUCE_CORPORA)")
def test_states_is_k_with_and_without_stream_and_induced_labels_get_no_accuracy(capsys, tmp_path):
    src = str(CORPORA / "ptb-sample" / "wsj_0003.mrg")
    batch = _run(capsys, ["tag", src, "--states", "7", "--iterations", "2", "--quiet", "-o", str(tmp_path / "t.mrg")])
    stream = _run(capsys, ["tag", src, "--format", "ptb", "--stream", "--infer", "svi", "--states", "7",
                           "--batch-size", "10", "--quiet"])
    assert batch["states"] == stream["states"] == 7
    assert 1 <= batch["states_used"] <= 7 and "states_used" not in stream
    assert "accuracy" not in batch
    scored = _run(capsys, ["eval", "tags", str(tmp_path / "t.mrg")])
    assert scored["states_used"] == batch["states_used"] and "accuracy" not in scored and "states" not in scored
    assert _run(capsys, ["eval", "tags", src, src])["accuracy"] == 1.0  # gold against gold: tags, so accuracy

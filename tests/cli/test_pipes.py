"""``-o -`` in a pipe: stdout carries the data only (the summary and ``--json`` go to stderr), for tag, parse,
align, segment and ``corpus convert``; the output reads back with ``induce corpus stats -`` (issue 39)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from induce.cli import main
from induce.cli.corpus_cmd import alignment_stats, corpus_stats

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """A 40-sentence demo corpus (CoNLL-U with gold tags and heads)."""
    path = tmp_path_factory.mktemp("pipes") / "small.conllu"
    assert main(["corpus", "demo", "-o", str(path), "--sentences", "40", "--json", str(path) + ".json"]) == 0
    return path


def _stdout_of(argv, capsys, tmp_path, name) -> Path:
    """Run ``induce ARGV`` in-process; its stdout saved to ``tmp_path/name``; stderr must hold the summary (the
    JSON of ``--json``, parsed from its first ``{``)."""
    capsys.readouterr()
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = tmp_path / name
    out.write_text(captured.out)
    assert captured.err.strip(), "the summary should be on stderr"
    if "--json" in argv:
        json.loads(captured.err[captured.err.index("{\n"):])
    return out


@pytest.mark.parametrize("argv", [
    ["tag", "{small}", "-o", "-", "--quiet", "--iterations", "3", "--states", "4"],
    ["tag", "{small}", "-o", "-", "--quiet", "--iterations", "3", "--states", "4", "--json"],
    ["parse", "{small}", "-o", "-", "--quiet", "--iterations", "2"],
    ["parse", "{small}", "-o", "-", "--quiet", "--model", "pcfg", "--nonterminals", "3", "--iterations", "2"],
    ["corpus", "convert", "{small}", "-o", "-", "--to", "conllx"],
])
def test_data_alone_on_stdout_reads_back(argv, small, capsys, tmp_path):
    argv = [a.replace("{small}", str(small)) for a in argv]
    out = _stdout_of(argv, capsys, tmp_path, "out")
    stats = corpus_stats(str(out))
    assert stats["sentences"] == 40 and stats["tokens"] == corpus_stats(str(small))["tokens"]


def test_align_links_alone_on_stdout(capsys, tmp_path):
    bitext = tmp_path / "bi.txt"
    bitext.write_text("".join(f"a{i % 3} b c ||| x{i % 3} y z\n" for i in range(12)))
    out = _stdout_of(["align", str(bitext), "-o", "-", "--quiet", "--gibbs-passes", "1", "1", "2",
                      "--json"], capsys, tmp_path, "links")
    assert alignment_stats(str(out), "pharaoh", None)["pairs"] == 12


def test_segment_csv_alone_on_stdout_and_read_from_stdin(capsys, tmp_path, monkeypatch):
    series = tmp_path / "s.csv"
    x = np.r_[np.zeros(20), np.full(20, 5.0)] + np.random.default_rng(0).normal(0, 0.1, 40)
    series.write_text("v\n" + "".join(f"{v:.4f}\n" for v in x))
    out = _stdout_of(["segment", str(series), "-o", "-", "--json", "--iterations", "5"], capsys, tmp_path, "seg.csv")
    lines = out.read_text().splitlines()
    assert lines[0] == "v,state" and len(lines) == 41
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(out.read_bytes())))
    import induce.corpus.read_lines as read_lines

    monkeypatch.setattr(read_lines, "_STDIN", None)
    assert main(["segment", "-", "--columns", "v", "--json", "--iterations", "5"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["series"] == "-" and summary["steps"] == 40


def test_shell_pipe_tag_into_corpus_stats(small):
    """The acceptance pipe itself, through a real shell pipe: ``induce tag C -o - --quiet | induce corpus stats -``."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    induce = f"{sys.executable} -m induce"
    done = subprocess.run(f"{induce} tag {small} -o - --quiet --iterations 2 --states 3 | "
                          f"{induce} corpus stats - --json", shell=True, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sentences"] == 40


def test_progress_bar_only_on_a_terminal_unless_forced():
    from induce.cli.common import show_progress
    from argparse import Namespace

    assert show_progress(Namespace(quiet=False, progress=True))
    assert not show_progress(Namespace(quiet=True, progress=False))
    assert show_progress(Namespace(quiet=False, progress=False)) == sys.stderr.isatty()


def test_progress_bar_ends_at_100_percent_when_a_run_stops_early():
    from induce.progress import ProgressBar

    out = io.StringIO()
    bar = ProgressBar(range(500), file=out, ascii=True)
    for it in bar:
        if it == 36:  # the stopping rule fires in the 37th pass, which closes the bar
            bar.close()
            break
    assert out.getvalue().rstrip().rsplit("\r", 1)[-1].startswith("100%") and "37/37" in out.getvalue()


def test_segment_progress_bar_forced_ends_at_100_percent(tmp_path, capsys):
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.normal(0, 1, 60), rng.normal(8, 1, 60)])
    series = tmp_path / "s.csv"
    series.write_text("value\n" + "\n".join(f"{v:.4f}" for v in values) + "\n")
    argv = ["segment", str(series), "--states", "2", "--infer", "em", "--json", str(tmp_path / "run.json")]
    assert main(argv + ["--progress"]) == 0
    passes = json.loads((tmp_path / "run.json").read_text())["iterations"]
    last = capsys.readouterr().err.rstrip().rsplit("\r", 1)[-1]
    assert passes < 100 and last.startswith("segment em: 100%") and f"{passes}/{passes}" in last
    assert main(argv) == 0  # stderr is not a terminal here: no bar
    assert "segment em" not in capsys.readouterr().err

"""``induce corpus stats|demo`` through ``induce.cli.main``."""

from __future__ import annotations

import json

import pytest

from induce.cli import main


def _stats(capsys, *argv) -> dict:
    assert main(["corpus", "stats", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "path,extra,fmt,sentences,tokens,columns",
    [
        ("ptb-sample", [], "ptb", 3914, 94084, {"pos": 45}),
        ("conll2000/test.txt", [], "conll2000", 2012, 47377, None),
        ("conll2007/eus.test", ["--encoding", "latin-1"], "conllx", 580, 10096, None),
        ("ud/en_ewt/en_ewt-ud-dev.conllu", [], "conllu", 2001, 25147, None),
    ],
)
def test_stats_counts(corpora, capsys, path, extra, fmt, sentences, tokens, columns):
    out = _stats(capsys, str(corpora / path), *extra)
    assert (out["format"], out["sentences"], out["tokens"]) == (fmt, sentences, tokens)
    assert sum(out["length_histogram"].values()) == sentences
    if columns is not None:
        assert out["tag_columns"] == columns


def test_stats_ud_tagset(corpora, capsys):
    out = _stats(capsys, str(corpora / "ud" / "en_ewt" / "en_ewt-ud-test.conllu"))
    assert out["tag_columns"]["upos"] == 17 and out["sentences_with_heads"] == 2077


def test_stats_hand_file(write, capsys):
    path = write("a.txt", "a b c\nd\na b c d e f\n")
    out = _stats(capsys, str(path), "--format", "plain")
    assert out["types"] == 6 and out["max_length"] == 6 and out["tag_columns"] == {}
    assert out["length_histogram"] == {"1-5": 2, "6-10": 1, "11-20": 0, "21-40": 0, "41-80": 0, ">80": 0}
    assert main(["corpus", "stats", str(path)]) == 0
    assert "sentences" in capsys.readouterr().out


def test_demo_command_writes_and_stats_read_it(tmp_path, capsys):
    out = tmp_path / "demo.conllu"
    assert main(["corpus", "demo", "-o", str(out), "--sentences", "30", "--seed", "2", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    stats = _stats(capsys, str(out))
    assert stats["sentences"] == written["sentences"] == 30 and stats["tokens"] == written["tokens"]
    assert main(["corpus", "demo", "-o", str(tmp_path / "d.mrg"), "--sentences", "30", "--seed", "2", "--format", "ptb"]) == 0
    capsys.readouterr()
    assert _stats(capsys, str(tmp_path / "d.mrg"))["tokens"] == stats["tokens"]
    assert _stats(capsys, "demo")["sentences"] == 2000


def test_stats_parallel_and_alignments(corpora, capsys):
    root = corpora / "align"
    out = _stats(capsys, str(root / "ro-en" / "roen.src-tgt"), "--parallel")
    assert (out["pairs"], out["source_tokens"], out["target_tokens"]) == (248, 5495, 5639)
    out = _stats(capsys, str(root / "en-fr" / "trial.e"), "--target", str(root / "en-fr" / "trial.f"))
    assert (out["pairs"], out["source_tokens"], out["target_tokens"]) == (37, 661, 721)
    out = _stats(capsys, str(root / "en-fr" / "test.wa.nonullalign"), "--alignments", "naacl")
    assert (out["pairs"], out["sure_links"], out["possible_only_links"]) == (447, 4038, 13400)
    out = _stats(capsys, str(root / "ja-en" / "jaen.gold"), "--alignments", "pharaoh", "--base", "1")
    assert (out["pairs"], out["sure_links"], out["possible_only_links"]) == (582, 13562, 0)

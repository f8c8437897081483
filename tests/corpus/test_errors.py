"""Malformed input: one CorpusFormatError per error class, with file, line, text and expectation."""

from __future__ import annotations

import pytest

from induce.cli import main
from induce.corpus import read_alignments, read_parallel, read_sentences
from induce.errors import CorpusFormatError

CONLLU_OK = "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n2\tdog\tdog\tNOUN\tNN\t_\t0\troot\t_\t_\n"
MALT_OK = "The\tDT\t2\ndog\tNN\t0\n"


def _error(path, fmt="auto", **kw) -> CorpusFormatError:
    with pytest.raises(CorpusFormatError) as info:
        list(read_sentences(path, fmt, **kw))
    err = info.value
    assert err.path == str(path)
    assert str(path) in str(err) and "expected" in str(err)
    return err


def test_wrong_column_count_conllx(write):
    text = "1\tA\ta\tN\tNN\t_\t0\tROOT\t_\t_\n2\tB\tb\tN\tNN\t_\t1\n"
    err = _error(write("bad.conll", text))
    assert err.line == 2 and err.text == "2\tB\tb\tN\tNN\t_\t1" and "10 TAB-separated columns" in err.expected


def test_wrong_column_count_conllu(write):
    err = _error(write("bad.conllu", "# sent_id = 1\n" + CONLLU_OK.replace("\tdet\t_\t_", "\tdet")))
    assert err.line == 2 and "10 TAB-separated CoNLL-U columns" in err.expected


def test_wrong_column_count_conll2000(write):
    err = _error(write("train.txt", "He PRP B-NP\nran VBD B-VP\n\nx\n"), "conll2000")
    assert err.line == 4 and err.text == "x"


def test_non_integer_head_malt(write):
    err = _error(write("a.dp", "The\tDT\t2\ndog\tNN\troot\n"))
    assert err.line == 2 and "integer head" in err.expected and "'root'" in err.expected


def test_non_integer_head_conllu(write):
    err = _error(write("a.conllu", "# c\n" + CONLLU_OK.replace("\t2\tdet", "\tx\tdet")))
    assert err.line == 2 and "head" in err.expected


def test_head_out_of_range(write):
    err = _error(write("a.dp", "The\tDT\t3\ndog\tNN\t0\n"))
    assert err.line == 1 and "between 0 and 2" in err.expected


def test_head_cycle(write):
    # 1 -> 2 -> 3 -> 2: tokens 2 and 3 form a cycle (token 4 is the root)
    text = "a\tX\t2\nb\tX\t3\nc\tX\t2\nd\tX\t0\n\n"
    err = _error(write("a.dp", "x\tX\t0\n\n" + text))
    assert err.line == 4 and "acyclic" in err.expected


def test_self_loop_is_a_cycle(write):
    err = _error(write("a.conllu", CONLLU_OK.replace("\t2\tdet", "\t1\tdet")))
    assert err.line == 1 and "acyclic" in err.expected


def test_unbalanced_bracket_unclosed(write):
    err = _error(write("a.mrg", "( (S (NP (DT the) (NN dog)) (VP (VBD ran)) )\n\n( (S (NN x)))\n"))
    assert err.line == 1 and "lacks 1 closing" in err.expected


def test_unbalanced_bracket_extra_close(write):
    err = _error(write("a.mrg", "( (S (NN x)))\n(NN y)))\n"))
    assert err.line == 2 and "no open '('" in err.expected


def test_invalid_utf8_reports_line(write):
    err = _error(write("a.dp", b"The\tDT\t2\ndog\tNN\t0\n\ni\xf1aki\tNNP\t0\n"))
    assert err.line == 4 and "UTF-8" in err.expected and "column 2" in err.expected
    # the same file is fine when its real encoding is given
    assert [s.words for s in read_sentences(err.path, encoding="latin-1")][1] == ["iñaki"]


def test_empty_file(write):
    err = _error(write("a.conllu", "\n\n  \n"))
    assert err.line == 1 and "non-empty" in err.expected


def test_brown_token_without_tag(write):
    err = _error(write("ca01", "\tThe/at dog/nn ran\n"))
    assert err.line == 1 and "word/TAG" in err.expected


def test_undecidable_format(write):
    err = _error(write("a.txt", "a\tb\nc\td\te\n"))
    assert "pass the format" in err.expected


def test_missing_file(tmp_path):
    err = _error(tmp_path / "nope.conllu")
    assert "existing" in err.expected


def test_parallel_line_count_mismatch(write):
    src, tgt = write("a.e", "a b\nc\nd\n"), write("a.f", "x\ny\n")
    with pytest.raises(CorpusFormatError) as info:
        list(read_parallel(src, tgt))
    assert info.value.path == str(tgt) and info.value.line == 3


def test_parallel_missing_separator(write):
    with pytest.raises(CorpusFormatError) as info:
        list(read_parallel(write("a.txt", "a ||| b\nc d\n")))
    assert info.value.line == 2


def test_alignment_errors(write):
    with pytest.raises(CorpusFormatError) as info:
        read_alignments(write("a.wa", "1 1 1 S\n1 2 x P\n"), "naacl")
    assert info.value.line == 2
    with pytest.raises(CorpusFormatError) as info:
        read_alignments(write("b.wa", "0-0 1:1\n"), "pharaoh")
    assert info.value.line == 1 and "'1:1'" in str(info.value)
    with pytest.raises(CorpusFormatError) as info:
        read_alignments(write("c.wa", "1-1 0-2\n"), "pharaoh", one_based=True)
    assert "1-based" in info.value.expected


def test_cli_prints_one_line_and_exits_2(write, capsys):
    path = write("a.dp", "The\tDT\t3\ndog\tNN\t0\n")
    assert main(["corpus", "stats", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{path}:1:" in err

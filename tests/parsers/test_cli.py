"""``induce parse`` end to end."""

from __future__ import annotations

import json

import pytest

from induce.cli import main
from induce.corpus.formats import read_sentences


@pytest.fixture
def plain(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the dog saw a cat\na cat saw the dog\nthe dog ran\na cat ran\n")
    return path


@pytest.mark.parametrize("infer", ["em", "vi", "cvi", "mh"])
def test_pcfg_on_plain_text(plain, tmp_path, infer, capsys):
    out = tmp_path / "out.mrg"
    rc = main(["parse", "--model", "pcfg", "--infer", infer, "--nonterminals", "3", "--iterations", "2",
               "--quiet", "--json", str(plain), "-o", str(out)])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sentences"] == 4
    trees = list(read_sentences(out, "ptb"))
    assert [t.words for t in trees][0] == ["the", "dog", "saw", "a", "cat"]


def test_dmv_mh_is_rejected(plain, tmp_path, capsys):
    rc = main(["parse", "--model", "dmv", "--infer", "mh", "--quiet", str(plain), "-o", str(tmp_path / "o")])
    assert rc == 2
    assert "mh" in capsys.readouterr().err


def test_dmv_on_ewt_writes_conllu_with_heads(corpora, tmp_path, capsys):
    out = tmp_path / "out.conllu"
    model = tmp_path / "m.npz"
    rc = main(["parse", "--model", "dmv", "--infer", "cvi", "--use-tags", "--strip-punct", "--max-length", "6",
               "--iterations", "3", "--quiet", "--json", "--save-model", str(model),
               str(corpora / "ud/en_ewt/en_ewt-ud-test.conllu"), "-o", str(out)])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert 0.0 < result["attachment"]["directed"] < 1.0
    sents = list(read_sentences(out, "conllu"))
    assert len(sents) == result["sentences"]
    assert all(sum(h == 0 for h in s.heads) == 1 for s in sents)
    assert model.exists()


def test_pcfg_on_wsj10_prints_bracket_scores(corpora, tmp_path, capsys):
    out = tmp_path / "out.mrg"
    rc = main(["parse", "--model", "pcfg", "--infer", "em", "--use-tags", "--wsj10", "--strip-punct",
               "--nonterminals", "4", "--iterations", "2", "--quiet", "--json",
               str(corpora / "ptb-sample"), "-o", str(out)])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sentences"] == 555
    assert 0.0 < result["unlabeled_brackets"]["f1"] < 1.0


def test_pcfg_with_grammar_file_and_saved_model(plain, tmp_path, capsys):
    grammar = tmp_path / "g.cfg"
    grammar.write_text("S -> NP VP\nNP -> D N\nVP -> V NP 0.5\nVP -> ran 0.5\nD -> the\nD -> a\n"
                       "N -> dog\nN -> cat\nV -> saw\n")
    out, saved = tmp_path / "out.mrg", tmp_path / "m.npz"
    rc = main(["parse", "--model", "pcfg", "--infer", "mh", "--grammar", str(grammar), "--iterations", "5",
               "--quiet", "--json", "--save-model", str(saved), str(plain), "-o", str(out)])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["acceptance_rate"] > 0.5
    first = next(read_sentences(out, "ptb")).tree
    assert first.label() in ("", "S")
    assert "(NP (D the) (N dog))" in " ".join(str(first).split())


def test_dmv_on_the_demo_corpus_writes_conllu(tmp_path, capsys):
    out = tmp_path / "demo.conllu"
    rc = main(["parse", "demo", "--model", "dmv", "--infer", "cvi", "--use-tags", "--iterations", "2",
               "--quiet", "--json", "-o", str(out)])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["sentences"] == len(list(read_sentences(out, "conllu")))
    assert 0.0 <= result["attachment"]["directed"] <= 1.0

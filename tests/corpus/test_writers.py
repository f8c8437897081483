"""Writers: read -> write -> read gives identical records; induced tags land where documented."""

from __future__ import annotations

import pytest

from induce.corpus import read_sentences
from induce.corpus.writers import (
    write_conllu,
    write_conllx_heads,
    write_ptb,
    write_sentences,
    write_tagged,
)

REAL = [
    ("ptb-sample/wsj_0001.mrg", "ptb", "utf-8"),
    ("ptb-sample/wsj_0003.mrg", "ptb", "utf-8"),
    ("wsj-dep-sample/wsj_0003.dp", "malt", "utf-8"),
    ("conll2000/test.txt", "conll2000", "utf-8"),
    ("conll2007/eus.test", "conllx", "latin-1"),
    ("conll2007/esp.test", "conllx", "utf-8"),
    ("brown/ca01", "brown", "utf-8"),
    ("ud/en_ewt/en_ewt-ud-dev.conllu", "conllu", "utf-8"),
    ("ud/fr_gsd/fr_gsd-ud-test.conllu", "conllu", "utf-8"),
    ("align/de-en/test.de", "plain", "utf-8"),
]

MWT = (
    "# sent_id = 1\n# text = Je vais au marché.\n"
    "1\tJe\til\tPRON\t_\tNumber=Sing|Person=1\t2\tnsubj\t_\t_\n"
    "2\tvais\taller\tVERB\t_\t_\t0\troot\t_\t_\n"
    "3-4\tau\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tà\tà\tADP\t_\t_\t5\tcase\t_\t_\n"
    "4\tle\tle\tDET\t_\t_\t5\tdet\t_\t_\n"
    "4.1\tgrand\tgrand\tADJ\t_\t_\t_\t_\t5:amod\t_\n"
    "5\tmarché\tmarché\tNOUN\t_\t_\t2\tobl\t_\tSpaceAfter=No\n"
    "6\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n"
)


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x.words, x.tags, x.heads, x.deprels, x.tree) == (y.words, y.tags, y.heads, y.deprels, y.tree)
        assert x.record == y.record


@pytest.mark.parametrize("path,fmt,encoding", REAL, ids=[r[0] for r in REAL])
def test_round_trip_real(corpora, tmp_path, path, fmt, encoding):
    original = list(read_sentences(corpora / path, fmt, encoding=encoding))
    out = tmp_path / "out"
    write_sentences(out, original, fmt)
    again = list(read_sentences(out, fmt))
    assert len(again) == len(original) > 0
    _same(original, again)


def test_ptb_cleaned_trees_round_trip(corpora, tmp_path):
    original = list(read_sentences(corpora / "ptb-sample" / "wsj_0002.mrg"))
    write_ptb(tmp_path / "t.mrg", [s.tree for s in original])
    again = list(read_sentences(tmp_path / "t.mrg"))
    assert [s.tree for s in again] == [s.tree for s in original]


def test_conllu_multiword_tokens_and_empty_nodes(write, tmp_path):
    (sent,) = read_sentences(write("a.conllu", MWT))
    assert sent.words == ["Je", "vais", "à", "le", "marché", "."]
    assert sent.heads == [2, 0, 5, 5, 2, 2] and sent.tags == {"upos": ["PRON", "VERB", "ADP", "DET", "NOUN", "PUNCT"]}
    write_conllu(tmp_path / "b.conllu", [sent])
    assert (tmp_path / "b.conllu").read_text(encoding="utf-8") == MWT
    write_conllu(tmp_path / "c.conllu", [sent], [[7, 1, 2, 3, 4, 5]], column="xpos")
    (tagged,) = read_sentences(tmp_path / "c.conllu")
    assert tagged.tags["xpos"] == ["7", "1", "2", "3", "4", "5"] and tagged.tags["upos"] == sent.tags["upos"]
    assert [t["form"] for t in tagged.record] == [t["form"] for t in sent.record]
    write_conllu(tmp_path / "d.conllu", [sent], [list(range(6))], column="induced")
    (misc,) = read_sentences(tmp_path / "d.conllu")
    words = [t for t in misc.record if isinstance(t["id"], int)]
    assert [t["misc"]["induced"] for t in words] == [str(k) for k in range(6)]
    assert words[4]["misc"]["SpaceAfter"] == "No"
    assert misc.tags == sent.tags | {"induced": [str(k) for k in range(6)]}


def _states(sentences):
    return [[(k * 3) % 5 for k in range(len(s))] for s in sentences]


@pytest.mark.parametrize(
    "path,fmt,encoding,column,where",
    [
        ("conll2000/test.txt", "conll2000", "utf-8", None, "induced"),
        ("conll2000/test.txt", "conll2000", "utf-8", "chunk", "chunk"),
        ("wsj-dep-sample/wsj_0003.dp", "malt", "utf-8", None, "induced"),
        ("conll2007/esp.test", "conllx", "utf-8", None, "induced"),
        ("conll2007/esp.test", "conllx", "utf-8", "pos", "pos"),
        ("ud/en_ewt/en_ewt-ud-test.conllu", "conllu", "utf-8", None, "upos"),
        ("brown/ca02", "brown", "utf-8", None, "pos"),
        ("ptb-sample/wsj_0004.mrg", "ptb", "utf-8", None, "induced"),  # GOLD=INDUCED preterminals
    ],
)
def test_write_tagged_every_format(corpora, tmp_path, path, fmt, encoding, column, where):
    original = list(read_sentences(corpora / path, fmt, encoding=encoding))
    states = _states(original)
    out = tmp_path / "tagged"
    write_tagged(out, original, states, fmt, column)
    again = list(read_sentences(out, fmt))
    assert [s.words for s in again] == [s.words for s in original]
    assert [s.tags[where] for s in again] == [[str(v) for v in st] for st in states]
    for name in set(original[0].tags) - {where}:
        assert [s.tags[name] for s in again] == [s.tags[name] for s in original]
    assert [s.heads for s in again] == [s.heads for s in original]


def test_write_tagged_plain_gives_word_slash_tag(write, tmp_path):
    sentences = list(read_sentences(write("a.txt", "a b\nc\n"), "plain"))
    write_tagged(tmp_path / "t", sentences, [[1, 2], [3]], "plain")
    assert (tmp_path / "t").read_text() == "a/1 b/2\nc/3\n"
    assert [s.tags["pos"] for s in read_sentences(tmp_path / "t", "brown")] == [["1", "2"], ["3"]]


def test_write_conllx_heads(corpora, tmp_path):
    original = list(read_sentences(corpora / "conll2007" / "esp.test"))[:50]
    right_branching = [[k + 2 if k + 1 < len(s) else 0 for k in range(len(s))] for s in original]
    write_conllx_heads(tmp_path / "h.conll", original, right_branching)
    again = list(read_sentences(tmp_path / "h.conll", "conllx"))
    assert [s.heads for s in again] == right_branching
    assert all(set(s.deprels) == {"_"} for s in again)
    assert [s.tags for s in again] == [s.tags for s in original]
    with pytest.raises(ValueError):
        write_conllx_heads(tmp_path / "x.conll", original[:1], [[99] * len(original[0])])


def test_conllx_heads_from_conllu_and_demo(write, tmp_path):
    (sent,) = read_sentences(write("a.conllu", MWT))
    write_conllx_heads(tmp_path / "h.conll", [sent], [sent.heads], [sent.deprels])
    (again,) = read_sentences(tmp_path / "h.conll", "conllx")
    assert again.words == sent.words and again.heads == sent.heads and again.tags["cpos"] == sent.tags["upos"]


def test_demo_written_as_conllu_and_ptb(tmp_path):
    from induce.corpus.demo import demo_sentences

    demo = demo_sentences(40, seed=3)
    write_sentences(tmp_path / "d.conllu", demo, "conllu")
    write_sentences(tmp_path / "d.mrg", demo, "ptb")
    conllu_back = list(read_sentences(tmp_path / "d.conllu"))
    ptb_back = list(read_sentences(tmp_path / "d.mrg"))
    assert [s.words for s in conllu_back] == [s.words for s in demo] == [s.words for s in ptb_back]
    assert [s.heads for s in conllu_back] == [s.heads for s in demo]
    assert [s.tags for s in conllu_back] == [{"upos": s.tags["upos"], "xpos": s.tags["xpos"]} for s in demo]
    assert [s.tree for s in ptb_back] == [s.tree for s in demo]


def test_failed_write_keeps_old_file(write, tmp_path):
    sentences = list(read_sentences(write("a.dp", "a\tX\t0\n\nb\tX\t0\n")))
    out = tmp_path / "keep.conll"
    out.write_text("old\n")
    with pytest.raises(ValueError):  # the second sentence's head is invalid, after the first was written
        write_conllx_heads(out, sentences, [[0], [5]])
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.dp", "keep.conll"]

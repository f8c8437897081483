"""Every HMM algorithm (em, vi, cvi1, cvi2, cgs) runs from the CLI on every tagged corpus in ``shared/corpora``.

Each corpus is cut to its first sentences (the bytes as written, so encodings
and comment lines survive), tagged by ``induce tag`` with each of em, vi, cvi1,
cvi2 and cgs, and the output is read back: same sentences and words, one
induced tag per token, metrics against the corpus's own gold column.
"""

from __future__ import annotations

import json

import pytest

from induce.cli import main
from induce.corpus.formats import read_sentences

ALGORITHMS = ("em", "vi", "cvi1", "cvi2", "cgs")
N_SENTENCES = 40

# (path under shared/corpora, format, encoding, gold column)
TAGGED = [
    ("ptb-sample/wsj_0003.mrg", "ptb", "utf-8", "pos"),
    ("wsj-dep-sample/wsj_0003.dp", "malt", "utf-8", "pos"),
    ("brown/ca01", "brown", "utf-8", "pos"),
    ("conll2000/test.txt", "conll2000", "utf-8", "pos"),
    ("conll2007/eus.test", "conllx", "latin-1", "pos"),
    ("conll2007/esp.test", "conllx", "utf-8", "pos"),
] + [
    (f"ud/{tb}/{tb}-ud-test.conllu", "conllu", "utf-8", "upos")
    for tb in ("de_gsd", "el_gdt", "en_ewt", "fr_gsd", "hu_szeged", "ja_gsd", "tr_imst", "vi_vtb", "zh_gsdsimp")
]


def _head(source, dest, fmt: str) -> None:
    """The first sentences of ``source``: blank-line blocks, Brown lines, or the whole (small) file."""
    data = source.read_bytes()
    if fmt in ("brown", "ptb", "malt"):
        dest.write_bytes(data)
        return
    blocks = [b for b in data.replace(b"\r\n", b"\n").split(b"\n\n") if b.strip()]
    dest.write_bytes(b"\n\n".join(blocks[:N_SENTENCES]) + b"\n\n")


@pytest.fixture(scope="module")
def cut(corpora, tmp_path_factory):
    root = tmp_path_factory.mktemp("every_corpus")
    files = {}
    for path, fmt, _, _ in TAGGED:
        dest = root / path.replace("/", "_")
        _head(corpora / path, dest, fmt)
        files[path] = dest
    return files


@pytest.mark.parametrize("path, fmt, encoding, gold", TAGGED, ids=[t[0].split("/")[-1] for t in TAGGED])
def test_every_algorithm_tags_the_corpus(cut, tmp_path, capsys, path, fmt, encoding, gold):
    source = cut[path]
    sents = list(read_sentences(source, fmt, encoding=encoding))
    n_tokens = sum(len(s.words) for s in sents)
    assert n_tokens > 100 and gold in sents[0].tags
    for infer in ALGORITHMS:
        out, metrics = tmp_path / f"{infer}.out", tmp_path / f"{infer}.json"
        code = main(["tag", str(source), "--encoding", encoding, "--infer", infer, "--states", "6",
                     "--iterations", "3", "--gold-column", gold, "--quiet", "-o", str(out), "--json", str(metrics)])
        assert code == 0, (path, infer, capsys.readouterr().err)
        result = json.loads(metrics.read_text())
        assert result["tokens"] == n_tokens and result["gold_column"] == gold
        assert 0.0 < result["m1"] <= 1.0 and result["vi"] >= 0.0
        tagged = list(read_sentences(out, fmt))
        assert [s.words for s in tagged] == [s.words for s in sents], (path, infer)
    capsys.readouterr()

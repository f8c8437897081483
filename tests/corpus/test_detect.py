"""Format detection by extension, file name and content; directories; the demo corpus."""

from __future__ import annotations

import pytest

from induce.corpus import FORMATS, detect_format, read_sentences
from induce.errors import ConfigError

CONLLX = "1\tA\ta\tN\tNN\t_\t0\tROOT\t_\t_\n"
CONLLU_NO_COMMENT = "1\tA\ta\tNOUN\tNN\t_\t0\troot\t_\t_\n"


@pytest.mark.parametrize(
    "name,text,fmt",
    [
        ("x.conllu", CONLLX, "conllu"),
        ("x.conll", CONLLU_NO_COMMENT, "conllx"),
        ("x.mrg", "(S (NN a))\n", "ptb"),
        ("x.dp", "a\tNN\t0\n", "malt"),
        ("cb12", "a/nn\n", "brown"),
        ("x.data", "# sent_id = 1\n" + CONLLX, "conllu"),
        ("x.data", CONLLU_NO_COMMENT, "conllu"),
        ("x.data", CONLLX, "conllx"),
        ("x.data", "\n( (S (NN a)) )\n", "ptb"),
        ("x.data", "a\tNN\t2\nb\tVB\t0\n", "malt"),
        ("x.data", "He PRP B-NP\nran VBD O\n", "conll2000"),
        ("x.data", "The/at dog/nn ./.\n", "brown"),
        ("x.data", "The dog barked .\n", "plain"),
    ],
)
def test_detect(write, name, text, fmt):
    assert detect_format(write(name, text)) == fmt
    assert fmt in FORMATS


def test_detect_real_directories(corpora):
    assert detect_format(corpora / "ptb-sample") == "ptb"
    assert detect_format(corpora / "wsj-dep-sample") == "malt"
    assert detect_format(corpora / "brown") == "brown"
    assert detect_format(corpora / "conll2000") == "conll2000"
    assert detect_format(corpora / "ud" / "en_ewt") == "conllu"
    assert detect_format(corpora / "extras" / "alice" / "carroll-alice.txt") == "plain"


def test_directory_reads_data_files_in_order(write, tmp_path):
    write("README", "not data\n")
    write("cats.txt", "ca01 news\n")
    write("cb01", "b/nn\n")
    write("ca01", "a/nn\n\n\tc/vb d/at\n")
    sents = list(read_sentences(tmp_path))
    assert [s.words for s in sents] == [["a"], ["c", "d"], ["b"]]
    assert [s.source for s in sents] == [(str(tmp_path / "ca01"), 1), (str(tmp_path / "ca01"), 3), (str(tmp_path / "cb01"), 1)]


def test_demo_and_options():
    sents = list(read_sentences("demo", n_sentences=5, seed=1))
    assert len(sents) == 5 and sents[0].heads is not None and sents[0].tree is not None
    with pytest.raises(ConfigError):
        list(read_sentences("demo.conllu", "conllu", n_sentences=5))
    with pytest.raises(ConfigError):
        list(read_sentences("x", "nonsense"))

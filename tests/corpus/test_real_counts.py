"""Every reader on every matching shared corpus: counts equal to corpora/README.md."""

from __future__ import annotations

import pytest

from induce.corpus import detect_format, read_sentences
from induce.corpus.read_brown import add_base_tags, base_tag

# path, format, encoding, sentences, tokens (README table; UD tokens = syntactic words)
TABLE = [
    ("ptb-sample", "ptb", "utf-8", 3914, 94084),
    ("wsj-dep-sample", "malt", "utf-8", 3914, 94084),
    ("conll2000/train.txt", "conll2000", "utf-8", 8936, 211727),
    ("conll2000/test.txt", "conll2000", "utf-8", 2012, 47377),
    ("conll2007/eus.train", "conllx", "latin-1", 2595, 40032),
    ("conll2007/eus.test", "conllx", "latin-1", 580, 10096),
    ("conll2007/esp.train", "conllx", "utf-8", 2949, 75822),
    ("conll2007/esp.test", "conllx", "utf-8", 563, 19206),
    ("ud/en_ewt/en_ewt-ud-train.conllu", "conllu", "utf-8", 12544, 204577),
    ("ud/en_ewt/en_ewt-ud-dev.conllu", "conllu", "utf-8", 2001, 25147),
    ("ud/en_ewt/en_ewt-ud-test.conllu", "conllu", "utf-8", 2077, 25094),
    ("ud/tr_imst/tr_imst-ud-train.conllu", "conllu", "utf-8", 3435, 37522),
    ("ud/tr_imst/tr_imst-ud-dev.conllu", "conllu", "utf-8", 1100, 10542),
    ("ud/tr_imst/tr_imst-ud-test.conllu", "conllu", "utf-8", 1100, 10032),
    ("ud/hu_szeged/hu_szeged-ud-train.conllu", "conllu", "utf-8", 910, 20166),
    ("ud/hu_szeged/hu_szeged-ud-dev.conllu", "conllu", "utf-8", 441, 11418),
    ("ud/hu_szeged/hu_szeged-ud-test.conllu", "conllu", "utf-8", 449, 10448),
    ("ud/vi_vtb/vi_vtb-ud-train.conllu", "conllu", "utf-8", 1400, 20215),
    ("ud/vi_vtb/vi_vtb-ud-dev.conllu", "conllu", "utf-8", 1123, 26162),
    ("ud/vi_vtb/vi_vtb-ud-test.conllu", "conllu", "utf-8", 800, 11692),
    ("ud/el_gdt/el_gdt-ud-train.conllu", "conllu", "utf-8", 1662, 42326),
    ("ud/el_gdt/el_gdt-ud-dev.conllu", "conllu", "utf-8", 403, 10443),
    ("ud/el_gdt/el_gdt-ud-test.conllu", "conllu", "utf-8", 456, 10672),
    ("ud/de_gsd/de_gsd-ud-dev.conllu", "conllu", "utf-8", 799, 12480),
    ("ud/de_gsd/de_gsd-ud-test.conllu", "conllu", "utf-8", 977, 16499),
    ("ud/fr_gsd/fr_gsd-ud-dev.conllu", "conllu", "utf-8", 1476, 35721),
    ("ud/fr_gsd/fr_gsd-ud-test.conllu", "conllu", "utf-8", 416, 10018),
    ("ud/zh_gsdsimp/zh_gsdsimp-ud-dev.conllu", "conllu", "utf-8", 500, 12663),
    ("ud/zh_gsdsimp/zh_gsdsimp-ud-test.conllu", "conllu", "utf-8", 500, 12012),
    ("ud/ja_gsd/ja_gsd-ud-dev.conllu", "conllu", "utf-8", 507, 12287),
    ("ud/ja_gsd/ja_gsd-ud-test.conllu", "conllu", "utf-8", 543, 13034),
    ("brown", "brown", "utf-8", 57340, 1161192),
]
# Tag columns each format yields.
COLUMNS = {
    "ptb": {"pos"},
    "malt": {"pos"},
    "conll2000": {"pos", "chunk"},
    "conllx": {"cpos", "pos"},
    "conllu": {"upos"},
    "brown": {"pos"},
}
HAS_HEADS = {"malt", "conllx", "conllu"}


@pytest.mark.parametrize("path,fmt,encoding,n_sentences,n_tokens", TABLE, ids=[row[0] for row in TABLE])
def test_counts_equal_readme(corpora, path, fmt, encoding, n_sentences, n_tokens):
    assert detect_format(corpora / path, encoding) == fmt
    sentences = tokens = 0
    columns: set[str] = set()
    for sent in read_sentences(corpora / path, encoding=encoding):
        sentences += 1
        tokens += len(sent)
        columns.update(sent.tags)
        assert all(len(tags) == len(sent) for tags in sent.tags.values())
        assert (sent.heads is not None) == (fmt in HAS_HEADS)
        assert (sent.tree is not None) == (fmt == "ptb")
        assert sent.source[1] >= 1
    assert (sentences, tokens) == (n_sentences, n_tokens)
    assert COLUMNS[fmt] | ({"xpos"} if "en_ewt" in path else set()) <= columns


def test_ptb_sample_tagset_and_trees(corpora):
    sents = list(read_sentences(corpora / "ptb-sample"))
    tags = {t for s in sents for t in s.tags["pos"]}
    assert len(tags) == 45 and "-NONE-" not in tags
    labels = {st.label() for s in sents for st in s.tree.subtrees()}
    assert "NP" in labels and "-LRB-" in labels and not any("-SBJ" in l or "=" in l for l in labels)
    assert sents[0].source[0].endswith("wsj_0001.mrg") and sents[0].source[1] == 2  # line 1 is blank
    # the same words and tags as the dependency version of the same files
    deps = list(read_sentences(corpora / "wsj-dep-sample"))
    assert [s.words for s in sents] == [d.words for d in deps]
    assert [s.tags["pos"] for s in sents] == [d.tags["pos"] for d in deps]


def test_brown_tags_match_universal_map(corpora):
    from induce.corpus.transforms import load_universal_map

    mapping = load_universal_map(corpora / "universal-tagset" / "en-brown.map")
    first = next(read_sentences(corpora / "brown" / "ca01"))
    assert first.words[:2] == ["The", "Fulton"] and first.tags["pos"][:2] == ["AT", "NP-TL"]
    assert first.record[1] == ["Fulton", "np-tl"]
    tags = {t for s in read_sentences(corpora / "brown" / "ca01") for t in s.tags["pos"]}
    assert tags <= set(mapping)


def test_conllu_skips_multiword_tokens_and_empty_nodes(corpora):
    path = corpora / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"
    for sent in read_sentences(path):
        ids = [t["id"] for t in sent.record]
        if any(isinstance(i, tuple) and i[1] == "-" for i in ids) and any(isinstance(i, tuple) and i[1] == "." for i in ids):
            break
    else:
        pytest.fail("no en_ewt dev sentence with both a multiword token and an empty node")
    words = [t for t in sent.record if isinstance(t["id"], int)]
    assert sent.words == [t["form"] for t in words]
    assert len(sent.record) > len(sent)


@pytest.mark.parametrize(
    "tag, base",
    [("NN", "NN"), ("NN-TL", "NN"), ("NN-TL-HL", "NN"), ("FW-IN+AT", "IN"), ("PPS+BEZ", "PPS"),
     ("NP$", "NP$"), ("BEZ*", "BEZ*"), ("FW-NN-TL", "NN"), ("--", "--"), ("-HL", "-HL")],
)
def test_brown_base_tag(tag, base):
    assert base_tag(tag) == base


def test_brown_base_tags_on_the_corpus(corpora):
    """The 472 full tags of the shared Brown corpus reduce to 104 base tags, one per token."""
    full, bases, n = set(), set(), 0
    for sent in read_sentences(corpora / "brown"):
        sent = add_base_tags(sent)
        assert len(sent.tags["base"]) == len(sent.words)
        full.update(sent.tags["pos"])
        bases.update(sent.tags["base"])
        n += len(sent.words)
    assert (len(full), len(bases), n) == (472, 104, 1161192)
    assert {"NN", "NP$", "BEZ*", "PPS"} <= bases and not any(b.endswith("-TL") for b in bases)

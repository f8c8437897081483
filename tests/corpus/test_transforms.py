"""Transforms on hand-made sentences."""

from __future__ import annotations

import numpy as np
import pytest
from nltk import Tree

from induce.corpus import Sentence, load_corpus
from induce.corpus.transforms import (
    is_wsj10,
    load_universal_map,
    lowercase,
    map_universal,
    normalize_digits,
    punctuation_mask,
    reattach_heads,
    replace_unknown,
    strip_punctuation,
    word_shape,
)
from induce.errors import ConfigError


def _sentence() -> Sentence:
    # "Prices , he said , rose ." with a tree and heads
    tree = Tree.fromstring(
        "(S (S (NP (NNS Prices)) (PRN (, ,) (S (NP (PRP he)) (VP (VBD said))) (, ,)) (VP (VBD rose))) (. .))"
    )
    words, pos = map(list, zip(*tree.pos()))
    return Sentence(
        words=words,
        tags={"pos": pos},
        heads=[6, 4, 4, 6, 4, 0, 6],
        deprels=["nsubj", "punct", "nsubj", "parataxis", "punct", "root", "punct"],
        tree=tree,
        source=("x", 1),
        record=[[w] for w in words],
    )


def test_lowercase_and_digits_keep_record():
    sent = Sentence(words=["The", "1,234.5", "٣"], record=[["The"], ["1,234.5"], ["٣"]])
    assert lowercase(sent).words == ["the", "1,234.5", "٣"]
    out = normalize_digits(sent)
    assert out.words == ["The", "0,000.0", "0"] and out.record == sent.record
    assert sent.words == ["The", "1,234.5", "٣"]  # input untouched


@pytest.mark.parametrize(
    "word,shape",
    [
        ("Running", "<unk-initc-ing>"),
        ("IBM", "<unk-caps>"),
        ("well-known", "<unk-lc-dash>"),
        ("1990s", "<unk-lc-num-s>"),
        ("3,000", "<unk-num>"),
        ("quickly", "<unk-lc-ly>"),
        ("cats", "<unk-lc-s>"),
        ("Co-Op", "<unk-initc-dash>"),
        ("%", "<unk>"),
    ],
)
def test_word_shape(word, shape):
    assert word_shape(word) == shape


def test_replace_unknown_modes():
    sent = Sentence(words=["the", "Zorbing", "cat"])
    assert replace_unknown(sent, {"the", "cat"}).words == ["the", "<unk>", "cat"]
    assert replace_unknown(sent, {"the", "cat"}, "shape").words == ["the", "<unk-initc-ing>", "cat"]
    with pytest.raises(ConfigError):
        replace_unknown(sent, set(), "nope")


def test_punctuation_mask_by_column():
    sent = _sentence()
    assert punctuation_mask(sent).tolist() == [False, True, False, False, True, False, True]
    ud = Sentence(words=["a", "$", "!"], tags={"upos": ["X", "SYM", "PUNCT"], "xpos": ["X", "X", "X"]})
    assert punctuation_mask(ud).tolist() == [False, True, True]
    untagged = Sentence(words=["Hello", ",", "world", "...", "n't"])
    assert punctuation_mask(untagged).tolist() == [False, True, False, True, False]


def test_wsj10_counts_words_without_punctuation():
    sent = Sentence(words=list("abcdefghij") + [".", ","], tags={"pos": ["NN"] * 10 + [".", ","]})
    assert is_wsj10(sent)
    longer = Sentence(words=sent.words + ["k"], tags={"pos": sent.tags["pos"] + ["NN"]})
    assert not is_wsj10(longer)


def test_strip_punctuation_heads_tree_and_record():
    out = strip_punctuation(_sentence())
    assert out.words == ["Prices", "he", "said", "rose"]
    assert out.tags["pos"] == ["NNS", "PRP", "VBD", "VBD"]
    assert out.heads == [4, 3, 4, 0]
    assert out.deprels == ["nsubj", "nsubj", "parataxis", "root"]
    assert out.tree == Tree.fromstring("(S (S (NP (NNS Prices)) (PRN (S (NP (PRP he)) (VP (VBD said)))) (VP (VBD rose))))")
    assert out.record is None


def test_reattach_heads_to_nearest_kept_ancestor():
    # 1 <- 2 (punct) <- 3: token 3's head is removed, it goes to token 1; token 1 is the root
    heads = np.array([0, 1, 2, 2], dtype=np.int64)
    keep = np.array([True, False, True, True])
    assert reattach_heads(heads, keep).tolist() == [0, 1, 1]
    # removing the root attaches its dependents to the root position 0
    assert reattach_heads(np.array([2, 0, 2], dtype=np.int64), np.array([True, False, True])).tolist() == [0, 0]


def test_universal_mapping(corpora):
    mapping = load_universal_map("en-ptb")
    assert mapping["NNS"] == "NOUN" and mapping["-LRB-"] == "."
    sent = map_universal(_sentence(), mapping)
    assert sent.tags["universal"] == ["NOUN", ".", "PRON", "VERB", ".", "VERB", "."]
    assert map_universal(Sentence(words=["x"], tags={"pos": ["???"]}), mapping).tags["universal"] == ["X"]
    with pytest.raises(ConfigError):
        load_universal_map("no-such-map")


def test_load_corpus_options(write):
    path = write("a.txt", "The cat sat\nthe Dog sat 12\nA cat , 7 .\n")
    corpus = load_corpus(path, "plain", lowercase=True, normalize_digits=True)
    assert corpus.words(1) == ["the", "dog", "sat", "00"]
    rare = load_corpus(path, "plain", unk_threshold=2)
    assert rare.vocab.unk == "<unk>" and rare.words(0) == ["<unk>", "cat", "sat"]
    assert rare.sentences[0].record == [["The"], ["cat"], ["sat"]]
    shaped = load_corpus(path, "plain", unk_threshold=2, unk_mode="shape", keep_sentences=False)
    assert shaped.words(1) == ["<unk-lc>", "<unk-initc>", "sat", "<unk-num>"] and shaped.sentences is None
    assert load_corpus(path, "plain", max_length=3).n_sentences == 1
    assert load_corpus(path, "plain", strip_punct=True).words(2) == ["A", "cat", "7"]
    test = load_corpus(write("b.txt", "the cat barked\n"), "plain", vocab=rare.vocab)
    assert test.words(0) == ["<unk>", "cat", "<unk>"] and len(rare.vocab) == len(test.vocab)
    with pytest.raises(ConfigError):
        load_corpus(path, "plain", unk_mode="bogus")


def test_load_corpus_wsj10_on_ptb_sample(corpora):
    full = load_corpus(corpora / "ptb-sample", universal_map="en-ptb", keep_sentences=False)
    assert set(full.tag_vocabs) == {"pos", "universal"} and len(full.tag_vocabs["universal"]) == 12
    short = load_corpus(corpora / "ptb-sample", wsj10=True, strip_punct=True)
    assert 0 < short.n_sentences < full.n_sentences
    assert short.lengths.max() <= 10
    assert not any(t in {",", ".", "``", "''", ":"} for t in short.tag_vocabs["pos"])
    assert all(s.tree.leaves() == s.words for s in short.sentences)

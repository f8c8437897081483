"""The built-in demo corpus: determinism, tree/dependency consistency, lexicon, exact statistics."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from induce.corpus.demo import (
    DEMO_GRAMMAR,
    demo_corpus,
    demo_sentences,
    demo_tag_hmm,
    grammar_spectral_radius,
)

DEPRELS = {"root", "nsubj", "obj", "det", "amod", "advmod", "case", "obl", "nmod", "cc", "conj",
           "punct", "aux", "mark", "ccomp", "acl:relcl", "nummod", "flat"}


@pytest.fixture(scope="module")
def sentences():
    return demo_sentences(600, seed=3)


def _signature(sents):
    return [(s.words, s.tags, s.heads, s.deprels, str(s.tree)) for s in sents]


def test_same_seed_same_output_and_seeds_differ():
    a, b = demo_sentences(50, seed=7), demo_sentences(50, seed=7)
    assert _signature(a) == _signature(b)
    assert [s.words for s in demo_sentences(50, seed=8)] != [s.words for s in a]
    # a prefix of a longer draw is the shorter draw (one generator, sentences in order)
    assert _signature(demo_sentences(20, seed=7)) == _signature(a[:20])


def test_columns_aligned_and_tree_matches_words_and_xpos(sentences):
    for s in sentences:
        n = len(s.words)
        assert len(s.tags["xpos"]) == len(s.tags["upos"]) == len(s.heads) == len(s.deprels) == n
        assert s.tree.leaves() == s.words
        assert [tag for _, tag in s.tree.pos()] == s.tags["xpos"]
        assert s.tree.label() == "S"
        assert s.record is None


def _is_ancestor(heads, a, d):
    """Whether 1-based word ``a`` dominates 1-based word ``d`` (``a == d`` counts)."""
    while d != 0:
        if d == a:
            return True
        d = heads[d - 1]
    return False


def test_heads_form_single_rooted_projective_tree(sentences):
    for s in sentences:
        heads, n = s.heads, len(s.heads)
        assert all(0 <= h <= n for h in heads)
        roots = [i for i, h in enumerate(heads) if h == 0]
        assert len(roots) == 1 and s.deprels[roots[0]] == "root"
        assert all(rel != "root" for i, rel in enumerate(s.deprels) if i != roots[0])
        for d in range(1, n + 1):  # acyclic: every word reaches the root within n steps
            seen, x = 0, d
            while x != 0:
                x, seen = heads[x - 1], seen + 1
                assert seen <= n
        for d, h in enumerate(heads, start=1):
            if h:
                lo, hi = min(d, h), max(d, h)
                assert all(_is_ancestor(heads, h, k) for k in range(lo + 1, hi)), (s.words, d, h)


def test_every_constituent_has_exactly_one_external_head(sentences):
    """Head percolation: each constituent's words have one word headed outside it,
    and words outside never attach into a constituent except to that word."""
    for s in sentences:
        heads = s.heads
        for pos in s.tree.treepositions():
            node = s.tree[pos]
            if isinstance(node, str):
                continue
            start = _offset(s.tree, pos)
            span = range(start + 1, start + len(node.leaves()) + 1)
            external = [d for d in span if heads[d - 1] not in span]
            assert len(external) == 1, (str(node), s.words)


def _offset(tree, pos):
    """Number of words before the subtree at ``pos``."""
    total = 0
    for depth in range(len(pos)):
        parent = tree[pos[:depth]]
        total += sum(len(parent[j].leaves()) for j in range(pos[depth]))
    return total


def test_words_and_tags_come_from_the_lexicon(sentences):
    allowed = {(w, e["xpos"], e["upos"]) for e in DEMO_GRAMMAR["lexicon"].values() for w in e["words"]}
    for s in sentences:
        for triple in zip(s.words, s.tags["xpos"], s.tags["upos"]):
            assert triple in allowed
        assert set(s.deprels) <= DEPRELS
    # the lexicon is not toy-sized: a few dozen words for the open classes
    assert all(len(DEMO_GRAMMAR["lexicon"][t]["words"]) >= 20 for t in ("JJ", "NN", "NNS", "NNP", "VBD_T"))


def test_length_distribution(sentences):
    lengths = np.array([len(s) for s in sentences])
    assert lengths.min() >= 3 and lengths.max() <= 40
    assert 6 <= np.median(lengths) <= 14
    assert np.mean((lengths >= 3) & (lengths <= 25)) >= 0.9
    assert len(set(lengths)) >= 15
    with pytest.raises(ValueError):
        demo_sentences(5, max_len=2)


def test_grammar_is_proper_and_subcritical():
    for lhs, rules in DEMO_GRAMMAR["rules"].items():
        assert sum(p for p, _ in rules) == pytest.approx(1.0), lhs
    for entry in DEMO_GRAMMAR["lexicon"].values():
        assert sum(entry["words"].values()) == pytest.approx(1.0)
    assert grammar_spectral_radius() < 1.0


def test_demo_corpus_encodes_gold_columns():
    corpus = demo_corpus(100, seed=1)
    assert corpus.n_sentences == 100 and corpus.name == "demo"
    assert set(corpus.tags) == {"xpos", "upos"}
    assert corpus.heads is not None and len(corpus.heads) == corpus.n_tokens
    assert len(corpus.tag_vocabs["upos"]) <= 17


def test_tag_hmm_is_normalised():
    hmm = demo_tag_hmm("xpos")
    assert hmm.start.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(hmm.trans.sum(axis=1), 1.0)
    np.testing.assert_allclose(hmm.emit.sum(axis=1), 1.0)
    assert (hmm.trans >= 0).all() and (hmm.emit >= 0).all()
    i = hmm.tags.index
    assert hmm.trans[i("DT"), i("VBD")] == 0.0  # a determiner is never followed by a verb
    assert hmm.trans[i("."), -1] == 1.0  # sentence-final punctuation ends the sentence
    assert demo_tag_hmm("upos").tags[0] == "ADJ"


def test_tag_hmm_matches_sample_counts():
    """Exact expected bigram statistics against counts from a large sample
    (max_len high enough that length rejection practically never happens)."""
    hmm = demo_tag_hmm("xpos")
    sents = demo_sentences(8000, seed=11, max_len=300)
    k = len(hmm.tags)
    idx = {t: i for i, t in enumerate(hmm.tags)}
    start = np.zeros(k)
    pairs = np.zeros((k, k + 1))
    for s in sents:
        ids = [idx[t] for t in s.tags["xpos"]]
        start[ids[0]] += 1
        for a, b in zip(ids, ids[1:] + [k]):
            pairs[a, b] += 1
    lengths = np.array([len(s) for s in sents])
    assert abs(lengths.mean() - hmm.expected_counts.sum()) < 4 * lengths.std() / np.sqrt(len(sents))
    np.testing.assert_allclose(start / len(sents), hmm.start, atol=0.02)
    totals = pairs.sum(axis=1)
    frequent = totals > 2000
    np.testing.assert_allclose(pairs[frequent] / totals[frequent, None], hmm.trans[frequent], atol=0.02)
    counts = Counter(t for s in sents for t in s.tags["xpos"])
    observed = np.array([counts[t] for t in hmm.tags]) / len(sents)
    np.testing.assert_allclose(observed, hmm.expected_counts, rtol=0.05, atol=0.02)

"""Rule files, the CNF transform, and agreement with NLTK's Viterbi parser."""

from __future__ import annotations

import math

import numpy as np
import pytest

from induce.errors import CorpusFormatError
from induce.parsers import PCFGInducer, read_grammar, write_grammar
from induce.parsers.grammar import to_nltk

TOY = """# a toy grammar
S -> NP VP 1.0
NP -> Det N 0.6
NP -> she 0.4
VP -> V NP 0.7
VP -> V NP PP 0.3   # ternary: binarised
PP -> P NP
Det -> the 0.5
Det -> 'a' 0.5
N -> dog 0.5
N -> park 0.5
V -> saw
P -> in
"""


@pytest.fixture
def toy(tmp_path):
    path = tmp_path / "toy.cfg"
    path.write_text(TOY)
    return path


def _fixed(path, **kw):
    """A model holding the file's probabilities (no training passes, no noise)."""
    return PCFGInducer(grammar=str(path), infer="em", n_iter=0, init_noise=0.0, **kw).fit([["she", "saw", "she"]])


def test_binarised_grammar_keeps_string_probabilities(toy):
    g = read_grammar(toy)
    assert g.nonterminals[0] == "S"
    assert "VP|<NP.PP>" in g.nonterminals
    np.testing.assert_allclose(g.rows(g.binary, g.emit).sum(1), 1.0)
    model = PCFGInducer(grammar=g, n_iter=0, init_noise=0.0).fit([["she", "saw", "she"]])
    # she saw a dog in the park: 0.4 * 0.3 * (0.6*.5*.5) * (0.6*.5*.5) = hand computed
    p = 0.4 * 0.3 * 1.0 * (0.6 * 0.5 * 0.5) * 1.0 * (0.6 * 0.5 * 0.5)
    ll = model.log_likelihood([["she", "saw", "a", "dog", "in", "the", "park"]])
    assert ll[0] == pytest.approx(math.log(p))
    tree = model.parse([["she", "saw", "a", "dog", "in", "the", "park"]])[0]
    assert [t.label() for t in tree] == ["NP", "VP"]
    assert [t.label() for t in tree[1]] == ["V", "NP", "PP"]


def test_unary_rules_are_folded(tmp_path):
    path = tmp_path / "u.cfg"
    path.write_text("S -> A B 0.5\nS -> A 0.5\nA -> B 0.5\nA -> a 0.5\nB -> b\n")
    g = read_grammar(path)
    model = PCFGInducer(grammar=g, n_iter=0, init_noise=0.0).fit([["a"]])
    # P(a) = S->A * A->a = .25; P(b) = S->A * A->B * B->b = .25;
    # P(a b) = S->A B * A->a = .25; P(b b) = S->A B * A->B * B->b = .25; P(a a) = 0
    ll = model.log_likelihood([["a"], ["b"], ["a", "b"], ["b", "b"], ["a", "a"]])
    np.testing.assert_allclose(np.exp(ll), [0.25, 0.25, 0.25, 0.25, 0.0])


def test_unary_cycle_of_probability_one_is_rejected(tmp_path):
    path = tmp_path / "c.cfg"
    path.write_text("S -> A\nA -> S\n")
    with pytest.raises(CorpusFormatError):
        read_grammar(path)


def test_bad_rule_line_reports_file_and_line(tmp_path):
    path = tmp_path / "bad.cfg"
    path.write_text("S -> A B\nA => a\n")
    with pytest.raises(CorpusFormatError, match=r"bad\.cfg:2: expected a rule"):
        read_grammar(path)


def test_write_read_roundtrip(toy, tmp_path):
    g = read_grammar(toy)
    out = tmp_path / "out.cfg"
    write_grammar(out, g)
    g2 = read_grammar(out)
    assert g2.nonterminals == g.nonterminals and g2.terminals == g.terminals
    np.testing.assert_allclose(g2.binary, g.binary, atol=1e-6)
    np.testing.assert_allclose(g2.emit, g.emit, atol=1e-6)


def test_viterbi_agrees_with_nltk(toy):
    from nltk.parse import ViterbiParser

    model = _fixed(toy)
    sent = ["the", "dog", "saw", "a", "park", "in", "the", "park"]
    ref = ViterbiParser(to_nltk(read_grammar(toy))).parse_one(sent)
    assert model.viterbi_scores([sent])[0] == pytest.approx(math.log(ref.prob()))

"""Chain and branching baselines against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from nltk import Tree

from induce.eval.baselines import bracket_baselines, branching_brackets, chain_heads, dependency_baselines

OFFSETS = np.array([0, 3, 5, 6])  # sentences of 3, 2 and 1 words


def test_chain_heads_hand_case():
    assert chain_heads(OFFSETS, "left").tolist() == [0, 1, 2, 0, 1, 0]
    assert chain_heads(OFFSETS, "right").tolist() == [2, 3, 0, 2, 0, 0]
    with pytest.raises(ValueError):
        chain_heads(OFFSETS, "up")


def test_dependency_baselines_hand_case():
    # gold: s1 heads 2 0 2 (middle word root), s2 heads 0 1 (left chain), s3 root
    gold = np.array([2, 0, 2, 0, 1, 0])
    scores = dependency_baselines(gold, OFFSETS)
    # left chain 0 1 2 | 0 1 | 0: s1 w3 (2) right, s2 both, s3 -> 4/6 directed;
    # undirected adds s1 w2 -> 1 (reverse of gold 1 -> 2) -> 5/6
    assert scores["left_chain"]["directed"] == pytest.approx(4 / 6)
    assert scores["left_chain"]["undirected"] == pytest.approx(5 / 6)
    # right chain 2 3 0 | 2 0 | 0: s1 w1, s3 right -> 2/6; undirected adds s1 w2 -> 3 (gold 3 -> 2)
    # and s2 w1 -> 2 (gold 2 -> 1) -> 4/6
    assert scores["right_chain"]["directed"] == pytest.approx(2 / 6)
    assert scores["right_chain"]["undirected"] == pytest.approx(4 / 6)


def test_dependency_baselines_respect_the_mask():
    gold = np.array([2, 0, 2, 0, 1, 0])
    mask = np.array([True, True, False, True, True, True])  # s1 w3 is punctuation
    assert dependency_baselines(gold, OFFSETS, mask)["left_chain"]["directed"] == pytest.approx(3 / 5)


def test_branching_brackets():
    assert sorted(branching_brackets(4, "left")) == [(0, 2), (0, 3), (0, 4)]
    assert sorted(branching_brackets(4, "right")) == [(0, 4), (1, 4), (2, 4)]
    assert not branching_brackets(1, "right")


def test_bracket_baselines_hand_case():
    # gold (S (NP a b) (VP c (NP d e)) .) -> after deleting '.', brackets (0,5) (0,2) (2,5) (3,5)
    gold = Tree.fromstring("(S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e))) (. .))")
    scores = bracket_baselines([gold])
    # right-branching over 5 words: (0,5) (1,5) (2,5) (3,5) -> 3 of 4 match both ways
    assert scores["right_branching"]["precision"] == pytest.approx(3 / 4)
    assert scores["right_branching"]["recall"] == pytest.approx(3 / 4)
    # left-branching: (0,2) (0,3) (0,4) (0,5) -> 2 match
    assert scores["left_branching"]["f1"] == pytest.approx(2 / 4)
    assert bracket_baselines([gold], max_length=3)["right_branching"]["f1"] == 0.0

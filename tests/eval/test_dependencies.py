"""Attachment accuracy against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from induce.errors import InduceError
from induce.eval import attachment_scores, punctuation_mask

# sentence 1 (3 words): gold heads 2 0 2, predicted 2 0 1
# sentence 2 (2 words): gold heads 0 1,   predicted 2 0
GOLD = np.array([2, 0, 2, 0, 1])
PRED = np.array([2, 0, 1, 2, 0])
OFFSETS = np.array([0, 3, 5])


def test_directed_and_undirected_hand_case():
    # directed: s1 w1, s1 w2 correct; s1 w3 (1 vs 2) wrong; s2 w1 (2 vs 0), s2 w2 (0 vs 1) wrong -> 2/5
    # undirected adds s2 w1: predicted edge 2->1 is the reverse of gold edge 1->2 (gold head of
    # word 2 is word 1).  s1 w3 -> 1 is no gold edge either way (gold head of word 1 is 2);
    # s2 w2 -> root is wrong since gold attaches it to word 1 -> 3/5
    scores = attachment_scores(PRED, GOLD, OFFSETS)
    assert scores["directed"] == pytest.approx(2 / 5)
    assert scores["undirected"] == pytest.approx(3 / 5)
    assert scores["tokens"] == 5
    assert scores["punctuation"] == "included"


def test_mask_excludes_words():
    # excluding s1 w3 (say it is punctuation): directed 2/4, undirected 3/4
    mask = np.array([True, True, False, True, True])
    scores = attachment_scores(PRED, GOLD, OFFSETS, mask=mask)
    assert (scores["directed"], scores["undirected"]) == pytest.approx((2 / 4, 3 / 4))
    assert (scores["tokens"], scores["excluded"], scores["punctuation"]) == (4, 1, "excluded")


def test_heads_are_relative_to_their_sentence():
    # without offsets the five words are one sentence, and head 1 of word 5 now means word 1:
    # word 4 (pred 2, gold 0) reversed edge would need gold head of word 2 == 4: no.
    # directed 2/5 still; undirected: word 3 -> 1: gold head of word 1 is 2, no -> 2/5
    scores = attachment_scores(PRED, GOLD)
    assert (scores["directed"], scores["undirected"]) == pytest.approx((2 / 5, 2 / 5))


def test_gold_vs_gold_is_perfect():
    scores = attachment_scores(GOLD, GOLD, OFFSETS)
    assert scores["directed"] == scores["undirected"] == 1.0


def test_reversed_tree_is_undirected_perfect():
    # chain 1 <- 2 <- 3 (gold heads 2 3 0) predicted as 1 -> 2 -> 3 with root 1 (heads 0 1 2):
    # directed 0/3; undirected: w2 -> 1 is reverse of 1 -> 2, w3 -> 2 is reverse of 2 -> 3, w1 root
    # is wrong (gold head 2, and root edges are never reversed) -> 2/3
    scores = attachment_scores([0, 1, 2], [2, 3, 0])
    assert (scores["directed"], scores["undirected"]) == pytest.approx((0.0, 2 / 3))


@pytest.mark.parametrize(
    "pred, gold, offsets",
    [
        ([0, 3], [0, 1], [0, 2]),  # head 3 in a 2-word sentence
        ([0, -1], [0, 1], [0, 2]),
        ([0, 1], [0, 1, 1], None),
        ([0, 1], [0, 1], [0, 3]),
    ],
)
def test_bad_heads_raise(pred, gold, offsets):
    with pytest.raises(InduceError):
        attachment_scores(pred, gold, offsets)


def test_punctuation_masks():
    ptb = ["NNP", ",", "``", "''", ".", ":", "-LRB-", "-RRB-", "#", "$", "NN", "POS"]
    assert punctuation_mask(ptb, "ptb").tolist() == [False] + [True] * 9 + [False, False]
    upos = ["NOUN", "PUNCT", "SYM", "X", "PROPN"]
    assert punctuation_mask(upos, "upos").tolist() == [False, True, True, False, False]
    assert punctuation_mask(["PUNT", "IZE", "F", "NC"], "conll2007").tolist() == [True, False, True, False]
    with pytest.raises(InduceError):
        punctuation_mask(upos, "brown")

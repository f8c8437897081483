"""AER / precision / recall on a hand case; perplexity from log-probabilities."""

from __future__ import annotations

import math

import pytest

from induce.errors import InduceError
from induce.eval import alignment_scores, perplexity

# pair 1: S = {(0,0), (1,1)}, P = S + {(2,1)}, A = {(0,0), (2,1), (2,2)}
# pair 2: S = {(0,0)},        P = S,           A = {(0,1)}
SURE = [{(0, 0), (1, 1)}, {(0, 0)}]
POSSIBLE = [{(2, 1)}, set()]  # possible links are completed with the sure ones
PREDICTED = [{(0, 0), (2, 1), (2, 2)}, {(0, 1)}]


def test_alignment_hand_case():
    # |A| = 4, |S| = 3, |A & S| = 1, |A & P| = 2
    # P = 2/4, R = 1/3, AER = 1 - (1 + 2) / (4 + 3) = 4/7, F1 = 2 (1/2)(1/3) / (5/6) = 0.4
    scores = alignment_scores(PREDICTED, SURE, POSSIBLE)
    assert scores["precision"] == pytest.approx(0.5)
    assert scores["recall"] == pytest.approx(1 / 3)
    assert scores["aer"] == pytest.approx(4 / 7)
    assert scores["f1"] == pytest.approx(0.4)
    assert (scores["predicted_links"], scores["sure_links"], scores["possible_links"]) == (4, 3, 4)


def test_gold_vs_gold_alignment_is_perfect():
    # predicting every possible link: P = 1, R = 1, AER = 1 - (|S| + |P|) / (|P| + |S|) = 0
    full = [s | p for s, p in zip(SURE, POSSIBLE)]
    scores = alignment_scores(full, SURE, POSSIBLE)
    assert (scores["precision"], scores["recall"], scores["aer"], scores["f1"]) == (1.0, 1.0, 0.0, 1.0)
    assert alignment_scores(SURE, SURE, SURE)["aer"] == 0.0


def test_alignment_lists_must_agree():
    with pytest.raises(InduceError):
        alignment_scores(PREDICTED, SURE, POSSIBLE[:1])


def test_perplexity_hand_case():
    # p(s1) = 1/2, p(s2) = 1/4 over 3 tokens: log-likelihood ln(1/8), per token -ln 2,
    # perplexity 2, one bit per token
    scores = perplexity([math.log(0.5), math.log(0.25)], 3)
    assert scores["log_likelihood"] == pytest.approx(math.log(1 / 8))
    assert scores["log_likelihood_per_token"] == pytest.approx(-math.log(2))
    assert scores["perplexity"] == pytest.approx(2.0)
    assert scores["bits_per_token"] == pytest.approx(1.0)


@pytest.mark.parametrize("logprobs, n", [([-1.0], 0), ([0.5], 2), ([float("nan")], 2)])
def test_perplexity_rejects_bad_input(logprobs, n):
    with pytest.raises(InduceError):
        perplexity(logprobs, n)

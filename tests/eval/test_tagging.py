"""Tagging metrics against hand-computed cases, brute force and their theorems."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import entropy
from sklearn.metrics import mutual_info_score

from induce.errors import InduceError
from induce.eval import (
    accuracy,
    cross_validated_many_to_one,
    many_to_one,
    one_to_one,
    one_to_one_greedy,
    tagging_report,
    v_measure,
    variation_of_information,
)

A, B, C = 0, 1, 2

# Contingency of the main hand case (rows: states 0, 1; columns: tags A, B):
#   state 0: A 3, B 2
#   state 1: A 2, B 0            N = 7
PRED = np.array([0, 0, 0, 0, 0, 1, 1])
GOLD = np.array([A, A, A, B, B, A, A])


def test_many_to_one_hand_case():
    # state 0 -> A (3 correct), state 1 -> A (2 correct): 5 / 7
    assert many_to_one(PRED, GOLD) == pytest.approx(5 / 7)


def test_greedy_one_to_one_is_below_optimal_on_hand_case():
    # greedy takes the largest cell (0, A) = 3 first; state 1 is then left with
    # tag B, count 0: 3 / 7.  The optimum maps 0 -> B (2) and 1 -> A (2): 4 / 7.
    assert one_to_one_greedy(PRED, GOLD) == pytest.approx(3 / 7)
    assert one_to_one(PRED, GOLD) == pytest.approx(4 / 7)


def test_greedy_stops_when_tags_are_used_up():
    # states 0..2, tags A, B:  0: A 2 | 1: B 2 | 2: A 1.  Greedy: (0,A)=2, (1,B)=2,
    # then tags are used up and state 2's token is an error: 4 / 5.
    pred = np.array([0, 0, 1, 1, 2])
    gold = np.array([A, A, B, B, A])
    assert one_to_one_greedy(pred, gold) == pytest.approx(4 / 5)


def test_variation_of_information_hand_case():
    # joint p: 3/7, 2/7, 2/7; marginals S: 5/7, 2/7 and G: 5/7, 2/7.
    # VI = 2 H(S,G) - H(S) - H(G) = 2 * 1.55666 - 2 * 0.86312 = 1.38707 bits.
    def h(*ps):
        return -sum(p * math.log2(p) for p in ps)

    expected = 2 * h(3 / 7, 2 / 7, 2 / 7) - h(5 / 7, 2 / 7) - h(5 / 7, 2 / 7)
    assert variation_of_information(PRED, GOLD) == pytest.approx(expected)
    assert expected == pytest.approx(1.38707, abs=1e-5)


def test_v_measure_hand_case():
    # H(G) = H(S) = h(5/7, 2/7); H(G|S) = H(S,G) - H(S); h = 1 - H(G|S)/H(G),
    # c = 1 - H(S|G)/H(S) (thesis eq. 3.105); here H(G|S) = H(S|G), so h = c = V-M.
    def hb(*ps):
        return -sum(p * math.log2(p) for p in ps)

    h_joint, h_marg = hb(3 / 7, 2 / 7, 2 / 7), hb(5 / 7, 2 / 7)
    expected = 1 - (h_joint - h_marg) / h_marg
    hom, comp, vm = v_measure(PRED, GOLD)
    assert (hom, comp, vm) == pytest.approx((expected, expected, expected))


def test_cross_validated_many_to_one_hand_case():
    # 4 sentences, halves = sentences {0, 1} and {2, 3}.
    #   half 1: pred 0 1 | 0 2, gold A B | A B -> map 0->A, 1->B, 2->B; majority tag A (tie A/B -> A)
    #   half 2: pred 0 1 | 3 1, gold B B | A A
    # mapping 1 on half 2: A B A(unseen 3 -> A) B vs B B A A -> 2 / 4
    # mapping 2 (0->B, 1->A (tie -> A), 3->A) on half 1: B A B A(unseen 2) vs A B A B -> 0 / 4
    # mean = 0.25
    pred = np.array([0, 1, 0, 2, 0, 1, 3, 1])
    gold = np.array([A, B, A, B, B, B, A, A])
    offsets = np.array([0, 2, 4, 6, 8])
    assert cross_validated_many_to_one(pred, gold, offsets) == pytest.approx(0.25)


def test_cross_validated_halving_rule_with_odd_sentence_count():
    # 3 sentences: first half = sentence 0 only, second half = sentences 1 and 2.
    #   half 1: pred 0, gold A -> map 0->A
    #   half 2: pred 0 1 1, gold A B B -> map 0->A, 1->B; majority B
    # mapping 1 on half 2: A A(unseen 1 -> A) A vs A B B -> 1/3; mapping 2 on half 1: A vs A -> 1
    pred = np.array([0, 0, 1, 1])
    gold = np.array([A, A, B, B])
    offsets = np.array([0, 1, 2, 4])
    assert cross_validated_many_to_one(pred, gold, offsets) == pytest.approx((1 / 3 + 1) / 2)


def test_accuracy_counts_equal_ids():
    assert accuracy([1, 2, 3, 4], [1, 2, 0, 4]) == pytest.approx(0.75)


def test_gold_vs_gold_is_perfect():
    gold = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])
    report = tagging_report(gold, gold, offsets=np.array([0, 4, 10]))
    for key in ("m1", "1to1", "1to1_greedy", "homogeneity", "completeness", "vm"):
        assert report[key] == pytest.approx(1.0), key
    assert report["vi"] == pytest.approx(0.0)
    # a second half holding only tags seen in the first half: cross-validated M-1 is perfect too
    halves_agree = np.array([1, 2, 1, 2])
    assert cross_validated_many_to_one(halves_agree, halves_agree, np.array([0, 2, 4])) == pytest.approx(1.0)


def test_report_keys():
    report = tagging_report(PRED, GOLD)
    assert "m1_cv" not in report
    assert {"m1", "1to1", "1to1_greedy", "vi", "homogeneity", "completeness", "vm"} <= set(report)
    assert "m1_cv" in tagging_report(PRED, GOLD, offsets=np.array([0, 3, 7]))


@pytest.mark.parametrize(
    "pred, gold, offsets",
    [
        ([0, 1], [0], None),
        ([], [], None),
        ([0.5, 1.0], [0, 1], None),
        ([0, 1, 1], [0, 1, 1], [0, 3]),  # one sentence cannot be halved
        ([0, 1, 1], [0, 1, 1], [0, 2, 2]),  # offsets do not end at the token count
    ],
)
def test_bad_input_raises(pred, gold, offsets):
    with pytest.raises(InduceError):
        if offsets is None:
            many_to_one(pred, gold)
        else:
            cross_validated_many_to_one(np.array(pred), np.array(gold), offsets)


def _brute_force_one_to_one(pred: np.ndarray, gold: np.ndarray) -> float:
    """Best injective state -> tag mapping by enumerating all of them."""
    states, tags = np.unique(pred).tolist(), np.unique(gold).tolist()
    best = 0
    slots = tags + [None] * len(states)  # None: state left unmapped
    for chosen in itertools.permutations(slots, len(states)):
        mapping = dict(zip(states, chosen))
        best = max(best, sum(mapping[p] == g for p, g in zip(pred.tolist(), gold.tolist())))
    return best / pred.size


labels = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(labels)
def test_optimal_one_to_one_matches_brute_force(pairs):
    pred, gold = (np.array(x) for x in zip(*pairs))
    if np.unique(pred).size > 4:
        pred = pred % 4  # keep the enumeration small
    assert one_to_one(pred, gold) == pytest.approx(_brute_force_one_to_one(pred, gold))


@settings(max_examples=80, deadline=None)
@given(labels, st.randoms(use_true_random=False), st.integers(2, 5))
def test_relabelling_states_changes_no_metric(pairs, rnd, n_sent):
    pred, gold = (np.array(x) for x in zip(*pairs))
    states = np.unique(pred)
    new_names = rnd.sample(range(100, 200), states.size)
    relabelled = np.array([new_names[int(np.searchsorted(states, p))] for p in pred])
    cuts = sorted(rnd.choices(range(pred.size + 1), k=n_sent - 1))
    offsets = np.array([0, *cuts, pred.size])
    both = [tagging_report(pred, gold), tagging_report(relabelled, gold)]
    for key, value in both[0].items():
        assert both[1][key] == pytest.approx(value), key
    half = int(offsets[(offsets.size - 1) // 2])
    if 0 < half < pred.size:
        assert cross_validated_many_to_one(relabelled, gold, offsets) == pytest.approx(
            cross_validated_many_to_one(pred, gold, offsets)
        )


@settings(max_examples=100, deadline=None)
@given(labels)
def test_mapping_metrics_are_ordered(pairs):
    # m1 >= optimal 1-1 (each state's majority count bounds its assigned count)
    # >= greedy 1-1 (the optimum is over all injective maps, greedy's included)
    pred, gold = (np.array(x) for x in zip(*pairs))
    m1, opt, greedy = many_to_one(pred, gold), one_to_one(pred, gold), one_to_one_greedy(pred, gold)
    assert m1 >= opt - 1e-12
    assert opt >= greedy - 1e-12


@settings(max_examples=100, deadline=None)
@given(labels)
def test_variation_of_information_nonnegative_and_zero_iff_bijection(pairs):
    pred, gold = (np.array(x) for x in zip(*pairs))
    vi = variation_of_information(pred, gold)
    # independent computation: VI = H(S) + H(G) - 2 I(S; G), converted from nats
    _, s_counts = np.unique(pred, return_counts=True)
    _, g_counts = np.unique(gold, return_counts=True)
    expected = (entropy(s_counts) + entropy(g_counts) - 2 * mutual_info_score(gold, pred)) / math.log(2)
    assert vi == pytest.approx(max(expected, 0.0), abs=1e-9)
    assert vi >= 0.0
    same_partition = len(set(pairs)) == np.unique(pred).size == np.unique(gold).size
    assert (vi < 1e-12) == same_partition

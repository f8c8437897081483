"""evalb (COLLINS.prm) bracket scores on hand trees."""

from __future__ import annotations

import pytest
from nltk import Tree

from induce.errors import InduceError
from induce.eval import bracket_scores, sentence_bracket_scores


def t(text: str) -> Tree:
    return Tree.fromstring(text)


GOLD_PRT = t("(S (NP (DT The) (NN dog)) (VP (VBD ran) (PRT (RP off))) (. .))")


def test_prt_equals_advp_and_final_period_is_ignored():
    # '.' is deleted, words: The dog ran off (0..4).
    # gold: S(0,4) NP(0,2) VP(2,4) PRT=ADVP(3,4)
    # pred: S(0,4) NP(0,1) VP(1,4) ADVP(3,4)   -> matched S, ADVP: P = R = 2/4
    pred = t("(S (NP (DT The)) (VP (NN dog) (VBD ran) (ADVP (RB off))) (. .))")
    scores = sentence_bracket_scores(pred, GOLD_PRT)
    assert (scores["matched"], scores["predicted"], scores["gold"]) == (2, 4, 4)
    assert scores["f1"] == pytest.approx(0.5)
    assert not scores["exact"]


def test_labeled_versus_unlabeled():
    # as above but the particle bracket is labelled PP: labeled matches only S (1/4);
    # unlabeled matches S(0,4) and (3,4) (2/4)
    pred = t("(S (NP (DT The)) (VP (NN dog) (VBD ran) (PP (RB off))) (. .))")
    assert sentence_bracket_scores(pred, GOLD_PRT)["precision"] == pytest.approx(1 / 4)
    assert sentence_bracket_scores(pred, GOLD_PRT, labeled=False)["precision"] == pytest.approx(2 / 4)


def test_punctuation_is_removed_before_spans():
    # gold John , left .  -> words John left: S(0,2) NP(0,1) VP(1,2)
    # pred groups "John ," as X and "left ." as VP: after deletion X(0,1), VP(1,2), S(0,2)
    # labeled 2/3 (X != NP), unlabeled 3/3
    gold = t("(S (NP (NNP John)) (, ,) (VP (VBD left)) (. .))")
    pred = t("(S (X (NNP John) (, ,)) (VP (VBD left) (. .)))")
    assert sentence_bracket_scores(pred, gold)["f1"] == pytest.approx(2 / 3)
    unlabeled = sentence_bracket_scores(pred, gold, labeled=False)
    assert unlabeled["f1"] == pytest.approx(1.0) and unlabeled["exact"]


def test_punctuation_positions_come_from_the_gold_tree():
    # the predicted preterminals are induced states, not PTB tags: the ',' and '.' words are
    # still removed because the gold tags them as punctuation -> unlabeled perfect
    gold = t("(S (NP (NNP John)) (, ,) (VP (VBD left)) (. .))")
    pred = t("(S (X (T1 John) (T2 ,)) (X (T3 left) (T2 .)))")
    assert sentence_bracket_scores(pred, gold, labeled=False)["f1"] == pytest.approx(1.0)


def test_empty_elements_function_tags_and_root_wrapper():
    # gold: empty elements removed with the SBAR/S and NP they leave empty; NP-SBJ-1 -> NP;
    # the '' wrapper is not scored -> S(0,2) NP(0,1) VP(1,2), equal to the plain prediction
    gold = t("( (S (NP-SBJ-1 (NNP John)) (VP (VBD reported) (SBAR (-NONE- 0) (S (-NONE- *T*-1)))) (. .)))")
    pred = t("(TOP (S (NP (NNP John)) (VP (VBD reported)) (. .)))")
    scores = sentence_bracket_scores(pred, gold)
    assert (scores["matched"], scores["predicted"], scores["gold"]) == (3, 3, 3)
    assert scores["exact"]


def test_brackets_are_a_multiset():
    # gold has NP(0,1) twice: S(0,2) NP(0,1) NP(0,1) VP(1,2) = 4; pred has it once = 3.
    # evalb rule n > m: precision 3/3, recall 3/4
    gold = t("(S (NP (NP (NNS dogs))) (VP (VBP bark)))")
    pred = t("(S (NP (NNS dogs)) (VP (VBP bark)))")
    scores = sentence_bracket_scores(pred, gold)
    assert (scores["precision"], scores["recall"]) == pytest.approx((1.0, 3 / 4))


def test_corpus_scores_sum_counts_and_cut_by_length():
    # sentence 1: 2 of 4 matched each way (first test); sentence 2: gold vs gold, 3 of 3.
    # corpus P = R = (2 + 3) / (4 + 3) = 5/7; exact 1 of 2.
    pred1 = t("(S (NP (DT The)) (VP (NN dog) (VBD ran) (ADVP (RB off))) (. .))")
    gold2 = t("(S (NP (NNP John)) (, ,) (VP (VBD left)) (. .))")
    scores = bracket_scores([pred1, gold2], [GOLD_PRT, gold2])
    assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx((5 / 7, 5 / 7, 5 / 7))
    assert (scores["exact"], scores["sentences"], scores["skipped"]) == (0.5, 2, 0)
    # lengths count punctuation (DELETE_LABEL_FOR_LENGTH is -NONE- only): 5 and 4 words
    cut = bracket_scores([pred1, gold2], [GOLD_PRT, gold2], max_length=4)
    assert (cut["sentences"], cut["skipped"], cut["f1"]) == (1, 1, 1.0)
    assert bracket_scores([pred1, gold2], [GOLD_PRT, gold2], max_length=5)["sentences"] == 2


def test_mismatched_sentences_raise():
    with pytest.raises(InduceError, match="word mismatch"):
        sentence_bracket_scores(t("(S (NN cat) (VBD sat))"), t("(S (NN dog) (VBD sat))"))
    with pytest.raises(InduceError, match="sentence 1: length mismatch"):
        bracket_scores([t("(S (NN cat))")], [t("(S (NN cat) (VBD sat))")])
    with pytest.raises(InduceError):
        bracket_scores([t("(S (NN cat))")], [])

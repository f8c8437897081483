"""Constituent bracket scores with evalb's COLLINS.prm conventions.

Sekine & Collins' ``evalb`` with ``COLLINS.prm``:

* ``DELETE_LABEL TOP`` -- the wrapper root is not scored.  Here the labels
  ``TOP``, ``ROOT`` and the empty label (the ``( (S ...))`` wrapper of the
  ``.mrg`` files) are deleted wherever they occur; the sentence node under the
  wrapper (e.g. ``S``) is scored, as evalb does;
* ``DELETE_LABEL -NONE-`` -- empty elements are removed, and with them every
  constituent that then dominates nothing;
* ``DELETE_LABEL , : `` '' .`` -- punctuation words are removed before spans are
  computed; constituents left empty are dropped.  Which positions are
  punctuation is decided by the *gold* tree's preterminals and applied to both
  trees (the fixed evalb rule: a test word is deleted when the corresponding
  gold word is), so predicted trees with induced preterminal labels score
  correctly;
* ``DELETE_LABEL_FOR_LENGTH -NONE-`` -- the sentence length used by the length
  cutoff counts every word except empty elements (punctuation included);
* ``EQ_LABEL ADVP PRT`` -- ADVP and PRT are the same label;
* function tags and indices are stripped from labels (``NP-SBJ-1`` -> ``NP``,
  ``NP=2`` -> ``NP``);
* preterminals (POS tags) are not brackets; every other node is, including
  unary chains, and brackets are matched as a multiset of ``(label, start, end)``
  (``(start, end)`` when unlabeled).

Per sentence: ``match`` = size of the multiset intersection, precision =
match / #predicted, recall = match / #gold; corpus scores sum the three counts
over sentences; F1 = 2PR / (P + R); exact match = share of sentences whose two
bracket multisets are equal.
"""

from __future__ import annotations

import re
from collections import Counter

from nltk import Tree

from ..errors import InduceError

#: Labels deleted together with the words under them (COLLINS.prm DELETE_LABEL).
PUNCTUATION_LABELS = frozenset({",", ":", "``", "''", "."})
#: Wrapper labels of the root that evalb's ``DELETE_LABEL TOP`` removes.
ROOT_LABELS = frozenset({"TOP", "ROOT", ""})
#: Preterminal label of empty elements (DELETE_LABEL -NONE-, DELETE_LABEL_FOR_LENGTH -NONE-).
EMPTY_LABEL = "-NONE-"
#: COLLINS.prm ``EQ_LABEL ADVP PRT``: each label mapped to its class representative.
EQUIVALENT_LABELS = {"PRT": "ADVP"}

_FUNCTION_TAG = re.compile(r"[-=]")


def _canonical_label(label: str) -> str:
    """Strip function tags / indices after the first ``-`` or ``=`` (labels that
    start with ``-``, as ``-LRB-``, are kept whole) and map ``EQ_LABEL`` classes to
    one representative."""
    base = label if label.startswith("-") else _FUNCTION_TAG.split(label, maxsplit=1)[0]
    return EQUIVALENT_LABELS.get(base, base)


def _is_preterminal(node) -> bool:
    return isinstance(node, Tree) and len(node) == 1 and not isinstance(node[0], Tree)


def _leaves(tree: Tree) -> list[tuple[str, str]]:
    """``(word, preterminal label)`` for every word that is not an empty element."""
    return [(word, tag) for word, tag in tree.pos() if tag != EMPTY_LABEL]


def _brackets(tree: Tree, deleted: set[int], labeled: bool) -> Counter:
    """Multiset of scored brackets of ``tree``.

    Words are numbered in order, skipping empty elements; positions in ``deleted``
    (punctuation) take no span.  A bracket is ``(label, start, end)`` over the
    remaining words (``end`` exclusive), or ``(start, end)`` when unlabeled.
    """
    found: Counter = Counter()
    position = 0  # index among non-empty words
    span_pos = 0  # index among scored (non-deleted) words

    def walk(node) -> None:
        nonlocal position, span_pos
        if _is_preterminal(node):
            if node.label() != EMPTY_LABEL:
                if position not in deleted:
                    span_pos += 1
                position += 1
            return
        if not isinstance(node, Tree):
            raise InduceError(f"malformed tree: word {node!r} is not under a preterminal")
        start = span_pos
        for child in node:
            walk(child)
        label = node.label()
        if span_pos > start and label not in ROOT_LABELS:
            canonical = _canonical_label(label)
            found[(canonical, start, span_pos) if labeled else (start, span_pos)] += 1

    walk(tree)
    return found


def _sentence_counts(pred_tree: Tree, gold_tree: Tree, labeled: bool, index: int | None = None) -> tuple[int, int, int]:
    """``(matched, predicted, gold)`` bracket counts of one sentence pair."""
    pred_leaves = _leaves(pred_tree)
    gold_leaves = _leaves(gold_tree)
    where = "" if index is None else f"sentence {index + 1}: "
    if len(pred_leaves) != len(gold_leaves):
        raise InduceError(
            f"{where}length mismatch: predicted tree has {len(pred_leaves)} words, gold tree {len(gold_leaves)}"
        )
    for k, ((pw, _), (gw, _)) in enumerate(zip(pred_leaves, gold_leaves)):
        if pw != gw:
            raise InduceError(f"{where}word mismatch at word {k + 1}: predicted {pw!r}, gold {gw!r}")
    deleted = {k for k, (_, tag) in enumerate(gold_leaves) if tag in PUNCTUATION_LABELS}
    pred_b = _brackets(pred_tree, deleted, labeled)
    gold_b = _brackets(gold_tree, deleted, labeled)
    matched = sum((pred_b & gold_b).values())
    return matched, sum(pred_b.values()), sum(gold_b.values())


def _scores(matched: int, predicted: int, gold: int) -> dict:
    precision = matched / predicted if predicted else 0.0
    recall = matched / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "matched": matched, "predicted": predicted, "gold": gold}


def sentence_bracket_scores(pred_tree: Tree, gold_tree: Tree, labeled: bool = True) -> dict:
    """evalb scores of one sentence: ``precision``, ``recall``, ``f1``, ``exact``
    (bool) and the counts ``matched``, ``predicted``, ``gold``."""
    matched, predicted, gold = _sentence_counts(pred_tree, gold_tree, labeled)
    result = _scores(matched, predicted, gold)
    result["exact"] = matched == predicted == gold
    return result


def bracket_scores(pred_trees, gold_trees, labeled: bool = True, max_length: int | None = None) -> dict:
    """Corpus-level evalb scores (COLLINS.prm conventions, see the module docstring).

    Sentences whose gold length (words other than empty elements, punctuation
    included) exceeds ``max_length`` are skipped (evalb's ``CUTOFF_LEN``, e.g. 40).
    Returns ``precision``, ``recall``, ``f1`` (from the summed counts), ``exact``
    (share of scored sentences matched exactly), ``sentences`` (scored),
    ``skipped`` and the summed ``matched``, ``predicted``, ``gold`` counts.
    """
    pred_trees = list(pred_trees)
    gold_trees = list(gold_trees)
    if len(pred_trees) != len(gold_trees):
        raise InduceError(f"{len(pred_trees)} predicted trees for {len(gold_trees)} gold trees")
    totals = [0, 0, 0]
    exact = sentences = 0
    for k, (pred_tree, gold_tree) in enumerate(zip(pred_trees, gold_trees)):
        if max_length is not None and len(_leaves(gold_tree)) > max_length:
            continue
        counts = _sentence_counts(pred_tree, gold_tree, labeled, index=k)
        totals = [t + c for t, c in zip(totals, counts)]
        exact += counts[0] == counts[1] == counts[2]
        sentences += 1
    result = _scores(*totals)
    result["exact"] = exact / sentences if sentences else 0.0
    result["sentences"] = sentences
    result["skipped"] = len(gold_trees) - sentences
    return result

"""Unlabeled bracket F1 under Klein & Manning's convention, and the branching baselines it is compared with.

K&M (2002, section 4; 2004): punctuation is removed, brackets are the *set*
of spans ``(i, j)`` of a tree (unary chains count once), and the spans that
every binary tree has -- single words and the whole sentence -- are not
counted.  Which words are punctuation is decided by the gold tree's tags (PTB
punctuation tags, :data:`induce.corpus.transforms.PTB_PUNCT`, and evalb's
deleted labels) and applied to both trees; corpus precision, recall and F1 are
micro-averaged over the summed counts.  (evalb's default, the multiset
conventions of :mod:`induce.eval.brackets`, is reported next to it.)
"""

from __future__ import annotations

from nltk import Tree

from ..corpus.transforms import PTB_PUNCT
from .brackets import PUNCTUATION_LABELS, _brackets, _leaves, _scores
from ..errors import InduceError
from ..parsers.trees import branching_tree

DELETED_TAGS = frozenset(PTB_PUNCT) | PUNCTUATION_LABELS


def km_spans(tree: Tree, deleted: set[int]) -> set[tuple[int, int]]:
    """The counted spans of ``tree``: distinct unlabeled brackets over the words not ``deleted``, without
    single words and the whole sentence."""
    n = len(_leaves(tree)) - len(deleted)
    return {(i, j) for i, j in _brackets(tree, deleted, labeled=False) if 1 < j - i < n}


def km_bracket_scores(pred_trees, gold_trees) -> dict:
    """Corpus ``precision``, ``recall``, ``f1`` (and counts, ``sentences``) under K&M's convention."""
    totals = [0, 0, 0]
    sentences = 0
    for k, (pred, gold) in enumerate(zip(pred_trees, gold_trees, strict=True)):
        if len(_leaves(pred)) != len(_leaves(gold)):
            raise InduceError(f"sentence {k + 1}: predicted tree has {len(_leaves(pred))} words, gold {len(_leaves(gold))}")
        deleted = {k for k, (_, tag) in enumerate(_leaves(gold)) if tag in DELETED_TAGS}
        p, g = km_spans(pred, deleted), km_spans(gold, deleted)
        totals = [totals[0] + len(p & g), totals[1] + len(p), totals[2] + len(g)]
        sentences += 1
    return {**_scores(*totals), "sentences": sentences}


def branching_baselines(gold_trees) -> dict[str, list[Tree]]:
    """Left- and right-branching trees over the gold trees' words and tags."""
    out = {}
    for name, right in (("left_branching", False), ("right_branching", True)):
        out[name] = [branching_tree(t.leaves(), [tag for _, tag in t.pos()], right=right) for t in gold_trees]
    return out

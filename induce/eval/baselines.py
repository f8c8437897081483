"""Trivial structure baselines, scored under the same conventions as the model.

Dependencies (heads in the CoNLL convention of :mod:`induce.eval.dependencies`:
1-based within the sentence, 0 = root):

* *left chain*: every word's head is the previous word, the first word is the root
  (``heads = 0, 1, 2, ..., n-1``);
* *right chain*: every word's head is the next word, the last word is the root
  (``heads = 2, 3, ..., n, 0``).

Constituents (unlabeled brackets over the words that evalb scores, i.e. with the
gold tree's punctuation deleted, :mod:`induce.eval.brackets`), over ``m`` scored words:

* *left-branching*: ``[0, k)`` for ``k = 2 .. m``;
* *right-branching*: ``[k, m)`` for ``k = 0 .. m - 2``;

both including the whole-sentence bracket, as a binary tree over the words would.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .brackets import PUNCTUATION_LABELS, _brackets, _leaves, _scores
from .dependencies import attachment_scores

#: names of the dependency baselines, in report order
CHAINS = ("left_chain", "right_chain")
#: names of the constituent baselines, in report order
BRANCHINGS = ("left_branching", "right_branching")


def chain_heads(offsets, direction: str) -> np.ndarray:
    """Flat heads of the ``"left"`` (head = previous word) or ``"right"`` (head = next word) chain."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    position = np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths) + 1  # 1-based
    if direction == "left":
        return position - 1
    if direction != "right":
        raise ValueError(f"direction must be 'left' or 'right'; got {direction!r}")
    last = np.repeat(lengths, lengths)
    return np.where(position == last, 0, position + 1)


def dependency_baselines(gold_heads, offsets, mask=None) -> dict:
    """Attachment scores of the two chains against ``gold_heads`` on the same words (and ``mask``).

    Returns ``{"left_chain": {"directed", "undirected"}, "right_chain": {...}}``.
    """
    out = {}
    for name, direction in zip(CHAINS, ("left", "right")):
        scores = attachment_scores(chain_heads(offsets, direction), gold_heads, offsets, mask)
        out[name] = {k: scores[k] for k in ("directed", "undirected")}
    return out


def branching_brackets(n_words: int, direction: str) -> Counter:
    """Unlabeled ``(start, end)`` brackets of the left- or right-branching binary tree over ``n_words``."""
    if direction == "left":
        spans = [(0, k) for k in range(2, n_words + 1)]
    elif direction == "right":
        spans = [(k, n_words) for k in range(0, n_words - 1)]
    else:
        raise ValueError(f"direction must be 'left' or 'right'; got {direction!r}")
    return Counter(spans)


def bracket_baselines(gold_trees, max_length: int | None = None) -> dict:
    """Unlabeled evalb scores of left- and right-branching trees against ``gold_trees``.

    Punctuation and the length cutoff follow :func:`induce.eval.brackets.bracket_scores`.
    Returns ``{"left_branching": {"precision", "recall", "f1"}, "right_branching": {...}}``.
    """
    totals = {name: [0, 0, 0] for name in BRANCHINGS}
    for tree in gold_trees:
        leaves = _leaves(tree)
        if max_length is not None and len(leaves) > max_length:
            continue
        deleted = {k for k, (_, tag) in enumerate(leaves) if tag in PUNCTUATION_LABELS}
        gold = _brackets(tree, deleted, labeled=False)
        for name, direction in zip(BRANCHINGS, ("left", "right")):
            pred = branching_brackets(len(leaves) - len(deleted), direction)
            counts = (sum((pred & gold).values()), sum(pred.values()), sum(gold.values()))
            totals[name] = [t + c for t, c in zip(totals[name], counts)]
    return {name: {k: v for k, v in _scores(*counts).items() if k in ("precision", "recall", "f1")}
            for name, counts in totals.items()}

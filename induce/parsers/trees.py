"""Tree conversions: kernel node arrays -> ``nltk.Tree``; branching baselines.

Node arrays are the preorder ``(A, i, j, k, B, C)`` rows written by
:func:`induce.kernels.inside_outside.trace_tree`.  Helper symbols introduced by
the CNF transform (``A|<...>`` binarisation nodes and ``_T:w`` preterminals, see
:mod:`.grammar`) are spliced out of the output trees.
"""

from __future__ import annotations

import numpy as np
from nltk import Tree


def _is_helper(label: str) -> bool:
    return "|<" in label or label.startswith("_T:")


def nodes_to_tree(nodes: np.ndarray, words: list[str], labels: list[str]) -> Tree:
    """Build the ``nltk.Tree`` of one sentence from its preorder node rows."""
    if len(words) == 0:
        return Tree(labels[0], [])
    pos = 0

    def build() -> list:
        nonlocal pos
        a, i, _j, k = (int(x) for x in nodes[pos, :4])
        pos += 1
        if k < 0:
            kids = [words[i]]
        else:
            kids = build() + build()
        label = labels[a]
        return kids if _is_helper(label) else [Tree(label, kids)]

    built = build()
    return built[0] if len(built) == 1 and isinstance(built[0], Tree) else Tree(labels[0], built)


def branching_tree(words: list[str], tags: list[str] | None = None, right: bool = True) -> Tree:
    """The fully right- (or left-) branching binary tree over the words, preterminals from ``tags``."""
    leaves = [Tree(t, [w]) for w, t in zip(words, tags if tags is not None else ["X"] * len(words))]
    if not leaves:
        return Tree("X", [])
    if right:
        tree = leaves[-1]
        for leaf in reversed(leaves[:-1]):
            tree = Tree("X", [leaf, tree])
    else:
        tree = leaves[0]
        for leaf in leaves[1:]:
            tree = Tree("X", [tree, leaf])
    return tree if len(leaves) > 1 else Tree("X", [tree])

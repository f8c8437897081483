"""Brute-force references: enumerate every tree of a short sentence."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np


def pcfg_trees(n_nonterminals: int, i: int, j: int, label: int):
    """Every CNF derivation of span [i, j) rooted in ``label``, as lists of node tuples (preorder)."""
    if j - i == 1:
        yield [(label, i, j, -1, -1, -1)]
        return
    for k in range(i + 1, j):
        for b in range(n_nonterminals):
            for c in range(n_nonterminals):
                for left in pcfg_trees(n_nonterminals, i, k, b):
                    for right in pcfg_trees(n_nonterminals, k, j, c):
                        yield [(label, i, j, k, b, c)] + left + right


def pcfg_tree_prob(nodes, rules_abc: np.ndarray, emit: np.ndarray, words) -> float:
    p = 1.0
    for a, i, _j, k, b, c in nodes:
        p *= emit[a, words[i]] if k < 0 else rules_abc[a, b, c]
    return p


def pcfg_enumerate(rules_abc, emit, words, start=0):
    """(Z, expected binary counts [A,B,C], expected emission counts [A,V], best tree, best prob)."""
    nt = emit.shape[0]
    z = 0.0
    bin_c = np.zeros_like(rules_abc)
    emit_c = np.zeros_like(emit)
    best, best_p = None, -1.0
    for nodes in pcfg_trees(nt, 0, len(words), start):
        p = pcfg_tree_prob(nodes, rules_abc, emit, words)
        z += p
        for a, i, _j, k, b, c in nodes:
            if k < 0:
                emit_c[a, words[i]] += p
            else:
                bin_c[a, b, c] += p
        if p > best_p:
            best, best_p = nodes, p
    return z, bin_c / z, emit_c / z, best, best_p


def projective_trees(n: int):
    """Every projective dependency tree over n words with one root, as 1-based head lists."""
    for heads in itertools.product(range(n + 1), repeat=n):
        if sum(h == 0 for h in heads) != 1 or any(h == d + 1 for d, h in enumerate(heads)):
            continue
        if not _acyclic(heads) or not _projective(heads):
            continue
        yield list(heads)


def _ancestors(heads, d):
    seen = []
    h = heads[d]
    while h != 0 and len(seen) <= len(heads):
        seen.append(h - 1)
        h = heads[h - 1]
    return seen


def _acyclic(heads):
    return all(d not in _ancestors(heads, d) for d in range(len(heads)))


def _projective(heads):
    for d, h in enumerate(heads):
        if h == 0:
            continue
        lo, hi = sorted((h - 1, d))
        for m in range(lo + 1, hi):
            if h - 1 not in _ancestors(heads, m):
                return False
    return True


def dmv_tree_prob(heads, tags, root_p, stop_p, attach_p) -> tuple[float, Counter]:
    """Generative DMV probability (Klein & Manning 2004) and its factor counts."""
    counts: Counter = Counter()
    root = heads.index(0)
    p = root_p[tags[root]]
    counts[("root", tags[root])] += 1
    for h in range(len(tags)):
        for d in (0, 1):
            deps = [x for x, hh in enumerate(heads) if hh == h + 1 and ((x > h) == (d == 1))]
            deps.sort(key=lambda x: abs(x - h))
            v = 0
            for x in deps:
                p *= stop_p[tags[h], d, v, 1] * attach_p[tags[h], d, tags[x]]
                counts[("stop", tags[h], d, v, 1)] += 1
                counts[("attach", tags[h], d, tags[x])] += 1
                v = 1
            p *= stop_p[tags[h], d, v, 0]
            counts[("stop", tags[h], d, v, 0)] += 1
    return p, counts


def random_rows(rng, shape):
    x = rng.gamma(1.0, size=shape)
    return x / x.sum(axis=-1, keepdims=True)

"""The DMV x CCM product chart against enumeration of every projective dependency tree."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from induce.kernels import ccm as KC
from induce.kernels import dmv_ccm as K
from induce.kernels.dmv import CONT, LEFT, RIGHT, STOP


def projective_trees(n):
    """Every projective single-root head vector (1-based heads, 0 = root) of ``n`` words."""
    for heads in itertools.product(range(n + 1), repeat=n):
        if sum(h == 0 for h in heads) != 1 or any(h == k + 1 for k, h in enumerate(heads)):
            continue
        if not all(_reaches_root(heads, k) for k in range(n)):
            continue
        # projective: every word between a head and its dependent descends from the head
        if all(_descends(heads, m, h - 1) for k, h in enumerate(heads) if h
               for m in range(min(k, h - 1) + 1, max(k, h - 1))):
            yield heads


def _descends(heads, k, ancestor):
    while heads[k] != 0:
        k = heads[k] - 1
        if k == ancestor:
            return True
    return False


def _reaches_root(heads, k):
    seen = set()
    while heads[k] != 0:
        if k in seen:
            return False
        seen.add(k)
        k = heads[k] - 1
    return True


def derivations(tags, heads, root, stop, attach, phi, order):
    """``(P_DMV(D) prod phi(B), B)`` for every bracketing ``B`` of ``D``'s head-outward derivations allowed by
    ``order`` (each head interleaves its right and left dependents, nearest first on each side)."""
    n = len(tags)
    deps = [[k for k in range(n) if heads[k] == h + 1] for h in range(n)]
    p_dmv = root[tags[heads.index(0)]]
    for h in range(n):
        for side, ds in ((RIGHT, [d for d in deps[h] if d > h]), (LEFT, [d for d in deps[h] if d < h])):
            for v, a in enumerate(ds):
                p_dmv *= stop[tags[h], side, min(v, 1), CONT] * attach[tags[h], side, tags[a]]
            p_dmv *= stop[tags[h], side, 1 if ds else 0, STOP]

    def span_of(h):
        return [h] + [k for d in deps[h] for k in span_of(d)]

    def sequences(h):
        right = sorted(d for d in deps[h] if d > h)
        left = sorted((d for d in deps[h] if d < h), reverse=True)
        for where in itertools.combinations(range(len(right) + len(left)), len(right)):
            seq, r, l = [], iter(right), iter(left)
            for slot in range(len(right) + len(left)):
                seq.append(next(r) if slot in where else next(l))
            if order == K.RIGHT_FIRST and seq != right + left or order == K.LEFT_FIRST and seq != left + right:
                continue
            brackets, lo, hi = set(), h, h + 1
            for d in seq:
                lo, hi = min(lo, min(span_of(d))), max(hi, max(span_of(d)) + 1)
                brackets.add((lo, hi))
            yield brackets

    for choice in itertools.product(*[list(sequences(h)) for h in range(n)]):
        brackets = set().union(*choice)
        yield p_dmv * math.prod(phi.get(b, 1.0) for b in brackets), brackets


@pytest.mark.parametrize("order", [K.ANY, K.RIGHT_FIRST, K.LEFT_FIRST])
@pytest.mark.parametrize("use_max", [False, True])
def test_product_chart_matches_enumeration(use_max, order):
    rng = np.random.default_rng(3)
    t, n = 3, 5
    tags = np.array([0, 2, 1, 1, 0], dtype=np.int32)
    root = rng.dirichlet(np.ones(t))
    stop = rng.dirichlet(np.ones(2), size=(t, 2, 2))
    attach = rng.dirichlet(np.ones(t), size=(t, 2))
    m = (n + 1) * (n + 2) // 2
    score = np.zeros(m)
    phi = {}
    for i in range(n):
        for j in range(i + 2, n + 1):
            if (i, j) != (0, n):
                score[KC.tri(i, j, n)] = rng.normal()
                phi[(i, j)] = math.exp(score[KC.tri(i, j, n)])
    counts = (np.zeros(t), np.zeros((t, 2, 2, 2)), np.zeros((t, 2, t)))
    post, heads = np.zeros(m), np.zeros(n, dtype=np.int32)
    value = K.product_sentence(tags, root, stop, attach, score, use_max, order, *counts, post, heads)
    dependency_trees = list(projective_trees(n))
    assert len(dependency_trees) == 143  # projective trees of 5 words with one root word (OEIS A006013)
    trees = [(h, w, b) for h in dependency_trees for w, b in derivations(tags, h, root, stop, attach, phi, order)]
    if order != K.ANY:
        assert len(trees) == 143  # one bracketing per dependency tree
    weights = np.array([w for _, w, _ in trees])
    if use_max:
        best = int(np.argmax(weights))
        assert value == pytest.approx(math.log(weights[best]))
        assert tuple(heads) == trees[best][0]
        got = {(i, j) for i in range(n) for j in range(i + 2, n + 1) if post[KC.tri(i, j, n)] == 1}
        assert got == trees[best][2] | {(0, n)}
        return
    z = weights.sum()
    assert value == pytest.approx(math.log(z))
    expected_root = np.zeros(t)
    expected_attach = np.zeros((t, 2, t))
    span = {}
    for h, w, brackets in trees:
        expected_root[tags[h.index(0)]] += w / z
        for k, hk in enumerate(h):
            if hk:
                expected_attach[tags[hk - 1], RIGHT if k > hk - 1 else LEFT, tags[k]] += w / z
        for b in brackets:
            span[b] = span.get(b, 0.0) + w / z
    np.testing.assert_allclose(counts[0], expected_root, atol=1e-12)
    np.testing.assert_allclose(counts[2], expected_attach, atol=1e-12)
    # one STOP per head and side, one CONTINUE per dependent
    assert counts[1][..., STOP].sum() == pytest.approx(2 * n) and counts[1][..., CONT].sum() == pytest.approx(n - 1)
    for (i, j), p in span.items():
        if j - i > 1 and (i, j) != (0, n):
            assert post[KC.tri(i, j, n)] == pytest.approx(p, abs=1e-12)
    assert post[: n * (n + 1) // 2].sum() == pytest.approx(2 * n - 1)

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


def tree_score(tags, heads, root, stop, attach, phi):
    """``P_DMV(D) prod phi(B(D))`` by the head-outward derivation, right dependents first; and B(D)."""
    n = len(tags)
    deps = [[k for k in range(n) if heads[k] == h + 1] for h in range(n)]
    brackets = set()

    def derive(h):
        p, lo, hi = 1.0, h, h + 1
        for side, order in ((RIGHT, sorted(d for d in deps[h] if d > h)),
                            (LEFT, sorted((d for d in deps[h] if d < h), reverse=True))):
            for v, a in enumerate(order):
                q, a_lo, a_hi = derive(a)
                p *= stop[tags[h], side, min(v, 1), CONT] * attach[tags[h], side, tags[a]] * q
                lo, hi = min(lo, a_lo), max(hi, a_hi)
                brackets.add((lo, hi))
                p *= phi.get((lo, hi), 1.0)
            p *= stop[tags[h], side, 1 if order else 0, STOP]
        return p, lo, hi

    r = heads.index(0)
    p, _, _ = derive(r)
    return root[tags[r]] * p, brackets


@pytest.mark.parametrize("use_max", [False, True])
def test_product_chart_matches_enumeration(use_max):
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
    value = K.product_sentence(tags, root, stop, attach, score, use_max, *counts, post, heads)
    trees = [(h, *tree_score(tags, h, root, stop, attach, phi)) for h in projective_trees(n)]
    assert len(trees) == 143  # projective trees of 5 words with one root word (OEIS A006013)
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

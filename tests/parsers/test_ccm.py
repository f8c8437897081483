"""The CCM chart against brute-force enumeration of binary bracketings; EM, VI and CVI properties; recovery."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln

from induce.kernels import ccm as K
from induce.parsers.ccm import CCMParser, SpanTable, SpanCounts, spans_to_tree
from induce.eval.km_brackets import branching_baselines, km_bracket_scores

SENTS = [["D", "N", "V"], ["D", "N", "V", "D", "N"], ["N", "V", "N"], ["D", "A", "N", "V"]]


def bracketings(i: int, j: int):
    """Every binary bracketing of ``[i, j)`` as a frozenset of its ``2(j - i) - 1`` spans."""
    if j - i == 1:
        yield frozenset({(i, j)})
        return
    for k in range(i + 1, j):
        for left in bracketings(i, k):
            for right in bracketings(k, j):
                yield left | right | {(i, j)}


def encode(sents):
    vocab = sorted({t for s in sents for t in s})
    tags = np.array([vocab.index(t) for s in sents for t in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sents])]).astype(np.int64)
    yields, contexts = {}, {}
    return SpanTable(tags, offsets, len(vocab), yields, contexts, grow=True), len(yields) + 1, len(contexts) + 1


def random_logs(rng, n_yields, n_contexts):
    return [np.log(rng.dirichlet(np.ones(v))) for v in (n_yields, n_yields, n_contexts, n_contexts)]


def brute(table, s, logs):
    """(log P(S), span posteriors in tri order) by enumerating every bracketing of sentence ``s``."""
    lcy, ldy, lcx, ldx = logs
    n, a = int(table.lengths[s]), int(table.soff[s])
    spans = [(i, j) for i in range(n) for j in range(i + 1, n + 1)] + [(i, i) for i in range(n + 1)]
    joint = []
    trees = list(bracketings(0, n))
    for tree in trees:
        lp = -math.log(len(trees))
        for t, (i, j) in enumerate(spans):
            y, x = table.yid[a + t], table.cid[a + t]
            lp += lcy[y] + lcx[x] if (i, j) in tree else ldy[y] + ldx[x]
        joint.append(lp)
    joint = np.array(joint)
    logz = np.logaddexp.reduce(joint)
    post = np.array([sum(np.exp(lp - logz) for lp, tree in zip(joint, trees) if span in tree) for span in spans])
    assert not post[n * (n + 1) // 2:].any()  # empty spans are never constituents
    return logz, post


def test_tri_order_and_catalan():
    n = 5
    assert [K.tri(i, j, n) for i in range(n) for j in range(i + 1, n + 1)] == list(range(n * (n + 1) // 2))
    for n in range(1, 7):
        assert round(math.exp(K.log_n_trees(n))) == len(list(bracketings(0, n)))


def test_chart_matches_enumeration():
    table, vy, vx = encode(SENTS)
    logs = random_logs(np.random.default_rng(0), vy, vx)
    state = SpanCounts(table, vy, vx)
    ll = K.estep_pass(table.yid, table.cid, table.soff, table.lengths, *logs, state.post, state.cy, state.dy,
                      state.cx, state.dx, state.totals)
    total = 0.0
    for s in range(len(SENTS)):
        logz, post = brute(table, s, logs)
        total += logz
        np.testing.assert_allclose(state.post[table.soff[s]:table.soff[s + 1]], post, rtol=1e-10, atol=1e-12)
        # every binary tree has 2n - 1 constituents
        assert state.post[table.soff[s]:table.soff[s + 1]].sum() == pytest.approx(2 * table.lengths[s] - 1)
    assert ll == pytest.approx(total, rel=1e-12)
    assert state.totals[0] == pytest.approx(sum(2 * len(s) - 1 for s in SENTS))
    assert state.cy.sum() + state.dy.sum() == pytest.approx(len(state.post))


def test_initial_distributions():
    n = 5
    uniform = np.zeros(n * (n + 1) // 2)
    K.inside_outside(np.zeros_like(uniform), n, uniform)
    trees = list(bracketings(0, n))
    spans = [(i, j) for i in range(n) for j in range(i + 1, n + 1)]
    np.testing.assert_allclose(uniform, [sum(s in t for t in trees) / len(trees) for s in spans])
    split = np.zeros_like(uniform)
    K.split_uniform_posteriors(n, split)
    assert split[K.tri(0, 1, n)] == pytest.approx(1.0) and split.sum() == pytest.approx(2 * n - 1)
    # a split-uniform tree has (1, 5) with probability P(split at 1) = 1/4; uniform trees: C(3)/C(4) = 5/14
    assert split[K.tri(1, 5, n)] == pytest.approx(0.25) and uniform[K.tri(1, 5, n)] == pytest.approx(5 / 14)


def test_best_tree_is_the_enumerated_maximum():
    rng = np.random.default_rng(1)
    n = 5
    score = rng.normal(size=n * (n + 1) // 2)
    left, right = np.zeros(2 * n - 1, dtype=np.int64), np.zeros(2 * n - 1, dtype=np.int64)
    value = K.best_tree(score, n, left, right)
    best = max(bracketings(0, n), key=lambda t: sum(score[K.tri(i, j, n)] for i, j in t))
    assert set(zip(left.tolist(), right.tolist())) == best
    assert value == pytest.approx(sum(score[K.tri(i, j, n)] for i, j in best))


@pytest.mark.parametrize("infer", ["em", "vi"])
def test_batch_objectives_never_decrease(infer):
    model = CCMParser(infer=infer, n_iter=15, tol=0, init="tree").fit(SENTS * 3)
    values = [h["objective"] for h in model.history_]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:]))
    assert values[-1] > values[0]


def log_evidence(sents, priors):
    """``log p(S)`` with the parameters integrated out: per joint bracketing, Dirichlet-multinomial terms."""
    table, vy, vx = encode(sents)
    per_sentence = []
    for s in range(len(sents)):
        n = int(table.lengths[s])
        spans = [(i, j) for i in range(n) for j in range(i + 1, n + 1)] + [(i, i) for i in range(n + 1)]
        per_sentence.append([(tree, spans) for tree in bracketings(0, n)])
    total = -np.inf
    for combo in np.ndindex(*[len(options) for options in per_sentence]):
        counts = [np.zeros(v) for v in (vy, vy, vx, vx)]
        lp = 0.0
        for s, pick in enumerate(combo):
            tree, spans = per_sentence[s][pick]
            lp -= math.log(len(per_sentence[s]))
            for t, span in enumerate(spans):
                y, x = table.yid[table.soff[s] + t], table.cid[table.soff[s] + t]
                side = 0 if span in tree else 1
                counts[side][y] += 1
                counts[2 + side][x] += 1
        for c, a in zip(counts, (priors[0], priors[1], priors[0], priors[1])):
            lp += gammaln(len(c) * a) - gammaln(c.sum() + len(c) * a) + np.sum(gammaln(c + a) - gammaln(a))
        total = np.logaddexp(total, lp)
    return total


def test_vi_elbo_bounds_the_evidence():
    sents = [["D", "N", "V"], ["N", "V", "D", "N"]]
    priors = (0.5, 2.0)
    model = CCMParser(infer="vi", n_iter=10, tol=0, constituent_prior=priors[0], distituent_prior=priors[1]).fit(sents)
    evidence = log_evidence(sents, priors)
    elbos = [h["objective"] for h in model.history_]
    assert max(elbos) <= evidence + 1e-9
    assert elbos[-1] > evidence - 5.0  # tight to a few nats on this tiny corpus


def test_cvi_pass_matches_subtract_recompute_add():
    table, vy, vx = encode(SENTS)
    priors = np.array([2.0, 8.0])
    state = SpanCounts(table, vy, vx)
    state.initial("split")
    before = [a.copy() for a in (state.cy, state.dy, state.cx, state.dx, state.totals, state.post)]
    a, b = table.soff[0], table.soff[1]
    own = SpanCounts(table, vy, vx)
    own.post[a:b] = state.post[a:b]
    K.counts_pass(table.yid, table.cid, table.soff[:2], own.post, own.cy, own.dy, own.cx, own.dx, own.totals)
    rest = SpanCounts(table, vy, vx)
    for mine, full, other in zip((rest.cy, rest.dy, rest.cx, rest.dx), before[:4], (own.cy, own.dy, own.cx, own.dx)):
        mine[...] = full - other
    logs = rest.logs("cvi", priors)
    ref = np.zeros(b - a)
    score = np.zeros(b - a)
    K._gathered(table.yid, table.cid, a, b, int(table.lengths[0]), *logs, score)
    K.inside_outside(score, int(table.lengths[0]), ref)
    state.cvi_pass(np.array([0]), priors)
    np.testing.assert_allclose(state.post[a:b], ref, atol=1e-12)
    np.testing.assert_allclose(state.post[b:], before[5][b:])
    fresh = SpanCounts(table, vy, vx)
    K.counts_pass(table.yid, table.cid, table.soff, state.post, fresh.cy, fresh.dy, fresh.cx, fresh.dx, fresh.totals)
    for x, y in zip((state.cy, state.dy, state.cx, state.dx, state.totals),
                    (fresh.cy, fresh.dy, fresh.cx, fresh.dx, fresh.totals)):
        np.testing.assert_allclose(x, y, atol=1e-9)


def test_spans_to_tree_and_km_scores():
    spans = np.array([(0, 4), (0, 1), (1, 4), (1, 3), (1, 2), (2, 3), (3, 4)])
    tree = spans_to_tree(spans, list("abcd"), list("DNVN"))
    assert tree == spans_to_tree(spans[[0, 2, 6, 3, 5, 4, 1]], list("abcd"), list("DNVN"))
    assert str(tree) == "(X (D a) (X (X (N b) (V c)) (N d)))"
    from nltk import Tree

    gold = Tree.fromstring("(S (NP (D a) (N b)) (VP (V c) (NP (N d))) (. .))")
    scores = km_bracket_scores([Tree("X", [tree, Tree(".", ["."])])], [gold])
    # counted gold spans (punctuation removed): (0,2) (2,4); predicted: (1,4) (1,3)
    assert (scores["matched"], scores["predicted"], scores["gold"]) == (0, 2, 2)


#: a small PCFG with distinct tags per category: ``(lhs: [(children, probability)])``; unary rules are spliced out
RULES = {"S": [(["NP", "VP"], 1.0)], "VP": [(["V", "NP"], 0.4), (["V", "PP"], 0.3), (["V"], 0.3)],
         "NP": [(["D", "N"], 0.4), (["D", "NX"], 0.3), (["Pr"], 0.3)], "NX": [(["A", "N"], 1.0)],
         "PP": [(["P", "NP"], 1.0)]}


def sample_tree(rng, symbol="S"):
    """A binary gold tree drawn from :data:`RULES` (preterminal ``T`` over the word ``t``)."""
    from nltk import Tree

    if symbol not in RULES:
        return Tree(symbol, [symbol.lower()])
    options = RULES[symbol]
    children, _ = options[rng.choice(len(options), p=[p for _, p in options])]
    kids = [sample_tree(rng, child) for child in children]
    return kids[0] if len(kids) == 1 else Tree(symbol, kids)


def test_recovers_the_bracketing_of_sampled_trees():
    rng = np.random.default_rng(0)
    golds = [sample_tree(rng) for _ in range(100)]
    sents = [[tag for _, tag in tree.pos()] for tree in golds]
    f1 = km_bracket_scores(CCMParser(n_iter=50).fit(sents).parse(sents), golds)["f1"]
    right = km_bracket_scores(branching_baselines(golds)["right_branching"], golds)["f1"]
    assert f1 > 0.85 and f1 > right + 0.2  # 0.88 against 0.59 when written

"""PCFG-LA: treebank transform, latent-tree and chart kernels against brute force, training invariants."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from nltk import Tree

from induce.corpus.read_ptb import read_ptb
from induce.errors import ConfigError, ModelFormatError
from induce.eval.brackets import bracket_scores
from induce.kernels import latent_chart as lc
from induce.kernels import latent_tree as lt
from induce.parsers import LatentPCFGParser
from induce.parsers.treebank import Lexicon, binarize, debinarize, signature


def _ptb(corpora, first: int, last: int) -> list[Tree]:
    root = corpora / "ptb-sample"
    return [s.tree for f in range(first, last + 1) for s in read_ptb(root / f"wsj_{f:04d}.mrg")]


# ------------------------------------------------------------------ treebank
@pytest.fixture(scope="module")
def treebank(corpora):
    return _ptb(corpora, 1, 199)


@pytest.mark.parametrize("horizontal,vertical", [(1, 1), (0, 1), (2, 2)])
def test_binarize_round_trip_is_the_identity_on_the_treebank(treebank, horizontal, vertical):
    for tree in treebank:
        cnf = binarize(tree, horizontal, vertical)
        for sub in cnf.subtrees():
            assert len(sub) == 2 or (len(sub) == 1 and isinstance(sub[0], str))
        assert debinarize(cnf) == tree


def test_binarize_scheme():
    tree = Tree.fromstring("(S (NP (NNP John)) (VP (VBD saw) (NP (DT a) (JJ big) (NN dog))) (. .))")
    cnf = binarize(tree, 1, 1)
    assert cnf == Tree.fromstring(
        "(S (NP+NNP John) (@S|NP (VP (VBD saw) (NP (DT a) (@NP|DT (JJ big) (NN dog)))) (. .)))")
    parent = binarize(tree, 0, 2)
    assert parent[1].label() == "@S" and parent[1][0].label() == "VP^S"
    assert debinarize(parent) == tree


@pytest.mark.parametrize("word,initial,known_lower,expected", [
    ("running", False, False, "UNK-LC-ing"),
    ("cats", False, False, "UNK-LC-s"),
    ("glass", False, False, "UNK-LC"),
    ("quickly", False, False, "UNK-LC-ly"),
    ("re-elected", False, False, "UNK-LC-DASH"),
    ("1987", False, False, "UNK-NUM"),
    ("3-D", False, False, "UNK-CAPS-NUM-DASH"),
    ("Xylophone", False, False, "UNK-CAPS"),
    ("IBM", True, False, "UNK-CAPS"),
    ("Walked", True, True, "UNK-INITC-KNOWNLC-ed"),
    ("Walked", True, False, "UNK-INITC-ed"),
    ("Kinkel", False, False, "UNK-CAPS"),
    ("nationality", False, False, "UNK-LC-ity"),
])
def test_unknown_word_signatures(word, initial, known_lower, expected):
    assert signature(word, known_lower, initial) == expected


def test_lexicon_maps_rare_words_to_signatures():
    lex = Lexicon.from_sentences([["the", "dog", "barks"], ["the", "dog", "sleeps"]], min_count=2)
    assert lex.terminals(["The", "dog", "barks"]) == ["UNK-INITC-KNOWNLC", "dog", "UNK-LC-s"]


# ---------------------------------------------------- latent tree vs brute force
def _tiny_tree():
    # (0: A -> 1 2) (1: B -> x0) (2: A -> 3 4) (3: B -> x1) (4: C -> x2); rules 0: A->B A, 1: A->B C
    nodes = np.array([[0, 0, 1, 2, 0], [1, 0, -1, -1, 0], [0, 1, 3, 4, 1], [1, 1, -1, -1, 1], [2, 2, -1, -1, 2]],
                     dtype=np.int32)
    return nodes


def test_tree_posteriors_match_enumeration():
    rng = np.random.default_rng(0)
    h = 3
    nodes = _tiny_tree()
    m = len(nodes)
    tb = rng.random((m, h, h, h))
    tl = rng.random((m, h))
    troot = rng.random(h)
    post_bin = np.zeros((m, h, h, h))
    post_lex = np.zeros((m, h))
    post_root = np.zeros(h)
    ll = lt.tree_posteriors(nodes, tb, tl, troot, post_bin, post_lex, post_root)
    z = 0.0
    exp_bin = np.zeros_like(post_bin)
    exp_lex = np.zeros_like(post_lex)
    exp_root = np.zeros(h)
    for ann in itertools.product(range(h), repeat=m):
        p = troot[ann[0]]
        for q in range(m):
            if nodes[q, 2] < 0:
                p *= tl[q, ann[q]]
            else:
                p *= tb[q, ann[q], ann[nodes[q, 2]], ann[nodes[q, 3]]]
        z += p
        exp_root[ann[0]] += p
        for q in range(m):
            if nodes[q, 2] < 0:
                exp_lex[q, ann[q]] += p
            else:
                exp_bin[q, ann[q], ann[nodes[q, 2]], ann[nodes[q, 3]]] += p
    assert ll == pytest.approx(math.log(z), rel=1e-10)
    np.testing.assert_allclose(post_root, exp_root / z, atol=1e-12)
    for q in range(m):
        if nodes[q, 2] < 0:
            np.testing.assert_allclose(post_lex[q], exp_lex[q] / z, atol=1e-12)
        else:
            np.testing.assert_allclose(post_bin[q], exp_bin[q] / z, atol=1e-12)


# ------------------------------------------------------------ training
@pytest.fixture(scope="module")
def small_treebank(treebank):
    return treebank[:300]


def test_em_log_likelihood_never_decreases(small_treebank):
    model = LatentPCFGParser(n_subtypes=2, infer="em", n_iter=15, tol=0.0, random_state=3).fit(small_treebank)
    ll = [h["log_likelihood"] for h in model.history_]
    assert len(ll) == 16
    assert all(b >= a - 1e-7 * abs(a) for a, b in zip(ll, ll[1:]))
    assert ll[-1] > ll[0] + 100


def test_cvi_pass_keeps_the_count_sums(small_treebank):
    model = LatentPCFGParser(n_subtypes=3)
    nodes, offsets = model._read_treebank(small_treebank)
    model._root_mask = np.zeros(len(model.symbols_), dtype=bool)
    model._root_mask[nodes[offsets[:-1], 0]] = True
    model._index()
    h, n_trees = 3, len(offsets) - 1
    rng = np.random.default_rng(0)
    theta = model._estimate("em", rng.random((len(model.bin_rules_), h, h, h)),
                            rng.random((len(model.lex_rules_), h)), rng.random((len(model.symbols_), h)), 1.0)
    binary = nodes[:, 2] >= 0
    store = (np.zeros((binary.sum(), h, h, h), np.float32), np.zeros(((~binary).sum(), h), np.float32),
             np.zeros((n_trees, h), np.float32))
    scratch = (np.zeros((len(model.bin_rules_), h, h, h)), np.zeros((len(model.lex_rules_), h)),
               np.zeros((len(model.symbols_), h)))
    lt.estep_trees(nodes, offsets, *theta, *scratch, *store)
    counts = tuple(np.zeros_like(c) for c in scratch)
    totals = np.zeros((len(model.symbols_), h))
    root_total = np.zeros(1)
    bp, lp = model.bin_rules_[:, 0], model.lex_rules_[:, 0]
    lt.stored_counts(nodes, offsets, bp, lp, *counts, totals, root_total, *store)
    n_out = np.array([len(rb) * h * h + len(rl) for rb, rl in model._groups], dtype=np.int64)
    for _ in range(2):
        lt.cvi_trees(nodes, offsets, rng.permutation(n_trees), bp, lp, *counts, totals, root_total, n_out,
                     len(model._root_syms) * h, 0.1, *store)
        assert counts[0].sum() == pytest.approx(binary.sum(), rel=1e-9)
        assert counts[1].sum() == pytest.approx((~binary).sum(), rel=1e-9)
        assert counts[2].sum() == pytest.approx(n_trees, rel=1e-9) == root_total[0]
        expect = np.zeros_like(totals)
        np.add.at(expect, bp, counts[0].sum((2, 3)))
        np.add.at(expect, lp, counts[1])
        np.testing.assert_allclose(totals, expect, atol=1e-6)
        assert counts[0].min() > -1e-6


# ------------------------------------------------------ chart vs brute force
def _brute_chart(e, bin_p, root_p, n_sym):
    """All labelled, annotated binary trees over the sentence: Z, best derivation probability, item
    posteriors, the best max-rule-sum score over unannotated trees, its spans and the best derivation's
    ``(A, i, j)`` items."""
    n, h = e.shape[0], e.shape[2]

    def brackets(i, j):
        if j - i == 1:
            yield (i, j)
            return
        for k in range(i + 1, j):
            for left in brackets(i, k):
                for right in brackets(k, j):
                    yield (i, j, left, right)

    def spans(t):
        if len(t) == 2:
            return [t]
        return [t] + spans(t[2]) + spans(t[3])

    def derivations(t):  # (label, annotation, prob, items, rules-with-annotations)
        if len(t) == 2:
            for a_sym in range(n_sym):
                for a in range(h):
                    if e[t[0], a_sym, a] > 0:
                        yield a_sym, a, e[t[0], a_sym, a], [(t[0], t[1], a_sym)], []
            return
        for ls, la, lp, li, lr in derivations(t[2]):
            for rs, ra, rp, ri, rr in derivations(t[3]):
                for a_sym in range(n_sym):
                    r = (a_sym * n_sym + ls) * n_sym + rs
                    for a in range(h):
                        p = bin_p[r, a, la, ra] * lp * rp
                        rule = (t[0], t[2][1], t[1], r)
                        yield a_sym, a, p, [(t[0], t[1], a_sym)] + li + ri, [rule] + lr + rr

    z = 0.0
    best = 0.0
    items: dict = {}
    anchored: dict = {}
    trees = []
    for t in brackets(0, n):
        for a_sym, a, p, its, rules in derivations(t):
            p *= root_p[a_sym, a]
            z += p
            if p > best:
                best, best_items = p, [list(x) for x in its]
            key = (tuple(its), tuple(rules))
            trees.append(key)
            for it in its:
                items[it] = items.get(it, 0.0) + p
            for rl in rules:
                anchored[rl] = anchored.get(rl, 0.0) + p
    scores = {}
    for its, rules in set(trees):
        leaves = [it for it in its if it[1] - it[0] == 1]
        root = its[0]
        scores[(its, rules)] = (sum(items[x] for x in leaves) + items[root] + sum(anchored[x] for x in rules)) / z
    top = max(scores, key=scores.get)
    return (z, best, {k: v / z for k, v in items.items()}, scores[top], [[i, j] for i, j, _ in top[0]],
            [[a, i, j] for i, j, a in best_items])


@pytest.mark.parametrize("seed", [0, 1])
def test_chart_decoders_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    n_sym, h, n = 2, 2, 4
    bin_rules = np.array([(a, b, c) for a in range(n_sym) for b in range(n_sym) for c in range(n_sym)], np.int32)
    bin_p = rng.random((len(bin_rules), h, h, h))
    root_p = rng.random((n_sym, h))
    e = rng.random((n, n_sym, h))
    e[1, 0] = 0.0  # word 1 only by symbol 1
    order = np.argsort(bin_rules[:, 1], kind="stable").astype(np.int32)
    left_off = np.zeros(n_sym + 1, np.int64)
    np.cumsum(np.bincount(bin_rules[:, 1], minlength=n_sym), out=left_off[1:])
    rules = (bin_rules, left_off, order)
    allowed = np.ones((n + 1, n + 1, n_sym), dtype=bool)
    z_true, best_true, items_true, mrs_true, mrs_spans, best_nodes = _brute_chart(e, bin_p, root_p, n_sym)
    idx, inside, live, apps, _ = lc.chart_inside(e, allowed, *rules, bin_p, 1.0, False)
    outside, z = lc.chart_outside(idx, inside, apps, bin_p, 1.0, root_p)
    assert z == pytest.approx(z_true, rel=1e-10)
    post = lc.item_posteriors(idx, inside, outside, z)
    for (i, j, a_sym), p in items_true.items():
        assert post[i, j, a_sym] == pytest.approx(p, rel=1e-9)
    nodes = np.zeros((2 * n - 1, 6), np.int32)
    score = lc.max_rule_sum(idx, inside, outside, z, live, apps, bin_rules, bin_p, 1.0, root_p, nodes)
    assert score == pytest.approx(mrs_true, rel=1e-9)
    assert nodes[0, 1:3].tolist() == [0, n] and sorted(nodes[:, 1:3].tolist()) == sorted(mrs_spans)
    # the scale factor changes nothing but Z
    chart2 = lc.chart_inside(e, allowed, *rules, bin_p, 3.0, False)
    assert lc.sentence_z(n, chart2[0], chart2[1], root_p) == pytest.approx(z_true * 3.0 ** (n - 1), rel=1e-10)
    v_idx, v_in, _, v_apps, back = lc.chart_inside(e, allowed, *rules, bin_p, 1.0, True)
    vnodes = np.zeros((2 * n - 1, 6), np.int32)
    assert lc.viterbi_trace(v_idx, v_in, back, v_apps, bin_rules, root_p, vnodes) == pytest.approx(best_true,
                                                                                                  rel=1e-10)
    assert sorted(vnodes[:, :3].tolist()) == sorted(best_nodes)


# ---------------------------------------------------------------- API
def test_fit_parse_save_load(corpora, small_treebank, tmp_path):
    test = _ptb(corpora, 180, 181)
    model = LatentPCFGParser(n_subtypes=2, infer="cvi", alpha=[0.1, 0.01], n_iter=4, min_iter=0,
                             random_state=1).fit(small_treebank, dev=test[:8])
    assert [d["alpha"] for d in model.dev_scores_] == [0.1, 0.01] and model.alpha_ in (0.1, 0.01)
    pred = model.parse(test)
    assert [t.leaves() for t in pred] == [t.leaves() for t in test]
    assert bracket_scores(pred, test)["f1"] > 0.35
    path = tmp_path / "la.npz"
    model.save(path)
    again = LatentPCFGParser.load(path)
    assert [str(t) for t in again.parse(test[:5])] == [str(t) for t in pred[:5]]
    viterbi = LatentPCFGParser.load(path)
    viterbi.decode = "viterbi"
    assert bracket_scores(viterbi.parse(test), test)["f1"] > 0.35
    tagged = model.parse(test[:5], use_tags=True)
    assert [t.pos() for t in tagged] == [t.pos() for t in test[:5]]
    with pytest.raises(ModelFormatError):
        from induce import modelfile
        modelfile.save(tmp_path / "x.npz", "PCFGInducer", {}, {})
        LatentPCFGParser.load(tmp_path / "x.npz")


def test_coarse_pruning_is_shared_by_grammars_of_one_treebank(corpora, small_treebank):
    """The coarse pass of one grammar, reused by another trained on the same treebank, gives the same parses
    as that grammar's own coarse pass; reuse on other sentences or another treebank is refused."""
    test = _ptb(corpora, 180, 180)[:12]
    em = LatentPCFGParser(n_subtypes=1, infer="em", n_iter=1, min_iter=0).fit(small_treebank)
    cvi = LatentPCFGParser(n_subtypes=2, infer="cvi", alpha=0.1, n_iter=3, min_iter=0,
                           random_state=2).fit(small_treebank)
    pruning = em.coarse_pruning(test)
    assert len(pruning.charts) == len(test)
    assert [str(t) for t in cvi.parse(test, pruning=pruning)] == [str(t) for t in cvi.parse(test)]
    tagged = em.coarse_pruning(test, use_tags=True)
    assert [str(t) for t in cvi.parse(test, use_tags=True, pruning=tagged)] == \
        [str(t) for t in cvi.parse(test, use_tags=True)]
    with pytest.raises(ConfigError):
        cvi.parse(test[:5], pruning=pruning)
    with pytest.raises(ConfigError):
        cvi.parse(test, pruning=tagged)
    other = LatentPCFGParser(n_subtypes=2, infer="em", n_iter=1, min_iter=0).fit(small_treebank[:100])
    with pytest.raises(ConfigError):
        other.parse(test, pruning=pruning)


def test_determinism_and_errors(small_treebank):
    a = LatentPCFGParser(n_subtypes=2, infer="vi", alpha=0.1, n_iter=3, min_iter=0, random_state=5).fit(
        small_treebank[:50])
    b = LatentPCFGParser(n_subtypes=2, infer="vi", alpha=0.1, n_iter=3, min_iter=0, random_state=5).fit(
        small_treebank[:50])
    np.testing.assert_array_equal(a.bin_p_, b.bin_p_)
    with pytest.raises(ConfigError):
        LatentPCFGParser(infer="mh").fit(small_treebank)
    with pytest.raises(ConfigError):
        LatentPCFGParser(alpha=[1.0, 0.1]).fit(small_treebank)
    with pytest.raises(ConfigError):
        LatentPCFGParser().fit([["a", "b"]])


def test_cli_train_save_load(corpora, tmp_path):
    from induce.cli import main

    train = tmp_path / "train"
    train.mkdir()
    for f in range(1, 6):
        (train / f"wsj_{f:04d}.mrg").symlink_to(corpora / "ptb-sample" / f"wsj_{f:04d}.mrg")
    test = corpora / "ptb-sample" / "wsj_0180.mrg"
    out, model = tmp_path / "out.mrg", tmp_path / "la.npz"
    rc = main(["parse", "--model", "pcfg-la", "--infer", "vi", "--subtypes", "2", "--train", str(train),
               "--iterations", "3", "--quiet", str(test), "-o", str(out), "--save-model", str(model)])
    assert rc == 0 and out.exists() and model.exists()
    again = tmp_path / "again.mrg"
    assert main(["parse", "--model", "pcfg-la", "--load", str(model), "--quiet", str(test), "-o", str(again)]) == 0
    assert again.read_text() == out.read_text()
    assert main(["parse", "--model", "pcfg-la", "--quiet", str(test), "-o", str(again)]) == 2


def test_benchmark_cv_folds_cover_every_file_once(benchmark_script):
    """benchmarks/pcfg_la_bench.py --cv: consecutive file numbers, every file in exactly one fold."""
    bench = benchmark_script("pcfg_la_bench")
    for k in (1, 3, 10):
        folds = bench.cv_folds(k)
        assert len(folds) == k and sorted(f for fold in folds for f in fold) == list(range(1, 200))
        assert all(fold == list(range(fold[0], fold[-1] + 1)) for fold in folds)
        assert max(map(len, folds)) - min(map(len, folds)) <= 1

"""Learned Dirichlet priors of the DMV and the PCFG (empirical Bayes on decoded trees) and PCFG stopping."""

from __future__ import annotations

import json
import warnings
from collections import Counter

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from induce.infer.hyper import fit_symmetric_dirichlet
from induce.parsers import DMVParser, PCFGInducer
from induce.parsers.dmv import FAMILIES, tree_counts
from induce.parsers.grammar import Grammar
from induce.parsers.synthetic import generate, generate_dmv, sparse_grammar

from .brute import _projective, dmv_tree_prob


def _known_dmv(a: dict, T: int = 12, seed: int = 0):
    """DMV rows drawn from symmetric Dirichlets with the concentrations ``a`` (one per family)."""
    rng = np.random.default_rng(seed)
    return (rng.dirichlet(np.full(T, a["root"])), rng.dirichlet(np.full(2, a["stop"]), size=(T, 2, 2)),
            rng.dirichlet(np.full(T, a["attach"]), size=(T, 2)))


def _flat(tags, heads):
    offsets = np.cumsum([0] + [len(t) for t in tags]).astype(np.int64)
    flat = [np.array([x for seq in seqs for x in seq], dtype=np.int64) for seqs in (tags, heads)]
    return flat[0], flat[1], offsets


def test_sampled_dmv_trees_are_projective_and_counted_like_the_brute_force_model():
    root, stop, attach = _known_dmv({"root": 1.0, "stop": 2.0, "attach": 0.5}, T=5, seed=1)
    tags, heads = generate_dmv(root, stop, attach, 300, max_length=8, seed=2)
    assert max(map(len, tags)) > 3 and all(h.count(0) == 1 and _projective(h) for h in heads)
    expected: Counter = Counter()
    for t, h in zip(tags, heads):
        expected += dmv_tree_prob(h, t, root, stop, attach)[1]
    counts = dict(zip(FAMILIES, tree_counts(*_flat(tags, heads), 5)))
    assert sum(c.sum() for c in counts.values()) == sum(expected.values())
    for key, n in expected.items():
        assert counts[key[0]][key[1:]] == n, key


def test_dmv_learned_priors_match_empirical_bayes_on_the_true_trees():
    """Fitted without trees, the learned concentrations are within a factor 2 of those the evidence of
    the true trees gives (the sampler redraws trees over 15 words, so the stop rows' nominal 2.0 is not
    what the kept trees show), and the attach concentration within 30% of the nominal 0.2."""
    a = {"root": 1.0, "stop": 2.0, "attach": 0.2}
    tags, heads = generate_dmv(*_known_dmv(a, seed=0), 2000, max_length=15, seed=1)
    oracle = {f: fit_symmetric_dirichlet(c, 1.0) for f, c in zip(FAMILIES, tree_counts(*_flat(tags, heads), 12))}
    model = DMVParser(learn_hyper=True, random_state=0).fit([[f"t{x}" for x in t] for t in tags])
    assert model.learned_hyper_ == FAMILIES and model.converged_
    for family in FAMILIES:
        assert 0.5 < model.alpha_[family] / oracle[family] < 2.0, (family, model.alpha_, oracle)
    assert model.alpha_["attach"] == pytest.approx(0.2, rel=0.3)
    assert all("alpha" in h for h in model.history_[1:])


def test_dmv_given_alpha_or_em_learns_nothing_and_learned_values_round_trip(tmp_path):
    tags, _ = generate_dmv(*_known_dmv({"root": 1.0, "stop": 2.0, "attach": 0.2}), 200, seed=3)
    sents = [[f"t{x}" for x in t] for t in tags]
    assert DMVParser(alpha=0.5, learn_hyper=True).fit(sents).alpha_ == dict.fromkeys(FAMILIES, 0.5)
    assert DMVParser(infer="em", learn_hyper=True).fit(sents).learned_hyper_ == ()
    model = DMVParser(infer="vi", learn_hyper=True).fit(sents)
    model.save(tmp_path / "d.npz")
    again = DMVParser.load(tmp_path / "d.npz")
    assert again.alpha_ == model.alpha_ and again.learned_hyper_ == FAMILIES


def _known_pcfg(a: float, n_pre: int = 6, V: int = 40, seed: int = 0) -> Grammar:
    """S -> P_i P_j (any pair) and P_i -> w, every row drawn from Dir(a) over its allowed rules."""
    rng = np.random.default_rng(seed)
    n = n_pre + 1
    binary_mask = np.zeros((n, n, n), dtype=bool)
    binary_mask[0, 1:, 1:] = True
    emit_mask = np.zeros((n, V), dtype=bool)
    emit_mask[1:] = True
    binary, emit = np.zeros((n, n, n)), np.zeros((n, V))
    binary[0][binary_mask[0]] = rng.dirichlet(np.full(n_pre * n_pre, a))
    emit[1:] = rng.dirichlet(np.full(V, a), size=n_pre)
    return Grammar(["S"] + [f"P{i}" for i in range(n_pre)], [f"w{i}" for i in range(V)], binary, emit,
                   binary_mask, emit_mask)


@pytest.mark.parametrize("a,seed", [(0.1, 0), (0.1, 1), (0.3, 1)])
def test_pcfg_learned_prior_recovers_a_sparse_known_concentration(a, seed):
    """Within a factor 2 for sparse grammars (a <= 0.3; denser ones are underestimated: the induced
    preterminals share words less than the true ones, docs/experiments/grammar_defaults.md)."""
    true = _known_pcfg(a, seed=seed)
    strings = generate(true, 1500, max_length=2, seed=seed)
    learner = Grammar(true.nonterminals, true.terminals, true.binary_mask.astype(float),
                      true.emit_mask.astype(float), true.binary_mask, true.emit_mask)
    model = PCFGInducer(grammar=learner, infer="cvi", learn_hyper=True, random_state=seed).fit(strings)
    assert model.learned_hyper_ == ("alpha",)
    assert a / 2 < model.alpha_ < 2 * a


@pytest.fixture(scope="module")
def strings():
    return generate(sparse_grammar(4, 12, 3, 3, seed=2), 150, max_length=8, seed=5)


@pytest.mark.parametrize("infer", ["em", "vi", "cvi"])
def test_pcfg_stops_before_the_cap_on_an_easy_case(strings, infer):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = PCFGInducer(n_nonterminals=3, infer=infer, n_iter=300, tol=1e-4, random_state=1).fit(strings)
    assert model.converged_ and model.n_iter_ < 300 and len(model.history_) == model.n_iter_ + 1
    assert model.warnings_ == []


def test_pcfg_warns_at_the_cap_and_tol_zero_runs_every_pass(strings):
    with pytest.warns(ConvergenceWarning, match="pcfg em: not converged after 3 passes"):
        model = PCFGInducer(n_nonterminals=3, infer="em", n_iter=3, tol=1e-12, random_state=1).fit(strings)
    assert not model.converged_ and model.n_iter_ == 3 and len(model.warnings_) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fixed = PCFGInducer(n_nonterminals=3, infer="em", n_iter=7, tol=0, random_state=1).fit(strings)
    assert fixed.n_iter_ == 7 and not fixed.converged_
    mh = PCFGInducer(n_nonterminals=3, infer="mh", n_iter=4, random_state=1).fit(strings)
    assert mh.n_iter_ == 4 and mh.warnings_ == []


def test_pcfg_em_objective_never_decreases_until_it_stops(strings):
    model = PCFGInducer(n_nonterminals=3, infer="em", random_state=2).fit(strings)
    ll = [h["log_likelihood"] for h in model.history_[1:]]
    assert model.converged_ and all(b >= a - 1e-9 * abs(a) for a, b in zip(ll, ll[1:]))
    assert abs(ll[-1] - ll[-2]) < model.tol * abs(ll[-2])


def test_parse_cli_reports_passes_convergence_and_learned_priors(tmp_path, capsys):
    from induce.cli import main

    tags, _ = generate_dmv(*_known_dmv({"root": 1.0, "stop": 2.0, "attach": 0.2}), 100, seed=4)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(" ".join(f"t{x}" for x in t) for t in tags) + "\n")
    rc = main(["parse", str(corpus), "-o", str(tmp_path / "o.conll"), "--json", "--quiet", "--learn-hyper", "all"])
    dmv = json.loads(capsys.readouterr().out)
    assert rc == 0 and dmv["converged"] and dmv["learned"] == list(FAMILIES)
    assert set(dmv["alpha"]) == set(FAMILIES) and dmv["alpha"]["attach"] != 1.0
    rc = main(["parse", str(corpus), "-o", str(tmp_path / "o.mrg"), "--model", "pcfg", "--nonterminals", "3",
               "--json", "--quiet", "--iterations", "2", "--tol", "1e-14", "--alpha", "0.5", "--learn-hyper", "all"])
    captured = capsys.readouterr()
    pcfg = json.loads(captured.out)
    assert rc == 0 and pcfg["iterations"] == 2 and pcfg["converged"] is False
    assert pcfg["alpha"] == 0.5 and pcfg["learned"] == []
    assert "pcfg em: not converged after 2 passes" in pcfg["warnings"][0] and "induce: warning: pcfg em" in captured.err


def test_evidence_with_per_row_outcomes_is_the_sum_of_each_rows_dirichlet_multinomial():
    """Rows allowing K_j outcomes (a grammar's masked rows): the evidence is the sum over rows of the
    Dirichlet-multinomial of the allowed entries (scipy), and its maximiser is the grid's best point."""
    from scipy.special import gammaln
    from scipy.stats import dirichlet_multinomial

    from induce.infer.hyper import log_evidence

    rng = np.random.default_rng(5)
    ks = np.array([3, 7, 12, 12, 5])
    counts = np.zeros((5, 12))
    for j, k in enumerate(ks):
        counts[j, :k] = rng.multinomial(25, rng.dirichlet(np.full(k, 0.4)))
    for a in (0.05, 0.4, 2.0):
        expected = sum(dirichlet_multinomial.logpmf(row[:k], np.full(k, a), row.sum())
                       - gammaln(row.sum() + 1) + gammaln(row[:k] + 1).sum() for row, k in zip(counts, ks))
        assert log_evidence(counts, a, outcomes=ks) == pytest.approx(expected, rel=1e-10)
    best = fit_symmetric_dirichlet(counts, 1.0, outcomes=ks)
    grid = best * np.exp(np.linspace(-0.1, 0.1, 21))
    assert max(log_evidence(counts, g, outcomes=ks) for g in grid) <= log_evidence(counts, best, outcomes=ks) + 1e-9


def test_pcfg_learns_by_default_only_with_cvi(strings):
    assert PCFGInducer(n_nonterminals=3, infer="cvi", random_state=0).fit(strings).learned_hyper_ == ("alpha",)
    assert PCFGInducer(n_nonterminals=3, infer="vi", random_state=0).fit(strings).learned_hyper_ == ()
    assert PCFGInducer(n_nonterminals=3, infer="cvi", learn_hyper=False).fit(strings).alpha_ == 1.0

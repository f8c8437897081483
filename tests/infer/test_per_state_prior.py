"""Per-state emission concentrations (row k ~ Dir(beta_k)): the cvi2 kernels, the per-row evidence maximiser and
``HMMTagger(learn_hyper="per-state")`` (docs/experiments/defaults.md, "Per-state emission concentrations")."""

import numpy as np
import pytest

from induce.errors import ConfigError
from induce.infer import hmm_passes as passes
from induce.infer.hmm_batched import cvi2_block_pass
from induce.infer.hyper import BOUNDS, fit_row_dirichlets, fit_symmetric_dirichlet, log_evidence

from .test_hyper import _sample_counts, _sampled_bayesian_hmm

NO_MASK = np.zeros((0, 0), dtype=np.uint8)


def _cvi2_state(K=3, W=7, I=12, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(rng.integers(1, 6, size=I))]).astype(np.int64)
    tokens = rng.integers(0, W, size=offsets[-1]).astype(np.int32)
    sent_trans, gamma = np.zeros((I, K + 1, K), dtype=np.float32), np.zeros((len(tokens), K), dtype=np.float32)
    passes.init_chain_posteriors(tokens, offsets, K, 5, sent_trans, gamma)
    C_t, C_e = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.totals_from_local(tokens, offsets, sent_trans, gamma, W, C_t, C_e)
    return tokens, offsets, [sent_trans, gamma, C_t, C_e]


@pytest.mark.parametrize("block", [0, 4])
def test_equal_per_state_entries_are_the_scalar_prior_bit_for_bit(block):
    """A length-K array of one value runs the same arithmetic as the scalar (sequential and block kernels)."""
    K, alpha, beta = 3, 0.4, 0.03
    tokens, offsets, scalar = _cvi2_state(K)
    vector = [a.copy() for a in scalar]
    order = np.arange(len(offsets) - 1, dtype=np.int64)

    def sweep(state, b):
        st, g, ct, ce = state
        if block:
            return cvi2_block_pass(ct, ce, st, g, tokens, offsets, order, alpha, b, NO_MASK, block, 2)
        return passes.cvi2_pass(ct, ce, st, g, tokens, offsets, order, alpha, b, NO_MASK)

    for _ in range(3):
        assert sweep(scalar, beta) == sweep(vector, np.full(K, beta))
    for a, b in zip(scalar, vector):
        assert np.array_equal(a, b)


def test_per_state_prior_shapes():
    np.testing.assert_array_equal(passes.per_state(0.5, 3), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(passes.per_state([0.1, 0.2], 2), [0.1, 0.2])
    with pytest.raises(ValueError, match="needs 4 values"):
        passes.per_state(np.ones(3), 4)


def test_per_state_block_size_one_is_the_exact_pass():
    K = 3
    beta = np.array([0.001, 0.05, 2.0])
    tokens, offsets, ref = _cvi2_state(K, seed=1)
    out = [a.copy() for a in ref]
    order = np.random.default_rng(2).permutation(len(offsets) - 1).astype(np.int64)
    for _ in range(3):
        ll_ref = passes.cvi2_pass(ref[2], ref[3], ref[0], ref[1], tokens, offsets, order, 0.3, beta, NO_MASK)
        ll = cvi2_block_pass(out[2], out[3], out[0], out[1], tokens, offsets, order, 0.3, beta, NO_MASK, 1, 2)
        assert ll == pytest.approx(ll_ref, rel=1e-9)
    for a, b in zip(out, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_each_row_fit_is_the_maximum_of_that_rows_evidence():
    """Brute force: no point of a fine grid in log a beats a row's fit on that row's evidence."""
    rng = np.random.default_rng(5)
    counts = np.vstack([_sample_counts(rng, a, 60, 1, n) for a, n in ((0.02, 300), (0.3, 80), (3.0, 200))])
    fits = fit_row_dirichlets(counts, 1.0)
    grid = np.exp(np.linspace(np.log(1e-3), np.log(100.0), 4001))
    for row, fit in zip(counts, fits):
        best = grid[np.argmax([log_evidence(row[None, :], a) for a in grid])]
        assert fit == pytest.approx(best, rel=0.01)
        assert log_evidence(row[None, :], fit) >= max(log_evidence(row[None, :], a) for a in best * np.exp(
            np.linspace(-0.01, 0.01, 11))) - 1e-9
    # the pooled fit is one value between the rows' own
    assert fits.min() < fit_symmetric_dirichlet(counts, 1.0) < fits.max()


def test_row_fits_recover_per_row_concentrations():
    """Rows drawn from Dir(0.01) and Dir(1) over 1,000 outcomes, 3,000 draws each: each row's own estimate."""
    rng = np.random.default_rng(6)
    truth = np.array([0.01, 1.0, 0.01, 1.0, 0.01])
    counts = np.vstack([_sample_counts(rng, a, 1000, 1, 3000) for a in truth])
    np.testing.assert_allclose(fit_row_dirichlets(counts, 0.1), truth, rtol=0.3)


def test_row_fit_boundaries_and_cap():
    counts = np.array([[0, 0, 0, 0], [5, 0, 0, 0], [1, 1, 1, 0], [4, 1, 2, 0]])
    fits = fit_row_dirichlets(counts, [0.7, 0.1, 0.1, 0.1])
    assert fits[0] == 0.7  # no counts: the start
    assert fits[1] == pytest.approx(BOUNDS[0])  # one outcome: a -> 0
    assert fits[2] == pytest.approx(BOUNDS[1])  # distinct outcomes seen once each: the uniform distribution, a -> inf
    assert fits[3] == pytest.approx(fit_symmetric_dirichlet(counts[3:], 0.1))
    np.testing.assert_array_equal(fit_row_dirichlets(counts, [0.7, 0.1, 0.1, 0.1], cap=0.5),
                                  np.minimum(fits, 0.5))


def test_tagger_learns_a_concentration_per_state():
    """An HMM whose states have emission concentrations 0.01 (two sparse states) and 0.5 (two dense ones): the
    sparse states learn their own small beta_k near the evidence-optimal value of the true assignment's rows
    (0.006, 0.010); the dense ones stop at the pooled estimate (0.11), the cap."""
    from induce.infer.hmm_passes import hard_counts
    from induce.taggers import HMMTagger

    K, truth = 4, np.array([0.01, 0.01, 0.5, 0.5])
    corpus, z = _sampled_bayesian_hmm(K=K, beta=truth, n_sentences=800, alpha=0.3)
    model = HMMTagger(n_states=K, infer="cvi2", n_iter=100, learn_hyper="per-state", hyper_burn_in=10,
                      random_state=0).fit(corpus)
    assert model.learned_hyper_ == ("alpha", "beta") and model.beta_.shape == (K,)
    assert model.trace_[-1]["beta"] == model.beta_.tolist()
    table = np.bincount(model.labels_ * K + z, minlength=K * K).reshape(K, K)
    mapping = table.argmax(axis=1)  # each learned state -> its true state
    assert sorted(mapping) == list(range(K))
    W = len(corpus.vocab)
    trans, emit = np.zeros((K + 1, K), dtype=np.int64), np.zeros((W, K), dtype=np.int64)
    hard_counts(corpus.tokens.astype(np.int32), corpus.offsets.astype(np.int64), z, W, K, trans, emit)
    reference = fit_row_dirichlets(emit.T, 1.0)
    learned = model.beta_[np.argsort(mapping)]  # by true state
    # decoding errors (M-1 0.97) each add a (state, word) pair the true rows lack: beta_k 1.7-3x too large
    assert np.all((reference[:2] < learned[:2]) & (learned[:2] < 4 * reference[:2]))
    assert 4 * learned[:2].max() < learned[2:].min() == learned.max()
    assert learned[2:].min() == pytest.approx(learned[2:].max())
    # the emission rows the model keeps: (C_kw + beta_k) / (C_k + W beta_k)
    C = model.emission_counts_
    np.testing.assert_allclose(model.emissions_[:-1], (C + model.beta_) / (C.sum(axis=0) + W * model.beta_))


def test_per_state_saves_and_loads(tmp_path):
    from induce.taggers import HMMTagger

    corpus, _ = _sampled_bayesian_hmm(n_sentences=150)
    model = HMMTagger(n_states=4, n_iter=6, tol=0.0, learn_hyper="per-state", alpha=1.0, hyper_burn_in=2,
                      random_state=0).fit(corpus)
    assert model.learned_hyper_ == ("beta",) and model.alpha_ == 1.0 and np.ptp(model.beta_) > 0
    model.save(tmp_path / "m.npz")
    loaded = HMMTagger.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.beta_, model.beta_)
    assert loaded.learn_hyper == "per-state"
    assert loaded.predictive_log_likelihood(corpus) == pytest.approx(model.predictive_log_likelihood(corpus))
    np.testing.assert_array_equal(np.concatenate(loaded.predict(corpus)), np.concatenate(model.predict(corpus)))


@pytest.mark.parametrize("infer", ["vi", "cvi1", "cgs"])
def test_per_state_is_cvi2_only(infer):
    from induce.taggers import HMMTagger

    corpus, _ = _sampled_bayesian_hmm(n_sentences=20)
    with pytest.raises(ConfigError, match="per-state"):
        HMMTagger(n_states=4, infer=infer, n_iter=2, learn_hyper="per-state").fit(corpus)


def test_cli_learn_hyper_per_state(capsys, tmp_path):
    """``induce tag --learn-hyper per-state``: the summary lists one beta per state; other algorithms are refused."""
    import json

    from induce.cli import main

    corpus, _ = _sampled_bayesian_hmm(n_sentences=60)
    src = tmp_path / "c.txt"
    src.write_text("\n".join(" ".join(s.words) for s in corpus.sentences) + "\n")
    argv = ["tag", str(src), "--states", "4", "--iterations", "53", "--tol", "0", "--alpha", "1",
            "--learn-hyper", "per-state", "--quiet", "-o", str(tmp_path / "t.txt")]
    assert main([*argv, "--json"]) == 0  # learning starts after the burn-in of 50 passes
    summary = json.loads(capsys.readouterr().out)
    assert summary["learned"] == ["beta"] and summary["alpha"] == 1.0
    assert len(summary["beta"]) == 4 and len(set(summary["beta"])) > 1
    assert main([*argv, "--infer", "vi"]) == 2
    assert "needs infer='cvi2'" in capsys.readouterr().err

"""Split-merge moves of HDP-HMM cvi and the collapsed bound that accepts them (thesis eq. 5.13).

The bound's pieces are checked against brute force (path enumeration for the chain
entropy, the Polya urn for the integrated emissions, quadrature for the stick KL); the
moves on known cases: a duplicated state must be merged, two true states sharing one
state must be split, and the true labelling must be left alone.
"""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import integrate, stats

from induce import HDPHMMTagger
from induce.infer import hdp
from induce.algorithms import HDPCore
from induce.algorithms.hdp_cvi import CVIRun
from induce.algorithms.hdp_moves import instant_merges, merge_locals, merge_round, move_round, split_locals
from induce.algorithms.hdp_scvi import _SCVIRun
from induce.algorithms.loop import HDPLoop
from induce.infer.convergence import ConvergenceMonitor
from induce.infer.hdp_passes import _chain_entropy
from induce.infer.hmm_passes import totals_from_local
from induce.kernels.hdp_qc import QC_METHODS
from induce.kernels.hmm import forward_backward
from induce.taggers.hmm import _Data
from induce.taggers.synthetic import sample_zhang


def test_chain_entropy_matches_path_enumeration():
    rng = np.random.default_rng(0)
    K, T = 3, 4
    A = rng.random((K + 1, K)) * 0.5  # sub-normalised rows, as the HDP surrogate's
    E = rng.random((T, K))
    fwd, bwd, xi, scale = np.empty((T, K)), np.empty((T, K)), np.empty((K, K)), np.empty(T)
    logZ = forward_backward(A, E, T, fwd, bwd, scale, xi)
    weights = []
    for z in itertools.product(range(K), repeat=T):
        w = A[0, z[0]] * E[0, z[0]]
        for t in range(1, T):
            w *= A[z[t - 1] + 1, z[t]] * E[t, z[t]]
        weights.append(w)
    p = np.array(weights) / np.sum(weights)
    assert logZ == pytest.approx(np.log(np.sum(weights)), rel=1e-10)
    assert _chain_entropy(A, E, T, fwd, bwd, xi, logZ) == pytest.approx(-np.sum(p * np.log(p)), rel=1e-9)


def test_emission_evidence_is_the_polya_urn_probability():
    """``log p(x | z)`` of integrated Dir(b) emissions = product of the sequential predictives."""
    x = [0, 2, 2, 1, 0, 2, 1, 1, 2]
    z = [0, 0, 1, 1, 0, 1, 1, 0, 1]
    b = np.array([0.3, 1.2, 0.7])
    counts = np.zeros((3, 2))
    logp = 0.0
    for w, k in zip(x, z):
        logp += np.log((counts[w, k] + b[w]) / (counts[:, k].sum() + b.sum()))
        counts[w, k] += 1
    assert hdp.emission_log_evidence(counts, b, b.sum()) == pytest.approx(logp, rel=1e-12)


def test_stick_kl_matches_quadrature():
    u, v, gamma = np.array([3.5, 1.2]), np.array([2.0, 0.7]), 1.7
    want = 0.0
    for a, c in zip(u, v):
        q, p = stats.beta(a, c), stats.beta(1.0, gamma)
        want += integrate.quad(lambda t: q.pdf(t) * (q.logpdf(t) - p.logpdf(t)), 0, 1, limit=200)[0]
    assert hdp.stick_kl(u, v, gamma) == pytest.approx(want, rel=1e-6)


def test_merge_and_split_are_exact_relabellings():
    rng = np.random.default_rng(1)
    offsets = np.array([0, 3, 5], dtype=np.int64)
    gamma = rng.dirichlet(np.ones(4), size=5)
    sent_trans = rng.random((2, 5, 4))
    merged_g, merged_t = gamma.copy(), sent_trans.copy()
    merge_locals(merged_t, merged_g, 1, 3)
    np.testing.assert_allclose(merged_g[:, 1], gamma[:, 1] + gamma[:, 3])
    assert not merged_g[:, 3].any() and not merged_t[:, 4, :].any() and not merged_t[:, :, 3].any()
    np.testing.assert_allclose(merged_t.sum(axis=(1, 2)), sent_trans.sum(axis=(1, 2)))
    split_g, split_t = merged_g.copy(), merged_t.copy()
    split_locals(split_t, split_g, offsets, 1, 3, np.array([False, True]))
    np.testing.assert_array_equal(split_g[:3], merged_g[:3])  # sentence 0 stays
    np.testing.assert_array_equal(split_g[3:, 3], merged_g[3:, 1])  # sentence 1's state 1 is now 3
    assert not split_g[3:, 1].any()
    swap = np.array([0, 3, 2, 1])  # state 3 was empty after the merge: sentence 1 is relabelled 1 <-> 3
    np.testing.assert_array_equal(split_t[1], merged_t[1][np.r_[0, swap + 1]][:, swap])
    np.testing.assert_array_equal(split_t[0], merged_t[0])


# ---------------------------------------------------------------------------------------------- known cases
K = 6


@pytest.fixture(scope="module")
def corpus():
    return sample_zhang("pos", n_sequences=40, length=60, seed=11)


def _state_from_labels(corpus, labels, name="cvi", n_iter=100):
    """A cvi (or scvi) run of the HDP-HMM's defaults set up as after the burn-in, and the cvi state whose local
    posteriors are ``labels``."""
    W = len(corpus.vocab)
    data = _Data(np.ascontiguousarray(corpus.tokens, dtype=np.int32),
                 np.ascontiguousarray(corpus.offsets, dtype=np.int64), W)
    core = HDPCore(K, 1.0, 1.0, 1.0, frozenset(), hdp.EmissionPrior(W, 1.0 * W))
    loop = HDPLoop(name, n_iter, lambda: ConvergenceMonitor(0.0), data, None, np.zeros(n_iter + 1, dtype=np.int64),
                   coverage=0.99, burn_in=0)
    opts = SimpleNamespace(order="sequential", qc_code=QC_METHODS.index("heuristic"), qc_samples=100,
                           sampled_tables=0, learn_emission=False, merges=True, memory=True, rounds=True)
    run = (CVIRun(name, core, data, loop, opts) if name == "cvi" else _SCVIRun(core, data, loop, opts))
    st = run.state()
    st.gamma[np.arange(len(labels)), labels] = 1.0
    for i in range(len(data.offsets) - 1):
        s, e = data.offsets[i], data.offsets[i + 1]
        st.sent_trans[i, 0, labels[s]] = 1.0
        np.add.at(st.sent_trans[i], (labels[s:e - 1] + 1, labels[s + 1:e]), 1.0)
    # the sticks of the labelled counts (q(C > 0) = [C > 0]), so that unused states get no prior mass
    totals_from_local(data.tokens, data.offsets, st.sent_trans, st.gamma, W, st.trans, st.emit)
    st.logq0[:] = np.where(st.trans > 0, -50.0, 0.0)
    st.logq0_row[:] = np.where(st.trans.sum(axis=1) > 0, -50.0, 0.0)
    st.glob.update(st.trans, st.emit.sum(axis=0), st.logq0, st.logq0_row, False, False)
    step = lambda s: run.step(s, 5, 2)  # noqa: E731 (one pass, learning gamma and sigma)
    return run, data, st, step


def _gold(corpus):
    return np.array([int(t[1:]) for s in corpus.sentences for t in s.tags["state"]])


def test_a_duplicated_state_is_merged_and_the_truth_is_kept(corpus):
    gold = _gold(corpus)
    sent = np.repeat(np.arange(corpus.n_sentences), np.diff(corpus.offsets))
    dup = np.where((gold == 0) & (sent % 2 == 1), 4, gold)  # state 0 of the odd sentences is a copy, state 4
    run, data, st, step = _state_from_labels(corpus, dup)
    assert hdp.effective_states(st.emit.sum(axis=0)) == 5
    new, records = merge_round(st, step, run.bound, 3, 1.0, 20)
    assert [r["merge"] for r in records if r["accepted"]] in ([[0, 4]], [[4, 0]])
    assert hdp.effective_states(new.emit.sum(axis=0)) == 4
    run, data, st, step = _state_from_labels(corpus, gold)
    new, records = move_round(st, step, run.bound, 3, 1.0, 20, data, 0)
    assert records and not any(r["accepted"] for r in records) and new is st


def test_two_states_in_one_are_split(corpus):
    gold = _gold(corpus)
    run, data, st, step = _state_from_labels(corpus, np.where(gold == 2, 0, gold))
    assert hdp.effective_states(st.emit.sum(axis=0)) == 3
    new, records = move_round(st, step, run.bound, 3, 1.0, 20, data, 0)
    assert any(r["accepted"] and "split" in r for r in records)
    labels = new.gamma.argmax(axis=1)
    agree = max(np.mean(labels[gold == g] == np.bincount(labels[gold == g]).argmax()) for g in range(4))
    assert hdp.effective_states(new.emit.sum(axis=0)) == 4 and len(set(labels)) == 4 and agree > 0.95


def test_defaults_recover_the_states_with_the_moves():
    """cvi with its defaults (learned gamma and sigma, the moves; beta = 1 as thesis Fig. 5.7) finds the 4 true
    states of a small theta_pos set; without the moves the same start ends in a fit the bound ranks far lower."""
    data = sample_zhang("pos", n_sequences=50, length=100, seed=1002)
    on = HDPHMMTagger(truncation=8, n_iter=400, beta=1.0, random_state=2).fit(data)
    assert on.effective_states_ == 4
    assert any(r.get("merges") or r.get("splits") for r in on.trace_)
    gold = _gold(data)
    for g in range(4):
        assert np.bincount(on.labels_[gold == g]).max() > 0.95 * np.sum(gold == g)
    assert len(set(on.labels_)) == 4
    off = HDPHMMTagger(truncation=8, n_iter=400, beta=1.0, random_state=2, merge_moves=False).fit(data)
    assert on.bound_ > off.bound_ + 100.0


def test_instant_merge_takes_a_duplicate_and_leaves_distinct_states(corpus):
    """scvi's merges of global counts: the counts of the true labelling with state 0 of the odd sentences
    copied to state 4 are merged back (and only that pair); the true counts are left alone."""
    gold = _gold(corpus)
    sent = np.repeat(np.arange(corpus.n_sentences), np.diff(corpus.offsets))
    for labels, want in ((np.where((gold == 0) & (sent % 2 == 1), 4, gold), [(0, 4)]), (gold, [])):
        run, data, st, step = _state_from_labels(corpus, labels)
        pi = np.r_[np.full(5, 0.19), 0.04]
        trans, emit = st.trans.copy(), st.emit.copy()
        merged = instant_merges(trans, emit, pi, 1.0, np.ones(data.W), float(data.W), 1.0, 20)
        assert [tuple(sorted(p)) for p in merged] == want
        assert trans.sum() == pytest.approx(st.trans.sum()) and emit.sum() == pytest.approx(st.emit.sum())


def test_scvi_defaults_merge_a_split_state():
    """scvi with its defaults (learned gamma and sigma, instant merges; beta = 1, minibatches of 10) on a small
    theta_pos set: exactly the 4 true states, where the same run without the merges keeps a split one."""
    data = sample_zhang("pos", n_sequences=50, length=100, seed=1012)
    kw = dict(truncation=8, infer="scvi", n_iter=100, beta=1.0, batch_size=10, random_state=12, tol=0)
    on = HDPHMMTagger(**kw).fit(data)
    assert on.effective_states_ == 4 and any(r.get("merges") for r in on.trace_)
    assert HDPHMMTagger(merge_moves=False, **kw).fit(data).effective_states_ == 5


def _scvi_round(corpus, labels):
    """scvi's memoized round (:meth:`induce.algorithms.hdp_scvi._SCVIRun.memo_round`) on a sentence memory whose
    local posteriors are ``labels`` (the global counts its totals, four minibatches); returns the trace entries,
    the memory's totals before, the changed global counts, the minibatches' ``log q(C^m = 0)`` and the memory's
    labels."""
    run, data, st, step = _state_from_labels(corpus, labels, "scvi", 400)
    run.moves.gap = 10
    u, v = np.empty(K), np.empty(K)
    u[st.glob.order], v[st.glob.order] = st.glob.u, st.glob.v
    G = hdp.prior_by_state(st.glob.G_sorted, st.glob.order, 1.0)
    batches = np.array_split(np.arange(corpus.n_sentences, dtype=np.int64), 4)
    logq0_b, logq0_row_b = np.zeros((4, K + 1, K)), np.zeros((4, K + 1))
    memory = (st.sent_trans.copy(), st.gamma.copy())
    N_trans, N_emit = st.trans.copy(), st.emit.copy()
    G_new, extra = run.memo_round(5, 2, memory, N_trans, N_emit, u, v, batches, logq0_b, logq0_row_b, G)
    assert G_new.shape == (K,) and np.all(G_new > 0)
    return extra, st, N_trans, N_emit, logq0_b, memory[1].argmax(axis=1)


def test_memoized_scvi_round_merges_a_duplicate_and_keeps_distinct_states(corpus):
    """scvi's memoized round (cvi's moves on the sentence memory): a state duplicated by sentence is taken back
    into one state (on these small data by a split whose trial passes drain the copies, or by the merge), the
    global counts become the memory's totals and each minibatch's q(C^m = 0) is rebuilt; on the true labelling
    nothing is accepted and nothing changes."""
    gold = _gold(corpus)
    sent = np.repeat(np.arange(corpus.n_sentences), np.diff(corpus.offsets))
    extra, st, N_trans, N_emit, logq0_b, labels = _scvi_round(corpus, np.where((gold == 0) & (sent % 2 == 1), 4, gold))
    assert (extra["merges"] or extra["splits"]) and extra["move_trials"] > 1
    assert hdp.effective_states(N_emit.sum(axis=0)) == 4 and len(set(labels)) == 4
    for g in range(4):
        assert np.bincount(labels[gold == g]).max() > 0.95 * np.sum(gold == g)
    assert N_emit.sum() == pytest.approx(st.emit.sum()) and N_trans.sum() == pytest.approx(st.trans.sum())
    used = N_emit.sum(axis=0) > 1.0
    assert np.all(logq0_b.sum(axis=0)[0, used] < 0.0) and np.all(logq0_b <= 0.0)
    extra, st, N_trans, N_emit, logq0_b, labels = _scvi_round(corpus, gold)
    assert extra["merges"] == [] and extra["splits"] == [] and extra["move_trials"] > 1
    np.testing.assert_array_equal(N_emit, st.emit)
    np.testing.assert_array_equal(N_trans, st.trans)
    np.testing.assert_array_equal(labels, gold)
    assert not logq0_b.any()

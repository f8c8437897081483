"""Sampled table counts (``table_estimate="sampled"``) against brute-force enumeration of every state path."""

import itertools

import numpy as np
import pytest
from numba import njit
from scipy.special import digamma

from induce import HDPHMMTagger
from induce.errors import ConfigError
from induce.infer import hdp
from induce.infer.hdp_passes import hdp_cvi_pass
from induce.infer.hmm_passes import init_chain_posteriors, totals_from_local
from induce.kernels.hdp_qc import HEURISTIC, sample_transition_counts
from induce.kernels.hmm import forward_backward
from induce.taggers.synthetic import sample_zhang


@njit(cache=False)
def _draw_counts(A, E, T, fwd, n_samples, seed, counts):
    np.random.seed(seed)
    path = np.empty(T, dtype=np.int64)
    tmp = np.zeros((n_samples, counts.shape[1], counts.shape[2]))
    sample_transition_counts(A, E, T, fwd, path, tmp)
    counts += tmp


def _paths(A, E):
    """Every path of one sentence with its probability under ``q(z) ~ prod A E``, and its count table."""
    T, K = E.shape
    out = []
    for path in itertools.product(range(K), repeat=T):
        p = A[0, path[0]] * E[0, path[0]]
        C = np.zeros((K + 1, K))
        C[0, path[0]] = 1
        for t in range(1, T):
            p *= A[path[t - 1] + 1, path[t]] * E[t, path[t]]
            C[path[t - 1] + 1, path[t]] += 1
        out.append((p, C))
    Z = sum(p for p, _ in out)
    return [(p / Z, C) for p, C in out]


def test_sampled_tables_and_row_terms_match_enumeration():
    rng = np.random.default_rng(5)
    K, sigma = 2, 1.7
    prior = sigma * np.array([0.6, 0.3])
    sentences = [(rng.random((K + 1, K)), rng.random((3, K))), (rng.random((K + 1, K)), rng.random((4, K)))]
    # exact: q(z) = prod_i q(z^i); E[a (psi(a + C) - psi(a))] and E[psi(sigma) - psi(sigma + C_j.)] over all path pairs
    exact_tables, exact_rows = np.zeros((K + 1, K)), np.zeros(K + 1)
    for (p1, C1), (p2, C2) in itertools.product(*[_paths(A, E) for A, E in sentences]):
        C = C1 + C2
        exact_tables += p1 * p2 * prior * (digamma(prior + C) - digamma(prior))
        exact_rows += p1 * p2 * (digamma(sigma) - digamma(sigma + C.sum(axis=1)))
    S = 40000
    counts = np.zeros((S, K + 1, K))
    for i, (A, E) in enumerate(sentences):
        T = E.shape[0]
        fwd, bwd, scale, xi = np.empty((T, K)), np.empty((T, K)), np.empty(T), np.empty((K, K))
        forward_backward(A, E, T, fwd, bwd, scale, xi)
        _draw_counts(A, E, T, fwd, S, 11 + i, counts)
    assert counts.sum() == S * 7  # one count per token in every draw
    np.testing.assert_allclose(hdp.sampled_tables(counts, prior), exact_tables, atol=0.01)
    np.testing.assert_allclose(hdp.sampled_row_terms(counts, sigma), exact_rows, atol=0.01)
    # the first-order estimate of eq. 5.35 is a different number: the test can tell them apart
    assert not np.allclose(exact_tables, prior * (digamma(prior + sum(
        sum(p * C for p, C in _paths(A, E)) for A, E in sentences)) - digamma(prior)), atol=0.01)


def test_sampling_leaves_the_pass_unchanged():
    corpus = sample_zhang("neg", n_sequences=20, length=30, seed=2)
    K, W = 5, len(corpus.vocab)
    tokens, offsets = corpus.tokens.astype(np.int32), np.asarray(corpus.offsets, dtype=np.int64)
    runs = []
    for S in (0, 200):
        sent_trans, gamma = np.zeros((20, K + 1, K)), np.zeros((len(tokens), K))
        init_chain_posteriors(tokens, offsets, K, 3, sent_trans, gamma)
        trans, emit = np.zeros((K + 1, K)), np.zeros((W, K))
        totals_from_local(tokens, offsets, sent_trans, gamma, W, trans, emit)
        sampled = np.zeros((S, K + 1, K))
        ll = hdp_cvi_pass(trans, emit, sent_trans, gamma, tokens, offsets, np.arange(20), np.full(K, 0.4), 2.0,
                          np.full(W, 0.5), 0.5 * W, HEURISTIC, 1, 9, np.zeros((K + 1, K)), np.zeros(K + 1), sampled,
                          np.zeros(20))
        runs.append((ll, trans, emit))
        if S:
            np.testing.assert_allclose(sampled.sum(axis=(1, 2)), len(tokens))
            np.testing.assert_allclose(sampled.mean(axis=0), trans, atol=1.5)  # draws centre on E[C]
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    np.testing.assert_array_equal(runs[0][2], runs[1][2])


def test_sampled_estimate_fits_deterministically_and_checks_options():
    corpus = sample_zhang("pos", n_sequences=20, length=30, seed=1)
    kw = dict(truncation=5, n_iter=5, table_estimate="sampled", table_samples=4, hyper_burn_in=0, random_state=2)
    a, b = HDPHMMTagger(**kw).fit(corpus), HDPHMMTagger(**kw).fit(corpus)
    assert a.sigma_ == b.sigma_ and a.sigma_ != 1.0
    np.testing.assert_array_equal(a.transition_counts_, b.transition_counts_)
    with pytest.raises(ConfigError, match="table_estimate must be one of"):
        HDPHMMTagger(table_estimate="exact").fit(corpus)
    with pytest.raises(ConfigError, match="infer='cvi' only"):
        HDPHMMTagger(infer="scvi", table_estimate="sampled").fit(corpus)

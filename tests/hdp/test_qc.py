"""q(C^i = 0) kernels (thesis 5.4) against brute-force enumeration of every state path."""

import itertools

import numpy as np
import pytest

from induce.kernels.hdp_qc import (EXACT, HEURISTIC, MEANFIELD, SAMPLING, accumulate_qc, qc_exact, qc_heuristic,
                                   qc_meanfield, qc_sampling)
from induce.kernels.hmm import forward_backward


def chain(K, T, seed, independent=False):
    rng = np.random.default_rng(seed)
    A = rng.random((K + 1, K))
    if independent:  # every row the same: q(z) factorises over positions
        A[:] = A[0]
    E = rng.random((T, K))
    fwd, bwd, scale, xi = np.empty((T, K)), np.empty((T, K)), np.empty(T), np.empty((K, K))
    logZ = forward_backward(A, E, T, fwd, bwd, scale, xi)
    return A, E, fwd, bwd, scale, logZ


def brute(A, E):
    """q(C_jk = 0) (K+1, K) and q(C_j. = 0) (K+1,) by enumerating all K^T paths."""
    T, K = E.shape
    q0 = np.zeros((K + 1, K))
    q0_row = np.zeros(K + 1)
    Z = 0.0
    for path in itertools.product(range(K), repeat=T):
        p = A[0, path[0]] * E[0, path[0]]
        for t in range(1, T):
            p *= A[path[t - 1] + 1, path[t]] * E[t, path[t]]
        Z += p
        pairs = {(0, path[0] + 1)} | {(path[t - 1] + 1, path[t] + 1) for t in range(1, T)}
        sources = {0} | {path[t] + 1 for t in range(T - 1)}
        for j in range(K + 1):
            for k in range(K):
                if (j, k + 1) not in pairs:
                    q0[j, k] += p
            if j not in sources:
                q0_row[j] += p
    return q0 / Z, q0_row / Z


def run(method, A, E, fwd, bwd, scale, logZ, n_samples=1):
    K = A.shape[1]
    logq0, logq0_row = np.zeros((K + 1, K)), np.zeros(K + 1)
    accumulate_qc(method, A, E, E.shape[0], fwd, bwd, scale, logZ, n_samples, logq0, logq0_row)
    return np.exp(logq0), np.exp(logq0_row)


@pytest.mark.parametrize("K,T,seed", [(2, 1, 0), (2, 5, 1), (3, 4, 2), (3, 6, 3), (4, 5, 4)])
def test_exact_equals_brute_force(K, T, seed):
    A, E, fwd, bwd, scale, logZ = chain(K, T, seed)
    q0, q0_row = run(EXACT, A, E, fwd, bwd, scale, logZ)
    ref, ref_row = brute(A, E)
    np.testing.assert_allclose(q0, ref, atol=1e-10)
    np.testing.assert_allclose(q0_row[1:], ref_row[1:], atol=1e-10)
    assert q0_row[0] < 1e-200  # the start state always has one outgoing transition


def test_heuristic_is_exact_for_one_transition():
    A, E, fwd, bwd, scale, logZ = chain(4, 2, 7)
    np.testing.assert_allclose(run(HEURISTIC, A, E, fwd, bwd, scale, logZ)[0], brute(A, E)[0], atol=1e-12)


def test_meanfield_is_exact_when_positions_are_independent():
    A, E, fwd, bwd, scale, logZ = chain(3, 6, 8, independent=True)
    q0, q0_row = run(MEANFIELD, A, E, fwd, bwd, scale, logZ)
    ref, ref_row = brute(A, E)
    np.testing.assert_allclose(q0, ref, atol=1e-10)
    np.testing.assert_allclose(q0_row[1:], ref_row[1:], atol=1e-10)


def test_sampling_converges_to_exact():
    A, E, fwd, bwd, scale, logZ = chain(3, 6, 9)
    ref, _ = brute(A, E)
    np.random.seed(0)
    err = [np.abs(run(SAMPLING, A, E, fwd, bwd, scale, logZ, S)[0] - ref).mean() for S in (100, 20000)]
    assert err[1] < 0.01 and err[1] < err[0]


@pytest.mark.parametrize("seed", range(3))
def test_approximations_close_to_exact(seed):
    """Thesis Figure 5.2: all approximations are close on random chains; the heuristic the closest."""
    A, E, fwd, bwd, scale, logZ = chain(4, 7, 10 + seed)
    ref, _ = brute(A, E)
    heur = np.abs(run(HEURISTIC, A, E, fwd, bwd, scale, logZ)[0] - ref).mean()
    mf = np.abs(run(MEANFIELD, A, E, fwd, bwd, scale, logZ)[0] - ref).mean()
    assert heur < 0.025 and mf < 0.08 and heur < mf


def test_kernels_accumulate_over_sentences():
    """log q(C = 0) adds over sentences (thesis eq. 5.46)."""
    A, E, fwd, bwd, scale, logZ = chain(3, 5, 11)
    K = 3
    one, one_row = np.zeros((K + 1, K)), np.zeros(K + 1)
    qc_heuristic(A, E, 5, fwd, bwd, scale, one, one_row)
    two, two_row = one.copy(), one_row.copy()
    qc_heuristic(A, E, 5, fwd, bwd, scale, two, two_row)
    np.testing.assert_allclose(two, 2 * one)
    for fn in (lambda a, b: qc_exact(A, E, 5, fwd, bwd, logZ, a, b), lambda a, b: qc_meanfield(fwd, bwd, 5, a, b),
               lambda a, b: qc_sampling(A, E, 5, fwd, bwd, 50, a, b)):
        a, b = np.zeros((K + 1, K)), np.zeros(K + 1)
        fn(a, b)
        assert np.all(a <= 1e-12) and np.all(b <= 1e-12)

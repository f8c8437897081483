"""Brute-force references for the HMM tests: enumerate every state path."""

import itertools

import numpy as np


def random_hmm(K, W, seed):
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.ones(K), size=K + 1)
    B = rng.dirichlet(np.ones(W), size=K).T.copy()  # (W, K) by word
    return A, B


def brute_force(A, B, x):
    """Joint probabilities of every path: marginals, pair counts, likelihood, best path."""
    K = A.shape[1]
    T = len(x)
    Z = 0.0
    gamma = np.zeros((T, K))
    trans = np.zeros((K + 1, K))
    best, best_p = None, -1.0
    for path in itertools.product(range(K), repeat=T):
        p = A[0, path[0]] * B[x[0], path[0]]
        for t in range(1, T):
            p *= A[path[t - 1] + 1, path[t]] * B[x[t], path[t]]
        Z += p
        trans[0, path[0]] += p
        for t in range(T):
            gamma[t, path[t]] += p
            if t:
                trans[path[t - 1] + 1, path[t]] += p
        if p > best_p:
            best, best_p = path, p
    return gamma / Z, trans / Z, np.log(Z), np.array(best), np.log(best_p)

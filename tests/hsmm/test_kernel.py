"""HSMM messages against brute-force enumeration of every segmentation, and geometric durations = the HMM."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from induce.kernels.hmm import forward_backward
from induce.kernels.hsmm import hsmm_expectations, hsmm_messages, hsmm_viterbi


def compositions(T, D):
    """Every way to write T as an ordered sum of parts in 1..D."""
    if T == 0:
        yield ()
        return
    for d in range(1, min(D, T) + 1):
        for rest in compositions(T - d, D):
            yield (d,) + rest


def brute(logpi, logA, logL, logD, logLast):
    """log Z, init, trans, dur, last, gamma and the best path by enumerating segmentations x labels."""
    T, K = logL.shape
    Dm = logD.shape[1]
    terms, records = [], []
    for durs in compositions(T, Dm):
        for labels in itertools.product(range(K), repeat=len(durs)):
            lp = logpi[labels[0]]
            s = 0
            for n, (d, k) in enumerate(zip(durs, labels)):
                if n > 0:
                    lp += logA[labels[n - 1], k]
                lp += (logLast if n == len(durs) - 1 else logD)[k, d - 1] + logL[s:s + d, k].sum()
                s += d
            terms.append(lp)
            records.append((durs, labels))
    terms = np.array(terms)
    logz = logsumexp(terms)
    w = np.exp(terms - logz)
    init, trans = np.zeros(K), np.zeros((K, K))
    dur, last, gamma = np.zeros((K, Dm)), np.zeros((K, Dm)), np.zeros((T, K))
    for p, (durs, labels) in zip(w, records):
        init[labels[0]] += p
        s = 0
        for n, (d, k) in enumerate(zip(durs, labels)):
            if n > 0:
                trans[labels[n - 1], k] += p
            (last if n == len(durs) - 1 else dur)[k, d - 1] += p
            gamma[s:s + d, k] += p
            s += d
    durs, labels = records[int(np.argmax(terms))]
    path = np.repeat(labels, durs)
    return logz, init, trans, dur, last, gamma, path, terms.max()


def random_model(rng, T, K, Dm, self_trans=False):
    A = rng.dirichlet(np.ones(K), size=K)
    if not self_trans:
        np.fill_diagonal(A, 0.0)
        A /= A.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        logA = np.log(A)
    logpi = np.log(rng.dirichlet(np.ones(K)))
    logL = rng.normal(size=(T, K)) * 2
    logD = np.log(rng.dirichlet(np.ones(Dm), size=K))
    logLast = np.log(rng.uniform(0.1, 1.0, size=(K, Dm)))
    return logpi, logA, logL, logD, logLast


@pytest.mark.parametrize("T,K,Dm,seed", [(1, 2, 3, 0), (4, 2, 3, 1), (6, 2, 3, 2), (5, 3, 3, 3), (6, 3, 2, 4),
                                         (6, 3, 3, 5)])
@pytest.mark.parametrize("censored", [False, True])
def test_messages_match_enumeration(T, K, Dm, seed, censored):
    rng = np.random.default_rng(seed)
    logpi, logA, logL, logD, logLast = random_model(rng, T, K, Dm)
    if not censored:
        logLast = logD
    want = brute(logpi, logA, logL, logD, logLast)
    logz, init, trans, dur, last, gamma = hsmm_expectations(logpi, logA, logL, logD, logLast)
    assert logz == pytest.approx(want[0], abs=1e-10)
    for got, ref in zip((init, trans, dur, last, gamma), want[1:6]):
        np.testing.assert_allclose(got, ref, atol=1e-10)
    # forward and backward agree on Z: sum_i F[T, i] = sum_i pi_i B*[0, i]
    _, F, _, _, _ = hsmm_messages(logpi, logA, logL, logD, logLast)
    assert logsumexp(F[T]) == pytest.approx(logz, abs=1e-10)
    path = np.empty(T, dtype=np.int64)
    best = hsmm_viterbi(logpi, logA, logL, logD, logLast, path)
    assert best == pytest.approx(want[7], abs=1e-10)
    np.testing.assert_array_equal(path, want[6])


def test_geometric_durations_equal_the_hmm():
    """Durations (1 - p_i) p_i^(d-1), censored last segment p_i^(d-1), D = T: the HMM with self-transition p_i."""
    rng = np.random.default_rng(7)
    T, K = 40, 3
    logpi, logA, logL, _, _ = random_model(rng, T, K, 2)
    p = np.array([0.6, 0.85, 0.3])
    d1 = np.arange(T)
    logD = np.log1p(-p)[:, None] + d1 * np.log(p)[:, None]
    logLast = d1 * np.log(p)[:, None]
    logz, init, trans, dur, last, gamma = hsmm_expectations(logpi, logA, logL, logD, logLast)
    A = np.empty((K + 1, K))
    A[0] = np.exp(logpi)
    A[1:] = (1 - p)[:, None] * np.exp(logA) + np.diag(p)
    m = logL.max(axis=1, keepdims=True)
    E = np.exp(logL - m)
    fwd, bwd, scale, xi = np.empty((T, K)), np.empty((T, K)), np.empty(T), np.empty((K, K))
    hmm_logz = forward_backward(A, E, T, fwd, bwd, scale, xi) + m.sum()
    assert logz == pytest.approx(hmm_logz, abs=1e-9)
    np.testing.assert_allclose(gamma, fwd * bwd, atol=1e-9)
    # switches i -> j of the HMM are the HSMM's segment boundaries
    hmm_trans = A[1:] * xi
    np.testing.assert_allclose(trans, hmm_trans * (1 - np.eye(K)), atol=1e-9)


def test_long_series_does_not_underflow():
    rng = np.random.default_rng(3)
    T, K, Dm = 5000, 3, 30
    logpi, logA, logL, logD, _ = random_model(rng, T, K, Dm)
    logL -= 50.0  # tiny per-step likelihoods
    logz, init, trans, dur, last, gamma = hsmm_expectations(logpi, logA, logL, logD, logD)
    assert np.isfinite(logz)
    np.testing.assert_allclose(gamma.sum(axis=1), 1.0, atol=1e-6)
    assert dur.sum() + last.sum() == pytest.approx(trans.sum() + 1.0, rel=1e-6)

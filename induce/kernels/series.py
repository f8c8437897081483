"""Compiled E-steps of HMMs with conjugate emission families over numeric series (:mod:`induce.infer.series`).

One item's work is :func:`chain_statistics`: potentials ``exp(row - max_k row)`` of its emission log-rows,
the scaled forward-backward of :mod:`induce.kernels.hmm`, its expected transitions and its emission statistics
``gamma' F`` (thesis eq. 3.102, ``F`` the per-step features ``<1, s(x_t)>`` of the family) in one compiled call,
with no ``T x K`` array allocated per item.  On top of it:

* :func:`batch_estep` -- em / vi: every sequence under one set of parameters, the sequences split over the threads
  (each writes its own slice of the outputs, summed afterwards);
* :func:`cvi2_series_pass` -- cvi2 (thesis 3.7.1): the whole sweep over the items in one compiled loop, the
  collapsed predictive rows (eq. 3.96) formed by the family's compiled kernel
  (:func:`induce.kernels.emissions.predictive_rows`), so that many short items cost no Python per item.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .emissions import PARALLEL_STEPS, predictive_rows
from .hdp_qc import HEURISTIC, accumulate_qc
from .hmm import forward_backward, store_sentence
from .vmath import exp_into


@njit(cache=True, fastmath=True)
def potentials_into(logE, T, E, scratch):
    """``E[t] = exp(logE[t] - max_k logE[t, k])`` for the first ``T`` rows (a row without a finite maximum is
    taken as is; the exponential vectorised, :func:`induce.kernels.vmath.exp_into`, ``scratch`` at least as
    large as ``E``); returns the sum of the maxima, to be added back to ``log Z``."""
    K = logE.shape[1]
    offset = 0.0
    for t in range(T):
        m = logE[t, 0]
        for k in range(1, K):
            if logE[t, k] > m:
                m = logE[t, k]
        if not np.isfinite(m):
            m = 0.0
        offset += m
        for k in range(K):
            E[t, k] = logE[t, k] - m
    flat = E[:T].reshape(T * K)
    exp_into(flat, flat, scratch[:T].reshape(T * K))
    return offset


@njit(cache=True)
def chain_statistics(A, rows, F, E, fwd, bwd, scale, xi, gamma, trans, stats, use_qc, logq0, logq0_row):
    """One item: forward-backward under ``A`` and log-rows ``rows`` (``T x K``), writing its expected transitions
    into ``trans`` (start row first, :func:`induce.kernels.hmm.store_sentence`), its state marginals into
    ``gamma[:T]`` and its emission statistics ``gamma[:T]' F`` into ``stats``; with ``use_qc`` its
    ``log q(C^i = 0)`` (thesis eq. 5.67, heuristic) is added into ``logq0``/``logq0_row``.  ``E``, ``fwd``,
    ``bwd``, ``scale``, ``xi`` are work arrays of at least ``T`` rows.  Returns ``log Z`` of the item."""
    T = rows.shape[0]
    offset = potentials_into(rows, T, E, gamma)
    logz = forward_backward(A, E, T, fwd, bwd, scale, xi)
    if use_qc:
        accumulate_qc(HEURISTIC, A, E, T, fwd, bwd, scale, logz, 0, logq0, logq0_row)
    store_sentence(A, fwd, bwd, xi, T, trans, gamma)
    np.dot(gamma[:T].T, F, stats)
    return logz + offset


@njit(cache=True)
def _estep_range(A, rows, F, bounds, i0, i1, trans_out, stats_out, logz_out):
    """Sequences ``i0`` to ``i1 - 1`` of :func:`batch_estep`, with one work space sized for the longest."""
    K = A.shape[1]
    T_max = 1
    for i in range(i0, i1):
        T_max = max(T_max, bounds[i, 1] - bounds[i, 0])
    E, fwd, bwd, gamma = np.empty((T_max, K)), np.empty((T_max, K)), np.empty((T_max, K)), np.empty((T_max, K))
    scale, xi, no_qc, no_qc_row = np.empty(T_max), np.empty((K, K)), np.zeros((0, 0)), np.zeros(0)
    for i in range(i0, i1):
        lo, hi = bounds[i, 0], bounds[i, 1]
        logz_out[i] = chain_statistics(A, rows[lo:hi], F[lo:hi], E, fwd, bwd, scale, xi, gamma, trans_out[i],
                                       stats_out[i], False, no_qc, no_qc_row)


@njit(cache=True, parallel=True)
def _estep_parallel(A, rows, F, bounds, trans_out, stats_out, logz_out, n_chunks):
    n = bounds.shape[0]
    for c in prange(n_chunks):
        _estep_range(A, rows, F, bounds, c * n // n_chunks, (c + 1) * n // n_chunks, trans_out, stats_out, logz_out)


def batch_estep(A, rows, F, bounds, trans_out, stats_out, logz_out):
    """Sequence ``i`` = ``rows[bounds[i, 0]:bounds[i, 1]]`` under transitions ``A``: its expected transitions,
    emission statistics and ``log Z`` into ``trans_out[i]``, ``stats_out[i]``, ``logz_out[i]`` (the em / vi
    E-step, thesis eq. 3.13 and 3.21-3.22 with the rows of the algorithm).  Sequences in parallel when there
    are several and at least :data:`induce.kernels.emissions.PARALLEL_STEPS` steps (below that, starting the
    threads costs more than the work), in chunks of consecutive sequences (4 per thread), one work space each."""
    n = bounds.shape[0]
    if n > 1 and rows.shape[0] >= PARALLEL_STEPS:
        _estep_parallel(A, rows, F, bounds, trans_out, stats_out, logz_out, min(n, 4 * numba.get_num_threads()))
    else:
        _estep_range(A, rows, F, bounds, 0, n, trans_out, stats_out, logz_out)


@njit(cache=True)
def _surrogate(C, prior, prior_total, A):
    """``A = (C_jk^+ + prior_k) / (C_j.^+ + prior_total)``, ``C^+`` the counts clipped at 0 (thesis eq. 3.49;
    the HDP-HMM's eq. 5.38): :func:`induce.infer.series.surrogate_transitions` without allocation."""
    for j in range(C.shape[0]):
        tot = prior_total
        for k in range(C.shape[1]):
            tot += max(C[j, k], 0.0)
        for k in range(C.shape[1]):
            A[j, k] = (max(C[j, k], 0.0) + prior[k]) / tot


@njit(cache=True)
def cvi2_series_pass(order, X, F, bounds, C, S, own_C, own_S, prior, prior_total, code, hyper, use_qc, logq0,
                     logq0_row):
    """One cvi2 sweep over the items ``X[bounds[i, 0]:bounds[i, 1]]`` in ``order`` (thesis 3.7.1, eq. 3.95-3.96):
    subtract the item's own statistics ``own_C[i]``, ``own_S[i]`` from the totals ``C``, ``S``, form the surrogate
    transitions (eq. 3.49, prior ``prior`` / ``prior_total``) and the predictive rows of family ``code`` with
    hyperparameters ``hyper`` (:func:`induce.kernels.emissions.predictive_rows`), run
    :func:`chain_statistics` into ``own_C[i]``, ``own_S[i]`` and add them back.  Returns the sum of ``log Z``."""
    K = C.shape[1]
    T_max = 1
    for i in range(bounds.shape[0]):
        T_max = max(T_max, bounds[i, 1] - bounds[i, 0])
    rows, E, fwd, bwd, gamma = (np.empty((T_max, K)), np.empty((T_max, K)), np.empty((T_max, K)),
                                np.empty((T_max, K)), np.empty((T_max, K)))
    scale, xi, A = np.empty(T_max), np.empty((K, K)), np.empty((K + 1, K))
    total = 0.0
    for i in order:
        lo, hi = bounds[i, 0], bounds[i, 1]
        T = hi - lo
        C -= own_C[i]
        S -= own_S[i]
        _surrogate(C, prior, prior_total, A)
        predictive_rows(code, hyper, X[lo:hi], S, rows[:T])
        total += chain_statistics(A, rows[:T], F[lo:hi], E, fwd, bwd, scale, xi, gamma, own_C[i], own_S[i],
                                  use_qc, logq0, logq0_row)
        C += own_C[i]
        S += own_S[i]
    return total

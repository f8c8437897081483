"""Dynamic programs for first-order HMMs with a start state (thesis section 3.1).

Conventions shared by every kernel in this module:

* ``K`` hidden states, ``W`` word types;
* transitions ``A`` have shape ``(K+1, K)``: row 0 is the start state, row
  ``j+1`` is state ``j`` (thesis: ``C_{j,k}`` with row 0 the start state);
* emission tables are stored *by word*, shape ``(W, K)``, so that the column of
  all states for token ``x_t`` is one contiguous row;
* a sentence's emission potentials are gathered into ``E[t, k]`` (``T x K``)
  before the dynamic program runs, so one forward-backward serves every
  estimator (EM's ``theta*``, VI's ``theta~``, CVI's surrogate ``theta-``) and
  every constraint (tag dictionaries zero entries of ``E``);
* forward messages are normalised at every step (scaled forward-backward);
  ``scale[t]`` is the step normaliser and ``sum(log(scale))`` the sentence
  log-likelihood, so long sentences never underflow.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_TINY = 1e-300
_FLUSH = 1e-30


@njit(cache=True, fastmath=True)
def forward_backward(A, E, T, fwd, bwd, scale, xi):
    """Scaled forward-backward over the first ``T`` rows of ``E``.

    On return ``fwd[t] * bwd[t]`` is the state marginal ``q(z_t)`` (it sums to
    one), ``xi[j, k]`` holds ``sum_t fwd[t-1, j] * E[t, k] * bwd[t, k] / scale[t]``
    so that the expected transition counts of this sentence are
    ``A[j+1, k] * xi[j, k]`` (start row: ``q(z_0)``), and the return value is
    ``log p(x)`` under the potentials (``sum_t log scale[t]``).  Allocates its two
    work arrays; :func:`forward_backward_into` is the same dynamic program on the
    caller's.
    """
    K = A.shape[1]
    AT = np.empty((K, K))
    transpose_transitions(A, AT)
    return forward_backward_into(A, AT, E, T, fwd, bwd, scale, xi, np.empty((T, K)))


@njit(cache=True)
def transpose_transitions(A, AT):
    """``AT[k, j] = A[j + 1, k]``: the transitions into each state as a contiguous row."""
    K = A.shape[1]
    for j in range(K):
        for k in range(K):
            AT[k, j] = A[j + 1, k]


@njit(cache=True, fastmath=True)
def forward_backward_into(A, AT, E, T, fwd, bwd, scale, xi, EB):
    """:func:`forward_backward` with the caller's work arrays: ``AT`` the transposed
    transitions (:func:`transpose_transitions` of ``A``) and ``EB`` (at least ``T x K``).

    Every O(K^2) step is written as contiguous dot products (forward against
    the transposed transitions, backward against transition rows) so that
    LLVM vectorises them; the pair statistics are one BLAS matrix product.
    """
    K = A.shape[1]
    # forward
    s = 0.0
    for k in range(K):
        v = A[0, k] * E[0, k]
        fwd[0, k] = v
        s += v
    if s < _TINY:
        s = _TINY
    scale[0] = s
    total = np.log(s)
    inv = 1.0 / s
    for k in range(K):
        fwd[0, k] *= inv
    for t in range(1, T):
        prev = fwd[t - 1]
        cur = fwd[t]
        e = E[t]
        s = 0.0
        for k in range(K):
            row = AT[k]
            acc = 0.0
            for j in range(K):
                acc += prev[j] * row[j]
            v = acc * e[k]
            cur[k] = v
            s += v
        if s < _TINY:
            s = _TINY
        scale[t] = s
        total += np.log(s)
        inv = 1.0 / s
        for k in range(K):
            cur[k] *= inv
    # backward
    for k in range(K):
        bwd[T - 1, k] = 1.0
    for t in range(T - 1, 0, -1):
        inv = 1.0 / scale[t]
        nxt = bwd[t]
        e = E[t]
        for k in range(K):
            v = e[k] * nxt[k] * inv
            EB[t, k] = v
        out = bwd[t - 1]
        eb = EB[t]
        for j in range(K):
            row = A[j + 1]
            acc = 0.0
            for k in range(K):
                acc += row[k] * eb[k]
            out[j] = acc
    # pair statistics: xi[j, k] = sum_t fwd[t-1, j] * eb_t[k], one matrix product
    if T > 1:
        xi[:, :] = np.dot(fwd[: T - 1].T, EB[1:T])
    else:
        xi[:, :] = 0.0
    return total


@njit(cache=True, inline="always")
def _flushed(v):
    """``v``, or 0 where ``v < _FLUSH`` (an expected count too small to matter)."""
    return v if v >= _FLUSH else 0.0


@njit(cache=True)
def store_sentence(A, fwd, bwd, xi, T, trans, gamma):
    """Write one sentence's expected counts after :func:`forward_backward` under ``A``.

    ``trans`` (K+1, K): start row ``q(z_0)`` and transitions ``A[j+1, k] * xi[j, k]``;
    ``gamma`` (at least T, K): the state marginals ``fwd[t] * bwd[t]``.
    Values are cast to the arrays' dtype (float32 storage is allowed); values
    below ``_FLUSH`` (1e-30) are stored as 0, so that float32 storage never
    holds subnormal numbers (below 1.2e-38), whose every later conversion or
    sum takes a microcode assist on x86: once the posteriors sharpen, such
    values made a cvi2 pass 1.5x slower.
    """
    K = A.shape[1]
    for k in range(K):
        trans[0, k] = _flushed(fwd[0, k] * bwd[0, k])
    for j in range(K):
        for k in range(K):
            trans[j + 1, k] = _flushed(A[j + 1, k] * xi[j, k])
    for t in range(T):
        for k in range(K):
            gamma[t, k] = _flushed(fwd[t, k] * bwd[t, k])


@njit(cache=True)
def fb_workspace_for(offsets, K):
    """:func:`fb_workspace` sized for the longest of the sequences cut at ``offsets`` (at least 1 token)."""
    T_max = 1
    for i in range(offsets.shape[0] - 1):
        T_max = max(T_max, offsets[i + 1] - offsets[i])
    return fb_workspace(T_max, K)


@njit(cache=True)
def fb_workspace(T_max, K):
    """Work arrays of :func:`forward_backward` for sentences up to ``T_max`` tokens:
    ``fwd``, ``bwd``, emission potentials ``E`` (each ``T_max x K``), ``scale`` and ``xi`` (K x K)."""
    return (np.empty((T_max, K)), np.empty((T_max, K)), np.empty((T_max, K)), np.empty(T_max), np.empty((K, K)))


@njit(cache=True)
def viterbi(A, E, T, out):
    """Most probable state path under ``A`` and potentials ``E`` (max-product, in logs)."""
    K = A.shape[1]
    logA = np.log(np.maximum(A, _TINY))
    delta = np.empty((T, K))
    back = np.zeros((T, K), dtype=np.int32)
    for k in range(K):
        delta[0, k] = logA[0, k] + np.log(max(E[0, k], _TINY))
    for t in range(1, T):
        for k in range(K):
            best = -np.inf
            arg = 0
            for j in range(K):
                v = delta[t - 1, j] + logA[j + 1, k]
                if v > best:
                    best = v
                    arg = j
            delta[t, k] = best + np.log(max(E[t, k], _TINY))
            back[t, k] = arg
    best = -np.inf
    arg = 0
    for k in range(K):
        if delta[T - 1, k] > best:
            best = delta[T - 1, k]
            arg = k
    out[T - 1] = arg
    for t in range(T - 1, 0, -1):
        arg = back[t, arg]
        out[t - 1] = arg
    return best


@njit(cache=True)
def gather_emissions(emit, x, allowed, E):
    """``E[t, k] = emit[x_t, k]``, zeroed where a tag dictionary forbids ``k`` for ``x_t``.

    ``allowed`` is a ``(W, K)`` uint8 mask, or shape ``(0, 0)`` for no dictionary;
    word ids at or beyond the mask's rows are unconstrained.
    """
    T = x.shape[0]
    K = emit.shape[1]
    constrained = allowed.shape[0] > 0
    for t in range(T):
        w = x[t]
        for k in range(K):
            E[t, k] = emit[w, k]
        if constrained and w < allowed.shape[0]:
            for k in range(K):
                if allowed[x[t], k] == 0:
                    E[t, k] = 0.0


@njit(cache=True, parallel=True)
def decode_sentences(A, emit, allowed, tokens, offsets, use_viterbi):
    """Posterior (max-marginal) or Viterbi states of every sentence ``tokens[offsets[i]:offsets[i+1]]``, in
    parallel: transitions ``A`` (row 0 = start), emissions ``emit`` by word id, ``allowed`` a tag-dictionary mask."""
    K = A.shape[1]
    I = offsets.shape[0] - 1
    out = np.zeros(tokens.shape[0], dtype=np.int32)
    for i in prange(I):
        s = offsets[i]
        T = offsets[i + 1] - s
        if T == 0:
            continue
        x = tokens[s : s + T]
        E = np.empty((T, K))
        gather_emissions(emit, x, allowed, E)
        path = np.empty(T, dtype=np.int32)
        if use_viterbi:
            viterbi(A, E, T, path)
        else:
            fwd = np.empty((T, K))
            bwd = np.empty((T, K))
            scale = np.empty(T)
            xi = np.empty((K, K))
            forward_backward(A, E, T, fwd, bwd, scale, xi)
            for t in range(T):
                best = 0
                for k in range(1, K):
                    if fwd[t, k] * bwd[t, k] > fwd[t, best] * bwd[t, best]:
                        best = k
                path[t] = best
        for t in range(T):
            out[s + t] = path[t]
    return out

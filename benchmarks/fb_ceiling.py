"""How close is exact cvi2's forward-backward to what a numba mat-vec can do?  (docs/experiments/speed.md)

Exact cvi2 (thesis 3.44-3.50) runs one forward-backward per sentence under
parameters that changed after the previous sentence, so its O(K^2) work per
token is three matrix-vector products (forward, backward, pair statistics)
and cannot be batched into matrix-matrix products as EM's lockstep E-step is.
This script measures, single-threaded CPU time on CoNLL-2000 train+test:

* ``forward_backward``: the shipped kernel over every sentence under fixed random
  parameters (what a cvi2 pass costs without its count bookkeeping);
* ``matvec``: a K x K mat-vec against a vector in L1 cache, repeated (numba,
  fastmath), i.e. the rate the compiler reaches on this shape, and the time
  three of them per token would take over the corpus;
* ``blas``: the same mat-vec through BLAS ``dgemv`` (``np.dot`` inside numba).

    NUMBA_NUM_THREADS=1 python benchmarks/fb_ceiling.py [--states 45]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from numba import njit

from hmm_bench import conll2000, machine
from induce.kernels.hmm import fb_workspace_for, forward_backward, gather_emissions


@njit(cache=True)
def _all_sentences(A, B, tokens, offsets):
    K = A.shape[1]
    fwd, bwd, E, scale, xi = fb_workspace_for(offsets, K)
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    ll = 0.0
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        T = offsets[i + 1] - s
        gather_emissions(B, tokens[s:s + T], no_mask, E)
        ll += forward_backward(A, E, T, fwd, bwd, scale, xi)
    return ll


@njit(cache=True, fastmath=True)
def _matvec_loop(M, x, y, n):
    K = M.shape[0]
    tot = 0.0
    for r in range(n):
        for k in range(K):
            row = M[k]
            acc = 0.0
            for j in range(K):
                acc += row[j] * x[j]
            y[k] = acc
        x[0] = y[r % K] * 1e-3 + 0.5  # a dependence between repetitions, as in forward
        tot += y[0]
    return tot


@njit(cache=True)
def _blas_matvec_loop(M, x, y, n):
    K = M.shape[0]
    tot = 0.0
    for r in range(n):
        y[:] = np.dot(M, x)
        x[0] = y[r % K] * 1e-3 + 0.5
        tot += y[0]
    return tot


def best_cpu(fn, *args, repeat=5):
    fn(*args)
    best = np.inf
    for _ in range(repeat):
        t0 = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=int, default=45)
    args = parser.parse_args()
    K = args.states
    corpus = conll2000()
    rng = np.random.default_rng(0)
    A = rng.random((K + 1, K))
    A /= A.sum(axis=1, keepdims=True)
    B = rng.random((len(corpus.vocab), K))
    B /= B.sum(axis=0, keepdims=True)
    N = corpus.n_tokens
    fb = best_cpu(_all_sentences, A, B, corpus.tokens, corpus.offsets)
    n = 200_000
    M, x, y = rng.random((K, K)), rng.random(K), np.zeros(K)
    mv = best_cpu(_matvec_loop, M, x, y, n) / n
    blas = best_cpu(_blas_matvec_loop, M, x, y, n) / n
    rows = {"tokens": N, "states": K, "forward_backward_s": fb, "matvec_ns": mv * 1e9,
            "matvec_gmacs": K * K / mv / 1e9, "three_matvecs_per_token_s": 3 * N * mv,
            "fb_over_matvec_ceiling": fb / (3 * N * mv),
            "blas_matvec_ns": blas * 1e9}
    print(f"CoNLL-2000: {N} tokens, K={K}")
    print(f"forward_backward over all sentences: {fb:.3f} s CPU")
    print(f"one {K}x{K} mat-vec in cache: {mv * 1e9:.0f} ns ({K * K / mv / 1e9:.1f} G multiply-adds/s)")
    print(f"the same through BLAS dgemv: {blas * 1e9:.0f} ns")
    print(f"3 mat-vecs per token over the corpus: {3 * N * mv:.3f} s -> kernel at "
          f"{fb / (3 * N * mv):.2f}x that ceiling")
    out = Path(__file__).resolve().parent / "results" / f"fb_ceiling_K{K}.json"
    out.write_text(json.dumps(rows | {"machine": machine(), "date": time.strftime("%Y-%m-%d")}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

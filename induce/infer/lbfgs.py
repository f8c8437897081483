"""Limited-memory BFGS as a generator, for the log-linear emissions (:mod:`induce.emissions.features`).

Nocedal & Wright, *Numerical Optimization* (2nd ed.), Algorithm 7.4 (the two-loop recursion for
``H_k grad f``) and 7.5 (L-BFGS), with a backtracking line search on the Armijo condition (their eq. 3.4,
``c1 = 1e-4``) starting from the unit step (the first iteration from ``1 / ||grad f||``).  scipy's L-BFGS-B
spends about 140 ms of its own per iteration at the 600,000 weights of a 45-state feature HMM on ptb-sample,
seven times a function evaluation (docs/experiments/features.md); the recursion here is ``4m`` vector
operations.  Being a generator, the caller runs one iteration at a time (the HMM's pass loop: trace,
convergence, progress bar).
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterator

import numpy as np
from scipy.linalg.blas import daxpy, ddot

#: Armijo's sufficient-decrease constant ``c1`` and the step halvings tried before giving up
ARMIJO = 1e-4
MAX_HALVINGS = 30


def _direction(g: np.ndarray, pairs: deque) -> np.ndarray:
    """``-H g`` by the two-loop recursion (Algorithm 7.4) over the stored ``(s, y, 1 / y's)``, with the initial
    Hessian approximation ``gamma I``, ``gamma = s'y / y'y`` of the newest pair (eq. 7.20)."""
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * ddot(s, q)
        daxpy(y, q, a=-a)  # in place: q -= a y
        alphas.append(a)
    if pairs:
        s, y, _ = pairs[-1]
        q *= ddot(s, y) / ddot(y, y)
    for (s, y, rho), a in zip(pairs, reversed(alphas)):
        daxpy(s, q, a=a - rho * ddot(y, q))
    q *= -1.0
    return q


def lbfgs(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, memory: int = 5
          ) -> Iterator[tuple[np.ndarray, float]]:
    """Minimise ``fun`` (``x -> (f, grad f)``) from ``x0``: yields ``(x, f)`` after every accepted iteration, each
    with ``f`` strictly below the last (the Armijo condition), and returns when no step along the direction
    decreases ``f`` (a stationary point, to machine precision).  When it yields, ``fun``'s last call was at the
    yielded ``x``."""
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    pairs: deque = deque(maxlen=memory)
    step = 1.0 / max(float(np.linalg.norm(g)), 1e-12)
    while True:
        d = _direction(g, pairs)
        slope = float(np.vdot(g, d))
        if slope >= 0:  # not a descent direction (rounding): restart from steepest descent
            pairs.clear()
            d, slope = -g, -float(np.vdot(g, g))
        for _ in range(MAX_HALVINGS):
            x_new = x + step * d
            f_new, g_new = fun(x_new)
            if f_new <= f + ARMIJO * step * slope and f_new < f:
                break
            step *= 0.5
        else:
            return
        s, y = x_new - x, g_new - g
        sy = ddot(s, y)
        if sy > 1e-12 * ddot(y, y):  # keep the pair only where the curvature condition holds
            pairs.append((s, y, 1.0 / sy))
        x, f, g, step = x_new, f_new, g_new, 1.0
        yield x, f

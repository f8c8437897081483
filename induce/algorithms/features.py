"""Training an HMM whose emissions are log-linear (:class:`induce.emissions.features.LogLinear`): Berg-Kirkpatrick,
Bouchard-Cote, DeNero & Klein (NAACL 2010), both of their algorithms.

* ``em`` (their Algorithm 1): the E-step is the categorical family's compiled lockstep forward-backward
  (:func:`induce.infer.hmm_batched.lockstep_pass`, or a dask cluster's) given the ``W x K`` emission matrix
  ``p(w | k)`` of the current weights; the M-step sets the Dirichlet transitions as ``em`` does (MAP under
  ``alpha``, or maximum likelihood) and moves the emission weights by warm-started L-BFGS
  (:func:`induce.infer.lbfgs.lbfgs`) on the penalised
  expected log-likelihood (paper eq. 3-4).  Objective (traced as ``log_posterior``): ``log p(x | A, Theta) +
  (alpha - 1) sum log A - kappa ||Theta||^2``; a generalised EM, so it does not decrease.
* ``direct`` (their Algorithm 2): L-BFGS on the penalised marginal log-likelihood itself.  Its gradient is the
  same expression with the expected counts of the current parameters (paper section 3.2: ``dL/dlambda =
  sum_y e_y (f(y) - E[f])``), so each function evaluation is one E-step and two sparse/dense products.  As in
  the paper, every multinomial is log-linear here: the transition rows are softmaxes of logits ``eta`` (an
  indicator feature per next state) under the same L2 penalty, ``L = log p(x | eta, Theta) - kappa
  (||eta||^2 + ||Theta||^2)`` (traced as ``log_posterior``); the line search keeps it from decreasing across
  accepted iterations.

Both start from the batch algorithms' random local posteriors (thesis footnote 5) followed by one M-step.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ..emissions.features import LogLinear
from ..infer.lbfgs import lbfgs
from .base import Algorithm, Fitted, random_start
from .em_vi import BatchEM, _log_support, point_estimate

#: L-BFGS iterations per M-step of ``em`` (warm-started; docs/experiments/features.md)
MSTEP_ITER = 5
#: L-BFGS iterations of the first M-step (from zero weights)
FIRST_MSTEP_ITER = 50


def _softmax_rows(eta: np.ndarray) -> np.ndarray:
    A = np.exp(eta - eta.max(axis=1, keepdims=True))
    return A / A.sum(axis=1, keepdims=True)


def marginal_objective(loglin: LogLinear, estep, K: int, trans: np.ndarray, emit: np.ndarray, g: np.ndarray):
    """``(fun, seen)``: ``fun(x) -> (-L, -dL/dx)`` of Algorithm 2 at ``x = (eta (K+1, K), Theta (D, K))`` flattened,
    ``L = log p(x | softmax(eta), Theta) - kappa (||eta||^2 + ||Theta||^2)``; each call runs ``estep`` (which
    overwrites ``trans``, ``emit`` and ``g`` with the expected counts and marginals at ``x``, recorded as
    ``seen["x"]``).  Gradient (paper section 3.2): ``dL/deta_j = e_j - e_j. softmax(eta_j) - 2 kappa eta_j``,
    ``dL/dTheta = F' (e - P e.) - 2 kappa Theta``."""
    l2, n_eta = loglin.l2, (K + 1) * K
    seen = {"x": None}

    def fun(x):
        eta, theta = x[:n_eta].reshape(K + 1, K), x[n_eta:].reshape(-1, K)
        A, B = _softmax_rows(eta), loglin.probs(theta)
        ll = estep(A, B, trans, emit, g)
        value = ll - l2 * (float(np.vdot(eta, eta)) + float(np.vdot(theta, theta)))
        g_eta = trans - A * trans.sum(axis=1, keepdims=True) - 2.0 * l2 * eta
        g_theta = np.asarray(loglin.FT @ (emit - B * emit.sum(axis=0))) - 2.0 * l2 * theta
        seen["x"] = x.copy()
        return -value, -np.concatenate([g_eta.ravel(), g_theta.ravel()])

    return fun, seen


class FeatureHMM(Algorithm):
    """EM with an L-BFGS M-step (``how="em"``) or direct L-BFGS on the marginal likelihood (``how="direct"``)
    for the HMM with log-linear emissions ``loglin``; returns the counts and, in ``extra``, the final
    ``feature_weights_`` (``K x D``) and the point transitions ``feature_transitions``."""

    stoppable = True
    cluster = True

    def __init__(self, loglin: LogLinear, how: str):
        self.loglin, self.how = loglin, how
        self.name = "em" if how == "em" else "features-direct"

    def fit(self, core, data, loop, opts) -> Fitted:
        """The fit, with the BLAS of L-BFGS's vector operations on one thread: OpenBLAS's threads on its
        ``ddot``/``daxpy`` over 600,000 weights cost 14x the single-threaded CPU time on the shared 2-core machine
        (docs/experiments/features.md, "Speed")."""
        with threadpool_limits(1, user_api="blas"):
            return self._fit(core, data, loop, opts)

    def _fit(self, core, data, loop, opts) -> Fitted:
        sent_trans, gamma = random_start(core, data, loop.seeds[0])
        trans = sent_trans.sum(axis=0)
        emit = np.zeros((data.W, core.K))
        np.add.at(emit, data.tokens, gamma)
        del sent_trans, gamma
        want_gamma = loop.gold is not None or bool(core.priors.learned)
        g = np.empty((data.tokens.shape[0] if want_gamma else 0, core.K))
        estep = BatchEM._estep(core, data, opts, loop)
        theta, _ = self.loglin.m_step(np.zeros((self.loglin.F.shape[1], core.K)), emit, FIRST_MSTEP_ITER)
        run = self._em if self.how == "em" else self._direct
        A, theta = run(core, loop, opts, estep, trans, emit, g, theta)
        return Fitted(trans, emit, None, loop.last, loop.max_iter, loop.monitor, loop.trace, loop.meter,
                      extra={"feature_weights_": np.ascontiguousarray(theta.T), "feature_transitions": A})

    def _em(self, core, loop, opts, estep, trans, emit, g, theta):
        """Algorithm 1: the passes of EM (:meth:`Loop.run`); returns the final M-step's ``(A, Theta)``."""

        def one_pass(it):
            nonlocal theta
            alpha = core.priors.alpha
            A = point_estimate("em", opts.map_estimate, trans, alpha)
            if it > 1:
                theta, _ = self.loglin.m_step(theta, emit, MSTEP_ITER)
            ll = estep(A, self.loglin.probs(theta), trans, emit, g)
            objective = ll - self.loglin.l2 * float(np.vdot(theta, theta))
            if opts.map_estimate:
                objective += (alpha - 1) * _log_support(A)
            return objective

        loop.run("log_posterior", one_pass, core, self.stoppable, lambda: g.argmax(axis=1))
        A = point_estimate("em", opts.map_estimate, trans, core.priors.alpha)
        theta, _ = self.loglin.m_step(theta, emit, MSTEP_ITER)
        return A, theta

    def _direct(self, core, loop, opts, estep, trans, emit, g, theta):
        """Algorithm 2: L-BFGS on the penalised marginal log-likelihood over ``(eta, Theta)``, one traced pass
        per accepted L-BFGS iteration; returns the last accepted ``(A, Theta)``."""
        K = core.K
        eta = np.log(point_estimate("em", opts.map_estimate, trans, core.priors.alpha))
        n_eta = eta.size
        fun, seen = marginal_objective(self.loglin, estep, K, trans, emit, g)
        x = np.concatenate([eta.ravel(), theta.ravel()])
        steps = lbfgs(fun, x)

        def one_pass(it):
            nonlocal x
            x, f = next(steps, (x, None))
            return None if f is None else -f  # None: stationary, no step decreases the objective (ends the loop)

        loop.run("log_posterior", one_pass, core, self.stoppable, lambda: g.argmax(axis=1))
        if not np.array_equal(x, seen["x"]):
            fun(x)  # leave the counts of the returned point
        return _softmax_rows(x[:n_eta].reshape(K + 1, K)), x[n_eta:].reshape(-1, K)

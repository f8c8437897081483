"""Empirical Bayes for symmetric Dirichlet priors: the concentration that maximises the evidence of the counts.

Every categorical table of induce (transition rows, emission rows, rule rows,
translation rows) has a symmetric ``Dir(a)`` prior.  Given (expected) counts
``n_jk`` of ``J`` rows over ``K`` outcomes, the Dirichlet-multinomial evidence is
(Minka 2000, "Estimating a Dirichlet distribution", eq. 52 with ``a_k = a``)::

    log p(n | a) = sum_j [ lnG(K a) - lnG(N_j + K a) + sum_k (lnG(n_jk + a) - lnG(a)) ]

with ``N_j = sum_k n_jk`` (``K`` becomes ``K_j`` for rows that allow different
numbers of outcomes, ``outcomes=``).  Its maximiser is found by Newton's method in
``log a`` (the evidence is smooth and, for counts that are overdispersed
relative to a multinomial, unimodal in ``a``), falling back to Minka's
fixed-point iteration (his eq. 55, symmetric case)::

    a <- a * sum_jk [psi(n_jk + a) - psi(a)] / (K * sum_j [psi(N_j + K a) - psi(K a)])

whenever a Newton step would lower the evidence.  Expected (fractional) counts
are plugged in for ``n`` (type-II maximum likelihood from the E-step's
statistics, as in Minka's and Wallach's treatment of LDA and as the thesis does
for the HDP's hyperparameters, ch. 5); zero counts contribute nothing to the
sums over ``k``, so only the positive entries are visited.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.special import digamma, gammaln, polygamma

#: the learned concentration is kept in this range (beyond it the evidence is flat)
BOUNDS = (1e-4, 1e4)


def _rows(counts, outcomes=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The distinct positive entries with their multiplicities, row totals (rows with a positive total) and each
    such row's number of outcomes ``K_j``.  The sums over entries are taken over distinct values, each weighted by
    its multiplicity: counts are mostly small integers, so a table of 10^5 positive entries has a few hundred
    distinct ones (the digamma sums of each Newton step cost that much, not the table's size).

    ``counts`` is a dense array (last axis: outcomes) or a ``scipy.sparse`` matrix
    (rows by outcomes; a table too large to be dense, such as translation rows
    over a whole vocabulary).  ``outcomes`` gives ``K_j`` per row when rows allow
    different numbers of outcomes (a grammar's allowed rules, a row's
    co-occurring words); by default every row has ``counts.shape[-1]``.
    """
    if sparse.issparse(counts):
        counts = sparse.csr_matrix(counts, dtype=np.float64, copy=True)
        counts.data = np.maximum(counts.data, 0.0)
        totals = np.asarray(counts.sum(axis=1)).ravel()
        nz = counts.data[counts.data > 0]
    else:
        counts = np.asarray(counts, dtype=np.float64)
        counts = np.maximum(counts.reshape(-1, counts.shape[-1]), 0.0)
        totals = counts.sum(axis=1)
        nz = counts[counts > 0]
    ks = np.broadcast_to(np.asarray(counts.shape[-1] if outcomes is None else outcomes, dtype=np.float64),
                         totals.shape)
    values, weights = np.unique(nz, return_counts=True)
    return values, weights.astype(np.float64), totals[totals > 0], ks[totals > 0]


def log_evidence(counts, a: float, outcomes=None) -> float:
    """``log p(n | a)`` of the rows of ``counts`` (last axis: outcomes) under a symmetric ``Dir(a)``."""
    return float(_evidence(*_rows(counts, outcomes), a))


def _evidence(values, weights, totals, ks, a):
    """:func:`log_evidence` of the entries as :func:`_rows` gives them (Minka 2000, eq. 52)."""
    return (gammaln(ks * a).sum() - gammaln(totals + ks * a).sum()
            + (weights * (gammaln(values + a) - gammaln(a))).sum())


def _gradient_hessian(values, weights, totals, ks, a):
    """First and second derivatives of the evidence with respect to ``a`` (entries as :func:`_rows` gives them)."""
    n = weights.sum()
    g = ((ks * (digamma(ks * a) - digamma(totals + ks * a))).sum() + (weights * digamma(values + a)).sum()
         - n * digamma(a))
    h = ((ks * ks * (polygamma(1, ks * a) - polygamma(1, totals + ks * a))).sum()
         + (weights * polygamma(1, values + a)).sum() - n * polygamma(1, a))
    return float(g), float(h)


def _newton_step_log(u: float, g: float, h: float, lo: float, hi: float) -> float:
    """One Newton step on ``u = log a`` for an objective with first and second derivatives ``g``, ``h`` in
    ``a = exp(u)`` (``d/du = a g``, ``d2/du2 = a g + a^2 h``); where the curvature in ``u`` is not negative, a
    unit step uphill.  Clipped to ``[lo, hi]``."""
    a = np.exp(u)
    du_grad, du_curv = a * g, a * g + a * a * h
    step = -du_grad / du_curv if du_curv < 0 else np.sign(du_grad) * 1.0
    return float(np.clip(u + step, lo, hi))


def fit_symmetric_dirichlet(counts, a0: float, max_iter: int = 100, tol: float = 1e-7, outcomes=None) -> float:
    """The concentration ``a`` maximising :func:`log_evidence` of ``counts``, started at ``a0``.

    Newton's method on ``u = log a`` (:func:`_newton_step_log`), guarded: a step
    that lowers the evidence is replaced by Minka's fixed-point step.  Stops when
    ``|delta log a| < tol``; the result is clipped to :data:`BOUNDS`.  Rows with
    no counts carry no information and are ignored;
    with no counts at all ``a0`` is returned.  ``counts`` and ``outcomes`` as in :func:`_rows`.
    """
    values, weights, totals, ks = _rows(counts, outcomes)
    if len(totals) == 0 or ks.max() < 2:
        return float(a0)
    lo, hi = np.log(BOUNDS[0]), np.log(BOUNDS[1])
    u = float(np.clip(np.log(a0), lo, hi))

    def objective(u):
        return _evidence(values, weights, totals, ks, np.exp(u))

    f = objective(u)
    for _ in range(max_iter):
        a = np.exp(u)
        new_u = _newton_step_log(u, *_gradient_hessian(values, weights, totals, ks, a), lo, hi)
        new_f = objective(new_u)
        if not new_f >= f:
            # Minka's fixed point (eq. 55): the ratio of the two digamma sums
            num = (weights * (digamma(values + a) - digamma(a))).sum()
            den = (ks * (digamma(totals + ks * a) - digamma(ks * a))).sum()
            new_u = float(np.clip(np.log(a * num / den), lo, hi)) if num > 0 and den > 0 else u
            new_f = objective(new_u)
            if not new_f >= f:
                break
        converged = abs(new_u - u) < tol
        u, f = new_u, new_f
        if converged:
            break
    return float(np.clip(np.exp(u), *BOUNDS))


def fit_symmetric_dirichlet_vb(counts, a_q: float, a0: float, max_iter: int = 100, tol: float = 1e-7) -> float:
    """Mean-field VI's empirical Bayes step (the ELBO's hyperparameter update; Blei, Ng & Jordan 2003, appendix
    A.4.2, for LDA's topic prior): the ``a`` maximising the prior's part of the bound

        L(a) = J [lnG(K a) - K lnG(a)] + (a - 1) S,   S = sum_jk E_q[log theta_jk]

    for ``J`` rows ``q(theta_j) = Dir(n_j + a_q)`` over ``K`` outcomes, held fixed (``counts`` = ``n``, dense, rows
    by outcomes; ``E_q[log theta_jk] = psi(n_jk + a_q) - psi(n_j. + K a_q)``).  ``L`` is concave in ``a``: it is
    the log-likelihood of a symmetric Dirichlet with the mean log-probabilities ``S / (J K)`` (Minka 2000,
    "Estimating a Dirichlet distribution", eq. 8 with equal ``a_k``), maximised by Newton's method on ``log a``
    from ``a0``, clipped to :data:`BOUNDS`.
    """
    counts = np.asarray(counts, dtype=np.float64)
    J, K = counts.shape
    S = float((digamma(counts + a_q).sum(axis=1) - K * digamma(counts.sum(axis=1) + K * a_q)).sum())
    return _newton_log(lambda a: (J * K * (digamma(K * a) - digamma(a)) + S,
                                  J * K * (K * polygamma(1, K * a) - polygamma(1, a))), a0, max_iter, tol)


def fit_dirichlet_precision_vb(mean, elog, s0: float, max_iter: int = 100, tol: float = 1e-7) -> float:
    """The precision ``s`` of rows ``theta_j ~ Dir(s m_j)`` with base measures ``m_j`` held fixed that maximises
    the prior's part of the bound (the asymmetric form of :func:`fit_symmetric_dirichlet_vb`)

        L(s) = sum_j [lnG(s M_j) - sum_k lnG(s m_jk) + s sum_k m_jk e_jk],   M_j = sum_k m_jk

    for fixed ``e_jk = E_q[log theta_jk]`` (Minka 2000, "Estimating a Dirichlet distribution", section 3.3: the
    precision with the mean fixed; ``L`` is concave in ``s``).  ``mean`` ``(J, K)`` is zero outside a row's
    support (those ``e_jk`` are ignored).  Newton's method on ``log s`` from ``s0``, clipped to :data:`BOUNDS`.
    The HDP's transition concentration ``sigma`` with ``m_j`` the top-level weights ``b*`` over row ``j``'s
    support (:mod:`induce.infer.series_hdp_hsmm`).
    """
    m = np.asarray(mean, dtype=np.float64)
    on = m > 0
    m_on, M = m[on], m.sum(axis=1)
    linear = float((m_on * np.asarray(elog, dtype=np.float64)[on]).sum())
    return _newton_log(lambda s: ((M * digamma(s * M)).sum() - (m_on * digamma(s * m_on)).sum() + linear,
                                  (M * M * polygamma(1, s * M)).sum() - (m_on * m_on * polygamma(1, s * m_on)).sum()),
                       s0, max_iter, tol)


def _newton_log(derivatives, a0: float, max_iter: int, tol: float) -> float:
    """Maximise a concave function of ``a > 0`` by Newton's method on ``log a`` (:func:`_newton_step_log`) from
    ``a0``; ``derivatives(a)`` gives its first and second derivatives in ``a``.  Stops when ``|delta log a| <
    tol``; clipped to :data:`BOUNDS`."""
    lo, hi = np.log(BOUNDS[0]), np.log(BOUNDS[1])
    u = float(np.clip(np.log(a0), lo, hi))
    for _ in range(max_iter):
        new_u = _newton_step_log(u, *derivatives(np.exp(u)), lo, hi)
        converged = abs(new_u - u) < tol
        u = new_u
        if converged:
            break
    return float(np.clip(np.exp(u), *BOUNDS))


def fit_row_dirichlets(counts, a0, cap: float = np.inf, max_iter: int = 100, tol: float = 1e-7) -> np.ndarray:
    """Per-row concentrations: ``a_j`` maximising the evidence of row ``j`` of ``counts`` alone, started at
    ``a0[j]``, then capped at ``cap``.

    The prior of a table whose rows ``j`` each have their own symmetric ``Dir(a_j)``: the evidence
    (Minka 2000, eq. 52) is a sum over rows, so each ``a_j`` is :func:`fit_symmetric_dirichlet` of its row.
    ``counts`` is rows by outcomes, dense or ``scipy.sparse`` (each row is visited through its positive
    entries only: a dense row of a whole vocabulary per state per pass cost more than the cvi2 pass itself);
    ``a0`` a scalar or one start per row.  A row with no counts keeps its start; a row whose counts fall on
    one outcome wants ``a_j -> 0`` and gets ``BOUNDS[0]``; a row of distinct outcomes, each seen once, is best
    explained by the uniform distribution, ``a_j -> inf`` (``BOUNDS[1]``) unless ``cap`` stops it.
    """
    counts = sparse.csr_matrix(counts, dtype=np.float64)
    a0 = np.broadcast_to(np.asarray(a0, dtype=np.float64), counts.shape[:1])
    fits = np.array([fit_symmetric_dirichlet(counts[j], a, max_iter, tol) for j, a in enumerate(a0)])
    return np.minimum(fits, cap)

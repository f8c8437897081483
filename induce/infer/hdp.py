"""Global updates of the HDP-HMM under collapsed variational inference (thesis 5.3).

The HDP part of the model is the top-level stick ``pi ~ GEM(gamma)`` with
variational posteriors ``q(pi~_k) = Beta(u_k, v_k)`` (eq. 5.14) and the
transition concentration ``sigma`` (rows ``theta_j ~ DP(sigma, pi)``).  Given
the expected transition counts ``E[C]`` ``(K+1, K)`` (row 0 = start) and the
probabilities ``q(C > 0)`` (see :mod:`induce.kernels.hdp_qc`), this module
computes

* the geometric expectations ``G[pi_k]`` (text after eq. 5.28), whose
  ``sigma G[pi_k]`` replace the symmetric prior of the finite HMM (eq. 5.38);
* the expected table counts ``E[s_{j,k}]`` (eq. 5.35);
* the closed-form updates of batch CVI: sticks (5.25-5.26), ``gamma`` (5.17),
  ``sigma`` (5.20) with the expected digamma terms of eq. 5.36;
* the partial gradients used by stochastic CVI (eq. 5.16, 5.19, 5.23-5.24;
  step 5.40);
* the effective number of states (thesis 5.5.1);
* the transition evidence of eq. 5.10, whose EM is tables 5.35 + ``sigma`` 5.20;
* the asymmetric emission prior ``phi_k ~ Dir(beta tau)`` of thesis 5.5.3
  (Teh et al. 2008): the emission "restaurants" are the states, the dishes
  the words; ``tau`` and ``beta`` are learned from the expected emission
  table counts exactly as the top-level stick and ``sigma`` are from the
  transition ones (:class:`EmissionPrior`).

Stick positions follow decreasing expected usage (thesis footnote 4, Teh et
al. 2008): ``order[p]`` is the state at stick position ``p``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln, polygamma

_TINY = 1e-300


def usage_order(usage: np.ndarray) -> np.ndarray:
    """States sorted by decreasing expected usage ``E[C_{.,k}]`` (ties: lower index first)."""
    return np.argsort(-np.asarray(usage), kind="stable")


def geometric_pi(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``G[pi_p] = G[pi~_p] prod_{l<p} G[1 - pi~_l]`` in stick order (text after eq. 5.28).

    ``G[pi~] = exp(psi(u) - psi(u + v))``, ``G[1 - pi~] = exp(psi(v) - psi(u + v))``.
    """
    uv = digamma(u + v)
    log_keep = digamma(v) - uv
    log_g = digamma(u) - uv + np.concatenate([[0.0], np.cumsum(log_keep)[:-1]])
    return np.exp(log_g)


def prior_by_state(G_sorted: np.ndarray, order: np.ndarray, sigma: float) -> np.ndarray:
    """``sigma G[pi_k]`` indexed by state (eq. 5.38's prior counts)."""
    out = np.empty_like(G_sorted)
    out[order] = sigma * G_sorted
    return out


def q_positive(logq0: np.ndarray) -> np.ndarray:
    """``q(C > 0) = 1 - prod_i q(C^i = 0) = 1 - exp(sum_i log q(C^i = 0))`` (eq. 5.46)."""
    return -np.expm1(np.minimum(logq0, 0.0))


def expected_tables(counts: np.ndarray, qpos: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Eq. 5.35: ``E[s_{j,k}] ~ a_k q(C_jk > 0) (psi(a_k + E+[C_jk]) - psi(a_k))``, ``a_k = sigma G[pi_k]``.

    ``E+[C] = E[C] / q(C > 0)`` (eq. 5.34); cells with ``q(C > 0) = 0`` have no tables.
    """
    counts = np.maximum(counts, 0.0)
    a = np.maximum(prior, _TINY)[None, :]
    q = np.clip(qpos, 0.0, 1.0)
    e_plus = counts / np.maximum(q, _TINY)
    return np.where(q > 0, a * q * (digamma(a + e_plus) - digamma(a)), 0.0)


def sampled_tables(counts: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``E[s_{j,k}]`` as the mean over ``S`` sampled count tables ``counts`` ``(S, K+1, K)``.

    Given the counts, the expected number of tables of a restaurant with
    ``n`` customers of one dish and prior mass ``a_k = sigma G[pi_k]`` is
    ``a_k (psi(a_k + n) - psi(a_k))`` (Antoniak; zero for ``n = 0``), so the
    mean over draws of ``C ~ q(z)`` estimates ``E_q[E[s | z]]`` without the
    first-order approximation of eq. 5.35 (``psi`` of the mean count ``E+[C]``).
    """
    a = np.maximum(prior, _TINY)[None, None, :]
    return np.mean(a * (digamma(a + counts) - digamma(a)), axis=0)


def sampled_row_terms(counts: np.ndarray, sigma: float) -> np.ndarray:
    """``psi(sigma) - E[psi(sigma + C_{j,.})]`` (eq. 5.36's left side) as the mean over the sampled tables."""
    return np.mean(digamma(sigma) - digamma(sigma + counts.sum(axis=2)), axis=0)


def sticks_from_tables(tables_sorted: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 5.25-5.26: ``u_p = 1 + E[s_{.,p}]``, ``v_p = gamma + E[s_{.,>p}]`` (stick order)."""
    col = np.asarray(tables_sorted, dtype=np.float64)
    greater = np.concatenate([np.cumsum(col[::-1])[::-1][1:], [0.0]])
    return 1.0 + col, gamma + greater


def gamma_update(u: np.ndarray, v: np.ndarray) -> float:
    """Eq. 5.17: ``gamma = K / sum_k (psi(u_k + v_k) - psi(v_k))``."""
    return float(len(u) / np.sum(digamma(u + v) - digamma(v)))


def row_digamma_terms(row_counts: np.ndarray, qpos_row: np.ndarray, sigma: float) -> np.ndarray:
    """Eq. 5.36: ``psi(sigma) - E[psi(sigma + C_{j,.})] ~ q(C_j. > 0) (psi(sigma) - psi(sigma + E+[C_j.]))``."""
    q = np.clip(qpos_row, 0.0, 1.0)
    e_plus = np.maximum(row_counts, 0.0) / np.maximum(q, _TINY)
    return np.where(q > 0, q * (digamma(sigma) - digamma(sigma + e_plus)), 0.0)


def sigma_update(tables_total: float, row_counts: np.ndarray, qpos_row: np.ndarray, sigma: float) -> float:
    """Eq. 5.20: ``sigma = sum_jk E[s_jk] / sum_j (E[psi(sigma + C_j.)] - psi(sigma))`` (fixed-point step)."""
    return sigma_fixed_point(tables_total, row_digamma_terms(row_counts, qpos_row, sigma), sigma)


def sigma_fixed_point(tables_total: float, row_terms: np.ndarray, sigma: float) -> float:
    """Eq. 5.20 from ``row_terms`` = ``psi(sigma) - E[psi(sigma + C_j.)]`` per row; ``sigma`` if undefined."""
    den = -float(np.sum(row_terms))
    if den <= 0 or tables_total <= 0:
        return float(sigma)
    return float(tables_total / den)


def grad_gamma(u: np.ndarray, v: np.ndarray, gamma: float) -> float:
    """Eq. 5.16: ``dL/dgamma = K / gamma + sum_k (psi(v_k) - psi(u_k + v_k))``."""
    return float(len(u) / gamma + np.sum(digamma(v) - digamma(u + v)))


def grad_sigma(tables_total: float, row_counts: np.ndarray, qpos_row: np.ndarray, sigma: float) -> float:
    """Eq. 5.19: ``dL/dsigma = sum_j (psi(sigma) - E[psi(sigma + C_j.)]) + sum_jk E[s_jk] / sigma``."""
    return float(row_digamma_terms(row_counts, qpos_row, sigma).sum() + tables_total / sigma)


def grad_sticks(u: np.ndarray, v: np.ndarray, tables_sorted: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 5.23-5.24: gradients of the bound with respect to ``u_p`` and ``v_p`` (stick order)."""
    col = np.asarray(tables_sorted, dtype=np.float64)
    geq = np.cumsum(col[::-1])[::-1]
    greater = geq - col
    common = polygamma(1, u + v) * (u + v - geq - gamma - 1.0)
    du = common - polygamma(1, u) * (u - col - 1.0)
    dv = common - polygamma(1, v) * (v - greater - gamma)
    return du, dv


def natural_stick_step(u: np.ndarray, v: np.ndarray, tables_sorted: np.ndarray, gamma: float,
                       rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 5.40 for the sticks, preconditioned by the Fisher information of ``Beta(u_k, v_k)``.

    The gradients 5.23-5.24 equal ``F (u* - u, v* - v)`` with ``F`` the Beta
    Fisher matrix and ``(u*, v*)`` the closed forms 5.25-5.26, so the natural
    gradient step ``x + rho F^{-1} grad`` is the blend
    ``(1 - rho) x + rho x*`` of paper 004 eq. 14.  (A plain Euclidean step
    diverges: ``psi'(u)`` is huge for small ``u``.)
    """
    du, dv = grad_sticks(u, v, tables_sorted, gamma)
    t_uv = polygamma(1, u + v)
    a, d = polygamma(1, u) - t_uv, polygamma(1, v) - t_uv
    det = a * d - t_uv * t_uv
    step_u = (d * du + t_uv * dv) / det
    step_v = (t_uv * du + a * dv) / det
    return np.maximum(u + rho * step_u, 1e-6), np.maximum(v + rho * step_v, 1e-6)


def scaled_gamma_step(u: np.ndarray, v: np.ndarray, gamma: float, rho: float) -> float:
    """Eq. 5.40 for ``gamma`` with the step scaled by ``gamma / sum(psi(u+v) - psi(v))``.

    Then ``gamma + rho * scale * grad (5.16) = (1 - rho) gamma + rho gamma*`` with
    ``gamma*`` the closed form 5.17, which keeps ``gamma`` positive.
    """
    c = float(np.sum(digamma(u + v) - digamma(v)))
    return gamma + rho * grad_gamma(u, v, gamma) * gamma / c


def scaled_sigma_step(tables_total: float, row_counts: np.ndarray, qpos_row: np.ndarray, sigma: float,
                      rho: float) -> float:
    """Eq. 5.40 for ``sigma`` with the step scaled so that ``rho = 1`` lands on the closed form 5.20."""
    d = -row_digamma_terms(row_counts, qpos_row, sigma).sum()
    if d <= 0 or tables_total <= 0:
        return float(sigma)
    return float(sigma + rho * grad_sigma(tables_total, row_counts, qpos_row, sigma) * sigma / d)


#: labels that use fewer than this share of the fit's effective states are a partial collapse (calibrated in
#: docs/experiments/hsmm.md, "The labels warning": recovery series use all, text at the defaults at least 42 of 45)
LABEL_SHARE = 0.5


def labels_collapsed(labels: np.ndarray, effective: int) -> str | None:
    """The warning when the decoded ``labels`` use far fewer states than the fit holds: fewer than
    :data:`LABEL_SHARE` of its ``effective`` states (the soft counts, what the objective keeps apart), with at
    least 4 effective; else ``None``.  (Decoding then merges states the posterior separates: the HDP-HMM at the
    emission prior 0.1 labelled text with 7-8 of 40 states, docs/experiments/hdp_defaults.md.)"""
    used = len(np.unique(labels))
    if effective >= 4 and used < LABEL_SHARE * effective:
        return (f"the labels use {used} of the {effective} states the fit holds (99% of its expected counts): "
                "decoding merges states that the objective keeps apart")
    return None


def effective_states(usage: np.ndarray, coverage: float = 0.99) -> int:
    """Fewest states whose expected token counts cover ``coverage`` of all tokens (thesis 5.5.1)."""
    usage = np.sort(np.maximum(np.asarray(usage, dtype=np.float64), 0.0))[::-1]
    total = usage.sum()
    if total <= 0:
        return 0
    return int(np.searchsorted(np.cumsum(usage), coverage * total * (1.0 - 1e-12)) + 1)


def tau_point_estimate(word_tables: np.ndarray, new_mass: float) -> np.ndarray:
    """Top-level emission measure ``tau`` over the ``W`` seen words plus one entry for all unseen words.

    ``tau ~ DP(new_mass, H)`` over an open vocabulary (``H`` continuous: every
    unseen word is a new dish); given the expected table counts
    ``E[s_{.,w}]`` its posterior is ``Dir(E[s_{.,1}], ..., E[s_{.,W}], new_mass)``
    over the seen words and the rest, whose mean is the point estimate
    ``tau_w = E[s_{.,w}] / (E[s_{.,.}] + new_mass)``, the unseen words sharing
    ``new_mass / (E[s_{.,.}] + new_mass)`` -- Teh et al. (2008)'s update of the
    top-level weights (``pi_k`` proportional to ``E[s_{.,k}]``, the rest to
    the concentration), used by thesis 5.5.3 for ``Dir(beta tau)``.
    ``new_mass`` is fixed or learned by :func:`new_word_concentration`.
    """
    col = np.maximum(np.asarray(word_tables, dtype=np.float64), 0.0)
    total = col.sum() + new_mass
    return np.concatenate([col, [new_mass]]) / total


def new_word_concentration(distinct: float, tables_total: float, start: float, tol: float = 1e-12,
                           max_iter: int = 100000) -> float:
    """ML-II concentration ``gamma_e`` of ``tau ~ DP(gamma_e, H)`` (the new-word mass of ``Dir(beta tau)``).

    Integrating ``tau`` out, the dishes (words) of the ``S = sum_w s_{.,w}``
    tables follow the Chinese restaurant process of ``DP(gamma_e, H)``; with
    ``H`` over an open vocabulary every word is a new dish the first time it
    is served, so the probability of the dish labels is the Ewens formula
    (Antoniak 1974; Escobar & West 1995):

        p(dishes | gamma_e) = gamma_e^D Gamma(gamma_e) / Gamma(gamma_e + S) prod_w Gamma(s_{.,w}) H(w),

    ``D`` = number of distinct words with tables.  Its ``gamma_e`` terms
    ``D log gamma_e + log Gamma(gamma_e) - log Gamma(gamma_e + S)`` are
    :func:`concentration_objective` ``(gamma_e, D, [S])`` -- thesis eq. 5.18 for
    ``sigma`` with one restaurant -- and setting the derivative to zero gives
    the fixed point (Minka, "Estimating a Dirichlet distribution": the
    fixed-point update of a Polya precision; thesis 5.20 with one row, the
    counterpart of the ``gamma`` update 5.17 of the transition sticks)

        gamma_e <- D / (psi(gamma_e + S) - psi(gamma_e)),

    iterated here to convergence (:func:`sigma_update` is one step).  Each step
    maximises Minka's lower bound of ``log Gamma(g) - log Gamma(g + S)``, so
    the objective never decreases.  For ``1 < D < S`` the maximiser is
    unique and finite; for ``D >= S`` (every table a different word) the
    objective increases without bound and ``start`` is returned unchanged.
    ``S`` enters at its expectation ``E[s_{.,.}]`` (the first-order
    approximation of eq. 5.36 with ``q(C > 0) = 1``: a seen word has tokens,
    hence at least one table, so ``D`` is exact).
    """
    if not (tables_total > distinct > 0):
        return float(start)
    g = float(start)
    S, D = np.array([float(tables_total)]), float(distinct)
    for _ in range(max_iter):
        new = sigma_update(D, S, np.ones(1), g)
        if abs(new - g) <= tol * g:
            return new
        g = new
    return g


def concentration_objective(beta: float, tables_total: float, row_counts: np.ndarray) -> float:
    """The terms of the collapsed bound that depend on a concentration, for fixed table counts and row totals.

    ``sum_jk E[s_jk] log beta + sum_j (log Gamma(beta) - log Gamma(beta + C_j.))``
    (thesis eq. 5.11 / 5.18 with ``C_j.`` at its expectation); eq. 5.20 is the
    fixed-point step of this function (it never decreases it: the step
    maximises Minka's lower bound ``log Gamma(b) - log Gamma(b + n) >= ...``).
    """
    n = np.maximum(np.asarray(row_counts, dtype=np.float64), 0.0)
    return float(tables_total * np.log(beta) + np.sum(gammaln(beta) - gammaln(beta + n)))


def transition_log_evidence(counts: np.ndarray, pi: np.ndarray, sigma: float) -> float:
    """Thesis eq. 5.10, the transition part of ``log p(x, z | pi, sigma)`` for counts ``C`` ``(K+1, K)``:

    ``sum_j [log Gamma(sigma) - log Gamma(sigma + C_j.)
    + sum_k (log Gamma(sigma pi_k + C_jk) - log Gamma(sigma pi_k))]``.

    ``pi`` by state may sum to less than 1 (the mass beyond the truncation has
    no customers, so its factor is 1).  Alternating the tables of eq. 5.35
    (exact for known counts) with the update 5.20 is EM for ``sigma`` on this
    function: its fixed points are its stationary points.
    """
    c = np.maximum(np.asarray(counts, dtype=np.float64), 0.0)
    a = sigma * np.maximum(np.asarray(pi, dtype=np.float64), _TINY)[None, :]
    return float(np.sum(gammaln(sigma) - gammaln(sigma + c.sum(axis=1))) + np.sum(gammaln(a + c) - gammaln(a)))


class EmissionPrior:
    """The emission prior of the HDP-HMM: symmetric ``Dir(beta)`` or asymmetric ``Dir(beta tau)`` (thesis 5.5.3).

    State: the concentration ``concentration`` (``beta`` of ``Dir(beta tau)``),
    ``tau`` (``W + 1`` entries: the seen words, then the unseen ones) and
    ``new_mass`` (the concentration ``gamma_e`` of ``tau ~ DP(gamma_e, H)``).
    ``beta`` starts at ``concentration`` and ``tau`` uniform ``1/W`` (the unseen
    entry also ``1/W``, the convention of the symmetric model), so a start of
    ``W b`` is the symmetric ``Dir(b)`` (thesis 5.5.3: "the same prior counts
    ... for the first iteration"; its stated start is ``beta = 100``).
    :meth:`update` learns them from the expected
    emission counts ``E[C_{w,k}]`` and ``log q(C_{w,k} = 0)``:

    * tables ``E[s_{k,w}]`` by eq. 5.35 with ``a_w = beta tau_w``;
    * ``new_mass`` by :func:`new_word_concentration` if ``learn_new_mass``
      (starting from ``new_mass``), else fixed at ``new_mass``;
    * ``tau`` by :func:`tau_point_estimate` with that ``new_mass``;
    * ``beta`` by eq. 5.20 with the state totals ``C_{k,.}`` as the rows (eq. 5.36).

    :meth:`stochastic_step` is the stochastic-CVI counterpart (eq. 5.40).
    """

    def __init__(self, W: int, concentration: float, new_mass: float = 1.0, learn_new_mass: bool = False):
        self.W = W
        self.concentration = float(concentration)
        self.tau = np.full(W + 1, 1.0 / W)
        self.new_mass = float(new_mass)
        self.learn_new_mass = learn_new_mass
        self.word_weights = None  # stochastic CVI: the Dirichlet parameters of q(tau) (see stochastic_step)

    def pseudo_counts(self) -> np.ndarray:
        """``beta tau_w`` for the seen words (the surrogate's prior counts, eq. 5.39 with ``Dir(beta tau)``)."""
        return self.concentration * self.tau[:self.W]

    def _tables(self, emit: np.ndarray, logq0_emit: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Eq. 5.35 for the emissions: tables ``(K, W)`` (the states are the restaurants), ``q(C_{.,k} > 0)``, sum."""
        tables = expected_tables(emit.T, q_positive(logq0_emit).T, self.pseudo_counts())
        return tables, q_positive(logq0_emit.sum(axis=0)), float(tables.sum())

    def _new_mass_target(self, emit: np.ndarray, total: float) -> float:
        """The ML-II ``gamma_e`` of :func:`new_word_concentration` (words with tokens have tables)."""
        return new_word_concentration(int(np.count_nonzero(emit.sum(axis=1) > 0)), total, self.new_mass)

    def update(self, emit: np.ndarray, logq0_emit: np.ndarray) -> float:
        """One batch round from ``E[C_{w,k}]`` ``(W, K)`` and ``sum log q(C_{w,k} = 0)``; returns ``sum E[s]``."""
        tables, qpos_state, total = self._tables(emit, logq0_emit)
        self.concentration = sigma_update(total, emit.sum(axis=0), qpos_state, self.concentration)
        if self.learn_new_mass:
            self.new_mass = self._new_mass_target(emit, total)
        self.tau = tau_point_estimate(tables.sum(axis=0), self.new_mass)
        return total

    def stochastic_step(self, emit: np.ndarray, logq0_emit: np.ndarray, rho: float) -> float:
        """One step of stochastic CVI (thesis 5.3, eq. 5.40) from the global stochastic estimates.

        ``emit`` are the global counts ``N_emit`` (eq. 3.104) and ``logq0_emit``
        the global estimate of ``sum_t log(1 - q(z_t = k))``, blended from the
        minibatches like the counts (eq. 3.103: the statistic is a sum over
        tokens too).  The tables are eq. 5.35 as in :meth:`update`; then

        * ``beta`` by :func:`scaled_sigma_step` (eq. 5.40 with the gradient 5.19
          of ``beta``, rows = state totals; ``rho = 1`` lands on 5.20);
        * ``gamma_e`` (if learned) by ``(1 - rho) gamma_e + rho gamma_e*``,
          ``gamma_e*`` the ML-II fixed point of :func:`new_word_concentration`;
        * ``tau``: its posterior given the tables is ``Dir(E[s_{.,1}], ...,
          E[s_{.,W}], gamma_e)`` (see :func:`tau_point_estimate`); the natural
          gradient step on those Dirichlet parameters is the blend
          ``lambda <- (1 - rho) lambda + rho E[s_{.,w}]`` (paper 004 eq. 14, as
          :func:`natural_stick_step` for the transition sticks), and ``tau`` is
          its mean.  The first step starts ``lambda`` at the tables.

        Returns ``sum E[s]``.
        """
        tables, qpos_state, total = self._tables(emit, logq0_emit)
        self.concentration = scaled_sigma_step(total, emit.sum(axis=0), qpos_state, self.concentration, rho)
        if self.learn_new_mass:
            self.new_mass = (1.0 - rho) * self.new_mass + rho * self._new_mass_target(emit, total)
        word_tables = tables.sum(axis=0)
        if self.word_weights is None:
            self.word_weights = word_tables
        else:
            self.word_weights = (1.0 - rho) * self.word_weights + rho * word_tables
        self.tau = tau_point_estimate(self.word_weights, self.new_mass)
        return total


class HDPGlobals:
    """The HDP variational state of batch CVI: ``u``, ``v`` (stick order), ``order``, ``gamma``, ``sigma``.

    :meth:`update` performs one batch round of eq. 5.35, 5.25-5.26, 5.17 and
    5.20 from the expected counts and ``log q(C = 0)`` accumulated in a pass,
    or, given ``sampled`` count tables, with the tables and the digamma terms
    of 5.20 estimated from them (:func:`sampled_tables`, :func:`sampled_row_terms`).
    """

    def __init__(self, K: int, gamma: float, sigma: float):
        self.K = K
        self.gamma = float(gamma)
        self.sigma = float(sigma)
        self.order = np.arange(K)
        # thesis 5.4.4: initialise G[pi_k] = 1/K (u, v are set by the first update)
        self.G_sorted = np.full(K, 1.0 / K)
        self.u = np.ones(K)
        self.v = np.full(K, self.gamma)

    def prior(self) -> np.ndarray:
        """``sigma G[pi_k]`` by state."""
        return prior_by_state(self.G_sorted, self.order, self.sigma)

    def update(self, trans: np.ndarray, usage: np.ndarray, logq0: np.ndarray, logq0_row: np.ndarray,
               learn_gamma: bool, learn_sigma: bool, sampled: np.ndarray | None = None) -> dict:
        """One batch round; returns the statistics it used (for the trace)."""
        qpos = q_positive(logq0)
        qpos_row = q_positive(logq0_row)
        prior = self.prior()
        tables = expected_tables(trans, qpos, prior) if sampled is None else sampled_tables(sampled, prior)
        self.order = usage_order(usage)
        col = tables.sum(axis=0)[self.order]
        self.u, self.v = sticks_from_tables(col, self.gamma)
        if learn_gamma:
            self.gamma = gamma_update(self.u, self.v)
            self.v = self.gamma + (self.v - self.v[-1])  # eq. 5.26 with the new gamma
        if learn_sigma:
            rows = (row_digamma_terms(trans.sum(axis=1), qpos_row, self.sigma) if sampled is None
                    else sampled_row_terms(sampled, self.sigma))
            self.sigma = sigma_fixed_point(tables.sum(), rows, self.sigma)
        self.G_sorted = geometric_pi(self.u, self.v)
        return {"tables": float(tables.sum()), "qpos": qpos, "qpos_row": qpos_row}


def emission_log_evidence(emit: np.ndarray, pseudo: np.ndarray, total: float) -> float:
    """``log p(x | z)`` with the emissions integrated out, for counts ``C_{w,k}`` ``(W, K)``:

    ``sum_k [log Gamma(b) - log Gamma(b + C_{.,k}) + sum_w (log Gamma(b_w + C_{w,k}) - log Gamma(b_w))]``
    with prior counts ``b_w`` = ``pseudo`` (``beta`` for ``Dir(beta)``, ``beta tau_w`` for ``Dir(beta tau)``)
    and ``b = total`` (the factor ``p(x | z)`` of thesis eq. 5.10 for Dirichlet-multinomial emissions).
    """
    c = np.maximum(np.asarray(emit, dtype=np.float64), 0.0)
    b = np.maximum(np.asarray(pseudo, dtype=np.float64), _TINY)[:, None]
    return float(np.sum(gammaln(total) - gammaln(total + c.sum(axis=0))) + np.sum(gammaln(b + c) - gammaln(b)))


def stick_kl(u: np.ndarray, v: np.ndarray, gamma: float) -> float:
    """``sum_k KL(Beta(u_k, v_k) || Beta(1, gamma))``: ``E[log q(pi~)] - E[log p(pi~ | gamma)]`` of eq. 5.13-5.15."""
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    log_b_q = gammaln(u) + gammaln(v) - gammaln(u + v)
    log_b_p = -np.log(gamma)  # log B(1, gamma) = log Gamma(gamma) - log Gamma(1 + gamma)
    kl = (log_b_p - log_b_q + (u - 1.0) * (digamma(u) - digamma(u + v))
          + (v - gamma) * (digamma(v) - digamma(u + v)))
    return float(np.sum(kl))


def collapsed_bound(trans: np.ndarray, emit: np.ndarray, glob: "HDPGlobals", pseudo: np.ndarray, total: float,
                    entropy: float) -> float:
    """The collapsed bound ``L^CVI`` of thesis eq. 5.13, to zeroth order in the counts.

    ``E[log p(x, z | pi, sigma)]`` is eq. 5.10 (tables summed out, as 5.11 allows) evaluated at the
    expected counts ``E[C]`` with ``pi`` at its geometric expectation ``G[pi]`` (the values the
    surrogate 5.38 uses), plus the integrated emissions (:func:`emission_log_evidence`); then
    ``- KL(q(pi~) || p(pi~ | gamma))`` (5.15 and the Beta entropies) and ``entropy`` = ``sum_i H(q(z^i))``.
    Used to accept or reject merge moves (:mod:`induce.algorithms.hdp_moves`).
    """
    pi = glob.prior() / glob.sigma
    return (transition_log_evidence(trans, pi, glob.sigma) + emission_log_evidence(emit, pseudo, total)
            - stick_kl(glob.u, glob.v, glob.gamma) + float(entropy))

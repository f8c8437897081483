"""Beam sampler for the HDP-HMM (``HDPHMMTagger(infer="beam")``; Van Gael, Saatci, Teh & Ghahramani 2008): the
sampling baseline of thesis 5.5.

State: hard assignments ``z``, the represented states ``1..K`` with the
top-level weights ``b`` (``b[K]`` = the mass of all unrepresented states),
transition rows ``pi`` ``(K+1, K+1)`` (row 0 = start; last column = the
unrepresented mass) and emissions ``phi`` ``(W, K)``.  One sweep:

1. slice variables ``u_t ~ U(0, pi[z_{t-1}, z_t])``;
2. represent new states (break the sticks of ``b`` and of every row) until
   every row's unrepresented mass is below ``min_t u_t``, so that the finite
   set of states with ``pi > u_t`` is exact;
3. forward filtering over the transitions allowed by the slice
   (``alpha_t(k) ~ phi(x_t | k) sum_{j: pi_jk > u_t} alpha_{t-1}(j)``),
   backward sampling of the whole trajectory;
4. drop the states no token uses;
5. tables ``m_jk`` by the Chinese restaurant franchise, ``b ~ Dir(m_.1, ..., m_.K, gamma)``,
   ``pi_j ~ Dir(C_j + sigma b)``, ``phi_k ~ Dir(C_k + beta)``;
6. unless fixed, ``sigma`` (Teh et al. 2006, appendix A auxiliary variables)
   and ``gamma`` (Escobar & West 1995) under Gamma(1, 0.1) priors (paper 004's
   vague prior).

The number of represented states is capped at ``10 x`` the initial number
(a guard against runaway expansion; it never binds in the experiments here).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..infer import hdp
from ..infer import hmm_passes as passes
from .base import Algorithm, Fitted, HDPCore, Sequences, register_hdp

_PRIOR_SHAPE, _PRIOR_RATE = 1.0, 0.1


@njit(cache=True)
def _slices(pi, z, offsets, seed, u):
    """``u_t ~ U(0, pi[z_{t-1}, z_t])`` (row 0 for the first token)."""
    np.random.seed(seed)
    for i in range(offsets.shape[0] - 1):
        for p in range(offsets[i], offsets[i + 1]):
            prev = 0 if p == offsets[i] else z[p - 1] + 1
            u[p] = np.random.random() * pi[prev, z[p]]


@njit(cache=True)
def beam_sweep(pi, phi, tokens, offsets, u, z, seed):
    """Forward filtering under the slice, backward sampling of every sentence; returns ``log p(x, z | pi, phi)``."""
    np.random.seed(seed)
    K = phi.shape[1]
    T_max = 1
    for i in range(offsets.shape[0] - 1):
        T_max = max(T_max, offsets[i + 1] - offsets[i])
    alpha = np.empty((T_max, K))
    w = np.empty(K)
    ll = 0.0
    for i in range(offsets.shape[0] - 1):
        s = offsets[i]
        T = offsets[i + 1] - s
        for t in range(T):
            tot = 0.0
            x = tokens[s + t]
            for k in range(K):
                acc = 0.0
                if t == 0:
                    acc = 1.0 if pi[0, k] > u[s] else 0.0
                else:
                    for j in range(K):
                        if pi[j + 1, k] > u[s + t]:
                            acc += alpha[t - 1, j]
                v = acc * phi[x, k]
                alpha[t, k] = v
                tot += v
            if tot <= 0.0:  # cannot happen for a valid slice; keep the old state
                for k in range(K):
                    alpha[t, k] = 1.0 if k == z[s + t] else 0.0
                tot = 1.0
            for k in range(K):
                alpha[t, k] /= tot
        # backward sampling
        for t in range(T - 1, -1, -1):
            tot = 0.0
            for k in range(K):
                v = alpha[t, k]
                if t < T - 1 and not pi[k + 1, z[s + t + 1]] > u[s + t + 1]:
                    v = 0.0
                w[k] = v
                tot += v
            r = np.random.random() * tot
            acc = 0.0
            pick = K - 1
            for k in range(K):
                acc += w[k]
                if r < acc and w[k] > 0.0:
                    pick = k
                    break
            z[s + t] = pick
        for t in range(T):
            prev = 0 if t == 0 else z[s + t - 1] + 1
            ll += np.log(max(pi[prev, z[s + t]], 1e-300)) + np.log(max(phi[tokens[s + t], z[s + t]], 1e-300))
    return ll


@njit(cache=True)
def _tables(C, a, seed):
    """Chinese restaurant franchise table counts: ``m_jk = sum_{l<C_jk} Bernoulli(a_k / (a_k + l))``."""
    np.random.seed(seed)
    m = np.zeros(C.shape)
    for j in range(C.shape[0]):
        for k in range(C.shape[1]):
            for l in range(int(C[j, k])):
                if np.random.random() < a[k] / (a[k] + l):
                    m[j, k] += 1.0
    return m


class BeamState:
    """Parameters of the beam sampler; ``K`` represented states."""

    def __init__(self, rng, z, K, W, tokens, offsets, sigma, gamma, beta):
        self.rng, self.z, self.K, self.W = rng, z, K, W
        self.tokens, self.offsets = tokens, offsets
        self.sigma, self.gamma, self.beta = sigma, gamma, beta
        self.b = np.full(K + 1, 1.0 / (K + 1))

    def counts(self):
        Ct = np.zeros((self.K + 1, self.K), dtype=np.int64)
        Ce = np.zeros((self.W, self.K), dtype=np.int64)
        passes.hard_counts(self.tokens, self.offsets, self.z, self.W, self.K, Ct, Ce)
        return Ct.astype(np.float64), Ce.astype(np.float64)

    def resample_parameters(self, learn_gamma, learn_sigma):
        """Step 5 (and 6): tables, top-level weights, rows, emissions, concentrations."""
        Ct, Ce = self.counts()
        rng = self.rng
        m = _tables(Ct, self.sigma * self.b[:self.K], int(rng.integers(2**31 - 1)))
        self.b = rng.dirichlet(np.append(m.sum(axis=0), self.gamma) + 1e-12)
        a = self.sigma * self.b
        self.pi = np.vstack([rng.dirichlet(np.append(Ct[j], 0.0) + a + 1e-12) for j in range(self.K + 1)])
        self.phi = np.ascontiguousarray(np.vstack([rng.dirichlet(Ce[:, k] + self.beta) for k in range(self.K)]).T)
        if learn_sigma:
            n = Ct.sum(axis=1)
            n = n[n > 0]
            # Teh et al. (2006), appendix A: sigma | m, n with auxiliary w_j, s_j
            w = rng.beta(self.sigma + 1.0, n)
            s = rng.random(len(n)) < n / (n + self.sigma)
            self.sigma = rng.gamma(_PRIOR_SHAPE + m.sum() - s.sum(), 1.0 / (_PRIOR_RATE - np.log(w).sum()))
        if learn_gamma:
            # Escobar & West (1995): gamma | K states, m tables
            M = max(m.sum(), 1.0)
            eta = rng.beta(self.gamma + 1.0, M)
            odds = (_PRIOR_SHAPE + self.K - 1.0) / (M * (_PRIOR_RATE - np.log(eta)))
            shape = _PRIOR_SHAPE + self.K - (0.0 if rng.random() < odds / (1.0 + odds) else 1.0)
            self.gamma = rng.gamma(shape, 1.0 / (_PRIOR_RATE - np.log(eta)))
        return Ct, Ce

    def expand(self, u_min, cap):
        """Step 2: break sticks until no row leaves more than ``u_min`` to unrepresented states."""
        rng = self.rng
        while self.pi[:, -1].max() > u_min and self.K < cap:
            nu = rng.beta(1.0, self.gamma)
            b_new, b_rest = nu * self.b[-1], (1.0 - nu) * self.b[-1]
            self.b = np.concatenate([self.b[:-1], [b_new, b_rest]])
            split = rng.beta(max(self.sigma * b_new, 1e-12), max(self.sigma * b_rest, 1e-12), size=self.K + 1)
            rest = self.pi[:, -1]
            self.pi = np.hstack([self.pi[:, :-1], (split * rest)[:, None], ((1.0 - split) * rest)[:, None]])
            self.pi = np.vstack([self.pi, rng.dirichlet(self.sigma * self.b + 1e-12)])
            self.phi = np.ascontiguousarray(np.hstack([self.phi, rng.dirichlet(np.full(self.W, self.beta))[:, None]]))
            self.K += 1

    def compact(self):
        """Step 4: drop unused states; their weight joins the unrepresented mass."""
        used = np.bincount(self.z, minlength=self.K) > 0
        if used.all():
            return
        keep = np.flatnonzero(used)
        relabel = np.full(self.K, -1, dtype=np.int64)
        relabel[keep] = np.arange(len(keep))
        self.z = relabel[self.z]
        rows = np.concatenate([[0], keep + 1])
        self.pi = np.hstack([self.pi[rows][:, keep], (1.0 - self.pi[rows][:, keep].sum(axis=1))[:, None]])
        self.b = np.append(self.b[keep], 1.0 - self.b[keep].sum())
        self.phi = np.ascontiguousarray(self.phi[:, keep])
        self.K = len(keep)


@register_hdp("beam")
class Beam(Algorithm):
    """The beam sampler; ``core.K`` is the initial number of states.  It runs every sweep of the cap."""

    def fit(self, core: HDPCore, data: Sequences, loop, opts) -> Fitted:
        rng = np.random.default_rng(int(loop.seeds[0]))
        # thesis 5.5.1: a random state from {1..K} for every observation
        z = rng.integers(0, core.K, size=data.tokens.shape[0]).astype(np.int64)
        st = BeamState(rng, z, core.K, data.W, data.tokens, data.offsets, core.sigma, core.gamma, core.beta)
        learn = ("gamma" not in core.fixed, "sigma" not in core.fixed)
        st.resample_parameters(*learn)
        u = np.empty(data.tokens.shape[0])
        cap = 10 * core.K
        usage = None

        def one_pass(it: int) -> float:
            """One sweep (steps 1-6 of the module docstring); returns ``log p(x, z | pi, phi)``."""
            nonlocal usage
            _slices(st.pi, st.z, data.offsets, int(loop.seeds[it]), u)
            st.expand(u.min(), cap)
            ll = beam_sweep(st.pi, st.phi, data.tokens, data.offsets, u, st.z, int(loop.seeds[it]))
            st.compact()
            usage = st.resample_parameters(*learn)[1].sum(axis=0)
            return ll

        loop.run("complete_log_likelihood", one_pass, stoppable=False, labels=lambda: st.z,
                 settle=lambda it, stop: loop.entries(usage, float(st.gamma), float(st.sigma), represented_states=st.K))
        Ct, Ce = st.counts()
        extra = {"n_states_": st.K, "gamma_": float(st.gamma), "sigma_": float(st.sigma),
                 "stick_u_": np.zeros(0), "stick_v_": np.zeros(0),
                 "stick_order_": hdp.usage_order(Ce.sum(axis=0)).astype(np.int64), "state_prior_": st.sigma * st.b[:st.K],
                 "qc_positive_": (Ct > 0).astype(np.float64)}
        return Fitted(Ct, Ce, st.z.astype(np.int32), loop.last, loop.max_iter, loop.monitor, loop.trace, None, extra)

"""The series HMM's token-level collapsed algorithms, ``HMMSegmenter(infer="cgs" | "cvi1")``
(:mod:`induce.algorithms.series_collapsed`, :mod:`induce.kernels.series_collapsed`)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats as st
from scipy.special import gammaln

from induce.cli import main
from induce.emissions import get_family
from induce.errors import ConfigError
from induce.kernels.series_collapsed import _move_pairs, _transition_factors, cgs_series_pass, hard_statistics
from induce.series import HMMSegmenter


def _sample(family, K, T, seed):
    """A sticky ``K``-state chain and its observations: Gaussian means -3, 0, 3 or Poisson rates 2, 8, 20."""
    rng = np.random.default_rng(seed)
    z = np.zeros(T, dtype=int)
    for t in range(1, T):
        z[t] = z[t - 1] if rng.random() < 0.95 else rng.integers(K)
    if family == "poisson":
        return rng.poisson(np.array([2.0, 8.0, 20.0])[z]).astype(float)[:, None], z
    return (np.array([-3.0, 0.0, 3.0])[z] + rng.normal(size=T))[:, None], z


def _accuracy(path, z, K):
    return max(np.mean(np.array(perm)[path] == z) for perm in itertools.permutations(range(K)))


def test_predictive_rows_equal_scipy_student_t_and_negative_binomial():
    S = np.array([[3.0, 1.5, 4.0], [0.0, 0.0, 0.0]])  # [N, sum x, sum x^2]: 3 steps in state 0, none in 1
    x = np.array([[0.7], [-1.2]])
    for name, kw in (("diag-gaussian", dict(m0=[0.2], kappa0=0.5, a0=2.0, b0=[1.5])),
                     ("gaussian", dict(m0=[0.2], kappa0=0.5, nu0=4.0, Psi0=[[3.0]]))):
        fam = get_family(name, **kw)
        for k in range(2):
            N, sx, sxx = S[k]
            kn = 0.5 + N
            mn = (0.5 * 0.2 + sx) / kn
            # Normal-Gamma: a_n = a0 + N/2; Normal-Wishart (d = 1) the same with a = nu / 2, b = Psi / 2
            an = 2.0 + N / 2 if name == "diag-gaussian" else (4.0 + N) / 2
            bn = 1.5 + 0.5 * (sxx + 0.5 * 0.04 - kn * mn**2)
            want = st.t.logpdf(x[:, 0], df=2 * an, loc=mn, scale=np.sqrt(bn * (kn + 1) / (an * kn)))
            np.testing.assert_allclose(fam.log_predictive(x, S)[:, k], want, rtol=1e-10)
    fam = get_family("poisson", a0=[1.5], b0=2.0)
    S = np.array([[4.0, 9.0], [0.0, 0.0]])
    x = np.array([[0.0], [3.0], [11.0]])
    for k in range(2):
        an, bn = 1.5 + S[k, 1], 2.0 + S[k, 0]
        np.testing.assert_allclose(fam.log_predictive(x, S)[:, k], st.nbinom.logpmf(x[:, 0], an, bn / (bn + 1)),
                                   rtol=1e-10)


def _collapsed_log_joint(fam, x, z, K, alpha):
    """``log p(z, x)`` with the transitions and emissions integrated out: Dirichlet-multinomial rows (start row
    first) times each state's marginal likelihood, the product of its steps' sequential predictives."""
    out = _transitions_log_joint(z, K, alpha)
    S = np.zeros((K, fam.n_stats))
    for t in range(len(z)):
        out += fam.log_predictive(x[t:t + 1], S)[0, z[t]]
        S[z[t]] += fam.features(x[t:t + 1])[0]
    return out


def _transitions_log_joint(z, K, alpha):
    C = np.zeros((K + 1, K))
    C[0, z[0]] += 1
    np.add.at(C, (1 + z[:-1], z[1:]), 1)
    return np.sum(gammaln(K * alpha) - gammaln(K * alpha + C.sum(axis=1))) + np.sum(gammaln(alpha + C) - gammaln(alpha))


def test_cvi1_transition_factors_at_one_hot_marginals_are_the_gibbs_conditional():
    """With every ``q(z_t)`` one-hot, eq. 3.37 x 3.39 (with the shared-state corrections of the pairs ``(t-2, t-1)``
    and ``(t+1, t+2)``) is the collapsed transition part of the Gibbs conditional, at every position of a
    sequence."""
    K, alpha = 3, 0.4
    z = np.array([0, 0, 1, 0, 0, 2, 0, 0])
    for t in range(len(z)):
        q = np.eye(K)[z]
        G = np.zeros((K + 1, K))
        _move_pairs(G, q, 0, 0, 1, q[0], 1.0)  # the start row
        for p in range(1, len(z)):
            G[1 + z[p - 1], z[p]] += 1
        _move_pairs(G, q, t, t, len(z), q[t].copy(), -1.0)
        out = np.ones(K)
        _transition_factors(G, q, t, t, len(z), alpha, out)
        want = np.exp([_transitions_log_joint(np.where(np.arange(len(z)) == t, k, z), K, alpha) for k in range(K)])
        np.testing.assert_allclose(out / out.sum(), want / want.sum(), rtol=1e-12)


@pytest.mark.parametrize("name,x", [("gaussian", [[0.1], [2.5], [2.2], [-0.3]]), ("poisson", [[1], [6], [0], [5]])])
def test_gibbs_sweeps_sample_the_exact_collapsed_posterior(name, x):
    """4 steps, 2 states: the long-run frequencies of the 16 state paths equal the normalised collapsed joint."""
    x = np.asarray(x, dtype=np.float64)
    fam = get_family(name).default_prior(x)
    K, alpha = 2, 0.7
    paths = list(itertools.product(range(K), repeat=len(x)))
    logp = np.array([_collapsed_log_joint(fam, x, np.array(p), K, alpha) for p in paths])
    exact = np.exp(logp - logp.max())
    exact /= exact.sum()
    F = fam.features(x)
    bounds = np.array([[0, len(x)]], dtype=np.int64)
    z = np.zeros(len(x), dtype=np.int64)
    C, S = np.zeros((K + 1, K), dtype=np.int64), np.zeros((K, fam.n_stats))
    code, hyper = fam.predictive_kernel()
    counts = np.zeros(len(paths))
    n = 20000
    for sweep in range(n):
        hard_statistics(F, bounds, z, C, S)
        cgs_series_pass(x, F, bounds, z, C, S, alpha, code, hyper, sweep)
        counts[int(np.dot(z, K ** np.arange(len(x))[::-1]))] += 1
    assert 0.5 * np.abs(counts / n - exact).sum() < 0.03


@pytest.mark.parametrize("family,K", [("gaussian", 3), ("diag-gaussian", 2), ("poisson", 3)])
@pytest.mark.parametrize("infer", ["cgs", "cvi1"])
def test_recovers_a_sampled_hmm(family, K, infer):
    X, z = _sample(family, K, 300, seed=K)
    model = HMMSegmenter(n_states=K, emission=family, infer=infer, n_iter=20, tol=1e-3,
                         random_state=0).fit(X)
    assert _accuracy(model.predict(X), z, K) > 0.95
    assert model.n_iter_ <= 20 and len(model.trace_) == model.n_iter_


def test_cvi1_counts_sum_to_the_steps_and_it_converges():
    X, _ = _sample("gaussian", 2, 300, seed=5)
    seqs = [X[:120], X[120:]]
    model = HMMSegmenter(n_states=2, infer="cvi1", n_iter=50, random_state=1).fit(seqs)
    assert model.converged_ and model.trace_[-1] < 1e-4
    np.testing.assert_allclose(model.family_.counts(model.stats_).sum(), 300)
    np.testing.assert_allclose(model.trans_counts_.sum(), 300)  # one incoming transition per step
    np.testing.assert_allclose(model.trans_counts_[0].sum(), 2)  # the two sequence starts


def test_same_seed_same_result_and_cgs_counts_are_a_sample():
    X, _ = _sample("poisson", 2, 200, seed=7)
    fits = [HMMSegmenter(n_states=2, emission="poisson", infer="cgs", n_iter=10, random_state=s).fit(X)
            for s in (3, 3, 4)]
    np.testing.assert_array_equal(fits[0].stats_, fits[1].stats_)
    assert fits[0].trace_ == fits[1].trace_ and fits[0].trace_ != fits[2].trace_
    assert np.all(fits[0].trans_counts_ == np.round(fits[0].trans_counts_)) and fits[0].trans_counts_.sum() == 200


def test_families_without_a_compiled_predictive_are_refused():
    with pytest.raises(ConfigError, match="categorical family has none"):
        HMMSegmenter(n_states=2, emission="categorical", infer="cgs").fit(np.array([[0.0], [1.0], [1.0]]))


@pytest.mark.parametrize("infer,emission", [("cgs", "gaussian"), ("cvi1", "poisson")])
def test_segment_command_end_to_end(tmp_path, capsys, infer, emission):
    X, z = _sample(emission, 2, 150, seed=11)
    path = tmp_path / "s.csv"
    path.write_text("x\n" + "".join(f"{v:g}\n" for v in X[:, 0]))
    out = tmp_path / "out.csv"
    assert main(["segment", str(path), "--infer", infer, "--emission", emission, "--states", "2", "--iterations",
                 "20", "--json", "-o", str(out), "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["infer"] == infer and summary["steps"] == 150 and sum(summary["state_counts"]) == 150
    states = np.array([int(r.split(",")[-1]) for r in out.read_text().splitlines()[1:]])
    assert _accuracy(states, z, 2) > 0.95
    assert main(["segment", str(path), "--model", "hsmm", "--infer", infer]) == 2
    assert f"--model hsmm runs --infer em, vi, svi, cvi2, scvi with gaussian emissions (induce segment), not {infer}" \
        in capsys.readouterr().err

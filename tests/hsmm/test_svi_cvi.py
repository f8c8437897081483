"""HSMM svi, cvi2 and scvi: collapsed duration predictives against scipy, the collapsed surrogate's log Z
against enumeration, svi against batch vi on held-out data, recovery of a sampled HSMM."""

import json

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import linear_sum_assignment
from scipy.special import logsumexp

from induce.cli import main
from induce.durations import get_duration
from induce.emissions import get_family
from induce.infer.series_hsmm import HSMMFit, sequence_stats
from induce.series.hsmm import HSMMSegmenter

from .test_fit import LAMS, MEANS, sample_hsmm
from .test_kernel import compositions

D = 20
k = np.arange(D)  # d - 1


def test_poisson_gamma_predictive_is_negative_binomial():
    fam = get_duration("poisson", D, a=2.0, b=0.5)
    S = np.array([[30.0, 4.0], [0.0, 0.0]])  # sum (d - 1), number of segments
    A, B = 2.0 + S[:, 0], 0.5 + S[:, 1]
    for i in range(2):
        np.testing.assert_allclose(fam.log_predictive(S)[i], stats.nbinom.logpmf(k, A[i], B[i] / (B[i] + 1.0)),
                                   atol=1e-12)


@pytest.mark.parametrize("name,r", [("negbin", 3.0), ("geometric", 1.0)])
def test_beta_duration_predictive_is_beta_negative_binomial(name, r):
    fam = get_duration(name, D, **({"r": r} if name == "negbin" else {}), a=1.5, b=2.0)
    S = np.array([[12.0, 3.0]])
    A, B = 1.5 + 12.0, 2.0 + r * 3.0  # posterior Beta(A, B) of the continuation probability p
    # scipy's success probability is 1 - p ~ Beta(B, A)
    np.testing.assert_allclose(fam.log_predictive(S)[0], stats.betanbinom.logpmf(k, r, B, A), atol=1e-10)


def test_collapsed_surrogate_log_z_matches_enumeration():
    """cvi2's ``log Z`` of one item given the other items' statistics: every segmentation x labelling scored
    with the posterior-mean transitions over the off-diagonal entries (eq. 3.49), the negative-binomial
    duration predictive and the emission predictive (eq. 3.96), summed by brute force."""
    rng = np.random.default_rng(3)
    K, Dm, alpha = 3, 3, 0.7
    family = get_family("poisson").default_prior(np.arange(10.0)[:, None])
    durations = get_duration("poisson", Dm, a=1.0, b=0.3)
    fit = HSMMFit(family, durations, K, infer="cvi2", alpha=alpha)
    C = rng.uniform(0, 4, size=(K + 1, K))
    C[1:][np.eye(K, dtype=bool)] = 0.0
    S = family.stats(rng.poisson(4.0, size=(30, 1)).astype(float), rng.dirichlet(np.ones(K), size=30))
    Sd = durations.stats(rng.uniform(0, 3, size=(K, Dm)))
    x = np.array([[1.0], [6.0], [5.0], [0.0], [2.0]])
    logpi, logA, logD = fit._potentials("cvi2", C, Sd)
    logz = sequence_stats(logpi, logA, family.log_predictive(x, S), logD)[0]
    pi = (C[0] + alpha) / (C[0].sum() + K * alpha)
    A = (C[1:] + alpha) / (C[1:].sum(axis=1, keepdims=True) + (K - 1) * alpha)  # off-diagonal entries only
    Ashape, Brate = 1.0 + Sd[:, 0], 0.3 + Sd[:, 1]
    pdur = [stats.nbinom(Ashape[j], Brate[j] / (Brate[j] + 1.0)) for j in range(K)]
    L = family.log_predictive(x, S)
    terms = []
    for durs in compositions(len(x), Dm):
        for labels in np.ndindex(*(K,) * len(durs)):
            if any(a == b for a, b in zip(labels, labels[1:])):
                continue
            lp, s = np.log(pi[labels[0]]), 0
            for n, (d, j) in enumerate(zip(durs, labels)):
                lp += (np.log(A[labels[n - 1], j]) if n else 0.0) + pdur[j].logpmf(d - 1) + L[s:s + d, j].sum()
                s += d
            terms.append(lp)
    assert logz == pytest.approx(logsumexp(terms), abs=1e-10)


def _split(n_train, n_test, T, seed):
    rng = np.random.default_rng(seed)
    seqs = [sample_hsmm(T, rng)[0] for _ in range(n_train + n_test)]
    return seqs[:n_train], seqs[n_train:]


def test_svi_reaches_batch_vi_heldout_loglikelihood():
    train, test = _split(20, 4, 300, seed=11)
    scores = {}
    for infer in ("vi", "svi"):
        model = HSMMSegmenter(3, durations="poisson", max_duration=60, infer=infer, n_iter=20, batch_size=4,
                              random_state=0).fit(train)
        scores[infer] = model.score(test)
    assert np.isfinite(scores["vi"])
    assert scores["svi"] == pytest.approx(scores["vi"], abs=0.02), scores


@pytest.mark.parametrize("infer", ["svi", "cvi2", "scvi"])
def test_recovers_poisson_durations(infer):
    rng = np.random.default_rng(0)
    data = [sample_hsmm(600, rng, sd=1.0) for _ in range(4)]
    model = HSMMSegmenter(3, durations="poisson", max_duration=60, infer=infer, n_iter=40, batch_size=2,
                          subsequence_length=600).fit([x for x, _ in data])
    means = model.family_.point_estimate(model.stats_)["means"][:, 0]
    rows, cols = linear_sum_assignment(np.abs(means[:, None] - MEANS[None, :]))
    order = rows[np.argsort(cols)]
    np.testing.assert_allclose(means[order], MEANS, atol=0.5)
    np.testing.assert_allclose(model.mean_durations()[order], 1 + LAMS, rtol=0.15)


def test_cvi2_keeps_item_statistics_consistent():
    """After every sweep the global statistics are the sum of the items' own statistics (what the next
    sweep subtracts), and every item has one more segment than boundaries."""
    rng = np.random.default_rng(2)
    seqs = [sample_hsmm(200, rng)[0] for _ in range(5)]
    family = get_family("gaussian").default_prior(np.vstack(seqs))
    seen = []

    def check(it, objective, state):
        seen.append(np.allclose(state["C"], np.sum(state["own_C"], axis=0))
                    and np.allclose(state["Sd"], np.sum(state["own_Sd"], axis=0))
                    and np.allclose(state["S"], np.sum(state["own_S"], axis=0))
                    and np.isclose(state["Sd"][:, 1].sum(), state["C"][1:].sum() + len(state["own_C"])))

    HSMMFit(family, get_duration("poisson", 60), 3, infer="cvi2", n_iter=3, tol=0.0, callback=check).run(seqs)
    assert seen == [True] * 3


def test_segment_hsmm_scvi_from_the_cli(tmp_path, capsys):
    x, _ = sample_hsmm(400, np.random.default_rng(4))
    series = tmp_path / "s.csv"
    series.write_text("x\n" + "\n".join(f"{v:.4f}" for v in x[:, 0]) + "\n")
    args = ["segment", str(series), "--model", "hsmm", "--infer", "scvi", "--max-duration", "60", "--batch-size", "2",
            "--subseq-length", "100", "--iterations", "5", "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["infer"] == "scvi" and len(summary["mean_durations"]) == 3
    with pytest.raises(SystemExit):  # kappa outside [0.5, 1]: argparse's error, exit status 2
        main(args[:-1] + ["--kappa", "0.2"])

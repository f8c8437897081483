"""``hsmm_bench.py hdp-recovery``: does the HDP-HSMM with its defaults find the true number of states?

Series sampled from known HSMMs (:func:`sample_hsmm`) with ``K`` in 3..6 states, Gaussian or Poisson emissions
and Poisson or negative-binomial durations; the HDP-HSMM truncated at 10 with every default (learned
concentrations, the HMM start with merge moves) fitted by each algorithm; a run counts when
``effective_states()`` equals ``K``.  Held-out: the log-likelihood per step (``score``) of a second series from
the same model, against the same fit with the concentrations held at their starting values (``learn_hyper=False``).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from induce.series.hsmm import HDPHSMMSegmenter

#: (true K, emission family, duration family) of every setting
SETTINGS = (
    (3, "gaussian", "poisson"), (4, "poisson", "negbin"), (5, "gaussian", "negbin"), (6, "poisson", "poisson"))
#: steps per series: over the message budget at truncation 10, so ``max_duration`` comes from the HMM's longest
#: segment (docs/experiments/hsmm_defaults.md); a series of 1,500 steps would run with D = T = 1,500
STEPS = 3200


def sample_hsmm(K: int, emission: str, durations: str, T: int, rng) -> np.ndarray:
    """``T`` steps of an HSMM: Gaussian means ``4 (k - (K-1)/2)`` (sd 1) or Poisson rates ``2, 6, 14, 28, 50,
    80``; durations of mean ``8..25`` (evenly spaced over the states), ``max(1, Poisson)`` or ``1 + NB(r = 3)``;
    no self-transitions, rows from ``Dir(2)`` over the other states (one draw per ``rng``)."""
    lams = np.linspace(8.0, 25.0, K)
    A = rng.dirichlet(np.full(K - 1, 2.0), size=K)
    rates = np.array([2.0, 6.0, 14.0, 28.0, 50.0, 80.0])[:K]
    x, t, k = [], 0, int(rng.integers(K))
    while t < T:
        d = (max(1, int(rng.poisson(lams[k]))) if durations == "poisson"
             else 1 + int(rng.negative_binomial(3, 3.0 / (3.0 + lams[k] - 1.0))))
        d = min(d, T - t)
        x.append(rng.normal(4.0 * (k - (K - 1) / 2), 1.0, size=d) if emission == "gaussian"
                 else rng.poisson(rates[k], size=d).astype(float))
        t += d
        others = [j for j in range(K) if j != k]
        k = others[int(rng.choice(K - 1, p=A[k]))]
    return np.concatenate(x)[:, None]


def hdp_recovery(args) -> list[dict]:
    """One row per setting, algorithm and seed (see the module docstring)."""
    rows = []
    algorithms = args.algorithms.split(",")
    for K, emission, durations in SETTINGS[:args.settings]:
        for seed in range(args.seeds):
            rng = np.random.default_rng([K, seed])
            train, test = (sample_hsmm(K, emission, durations, STEPS, rng) for _ in range(2))
            for infer in algorithms:
                row = {"K": K, "emission": emission, "durations": durations, "seed": seed, "infer": infer}
                for learn in (True, False) if args.fixed else (True,):
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = HDPHSMMSegmenter(10, emission, infer=infer, random_state=seed,
                                                 learn_hyper=learn).fit(train)
                    key = "learned" if learn else "fixed"
                    row[key] = {"states": model.effective_states(), "heldout": model.score(test),
                                "gamma": model.gamma_, "sigma": model.sigma_, "merges": len(model.merges_),
                                "seconds": time.perf_counter() - t0}
                rows.append(row)
                print(row, flush=True)
    return rows


def recovery_table(rows: list[dict]) -> None:
    """Markdown: per setting and algorithm, runs with exactly K states and the mean held-out gain."""
    print("| K | emission | durations | infer | exactly K (learned) | exactly K (fixed) | held-out learned - fixed |")
    print("|---|---|---|---|---|---|---|")
    keys = sorted({(r["K"], r["emission"], r["durations"], r["infer"]) for r in rows})
    for key in keys:
        sel = [r for r in rows if (r["K"], r["emission"], r["durations"], r["infer"]) == key]
        hit = sum(r["learned"]["states"] == key[0] for r in sel)
        fixed = [r for r in sel if "fixed" in r]
        fixed_hit = f"{sum(r['fixed']['states'] == key[0] for r in fixed)}/{len(fixed)}" if fixed else "-"
        gain = (f"{np.mean([r['learned']['heldout'] - r['fixed']['heldout'] for r in fixed]):+.4f}" if fixed
                else "-")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {hit}/{len(sel)} | {fixed_hit} | {gain} |")

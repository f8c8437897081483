"""``hsmm_bench.py hdp-recovery``: does the HDP-HSMM with its defaults find the true number of states?

Series sampled from known HSMMs (:func:`sample_hsmm`) with ``K`` in 3..6 states, Gaussian or Poisson emissions
and Poisson or negative-binomial durations; the HDP-HSMM truncated at 10 with every default (learned
concentrations, the HMM start with merge moves) fitted by each algorithm; a run counts when
``effective_states()`` equals ``K``.  Held-out: the log-likelihood per step (``score``) of a second series from
the same model, against the same fit with the concentrations held at their starting values (``learn_hyper=False``).
"""

from __future__ import annotations

import os
import pickle
import time
import warnings
from pathlib import Path

import numpy as np

from induce.series import HDPHSMMSegmenter

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


def _one_series(task) -> list[dict]:
    """Every algorithm on the series of one ``(K, emission, durations, seed, algorithms, learn_hyper, cache)``
    task.  The vi stage with its moves (:func:`induce.infer.hsmm_merge.merge_moves`) is deterministic in the series,
    the seed and ``learn_hyper``, and every algorithm starts from it: it runs once per task and is reused (the
    objects the first fit got; CPU seconds of the first fit include it); with ``cache`` (a folder, ``--vi-cache``)
    it is also stored there and read back by later runs, which then time only the stages after it (re-runs after
    a change to svi/cvi2/scvi; the files are this benchmark's own pickles, never a model file)."""
    import induce.series.hdp_hsmm as hsmm  # where HDPHSMMSegmenter looks merge_moves up

    K, emission, durations, seed, algorithms, learn, cache = task
    rng = np.random.default_rng([K, seed])
    train, test = (sample_hsmm(K, emission, durations, STEPS, rng) for _ in range(2))
    memo, moves, rows = [], hsmm.merge_moves, []
    stored = None if cache is None else Path(cache) / f"vi_{K}_{seed}_{'learned' if learn else 'fixed'}.pkl"

    def reused(fit, seqs):
        if not memo and stored is not None and stored.exists():
            memo.append(pickle.loads(stored.read_bytes()))  # this benchmark's own file (--vi-cache)
        if not memo:
            memo.append(moves(fit, seqs))
            if stored is not None:
                stored.write_bytes(pickle.dumps(memo[0]))
        return memo[0]

    hsmm.merge_moves = reused
    try:
        for infer in algorithms:
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = HDPHSMMSegmenter(10, emission, infer=infer, random_state=seed, learn_hyper=learn).fit(train)
            rows.append({"K": K, "emission": emission, "durations": durations, "seed": seed, "infer": infer,
                         "learned" if learn else "fixed": {
                             "states": model.effective_states(), "heldout": float(model.score(test)),
                             "gamma": float(model.gamma_), "sigma": float(model.sigma_), "merges": len(model.merges_),
                             "splits": len(model.splits_), "deletes": len(model.deletes_),
                             "cpu_seconds": time.process_time() - t0,
                             "usage": np.round(model.family_.counts(model.stats_)).astype(int).tolist()}})
            print(rows[-1], flush=True)
    finally:
        hsmm.merge_moves = moves
    return rows


def hdp_recovery(args) -> list[dict]:
    """One row per setting, algorithm and seed (see the module docstring); ``args.jobs`` series at a time (each
    process one numba thread), every learned fit queued before the fixed ones; the rows printed as they come."""
    algorithms = args.algorithms.split(",")
    settings = (SETTINGS[:args.settings][::-1] if args.ks is None  # the slowest (K = 6) first
                else [next(s for s in SETTINGS if s[0] == k) for k in args.ks])
    cache = args.vi_cache
    if cache is not None:
        Path(cache).mkdir(parents=True, exist_ok=True)
    tasks = [(*setting, seed, algorithms, True, cache) for setting in settings for seed in args.seed_list]
    if args.fixed:  # seed by seed, so that a cut-off run holds the comparison in every setting
        tasks += [(*setting, seed, algorithms, False, cache) for seed in args.seed_list for setting in settings]
    if args.jobs <= 1:
        done = [row for task in tasks for row in _one_series(task)]
    else:
        import multiprocessing as mp

        os.environ["NUMBA_NUM_THREADS"] = "1"
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            done = [row for rows in pool.imap_unordered(_one_series, tasks) for row in rows]
    merged = {}
    for row in done:  # the learned and fixed fits of one series and algorithm in one row
        key = tuple(row[k] for k in ("K", "emission", "durations", "seed", "infer"))
        merged.setdefault(key, {}).update(row)
    return list(merged.values())


def recovery_table(rows: list[dict]) -> None:
    """Markdown: per setting and algorithm, runs with exactly K states and the mean held-out gain (over the
    series with both fits)."""
    print("| K | emission | durations | infer | exactly K (learned) | exactly K (fixed) | held-out learned - fixed |")
    print("|---|---|---|---|---|---|---|")
    keys = sorted({(r["K"], r["emission"], r["durations"], r["infer"]) for r in rows})
    for key in keys:
        sel = [r for r in rows if (r["K"], r["emission"], r["durations"], r["infer"]) == key]
        hits = {}
        for which in ("learned", "fixed"):
            runs = [r[which]["states"] for r in sel if which in r]
            hits[which] = f"{sum(k == key[0] for k in runs)}/{len(runs)}" if runs else "-"
        both = [r["learned"]["heldout"] - r["fixed"]["heldout"] for r in sel if "learned" in r and "fixed" in r]
        gain = f"{np.mean(both):+.4f} ({len(both)})" if both else "-"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {hits['learned']} | {hits['fixed']} | {gain} |")

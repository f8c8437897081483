"""HSMM benchmarks: held-out log-likelihood against the HMM on real series, and seconds per iteration.

Usage::

    python benchmarks/hsmm_bench.py real [--seeds 3]
    python benchmarks/hsmm_bench.py speed [--iterations 5]
    python benchmarks/hsmm_bench.py nbspeed [--iterations 5]
    python benchmarks/hsmm_bench.py nbfig2 [--sequences 55 --length 3000 --iterations 20 --samples 1,5,10,50]
                                           [--infer vi|svi --batch-size 5]
    python benchmarks/hsmm_bench.py fig1b [--seeds 3] [--budget 40] [--algorithms vi,svi,cvi2,scvi]
    python benchmarks/hsmm_bench.py defaults [--seeds 3] [--series nile,faithful,...] [--states 2,3,4]
    python benchmarks/hsmm_bench.py hdp-recovery [--seeds 10 | --seed-list 0,3] [--settings 4 | --ks 4,3]
                                               [--algorithms vi,svi,cvi2,scvi] [--fixed] [--jobs 16]

``real``: Old Faithful ``geyser.csv`` (waiting, duration; Gaussian) and monthly sunspots
(``sunspot_month.csv`` value; Gaussian): fit em on the first 80% of the series, report the held-out
log-likelihood per step of the last 20% given the first 80% (``[log p(all) - log p(train)] / n_test``)
for the HMM and the HSMM with Poisson, negative binomial (r = 2) and geometric durations, K = 2, 3;
mean over seeds; the learned mean durations of the HSMM.
``speed``: seconds per em iteration (the fastest of ``--iterations`` passes) of the HSMM (Poisson
durations) and the HMM, K = 3 Gaussian, on one series sampled from the 3-state HSMM of the tests, as T
and D grow (the HSMM is O(T K D + T K^2), the HMM O(T K^2)).
``nbfig2``: paper 002 Fig. 2 (section 6): data from a 4-state HSMM with Poisson durations and 2-d
Gaussian emissions, models with NB durations, ``p ~ Beta(1, 1)``, ``r ~ Uniform{1..10}`` learned
(:class:`induce.durations.NegBinLearnedR`), 90% of the sequences for training: held-out log predictive
per step against fitting time, for the exact update of q(r, p) (explicit-duration messages, D = 100)
and the sampled update with S samples (HMM embedding, no D).  ``--infer vi`` (default): batch passes
(rho = 1), one point a pass; ``--infer svi``: ``--iterations`` epochs of minibatches of ``--batch-size``
sequences (the schedule's defaults tau = 1, kappa = 0.6), one point a minibatch update.
``nbspeed``: seconds per em pass of NB(r = 4) durations on the embedding against the explicit messages
with D = 50, 200 as T grows (passes alternated).
``fig1b``: paper 002 Fig. 1(b): an HDP-HSMM with Poisson durations (truncation 12, D = 60, 2-D Gaussian
emissions) fitted to 30 sequences of 2,000 steps sampled from a 6-state HSMM (:func:`fig1b_data`), 27 for
training and 3 held out; held-out log-likelihood per step of the plug-in predictive (the model's ``score``)
against fitting time (evaluations not counted) for batch vi, svi, cvi2 and scvi, algorithms alternated
within each seed; times also in units of one batch vi pass of the same seed (the shared machine's speed
varies, ratios do not).
``defaults``: every series of ``timeseries/`` as :mod:`series_bench` models it (its family and K): the HMM
(vi, the CLI's default) against the HSMM with the defaults (vi; negbin durations, r learned over 1..3;
``max_duration`` from the HMM's Viterbi path; start from the HMM) and with other duration settings (learned
r up to 1 = geometric, up to 10; Poisson), fit on the first 80%, held-out log-likelihood per step of the
last 20% given the first 80% (mean over seeds), segments on the whole series, seconds; the defaults' fits
(seed 0) drawn into ``benchmarks/results/hsmm_defaults.png`` (HMM and HSMM Viterbi states per series).
``hdp-recovery``: the HDP-HSMM's defaults on series from known HSMMs (:mod:`hsmm_recovery`).
All modes print a markdown table and write JSON under ``benchmarks/out/`` (``defaults``: ``benchmarks/results/``).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from induce.series import HMMSegmenter, read_series  # noqa: E402
from induce.infer.series_hsmm import runs  # noqa: E402
from induce.series.hsmm import HSMMSegmenter  # noqa: E402
from hsmm_recovery import hdp_recovery, recovery_table  # noqa: E402

CORPORA = Path(os.environ.get("INDUCE_CORPORA", ROOT.parent / "shared" / "corpora")) / "timeseries"
SERIES = {"geyser": ("geyser.csv", ["waiting", "duration"], 30), "sunspots": ("sunspot_month.csv", ["value"], 200)}


def heldout(model, x, cut):
    model.fit(x[:cut])
    return model.score(x[cut:], context=x[:cut])


def real(args):
    rows = []
    for name, (path, cols, D) in SERIES.items():
        x = read_series(CORPORA / path, cols).sequences[0]
        cut = int(round(0.8 * x.shape[0]))
        for K in (2, 3):
            models = {"hmm": lambda s: HMMSegmenter(K, infer="em", n_iter=200, random_state=s)}
            for dur in ("poisson", "negbin", "geometric"):
                models[f"hsmm-{dur}"] = (lambda s, dur=dur: HSMMSegmenter(K, durations=dur, max_duration=D, infer="em",
                                                                          r=2.0, n_iter=200, random_state=s))
            for label, make in models.items():
                scores, means = [], None
                for seed in range(args.seeds):
                    model = make(seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        scores.append(heldout(model, x, cut))
                    if seed == 0 and label.startswith("hsmm"):
                        means = sorted(round(float(v), 1) for v in model.mean_durations())
                rows.append({"series": name, "K": K, "model": label, "D": D if label != "hmm" else None,
                             "heldout": float(np.mean(scores)), "sd": float(np.std(scores)), "mean_durations": means})
                print(f"| {name} | {K} | {label} | {rows[-1]['heldout']:.4f} | {rows[-1]['sd']:.4f} | {means} |",
                      flush=True)
    return rows


def speed(args):
    """Minimum over ``--iterations`` timed em passes, each after one untimed pass (compilation)."""
    from induce.durations import get_duration
    from induce.emissions import get_family
    from induce.infer.series import SeriesFit
    from induce.infer.series_hsmm import HSMMFit
    from tests.hsmm.test_fit import sample_hsmm

    rows = []
    for T in (1000, 4000, 16000):
        x, _ = sample_hsmm(T, np.random.default_rng(0))
        family = get_family("gaussian").default_prior(x)
        fits = [("hmm", SeriesFit(family, 3, infer="em"), "_batch_pass")] + [
            (f"hsmm D={D}", HSMMFit(family, get_duration("poisson", D), 3, infer="em"), "_pass") for D in (10, 50, 200)]
        for label, fit, method in fits:
            state = fit._initial_state([x])
            step = getattr(fit, method)
            step([x], state) if method == "_batch_pass" else step(state)
            times = []
            for _ in range(args.iterations):
                start = time.perf_counter()
                step([x], state) if method == "_batch_pass" else step(state)
                times.append(time.perf_counter() - start)
            rows.append({"T": T, "model": label, "s_per_iter": min(times)})
            print(f"| {T} | {label} | {min(times):.4f} |", flush=True)
    return rows


def nbspeed(args):
    """CPU seconds per em pass of NB(r = 4) durations, K = 3: the HMM embedding (dense, N = 12 pseudo-states)
    against the explicit-duration messages with D = 50 and 200, alternated pass by pass, minimum of
    ``--iterations``."""
    from induce.durations import NegBin
    from induce.emissions import get_family
    from induce.infer.hsmm_embed import NBEmbedFit
    from induce.infer.series_hsmm import HSMMFit
    from tests.hsmm.test_fit import sample_hsmm

    rows = []
    for T in (1000, 4000, 16000):
        x, _ = sample_hsmm(T, np.random.default_rng(0))
        family = get_family("gaussian").default_prior(x)
        fits = [("embedding", NBEmbedFit(family, NegBin(50, r=4.0), 3, infer="em"))] + [
            (f"explicit D={D}", HSMMFit(family, NegBin(D, r=4.0), 3, infer="em")) for D in (50, 200)]
        states = [fit._initial_state([x]) for _, fit in fits]
        times = [[] for _ in fits]
        for it in range(args.iterations + 1):
            for i, ((_, fit), state) in enumerate(zip(fits, states)):
                start = time.process_time()  # CPU time: the 2 cores are shared with other jobs
                fit._pass(state)
                if it:  # the first pass compiles
                    times[i].append(time.process_time() - start)
        for (label, _), t in zip(fits, times):
            rows.append({"T": T, "model": label, "s_per_iter": min(t)})
            print(f"| {T} | {label} | {min(t):.4f} |", flush=True)
    return rows


FIG2_DIRECTIONS = np.stack([np.cos(np.arange(4) * np.pi / 2), np.sin(np.arange(4) * np.pi / 2)], axis=1)
FIG2_LAMS = np.array([8.0, 15.0, 25.0, 40.0])  # durations 1 + Poisson(lam)


def fig2_data(n, T, rng, radius=2.0):
    """``n`` series of ``T`` steps from the 4-state Poisson-duration HSMM (random off-diagonal transitions,
    unit-covariance Gaussians at ``radius * FIG2_DIRECTIONS``)."""
    A = np.zeros((4, 4))
    A[~np.eye(4, dtype=bool)] = rng.dirichlet(np.ones(3), size=4).ravel()
    out = []
    for _ in range(n):
        x, t, k = [], 0, int(rng.integers(4))
        while t < T:
            d = min(1 + int(rng.poisson(FIG2_LAMS[k])), T - t)
            x.append(radius * FIG2_DIRECTIONS[k] + rng.normal(size=(d, 2)))
            t += d
            k = int(rng.choice(4, p=A[k]))
        out.append(np.concatenate(x))
    return out


def fig2_predictive(fit, state, test, D_eval=200):
    """Held-out log predictive per step: posterior-mean transitions, the emissions' posterior predictive and
    the durations' posterior predictive under q(r, p) (:meth:`NegBinLearnedR.log_predictive`), explicit
    messages truncated at ``D_eval`` (a plug-in of ``E_q p(y_test | model)``, paper 002 section 6)."""
    from induce.infer.series import emission_rows
    from induce.infer.series_hsmm import hsmm_posterior, hsmm_transitions

    logpi, logA = hsmm_transitions("cvi2", state["C"], fit.alpha)
    logD = fit.durations.log_predictive(state["Sd"], D_eval)
    total = sum(hsmm_posterior(logpi, logA, emission_rows("cvi2", fit.family, x, state["S"]), logD)[0] for x in test)
    return total / sum(x.shape[0] for x in test)


def nbfig2(args):
    """Exact vs sampled updates of q(r, p), batch vi or svi, same data and initialisation for every method."""
    from induce.durations import NegBinLearnedR
    from induce.emissions import get_family
    from induce.infer.hsmm_embed import NBEmbedFit
    from induce.infer.series_hsmm import HSMMFit

    seqs = fig2_data(args.sequences, args.length, np.random.default_rng(0), args.radius)
    n_test = max(1, int(round(0.1 * len(seqs))))
    train, test = seqs[:-n_test], seqs[-n_test:]
    family = get_family("gaussian").default_prior(np.vstack(train))
    methods = [("exact", 0)] + [(f"sampled S={S}", S) for S in args.samples]
    rows = []
    for seed in range(args.seeds):
        for label, S in methods:
            kw = dict(infer=args.infer, n_iter=args.iterations, tol=0.0, rng=np.random.default_rng(seed),
                      batch_size=args.batch_size)
            durations = NegBinLearnedR(100, max_r=10)
            fit = (NBEmbedFit(family, durations, 4, n_samples=S, **kw) if S else HSMMFit(family, durations, 4, **kw))
            clock = {"fit": 0.0, "mark": time.process_time()}

            def record(it, state, fit=fit, clock=clock, label=label, seed=seed):
                clock["fit"] += time.process_time() - clock["mark"]
                qr = np.exp(fit.durations.log_qr(state["Sd"]))
                rows.append({"method": label, "seed": seed, "infer": args.infer, "iteration": it,
                             "seconds": clock["fit"],
                             "heldout": fig2_predictive(fit, state, test),
                             "r_mode": (qr.argmax(axis=1) + 1).tolist()})
                clock["mark"] = time.process_time()

            if args.infer == "svi":  # one point per minibatch update
                fit.batch_callback = record
            else:
                fit.callback = lambda it, objective, state, record=record: record(it + 1, state)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit.run(train)
            last = rows[-1]
            print(f"| {label} | {seed} | {last['iteration']} | {last['seconds']:.1f} | {last['heldout']:.4f} | "
                  f"{last['r_mode']} |", flush=True)
    return rows


def fig1b_data(rng, n_seqs=30, T=2000):
    """Sequences from a 6-state HSMM: 2-D Gaussian means on a circle of radius 4 (sd 1), durations
    ``1 + Poisson(lam)`` with ``lam`` from 4 to 29, transition rows ``Dir(1)`` over the other states."""
    K = 6
    angle = 2 * np.pi * np.arange(K) / K
    means = 4.0 * np.column_stack([np.cos(angle), np.sin(angle)])
    lams = np.linspace(4.0, 29.0, K)
    A = rng.dirichlet(np.ones(K - 1), size=K)
    seqs = []
    for _ in range(n_seqs):
        x, t, k = [], 0, int(rng.integers(K))
        while t < T:
            d = min(1 + int(rng.poisson(lams[k])), T - t)
            x.append(rng.normal(means[k], 1.0, size=(d, 2)))
            t += d
            others = [j for j in range(K) if j != k]
            k = others[int(rng.choice(K - 1, p=A[k]))]
        seqs.append(np.vstack(x))
    return seqs


def fig1b(args):
    """Held-out predictive against fitting time, paper 002 Fig. 1(b) (see the module docstring)."""
    from induce.durations import get_duration
    from induce.emissions import get_family
    from induce.infer.hdp import effective_states
    from induce.infer.series_hdp_hsmm import HDPHSMMFit
    from induce.infer.series_hsmm import duration_rows, hsmm_posterior
    from induce.infer.series import emission_rows

    seqs = fig1b_data(np.random.default_rng(2014))
    train, test = seqs[:27], seqs[27:]
    n_test = sum(x.shape[0] for x in test)
    runs_ = {"vi": dict(n_iter=args.budget), "svi": dict(n_iter=max(1, args.budget // 8), batch_size=1),
             "cvi2": dict(n_iter=max(1, args.budget // 2)), "scvi": dict(n_iter=max(1, args.budget // 8), batch_size=1)}
    runs_ = {infer: runs_[infer] for infer in args.algorithms.split(",")}
    rows = []
    for seed in range(args.seeds):
        for infer, kw in runs_.items():
            family = get_family("gaussian").default_prior(np.vstack(train))
            fit = HDPHSMMFit(family, get_duration("poisson", 60), 12, infer=infer, tol=0.0,
                             rng=np.random.default_rng(seed), **kw)
            clock = {"start": time.perf_counter(), "eval": 0.0}
            curve = []

            def record(state, fit=fit, clock=clock, curve=curve):
                t0 = time.perf_counter()
                logpi, logA = fit.transitions("cvi2", state["C"])
                logD = duration_rows("cvi2", fit.durations, state["Sd"])
                ll = sum(hsmm_posterior(logpi, logA, emission_rows("cvi2", fit.family, x, state["S"]), logD)[0]
                         for x in test)
                curve.append((t0 - clock["start"] - clock["eval"], ll / n_test))
                clock["eval"] += time.perf_counter() - t0

            if infer in ("svi", "scvi"):
                fit.batch_callback = lambda m, state, record=record: record(state)
            else:
                fit.callback = lambda it, f, state, record=record: record(state)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = fit.run(train)
            states = effective_states(family.counts(result.stats))
            rows.append({"seed": seed, "infer": infer, "curve": curve, "states": states, "gamma": fit.gamma,
                         "sigma": fit.sigma})
            print(f"seed {seed} {infer}: {len(curve)} points, final {curve[-1][1]:.4f} at {curve[-1][0]:.1f} s, "
                  f"{states} effective states, gamma {fit.gamma:.3g}, sigma {fit.sigma:.3g}", flush=True)
    return rows


def fig1b_table(rows, marks=(0.25, 0.5, 1, 2, 5, 10, 20)):
    """Median over seeds of the latest held-out score within ``m`` batch-vi passes' worth of fitting time."""
    print("| infer | " + " | ".join(f"{m} vi passes" for m in marks) + " | final |")
    print("|---|" + "---|" * (len(marks) + 1))
    seeds = sorted({r["seed"] for r in rows})
    unit = {s: next(r for r in rows if r["seed"] == s and r["infer"] == "vi")["curve"][0][0] for s in seeds}
    for infer in dict.fromkeys(r["infer"] for r in rows):
        cells = []
        for m in marks:
            vals = [([v for t, v in r["curve"] if t <= m * unit[r["seed"]]] or [np.nan])[-1]
                    for r in rows if r["infer"] == infer]
            cells.append(f"{np.nanmedian(vals):.4f}" if not np.all(np.isnan(vals)) else "-")
        final = np.median([r["curve"][-1][1] for r in rows if r["infer"] == infer])
        print(f"| {infer} | " + " | ".join(cells) + f" | {final:.4f} |")
    print(f"one vi pass: {np.median(list(unit.values())):.2f} s (median over seeds)")


#: the HSMM settings of ``defaults``: name -> HSMMSegmenter keywords beyond K, the family and vi
VARIANTS = {"default": {}, "geometric": {"max_r": 1}, "r<=10": {"max_r": 10}, "poisson": {"durations": "poisson"}}


def defaults(args):
    from series_bench import SERIES, load

    rows, drawn = {}, {}
    for name in args.series.split(","):
        _, _, family, K0, _ = SERIES[name]
        X = load(name)
        for K in args.states or [K0]:
            key = name if not args.states else f"{name} K={K}"
            rows[key], paths = defaults_row(X, family, K, args.seeds)
            if K == K0:
                drawn.update({(name, label): path for label, path in paths.items()})
            row = rows[key]
            print(f"| {name} | {K} | " + " | ".join(f"{row[v]['heldout']:.4f} ({row[v]['segments']})"
                                                    for v in ("hmm", *VARIANTS))
                  + f" | {row['default']['heldout'] - row['hmm']['heldout']:+.4f} | {row['default']['max_duration']} | "
                  f"{row['hmm']['seconds']:.1f} / {row['default']['seconds']:.1f} |", flush=True)
    if not args.states:
        draw_defaults(drawn, {n: load(n) for n in rows})
    return rows


def defaults_row(X, family, K, seeds):
    """The HMM and every HSMM variant on one series: held-out scores, segments and seconds; the Viterbi paths
    of the HMM and the defaults (seed 0)."""
    cut = int(round(0.8 * X.shape[0]))
    row, drawn = {"K": K, "family": family, "steps": int(X.shape[0])}, {}
    fits = {"hmm": lambda seed: HMMSegmenter(K, family, infer="vi", random_state=seed)}
    fits.update({v: (lambda seed, kw=kw: HSMMSegmenter(K, family, infer="vi", random_state=seed, **kw))
                 for v, kw in VARIANTS.items()})
    for label, make in fits.items():
        scores, secs = [], []
        for seed in range(seeds):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make(seed).fit(X[:cut])
            secs.append(time.perf_counter() - t0)
            scores.append(model.score(X[cut:], context=X[:cut]))
            if seed == 0:
                path = model.predict(X)[0]
                row[label] = {"segments": len(runs(path)), "max_duration": getattr(model, "max_duration_", None)}
                if label in ("hmm", "default"):
                    drawn[label] = path
        row[label].update(heldout=float(np.mean(scores)), sd=float(np.std(scores)), runs=scores,
                          seconds=float(np.median(secs)))
    return row, drawn


def draw_defaults(paths, data):
    """One small PNG: per series, its first column coloured by the HMM's and the HSMM's Viterbi states."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(data)
    fig, axes = plt.subplots(len(names), 2, figsize=(9, 1.5 * len(names)), dpi=55, squeeze=False)
    for row, name in zip(axes, names):
        y = data[name][:, 0]
        for ax, label in zip(row, ("hmm", "default")):
            states = paths[(name, label)]
            ax.plot(y, color="0.75", lw=0.4, zorder=0)
            ax.scatter(np.arange(len(y)), y, c=states, cmap="tab10", vmin=0, vmax=9, s=2)
            ax.axvline(int(round(0.8 * len(y))), color="k", ls="--", lw=0.6)
            ax.set_title(f"{name}: {'HMM' if label == 'hmm' else 'HSMM (defaults)'}, "
                         f"{len(runs(states))} segments", fontsize=7)
            ax.tick_params(labelsize=5)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    from PIL import Image  # a 16-colour palette keeps the committed picture small

    Image.open(buffer).convert("RGB").quantize(colors=16).save(ROOT / "benchmarks" / "results" / "hsmm_defaults.png",
                                                                optimize=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("real", "speed", "fig1b", "nbfig2", "nbspeed", "defaults", "hdp-recovery"))
    p.add_argument("--series", default="nile,faithful,geyser,eustock,sunspots,lynx", help="defaults: series")
    p.add_argument("--states", type=lambda v: [int(k) for k in v.split(",")], default=None,
                   help="defaults: numbers of states K to run each series at (default: the series' own K, and the "
                        "picture)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--budget", type=int, default=40, help="fig1b: batch vi passes (svi/scvi get 1/8 of it in "
                   "epochs, cvi2 half in sweeps)")
    p.add_argument("--sequences", type=int, default=55, help="nbfig2: number of series")
    p.add_argument("--length", type=int, default=3000, help="nbfig2: steps per series")
    p.add_argument("--samples", type=lambda v: [int(s) for s in v.split(",")], default=[1, 5, 10, 50],
                   help="nbfig2: numbers of samples S of the sampled update")
    p.add_argument("--radius", type=float, default=2.0, help="nbfig2: distance of the emission means from 0")
    p.add_argument("--infer", choices=("vi", "svi"), default="vi", help="nbfig2: batch passes or svi epochs")
    p.add_argument("--batch-size", type=int, default=5, help="nbfig2 --infer svi: sequences per minibatch")
    p.add_argument("--settings", type=int, default=4, help="hdp-recovery: the first N of hsmm_recovery.SETTINGS")
    p.add_argument("--ks", type=lambda v: [int(k) for k in v.split(",")], default=None,
                   help="hdp-recovery: the settings with these true K, in this order (instead of --settings)")
    p.add_argument("--algorithms", default="vi,svi,cvi2,scvi", help="hdp-recovery, fig1b: algorithms")
    p.add_argument("--fixed", action="store_true", help="hdp-recovery: also fit with fixed concentrations")
    p.add_argument("--seed-list", type=lambda v: [int(k) for k in v.split(",")], default=None,
                   help="hdp-recovery: these seeds instead of 0..--seeds-1")
    p.add_argument("--vi-cache", default=None, help="hdp-recovery: folder storing each series' vi stage, read back "
                   "by later runs (for re-runs when only svi/cvi2/scvi changed)")
    p.add_argument("--jobs", type=int, default=1, help="hdp-recovery: series fitted in parallel (processes)")
    args = p.parse_args()
    args.seed_list = args.seed_list or list(range(args.seeds))
    if args.mode == "defaults":
        print("| series | K | HMM | " + " | ".join(f"HSMM {v}" for v in VARIANTS)
              + " | default - HMM | D | s HMM / HSMM |")
        print("|---|---|" + "---|" * (len(VARIANTS) + 4))
    rows = {"real": real, "speed": speed, "fig1b": fig1b, "nbfig2": nbfig2, "nbspeed": nbspeed,
            "defaults": defaults, "hdp-recovery": hdp_recovery}[args.mode](args)
    if args.mode == "fig1b" and "vi" in args.algorithms.split(","):  # times in units of a vi pass
        fig1b_table(rows)
    if args.mode == "hdp-recovery":
        recovery_table(rows)
    out = ROOT / "benchmarks" / ("results" if args.mode == "defaults" else "out")  # defaults: the record's JSON
    out.mkdir(parents=True, exist_ok=True)
    suffix = f"_radius{args.radius:g}" + ("_svi" if args.infer == "svi" else "") if args.mode == "nbfig2" else ""
    if args.mode == "defaults" and args.states:
        suffix = "_K" + "-".join(map(str, args.states))
    (out / f"hsmm_{args.mode}{suffix}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

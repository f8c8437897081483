"""Time-series HMM benchmarks: held-out log-likelihood on real series and speed against hmmlearn.

Usage::

    python benchmarks/series_bench.py real [--seeds 3] [--iterations 200]
    python benchmarks/series_bench.py speed [--quick] [--rounds 3] [--iterations 5] [--json FILE]
    python benchmarks/series_bench.py fig1a [--repeats 3] [--sequences 100] [--length 3000]

``real``: every series of ``timeseries/`` (Nile, faithful, geyser, EuStock log returns x 100,
monthly sunspots and lynx as Poisson counts): fit on the first 80% of each series, report the
held-out log-likelihood per step of the last 20% *given the first 80%*
(``[log p(all) - log p(train)] / n_test``) for induce em, vi, cvi2, svi, scvi, hdp-cvi, hdp-scvi,
hdp-svi (HDP-HMM truncated at ``--truncation`` states) and hmmlearn EM
(``GaussianHMM(covariance_type="full")`` / ``PoissonHMM``) on identical data and K, mean and sd over
seeds; one segmentation picture per series (cvi2, seed 0) under ``benchmarks/results/``.
``speed``: wall and CPU seconds per iteration of induce em, vi and cvi2 against hmmlearn EM
(``implementation="scaling"`` and ``"log"``) and, when installed (``[bench]`` extra), dynamax 1.0's
``GaussianHMM`` EM step (float64 on the CPU, jit-compiled before the timing: compilation excluded), all from
fixed starting parameters, on three sets: ``--sequences`` x ``--length`` steps sampled from a 10-state 2-D
Gaussian HMM (full covariance; paper 002 Fig. 1(a) sizes by default), EuStock (one series, K = 3, d = 4; cvi2
cuts it into ~20 items) and the same sizes sampled from a 10-state 2-D Poisson HMM (hmmlearn ``PoissonHMM``).
Peers are alternated in ``--rounds`` rounds, each timing after its own warm-up pass (fit), with the load
average before and after it (marked ``LOADED`` above 1.5: repeat such a run) and the arithmetic floor
(3 T K^2 + T K d^2 multiply-adds at 100 GFLOP/s).  ``--quick`` (1 round, 3 iterations) takes about a minute
on a quiet 16-core machine.
``fig1a``: paper 002 Fig. 1(a) with a finite 10-state HMM instead of the HDP-HMM: sampled 2-D
Gaussian data (``--sequences`` x ``--length``), 95% of the sequences for training and 5% held out,
held-out predictive log-likelihood per step (posterior-mean transitions, Student-t rows) against
wall time for batch vi and cvi2 (per pass) and svi and scvi (per minibatch, one epoch), and the
HDP-HMM (truncation ``--truncation``) by batch hdp-cvi and one epoch of hdp-scvi and hdp-svi.
Every mode prints a table and writes JSON under ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
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

import timing  # noqa: E402
from induce.emissions import get_family  # noqa: E402
from induce.infer.series import SeriesFit, chain_posterior, surrogate_transitions  # noqa: E402
from induce.infer.series_hdp import HDPSeriesFit, HDPSVIFit  # noqa: E402
from induce.series import HMMSegmenter, read_series  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CORPORA = Path(os.environ.get("INDUCE_CORPORA", ROOT.parent / "shared" / "corpora")) / "timeseries"

# name: (file, columns, family, K, transform)
SERIES = {
    "nile": ("nile.csv", ["value"], "gaussian", 2, None),
    "faithful": ("faithful.csv", ["eruptions", "waiting"], "gaussian", 2, None),
    "geyser": ("geyser.csv", ["waiting", "duration"], "gaussian", 3, None),
    "eustock": ("eustockmarkets.csv", ["DAX", "SMI", "CAC", "FTSE"], "gaussian", 3, "logret"),
    "sunspots": ("sunspot_month.csv", ["value"], "poisson", 4, "round"),
    "lynx": ("lynx.csv", ["value"], "poisson", 3, None),
}


#: induce algorithms of the ``real`` mode (the hdp-* ones at ``--truncation`` states)
ALGOS = ("em", "vi", "cvi2", "svi", "scvi", "hdp-cvi", "hdp-scvi", "hdp-svi")


def load(name: str) -> np.ndarray:
    """The series as the benchmark models it (log returns x 100 for EuStock, rounded sunspot counts)."""
    file, cols, _, _, transform = SERIES[name]
    X = read_series(CORPORA / file, cols).sequences[0]
    if transform == "logret":
        X = 100.0 * np.diff(np.log(X), axis=0)
    elif transform == "round":
        X = np.round(X)
    return X


def hmmlearn_model(family: str, K: int, seed: int, n_iter: int):
    from hmmlearn.hmm import GaussianHMM, PoissonHMM

    if family == "poisson":
        return PoissonHMM(n_components=K, n_iter=n_iter, random_state=seed)
    return GaussianHMM(n_components=K, covariance_type="full", n_iter=n_iter, random_state=seed)


def heldout_hmmlearn(model, train, full) -> float:
    return (model.score(full) - model.score(train)) / (full.shape[0] - train.shape[0])


def real(args) -> dict:
    out = {}
    for name in args.series.split(","):
        _, _, family, K, _ = SERIES[name]
        X = load(name)
        cut = int(round(0.8 * X.shape[0]))
        train, test = X[:cut], X[cut:]
        algos = tuple(args.algorithms.split(","))
        scores = {a: [] for a in algos + ("hmmlearn",)}
        for seed in range(args.seeds):
            for infer in algos:
                states = args.truncation if infer.startswith("hdp-") else K
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    m = HMMSegmenter(states, family, infer=infer, n_iter=args.iterations, random_state=seed).fit(train)
                scores[infer].append(m.score(test, context=train))
                if infer == "cvi2" and seed == 0:
                    picture(name, X, cut, m.predict(X), K)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                h = hmmlearn_model(family, K, seed, args.iterations)
                h.fit(train.astype(int) if family == "poisson" else train)
            full = X.astype(int) if family == "poisson" else X
            scores["hmmlearn"].append(heldout_hmmlearn(h, full[:cut], full))
        out[name] = {"family": family, "K": K, "steps": int(X.shape[0]), "heldout_steps": int(test.shape[0]),
                     **{a: {"mean": float(np.mean(v)), "sd": float(np.std(v)), "runs": [float(s) for s in v]}
                        for a, v in scores.items()}}
        row = " ".join(f"{a} {np.mean(v):.4f} ({np.std(v):.3f})" for a, v in scores.items())
        print(f"{name:9s} K={K} {family:8s} {row}", flush=True)
    return out


def picture(name, X, cut, states, K) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 2.2), dpi=80)
    y = X[:, 0]
    t = np.arange(len(y))
    colours = plt.get_cmap("tab10")
    for k in range(K):
        ax.scatter(t[states == k], y[states == k], s=4, color=colours(k), label=f"state {k}")
    ax.plot(t, y, color="0.7", lw=0.4, zorder=0)
    ax.axvline(cut, color="k", ls="--", lw=0.8)
    ax.set_title(f"{name}: cvi2 Viterbi states (K={K}); dashed: held-out start", fontsize=8)
    ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / f"series_{name}.png")
    plt.close(fig)


def sticky_states(n_seq, T, K, rng):
    """State sequences of a sticky ``K``-state chain (stay 0.9), one per sequence, drawn lazily so that each caller's
    emission draws for a sequence follow its states in the generator's order."""
    A = np.full((K, K), 0.1 / (K - 1)) + np.eye(K) * (0.9 - 0.1 / (K - 1))
    cum = np.cumsum(A, axis=1)
    for _ in range(n_seq):
        u = rng.random(T)
        z = np.empty(T, dtype=int)
        z[0] = rng.integers(K)
        for t in range(1, T):
            z[t] = min(np.searchsorted(cum[z[t - 1]], u[t]), K - 1)
        yield z


def sample_gaussian_hmm(n_seq, T, K, rng):
    """Sequences from a sticky 10-state 2-D Gaussian HMM (means on a circle, paper 002 style)."""
    angles = 2 * np.pi * np.arange(K) / K
    means = 6.0 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return [means[z] + rng.normal(size=(T, 2)) for z in sticky_states(n_seq, T, K, rng)]


def sample_poisson_hmm(n_seq, T, K, rng):
    """Sequences of 2-D counts from a sticky ``K``-state Poisson HMM (rates 1 to 30, log-spaced, per column)."""
    rates = np.stack([np.geomspace(1.0, 30.0, K), np.geomspace(30.0, 1.0, K)], axis=1)
    return [rng.poisson(rates[z]).astype(np.float64) for z in sticky_states(n_seq, T, K, rng)]


def induce_peer(seqs, family_name, infer, K, n_iter, seed=0):
    """A timing callable (:func:`timing.measure`) of ``n_iter`` induce passes after one warm-up pass, from the
    family's initial state (k-means responsibilities, computed once here and copied for every timing)."""
    family = get_family(family_name).default_prior(np.vstack(seqs))
    fit = SeriesFit(family, K, infer, n_iter=1, tol=0.0, rng=np.random.default_rng(seed))
    items = fit._items(seqs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state0 = fit._initial_state(items)
    step = fit._cvi2_pass if infer == "cvi2" else fit._batch_pass

    def run():
        state = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state0.items()}
        fit.rng = np.random.default_rng(seed)
        step(items, state)  # warm-up pass
        wall, cpu = timing.clock()
        for _ in range(n_iter):
            step(items, state)
        w, c = timing.clock()
        return (w - wall) / n_iter, (c - cpu) / n_iter

    return run


def start_parameters(seqs, K, seed):
    """Fixed EM starting point shared by the peers: uniform start and transitions, ``K`` data points as means,
    the data covariance for every state."""
    X = np.vstack(seqs)
    means = X[np.random.default_rng(seed).choice(len(X), K, replace=False)]
    return X, means, np.array([np.atleast_2d(np.cov(X.T))] * K)


def hmmlearn_peer(seqs, family, K, n_iter, implementation, seed=0):
    """hmmlearn EM (``GaussianHMM(covariance_type="full")`` or ``PoissonHMM``) from :func:`start_parameters`
    (no k-means in the timing): a 1-iteration warm-up fit, then ``n_iter`` timed iterations."""
    from hmmlearn.hmm import GaussianHMM, PoissonHMM

    X, means, covs = start_parameters(seqs, K, seed)
    lengths = [len(s) for s in seqs]

    def model(n):
        if family == "poisson":
            h = PoissonHMM(n_components=K, n_iter=n, tol=-np.inf, init_params="", random_state=seed,
                           implementation=implementation)
            h.lambdas_ = np.maximum(means, 0.5)
        else:
            h = GaussianHMM(n_components=K, covariance_type="full", n_iter=n, tol=-np.inf, init_params="",
                            random_state=seed, implementation=implementation)
            h.means_, h.covars_ = means, covs
        h.startprob_ = np.full(K, 1.0 / K)
        h.transmat_ = np.full((K, K), 1.0 / K)
        return h

    data = X.astype(np.int64) if family == "poisson" else X

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model(1).fit(data, lengths)  # warm-up
            h = model(n_iter)
            wall, cpu = timing.clock()
            h.fit(data, lengths)
            w, c = timing.clock()
        return (w - wall) / n_iter, (c - cpu) / n_iter

    return run


def dynamax_peer(seqs, K, n_iter, seed=0):
    """dynamax 1.0 ``GaussianHMM`` EM (float64, CPU) from :func:`start_parameters`: the iteration
    ``HMM.fit_em`` scans (``e_step`` vmapped over the sequences, ``log_prior``, ``m_step``), jit-compiled
    and run twice before the timing (the second call compiles again for the M-step's output types), so that
    compilation is excluded; ``None`` when dynamax is absent."""
    try:
        import jax
        from dynamax.hidden_markov_model import GaussianHMM
    except ImportError:
        return None
    from functools import partial

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    _, means, covs = start_parameters(seqs, K, seed)
    Y = jnp.asarray(np.stack(seqs))  # (sequences, steps, dim): equal lengths
    model = GaussianHMM(K, Y.shape[-1])
    params, props = model.initialize(initial_probs=jnp.full(K, 1.0 / K), transition_matrix=jnp.full((K, K), 1.0 / K),
                                     emission_means=jnp.asarray(means), emission_covariances=jnp.asarray(covs))

    @jax.jit
    def em_step(carry):  # the body of dynamax's HMM.fit_em
        p, m_state = carry
        stats, lls = jax.vmap(partial(model.e_step, p))(Y, None)
        p, m_state = model.m_step(p, props, stats, m_state)
        return (p, m_state), model.log_prior(p) + lls.sum()

    def run():
        carry = (params, model.initialize_m_step_state(params, props))
        for _ in range(2):  # compiles for the starting parameters, then for the M-step's output types: warm-up
            carry, lp = em_step(carry)
        jax.block_until_ready(lp)
        wall, cpu = timing.clock()
        for _ in range(n_iter):
            carry, lp = em_step(carry)
        jax.block_until_ready(lp)
        w, c = timing.clock()
        return (w - wall) / n_iter, (c - cpu) / n_iter

    return run


def floor_seconds(steps, K, d, flops=100e9) -> float:
    """Arithmetic floor of one E-step: forward, backward and pair statistics (3 T K^2 multiply-adds) plus the
    emission rows (T K d^2), 2 flops each at ``flops`` per second (hmm_bench.py's convention)."""
    return (3 * steps * K * K + steps * K * d * d) * 2 / flops


def speed(args) -> dict:
    """Per-iteration wall and CPU seconds of induce and its peers on three data sets, alternated in rounds."""
    rng = np.random.default_rng(0)
    quick = args.quick
    n_iter = args.iterations or (3 if quick else 5)
    small_iter = 10 * n_iter  # EuStock: iterations of a few ms
    data = {"sampled": ("gaussian", sample_gaussian_hmm(args.sequences, args.length, 10, rng), 10, n_iter),
            "eustock": ("gaussian", [load("eustock")], 3, small_iter),
            "poisson": ("poisson", sample_poisson_hmm(args.sequences, args.length, 10, rng), 10, n_iter)}
    out = {"machine": timing.machine(), "load_start": timing.load(), "datasets": {}}
    skipped = []
    for name, (family, seqs, K, iters) in data.items():
        steps, d = sum(len(s) for s in seqs), seqs[0].shape[1]
        peers = {f"induce {a}": induce_peer(seqs, family, a, K, iters) for a in ("em", "vi", "cvi2")}
        peers["hmmlearn scaling"] = hmmlearn_peer(seqs, family, K, iters, "scaling")
        if not (quick and name == "poisson"):
            peers["hmmlearn log"] = hmmlearn_peer(seqs, family, K, iters, "log")
        if family == "gaussian":
            dyn = dynamax_peer(seqs, K, iters)
            if dyn is None:
                skipped.append("dynamax (not installed: pip install -e .[bench])")
            else:
                peers["dynamax em"] = dyn
        print(f"{name}: {len(seqs)} x {steps // len(seqs)} steps, K={K}, d={d}, {family}; {iters} iterations "
              f"per timing", flush=True)
        table = timing.alternate(peers, args.rounds or (1 if quick else 3))
        floor = floor_seconds(steps, K, d)
        ref = table["hmmlearn scaling"]
        for peer, row in table.items():
            row["x_floor"] = row["wall"] / floor
            row["vs_hmmlearn_scaling"] = ref["wall"] / row["wall"]
            row["cpu_vs_hmmlearn_scaling"] = ref["cpu"] / row["cpu"]
            if "dynamax em" in table:
                row["vs_dynamax"] = table["dynamax em"]["wall"] / row["wall"]
        out["datasets"][name] = {"family": family, "steps": steps, "sequences": len(seqs), "K": K, "dim": d,
                                 "iterations": iters, "floor_s": floor, "peers": table}
        print_table(name, table, floor)
    out["skipped"] = skipped
    out["load_end"] = timing.load()
    for line in skipped:
        print("skipped:", line)
    return out


def print_table(name, table, floor) -> None:
    print(f"{name}: floor {floor:.4f} s/it")
    print(f"  {'peer':18s} {'wall s/it':>10s} {'cpu s/it':>10s} {'x floor':>8s} {'vs hl-sc':>8s} {'cpu vs':>7s} "
          f"{'vs dynamax':>10s} {'max load':>8s}")
    for peer, r in table.items():
        print(f"  {peer:18s} {r['wall']:10.5f} {r['cpu']:10.5f} {r['x_floor']:8.1f} {r['vs_hmmlearn_scaling']:8.1f} "
              f"{r['cpu_vs_hmmlearn_scaling']:7.1f} {r.get('vs_dynamax', float('nan')):10.2f} {r['max_load']:8.2f}"
              f"{'  LOADED' if r['loaded'] else ''}", flush=True)


def heldout_predictive(fit, C, S, test) -> float:
    """Held-out log-likelihood per step under posterior-mean transitions and the predictive rows (eq. 3.96)."""
    A = surrogate_transitions(C, *fit.transition_prior())
    family = fit.family
    return sum(chain_posterior(A, family.log_predictive(x, S))[0] for x in test) / sum(len(x) for x in test)


def fig1a(args) -> dict:
    """Paper 002 Fig. 1(a), HMM version: held-out predictive log-likelihood against wall time."""
    K = 10
    out = {"runs": []}
    for rep in range(args.repeats):
        rng = np.random.default_rng(100 + rep)
        seqs = sample_gaussian_hmm(args.sequences, args.length, K, rng)
        n_test = max(1, int(round(0.05 * len(seqs))))
        train, test = seqs[:-n_test], seqs[-n_test:]
        family = get_family("gaussian").default_prior(np.vstack(train))
        for infer in args.algorithms.split(","):
            trace, clock = [], {"eval": 0.0}

            def record(state, clock=clock, trace=trace):
                t = time.perf_counter()
                if "t0" not in clock:
                    clock["t0"] = t
                score = heldout_predictive(fit, state["C"], state["S"], test)
                trace.append((t - clock["t0"] - clock["eval"], score))
                clock["eval"] += time.perf_counter() - t

            stochastic = infer in ("svi", "scvi", "hdp-scvi", "hdp-svi")
            kw = dict(n_iter=args.epochs if stochastic else args.iterations, tol=0.0, batch_size=args.batch_size,
                      rng=np.random.default_rng(rep),
                      callback=None if stochastic else (lambda it, obj, state: record(state)),
                      batch_callback=(lambda m, state: record(state)) if stochastic else None)
            if infer == "hdp-svi":
                fit = HDPSVIFit(family, args.truncation, **kw)
            elif infer.startswith("hdp-"):
                fit = HDPSeriesFit(family, args.truncation, stochastic=stochastic, **kw)
            else:
                fit = SeriesFit(family, K, infer, **kw)
            if stochastic:
                fit.callback = lambda it, obj, state: record(state) if it < 0 else None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit.run(train)
            out["runs"].append({"repeat": rep, "infer": infer, "trace": trace})
            print(f"repeat {rep} {infer:5s} final held-out {trace[-1][1]:.4f} at {trace[-1][0]:.2f} s "
                  f"({len(trace) - 1} updates)", flush=True)
    plot_fig1a(out, args)
    return out


def plot_fig1a(out, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.2), dpi=80)
    colours = {"vi": "C0", "cvi2": "C1", "svi": "C2", "scvi": "C3", "hdp-cvi": "C4", "hdp-scvi": "C5", "hdp-svi": "C6"}
    for run in out["runs"]:
        t, y = zip(*run["trace"])
        ax.plot(t, y, color=colours.get(run["infer"], "k"), lw=0.8, alpha=0.8,
                label=run["infer"] if run["repeat"] == 0 else None)
    ax.set_xlabel("wall seconds (held-out evaluation excluded)", fontsize=8)
    ax.set_ylabel("held-out log-lik per step", fontsize=8)
    ax.set_title(f"paper 002 Fig. 1a setting: 2-D Gaussian, {args.sequences} x {args.length} steps; HMM K=10, "
                 f"HDP-HMM truncation {args.truncation}", fontsize=7)
    lo = np.percentile([y for r in out["runs"] for _, y in r["trace"][1:]], 5)
    ax.set_ylim(lo - 0.05, None)
    ax.legend(fontsize=7)
    ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "series_fig1a.png")
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("real")
    r.add_argument("--seeds", type=int, default=3)
    r.add_argument("--iterations", type=int, default=200)
    r.add_argument("--series", default=",".join(SERIES))
    r.add_argument("--truncation", type=int, default=8, help="HDP-HMM truncation for hdp-cvi")
    r.add_argument("--algorithms", default=",".join(ALGOS),
                   help="induce algorithms to run (default: the table's; cvi1, cgs: the token-level collapsed ones); "
                        "other than the default, the record is series_real_<names>.json")
    s = sub.add_parser("speed")
    s.add_argument("--iterations", type=int, default=None,
                   help="timed iterations per timing (default 5, --quick 3; EuStock 10x as many)")
    s.add_argument("--rounds", type=int, default=None, help="alternated rounds (default 3, --quick 1)")
    s.add_argument("--quick", action="store_true", help="1 round, 3 iterations, no hmmlearn log on the Poisson set")
    s.add_argument("--sequences", type=int, default=100)
    s.add_argument("--length", type=int, default=3000)
    s.add_argument("--json", default=None, help="write the results here too (default: benchmarks/results only)")
    f = sub.add_parser("fig1a")
    f.add_argument("--repeats", type=int, default=3)
    f.add_argument("--sequences", type=int, default=100)
    f.add_argument("--length", type=int, default=3000)
    f.add_argument("--iterations", type=int, default=15, help="batch passes (vi, cvi2)")
    f.add_argument("--epochs", type=int, default=1, help="stochastic passes (svi, scvi)")
    f.add_argument("--batch-size", type=int, default=5, help="sequences per minibatch")
    f.add_argument("--algorithms", default="vi,cvi2,svi,scvi,hdp-cvi,hdp-scvi,hdp-svi")
    f.add_argument("--truncation", type=int, default=20, help="HDP-HMM truncation (hdp-cvi, hdp-scvi)")
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {"real": real, "speed": speed, "fig1a": fig1a}[args.mode](args)
    record = {"args": vars(args), "results": result}
    own = args.mode == "real" and args.algorithms != ",".join(ALGOS)
    suffix = "_" + args.algorithms.replace(",", "-") if own else ""
    (RESULTS / f"series_{args.mode}{suffix}.json").write_text(json.dumps(record, indent=1))
    if getattr(args, "json", None):
        timing.write_json(args.json, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())

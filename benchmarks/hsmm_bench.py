"""HSMM benchmarks: held-out log-likelihood against the HMM on real series, and seconds per iteration.

Usage::

    python benchmarks/hsmm_bench.py real [--seeds 3]
    python benchmarks/hsmm_bench.py speed [--iterations 5]

``real``: Old Faithful ``geyser.csv`` (waiting, duration; Gaussian) and monthly sunspots
(``sunspot_month.csv`` value; Gaussian): fit em on the first 80% of the series, report the held-out
log-likelihood per step of the last 20% given the first 80% (``[log p(all) - log p(train)] / n_test``)
for the HMM and the HSMM with Poisson, negative binomial (r = 2) and geometric durations, K = 2, 3;
mean over seeds; the learned mean durations of the HSMM.
``speed``: seconds per em iteration (the fastest of ``--iterations`` passes) of the HSMM (Poisson
durations) and the HMM, K = 3 Gaussian, on one series sampled from the 3-state HSMM of the tests, as T
and D grow (the HSMM is O(T K D + T K^2), the HMM O(T K^2)).
Both modes print a markdown table and write JSON under ``benchmarks/out/``.
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

from induce.series import HMMSegmenter, read_series  # noqa: E402
from induce.series.hsmm import HSMMSegmenter  # noqa: E402

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
                                                                          n_iter=200, random_state=s))
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("real", "speed"))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=5)
    args = p.parse_args()
    rows = real(args) if args.mode == "real" else speed(args)
    out = ROOT / "benchmarks" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"hsmm_{args.mode}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

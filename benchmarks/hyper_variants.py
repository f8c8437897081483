"""Empirical-Bayes variants for the HMM priors against the evidence-chosen (grid) priors, cvi2, same seeds.

Usage::

    python benchmarks/hyper_variants.py --corpus ptb-sample --variants grid,eb,eb-alpha,eb-beta,vb --seeds 3

Variants (docs/experiments/defaults.md, "The priors"):

``grid``      alpha, beta at :data:`induce.taggers.hmm.DEFAULT_PRIORS` (held);
``eb``        both learned: Dirichlet-multinomial evidence of the decoded assignment (Minka 2000, eq. 52-55);
``eb-alpha``  alpha learned as in ``eb``, beta held at the grid's value;
``eb-beta``   beta learned as in ``eb``, alpha held at the grid's value;
``vb``        both learned from the VB objective: the symmetric Dirichlet maximising
              ``E_q[log p(theta | a)]`` under ``q(theta_j) = Dir(n_j + a)`` from the expected counts
              (Beal 2003, sec. 3.4.3: ``J K (psi(K a) - psi(a)) + sum_jk E_q[log theta_jk] = 0``).

Same corpus loading, gold column, K and stopping rule as ``induce tag`` (tol 1e-5, cap 500).  Writes
``benchmarks/results/hyper_variants_<corpus><tag>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.special import digamma

from defaults_bench import CORPORA, NAMED
from induce.cli.common import default_n_states, gold_tag_column
from induce.corpus.formats import load_corpus
from induce.eval.tagging import tagging_report
from induce.algorithms import Priors
from induce.infer import hmm_passes as passes
from induce.taggers import HMMTagger
from induce.taggers.hmm import default_priors

ROOT = Path(__file__).resolve().parent


def vb_concentration(counts: np.ndarray, a: float) -> float:
    """The symmetric ``a'`` maximising ``sum_j E_q[log Dir(theta_j | a')]`` with ``q(theta_j) = Dir(counts_j + a)``."""
    counts = counts.reshape(-1, counts.shape[-1])
    J, K = counts.shape
    post = counts + a
    mean_log = float((digamma(post) - digamma(post.sum(axis=1, keepdims=True))).sum())
    return brentq(lambda x: J * K * (digamma(K * x) - digamma(x)) + mean_log, 1e-6, 1e4)


class VBPriors(Priors):
    """Priors learned by the VB-objective update (``vb`` above) from cvi2's expected counts, not the decoded
    evidence; ``local()`` gives the fit's local statistics ``(sent_trans, gamma)``."""

    def __init__(self, priors: Priors, local):
        super().__init__(**vars(priors))
        self.local = local

    def update(self, iteration, data, K, labels):
        if iteration <= self.burn_in:
            return
        trans, emit = np.zeros((K + 1, K)), np.zeros((data.W, K))
        passes.totals_from_local(data.tokens, data.offsets, *self.local(), data.W, trans, emit)
        self.alpha = vb_concentration(trans, self.alpha)
        self.beta = vb_concentration(emit.T, self.beta)


class VBTagger(HMMTagger):
    """cvi2 with :class:`VBPriors`."""

    def _algorithm(self):
        self._cvi2 = super()._algorithm()
        return self._cvi2

    def _init_hyper(self):
        return VBPriors(super()._init_hyper(), lambda: self._cvi2.local)


def make(variant: str, K: int, seed: int) -> HMMTagger:
    alpha, beta = default_priors("cvi2")
    common = dict(n_states=K, infer="cvi2", n_iter=500, tol=1e-5, random_state=seed)
    if variant == "grid":
        return HMMTagger(**common)
    if variant == "vb":
        return VBTagger(learn_hyper=True, **common)
    held = {"eb": {}, "eb-alpha": {"beta": beta}, "eb-beta": {"alpha": alpha}}[variant]
    return HMMTagger(learn_hyper=True, **held, **common)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="ptb-sample", choices=list(NAMED))
    parser.add_argument("--variants", default="grid,eb")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed-base", type=int, default=0)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    corpus = load_corpus(CORPORA / NAMED[args.corpus])
    gold_column = gold_tag_column(corpus.tag_vocabs, None)
    K = default_n_states(corpus, gold_column, None)
    report = {}
    for variant in args.variants.split(","):
        runs = []
        for seed in range(args.seed_base, args.seed_base + args.seeds):
            t0 = time.perf_counter()
            model = make(variant, K, seed).fit(corpus)
            scores = tagging_report(model.labels_, corpus.tags[gold_column], corpus.offsets)
            run = {"seed": seed, "m1": scores["m1"], "vm": scores["vm"], "alpha": model.alpha_, "beta": model.beta_,
                   "passes": model.n_iter_, "seconds": time.perf_counter() - t0}
            runs.append(run)
            print(f"{args.corpus} {variant:9s} seed {seed}: M-1 {run['m1']:.3f} VM {run['vm']:.3f} "
                  f"alpha {run['alpha']:.3g} beta {run['beta']:.3g} passes {run['passes']} {run['seconds']:.0f} s",
                  flush=True)
        summary = {k: {"mean": statistics.fmean(r[k] for r in runs),
                       "sd": statistics.stdev(r[k] for r in runs) if len(runs) > 1 else 0.0}
                   for k in ("m1", "vm", "alpha", "beta", "passes")}
        report[variant] = {"summary": summary, "runs": runs}
    out = ROOT / "results" / f"hyper_variants_{args.corpus}{args.tag}.json"
    out.write_text(json.dumps(report, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

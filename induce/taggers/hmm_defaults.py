"""The defaults of :class:`induce.taggers.HMMTagger`, each with the measurement that chose it, and the priors a
fit starts from (:func:`start_priors`)."""

from __future__ import annotations

import numpy as np

from ..algorithms import Priors
from ..infer import hmm_passes as passes

#: where a learned Dirichlet concentration starts (and its value when it is neither given nor learned)
#: The priors (alpha, beta) an algorithm uses when none is given: the best point by cross-validated M-1 of
#: the thesis' 6 x 6 grid on held-out WSJ (benchmarks/results/hmm_tune_wsjdev_*.json; docs/experiments/
#: tagging.md) for the batch algorithms (cgs and cvi3 share cvi2's model and take its point; em is MAP over the
#: grid shifted by 1, i.e. pseudo-counts alpha - 1, beta - 1, its point (2, 1.003) the best of that grid on wsjdev
#: at 3 seeds and 10 seeds there (37.8 M-1, 4.2 above the one-seed grid's (1.03, 1.03); oracle_wsjdev.json), the
#: oracle on wsj1k and ptb-sample too).  The minibatch algorithms, under their default epoch cap and held-out
#: stop: the same grid on wsjdev at 3 seeds (benchmarks/results/stoch_dev_wsjdev.json, stoch_dev_seq_wsjdev.json;
#: docs/experiments/defaults.md, "The minibatch algorithms") puts svi and svi-buffered at (1, 0.003), scvi at
#: (1, 0.01) by 0.2 M-1 over 0.003, which 10 seeds reverse (+0.7), scvi3 at (0.1, 0.01) by 0.1 over (1, 0.003):
#: the cvi-based ones take cvi2's point as stochastic forms of its model, and the vanilla variants their
#: estimator's.  Every one is 10-18 M-1 above alpha = beta = 0.1, the setting of the thesis' stochastic
#: experiments and induce's default for them before 2026-11-25.  Learned priors start here.
DEFAULT_PRIORS = {"em": (2.0, 1.003), "vi": (1.0, 0.01), "cvi1": (0.03, 0.01), "cvi2": (1.0, 0.003),
                  "cgs": (1.0, 0.003), "cvi3": (1.0, 0.003), "svi": (1.0, 0.003), "scvi": (1.0, 0.003),
                  "scvi3": (1.0, 0.003), "scvi3-vanilla": (1.0, 0.003), "svi-buffered": (1.0, 0.003),
                  "svi-vanilla": (1.0, 0.003)}
#: The pass cap when ``n_iter`` is ``None`` (the default): 500, and 2,000 for em, whose MAP point converges slowly:
#: on EWT in 676-1,111 passes, 1.1 M-1 above the same runs stopped at 500 (4 seeds; docs/experiments/defaults.md,
#: "em's cap"); the other batch algorithms converge within 500 passes on ptb-sample, EWT and Brown-12.
MAX_ITER = 500
DEFAULT_MAX_ITER = {"em": 2000}
#: The pass cap of the non-categorical emission families when ``n_iter`` is ``None``: 1000 for the feature family.
#: Seed 0, the 1e-5 rule off, M-1 at pass 300 -> 600: EWT XPOS 64.5 -> 66.6, ptb-sample 73.1 -> 73.3, zh_gsdsimp
#: UPOS 48.3 -> 48.9, ja_gsd UPOS 63.8 -> 64.1 (never lower; docs/experiments/features.md, "Why EWT falls short");
#: each run that reached 600 under the rule gained by 1000: EWT XPOS 66.6 -> 68.2, EWT UPOS 66.6 -> 67.7, hu_szeged
#: UPOS 56.6 -> 58.1 (features.md, "The pass cap: 600 -> 1000"); runs the rule stops earlier are unchanged.
#: A pass costs 1.2x a categorical em pass since L-BFGS's BLAS runs on one thread.
FAMILY_MAX_ITER = {"features": 1000}
#: The minibatch algorithms (``n_epochs=None``): at most MAX_EPOCHS passes over the data, stopped once the held-out
#: log-likelihood, computed at the end of each epoch on a seeded HELDOUT_FRACTION of the sentences (at most
#: HELDOUT_MAX_TOKENS tokens; the single-sequence algorithms: the end of the sequence), has gained no more than
#: STOCHASTIC_TOL of its best for STOCHASTIC_PATIENCE epochs (docs/experiments/defaults.md, "The minibatch
#: algorithms").
MAX_EPOCHS = 50
HELDOUT_FRACTION = 0.05
HELDOUT_MAX_TOKENS = 100_000
STOCHASTIC_TOL = 1e-4
STOCHASTIC_PATIENCE = 3
#: On a cluster the minibatch size is planned to keep 500 minibatches in the run (``planned_batch_size``); a run
#: that stops on held-out data is planned for at most PLANNED_EPOCHS epochs, about the fewest the default runs
#: took before the stop (9-14 on wsjdev, wsj1k, ptb-sample and EWT), so that a stopped run still has its 500.
PLANNED_EPOCHS = 10
#: tol=None: the batch algorithms' relative tolerance (against the progress since the first pass)
TOL = 1e-5
#: What ``learn_hyper=None`` (the default) learns per algorithm: ``(mode, priors held at DEFAULT_PRIORS)``.
#: cvi2 learns an emission concentration per state, capped at the pooled estimate, with alpha held at 1 (the
#: uniform prior on each transition row): within 1 M-1 point of the grid's best point on wsj1k (+1.3, 10
#: seeds), ptb-sample (-0.4), all of EWT (+2.2 against its oracle grid; EWT train -1.1 against the old default
#: point), Brown-12 (+1.0 against its oracle grid, -0.6 against the old default point),
#: above it on 8 UD treebanks (+1.2 to +3.0, 3 seeds),
#: where one symmetric learned beta lost 1-10 points and learning alpha too costs 1-2.5
#: (docs/experiments/defaults.md, "Per-state emission concentrations").  svi learns alpha and beta at every
#: epoch's end by the ELBO's own update, from the grid's point: on the dev set wsjdev +1.3 M-1 / +1.2 V-M over
#: the priors held (10 seeds), wsj1k +1.5, ptb-sample +0.1 (10 seeds), EWT 0.0, Brown-12 -0.1 (3 seeds)
#: (docs/experiments/defaults.md, "svi learns its priors by default").  The other algorithms hold the grid's
#: priors: empirical Bayes of a symmetric beta merges states on small corpora, and scvi's evidence of its
#: expected counts collapses the 45-tag sets.
DEFAULT_LEARNING = {"cvi2": ("per-state", ("alpha",)), "svi": (True, ())}


def default_priors(infer: str) -> tuple[float, float]:
    """``(alpha, beta)`` used by ``infer`` when the user gives none (see :data:`DEFAULT_PRIORS`)."""
    return DEFAULT_PRIORS[infer]


def start_priors(infer: str, alpha: float | None, beta: float | None, learn_hyper, map_estimate: bool, K: int,
                 burn_in: int) -> tuple[Priors, str | None]:
    """The priors a fit of ``infer`` starts from, and a warning when ``learn_hyper`` asks for nothing learnable.

    A prior given as a number is held; ``None`` starts at :data:`DEFAULT_PRIORS` and, with ``learn_hyper``, is
    re-estimated by empirical Bayes after every pass past ``burn_in`` (:meth:`induce.algorithms.Priors.update`;
    the minibatch algorithms: :meth:`~induce.algorithms.Priors.epoch_update`); ``learn_hyper=None``: the
    algorithm's choice, :data:`DEFAULT_LEARNING`; ``"per-state"``: a ``(K,)`` emission concentration.  Plain EM
    has no prior to learn (``map_estimate`` gives it one, and keeps both priors at 1 or above).
    """
    mode, held = (learn_hyper, ()) if learn_hyper is not None else DEFAULT_LEARNING.get(infer, (False, ()))
    floor = 1.0 if infer == "em" and map_estimate else 0.0
    start = default_priors(infer)
    priors = Priors(max(floor, start[0]) if alpha is None else float(alpha),
                    max(floor, start[1]) if beta is None else float(beta), floor=floor, burn_in=burn_in)
    learns = bool(mode) and (infer != "em" or map_estimate)
    priors.learned = tuple(name for name, given in (("alpha", alpha), ("beta", beta))
                           if learns and given is None and name not in held)
    if mode == "per-state" and "beta" in priors.learned:
        priors.beta = passes.per_state(priors.beta, K)
    warning = None
    if learn_hyper and not learns:  # asked for, and nothing to learn: say so rather than ignore it
        warning = (f"hmm {infer}: learn_hyper ignored: maximum-likelihood em has no prior "
                   "(map_estimate=True gives it one)")
    return priors, warning

"""Merge moves for the HDP-HSMM, accepted by batch vi's ELBO (the start of :class:`HDPHSMMSegmenter`).

The HMM's posterior, the HSMM's default start (:func:`induce.series.hsmm.hmm_start`), models a long regular
segment as a chain of short geometric states with the same emissions: on 3,000 steps from a 3-state HSMM
(durations 8 / 15 / 25) the HMM truncated at 10 uses 8 states, and the HDP-HSMM fitted from there keeps 6,
three of them at mean 4 with mean durations 1.4-2.2 that alternate (docs/experiments/hsmm.md, "Learned
concentrations and the start").  No pass of coordinate ascent can empty one of them.  A merge move, as the
HDP-HMM's (:mod:`induce.infer.hdp_merge`, after Hughes, Stephenson & Sudderth 2015), relabels state ``l`` as
``k`` in the posterior ``q(x_t)``, fits from there for a few trial passes and keeps the merged fit when its
ELBO beats the unmerged fit's: the ELBO charges every state its Dirichlet, emission and duration factors, so a
duplicated state is a loss, and the merged state's long durations are what the HSMM's duration model gains.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .series import emission_rows
from .series_hsmm import HSMMFit, hsmm_posterior

#: states with less than this share of the steps are not merge candidates
MIN_SHARE = 0.005


def posterior(fit: HSMMFit, result, sequences: list[np.ndarray]) -> np.ndarray:
    """``q(x_t)`` ``(sum T, K)`` of the stacked sequences under a vi fit's final factors."""
    logpi, logA, logD = fit._potentials("vi", result.trans, result.dur_stats)
    return np.vstack([hsmm_posterior(logpi, logA, emission_rows("vi", fit.family, x, result.stats), logD)[1]
                      for x in sequences])


def candidate_pairs(rows: np.ndarray, gamma: np.ndarray) -> list[tuple[int, int]]:
    """Pairs ``(k, l)`` of states with at least :data:`MIN_SHARE` of the steps, most alike emissions first, ``k``
    the more used (it survives).  Alike: the smallest mean ``|log p(x_t | k) - log p(x_t | l)|`` (``rows``, the
    expected log-emissions) over the steps either state holds, weighted by ``q(x_t = k) + q(x_t = l)``."""
    usage = gamma.sum(axis=0)
    used = [int(k) for k in np.argsort(-usage, kind="stable") if usage[k] >= MIN_SHARE * gamma.shape[0]]
    scored = []
    for a, k in enumerate(used):
        for l in used[a + 1:]:
            w = gamma[:, k] + gamma[:, l]
            scored.append((float(w @ np.abs(rows[:, k] - rows[:, l]) / w.sum()), k, l))
    return [(k, l) for _, k, l in sorted(scored)]


def merge_moves(fit: HSMMFit, sequences: list[np.ndarray], trial_passes: int = 40, max_trials: int = 20):
    """Batch vi from ``fit.init_gamma``, then greedy merges: for the most alike pair of states (see
    :func:`candidate_pairs`), up to ``trial_passes`` vi passes (the fit's stopping rule) from the merged
    posterior; accepted when the trial's ELBO beats the current fit's, and then fitted on to convergence
    (unless the trial converged) and the candidates recomputed; at most ``max_trials`` trials.  (10 trial
    passes were too few: a true state split into two alternating halves stayed split, 4 states for 3;
    40: 3, docs/experiments/hsmm.md.)  Returns ``(fit, result, accepted)``: the vi fit object and result that
    won, and the merges kept as ``(k, l)`` pairs."""
    current = dataclasses.replace(fit, infer="vi")
    result, accepted, rejected, trials = current.run(sequences), [], set(), 0
    while trials < max_trials:
        gamma = posterior(current, result, sequences)
        rows = emission_rows("vi", current.family, np.vstack(sequences), result.stats)
        pairs = [p for p in candidate_pairs(rows, gamma) if p not in rejected]
        if not pairs:
            break
        k, l = pairs[0]
        gamma[:, k] += gamma[:, l]
        gamma[:, l] = 0.0
        trial = dataclasses.replace(fit, infer="vi", init_gamma=gamma, n_iter=min(trial_passes, fit.n_iter))
        trials += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a trial's cap is not the fit's
            trial_result = trial.run(sequences)
        if trial_result.trace[-1] > result.trace[-1]:
            current, result, rejected = trial, trial_result, set()
            if not trial_result.converged:
                current = dataclasses.replace(fit, infer="vi", init_gamma=gamma)
                result = current.run(sequences)
            accepted.append((k, l))
        else:
            rejected.add((k, l))
    return current, result, accepted

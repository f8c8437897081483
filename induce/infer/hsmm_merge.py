"""Merge moves for the HDP-HSMM, accepted by batch vi's ELBO (the start of :class:`HDPHSMMSegmenter`).

The HMM's posterior, the HSMM's default start (:func:`induce.series.hsmm.hmm_start`), models a long regular
segment as a chain of short geometric states with the same emissions: on 3,000 steps from a 3-state HSMM
(durations 8 / 15 / 25) the HMM truncated at 10 uses 8 states, and the HDP-HSMM fitted from there keeps 6,
three of them at mean 4 with mean durations 1.4-2.2 that alternate (docs/experiments/hsmm.md, "Learned
concentrations and the start").  No pass of coordinate ascent can empty one of them.  A merge move, as the
HDP-HMM's (:mod:`induce.algorithms.hdp_moves`, after Hughes, Stephenson & Sudderth 2015), relabels state ``l`` as
``k`` in the posterior ``q(x_t)``, fits from there for a few trial passes and keeps the merged fit when its
ELBO beats the unmerged fit's: the ELBO charges every state its Dirichlet, emission and duration factors, so a
duplicated state is a loss, and the merged state's long durations are what the HSMM's duration model gains.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from .series import emission_rows
from .series_hsmm import HSMMFit, hsmm_posterior, runs, sequence_stats

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


#: a split proposal's unit: a third of the state's median run length (see :func:`split_candidates`)
PIECES_PER_RUN = 3


def split_candidates(gamma: np.ndarray, stacked: np.ndarray, spans) -> list[tuple[int, np.ndarray]]:
    """Split proposals ``(k, moved)`` for every state with at least :data:`MIN_SHARE` of the steps, the most
    divisible first: the runs of ``k`` in the posterior's ``argmax`` labels, cut into pieces of a
    :data:`PIECES_PER_RUN`-th of their median length, are cut in two by weighted 2-means on the pieces' mean
    observations (standardised per feature; weights the piece lengths), ``moved`` the steps of the smaller-mean
    group.  A piece of a run, not a step, is the unit: two states with overlapping emissions (Poisson rates 2 and
    6) overlap step by step but not as means over a few steps; and not a whole run, since a state that holds two
    true ones joins their neighbouring segments into one run (no self-transitions), whose mean lies between.
    Divisible: the share of the pieces' weighted spread between the two groups (2-means on one Gaussian mode
    leaves ~0.64, on two modes more)."""
    labels = gamma.argmax(axis=1)
    segs = [(lo + s, lo + e, k) for lo, hi in spans for s, e, k in runs(labels[lo:hi])]
    csum = np.vstack([np.zeros((1, stacked.shape[1])), np.cumsum(stacked, axis=0)])
    out = []
    for k in np.flatnonzero(gamma.sum(axis=0) >= MIN_SHARE * gamma.shape[0]):
        mine = [(s, e) for s, e, j in segs if j == k]
        width = max(1, int(np.median([e - s for s, e in mine])) // PIECES_PER_RUN)
        lo = np.concatenate([np.arange(s, e, width) for s, e in mine])
        hi = np.minimum(lo + width, np.concatenate([np.full(len(range(s, e, width)), e) for s, e in mine]))
        if len(lo) < 4:
            continue
        w = (hi - lo).astype(float)
        means = (csum[hi] - csum[lo]) / w[:, None]
        z = means / np.maximum(means.std(axis=0), 1e-12)
        with threadpool_limits(1):
            km = KMeans(2, n_init=3, random_state=0).fit(z, sample_weight=w)
        groups = km.labels_
        spread = float(w @ ((z - np.average(z, axis=0, weights=w)) ** 2).sum(axis=1))
        if groups.min() == groups.max() or spread <= 0:
            continue
        low = int(np.argmin(km.cluster_centers_.sum(axis=1)))
        moved = np.concatenate([np.arange(a, b) for a, b in zip(lo[groups == low], hi[groups == low])])
        out.append((1.0 - km.inertia_ / spread, int(k), moved))
    return [(k, moved) for _, k, moved in sorted(out, key=lambda c: -c[0])]


#: merges of the most alike pairs tried before any split (the rest after the splits): on 6 true states the merges
#: of all pairs used every trial, and the one state holding two was never split (docs/experiments/hsmm.md)
MERGES_FIRST = 3


def proposals(current: HSMMFit, result, sequences: list[np.ndarray], rejected=frozenset()):
    """Every move from the current fit not in ``rejected`` (``_key``), in trial order: ``(("merge", k, l) |
    ("split", k, l), q(x_t))``; merges of the :data:`MERGES_FIRST` most alike pairs (:func:`candidate_pairs`), then
    splits of the most divisible states (:func:`split_candidates`) into the least used state while one has under
    :data:`MIN_SHARE` of the steps, then the other merges."""
    gamma = posterior(current, result, sequences)
    stacked = np.vstack(sequences)
    pairs = candidate_pairs(emission_rows("vi", current.family, stacked, result.stats), gamma)
    for k, l in pairs[:MERGES_FIRST]:
        if ("merge", k, l) not in rejected:
            yield ("merge", k, l), _merged(gamma, k, l)
    usage = gamma.sum(axis=0)
    l = int(np.argmin(usage))
    if usage[l] < MIN_SHARE * gamma.shape[0]:
        ends = np.cumsum([x.shape[0] for x in sequences])
        for k, moved in split_candidates(gamma, stacked, list(zip(np.concatenate([[0], ends[:-1]]), ends))):
            if ("split", k) not in rejected:
                split = gamma.copy()
                split[moved, l] = split[moved, k]
                split[moved, k] = 0.0
                yield ("split", k, l), split
    for k, l in pairs[MERGES_FIRST:]:
        if ("merge", k, l) not in rejected:
            yield ("merge", k, l), _merged(gamma, k, l)


def _merged(gamma: np.ndarray, k: int, l: int) -> np.ndarray:
    """``q(x_t)`` with state ``l`` relabelled as ``k``."""
    merged = gamma.copy()
    merged[:, k] += merged[:, l]
    merged[:, l] = 0.0
    return merged


def used_states(result, family, n_steps: int) -> int:
    """States with at least :data:`MIN_SHARE` of the steps in a fit's statistics."""
    return int(np.sum(family.counts(result.stats) >= MIN_SHARE * n_steps))


def _key(move: tuple) -> tuple:
    """A move's identity among the rejected: a merge its pair, a split its state (its target is any unused one)."""
    return move[:2] if move[0] == "split" else move


#: a split is kept only when its trial's ELBO gains at least this many nats per step: on the recovery series
#: (3,200 steps) the splits that separate two true states gained 111-162 nats (K = 6), the ones that cut a true
#: Gaussian state in two 0.6-4 nats (K = 3, seeds 1, 4, 7, 9: 4-5 states for 3); docs/experiments/hsmm.md
SPLIT_GAIN = 0.01


def merge_moves(fit: HSMMFit, sequences: list[np.ndarray], trial_passes: int = 40, max_trials: int = 20):
    """Batch vi from ``fit.init_gamma``, then greedy moves (:func:`proposals`): for the next move not yet
    rejected, up to ``trial_passes`` vi passes (the fit's stopping rule) from the moved posterior; kept when the
    trial's ELBO beats the current fit's (a split's by :data:`SPLIT_GAIN` nats a step), then fitted on to convergence (unless the trial converged) and the
    proposals recomputed; at most ``max_trials`` trials.  A trial that ends with as many used states as before
    (the moved posterior relabelled back, a slightly better optimum of the same states) is rejected: kept, its
    relabelling made every rejected pair new and the same merges were re-tried until the trials ran out (K = 6,
    seed 0 of the recovery table: the split never ran, docs/experiments/hsmm.md).
    (10 trial passes were too few: a true state split into two alternating halves stayed split, 4 states for 3;
    40: 3, docs/experiments/hsmm.md.)  Returns ``(fit, result, accepted)``: the vi fit object and result that
    won, and the moves kept as ``("merge" | "split", k, l)``."""
    current = dataclasses.replace(fit, infer="vi")
    result, accepted, rejected, trials = current.run(sequences), [], set(), 0
    n_steps = sum(x.shape[0] for x in sequences)
    while trials < max_trials:
        move = next(proposals(current, result, sequences, rejected), None)
        if move is None:
            break
        (kind, k, l), gamma = move
        trial = dataclasses.replace(fit, infer="vi", init_gamma=gamma, n_iter=min(trial_passes, fit.n_iter))
        trials += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a trial's cap is not the fit's
            trial_result = trial.run(sequences)
        rejected.add(_key((kind, k, l)))
        margin = SPLIT_GAIN * n_steps if kind == "split" else 0.0
        if (trial_result.trace[-1] <= result.trace[-1] + margin
                or used_states(trial_result, fit.family, n_steps) == used_states(result, fit.family, n_steps)):
            continue
        current, result = trial, trial_result
        if not trial_result.converged:
            current = dataclasses.replace(fit, infer="vi", init_gamma=gamma)
            result = current.run(sequences)
        accepted.append((kind, k, l))
        rejected = set()
    return current, result, accepted


#: states under this share of the steps are delete candidates after a collapsed fit (:func:`delete_moves`): the
#: share :func:`induce.infer.hdp.effective_states` leaves out, which such states together exceeded
DELETE_SHARE = 0.05


def _expected_potential(c, n, g, rows, logpi, logA, logD) -> float:
    """``E_q[log potential]`` of one item's posterior (expected start and boundary counts ``c`` (K+1, K),
    duration counts ``n`` (K, D), marginals ``g`` (T, K)) under the potentials (``0 * -inf`` taken as 0)."""
    trans = np.vstack([logpi[None, :], logA])
    with np.errstate(invalid="ignore"):
        return float(np.where(c > 0, c * trans, 0.0).sum() + np.where(n > 0, n * logD, 0.0).sum()
                     + np.where(g > 0, g * rows, 0.0).sum())


def local_bound(fit: HSMMFit, result, sequences: list[np.ndarray], rule: str, deleted=()):
    """``(bound, (C, S, Sd))`` of one local step from a fit's statistics: ``q(x)`` of every sequence under the
    ``rule`` potentials (``cvi2``: the collapsed predictives) with the ``deleted`` states barred (no segment
    enters them), scored by the ELBO with every global factor at its update from ``q(x)``'s statistics:
    ``E_q[log p~(x, y | stats(q))] + H(q) - KL(stats(q))``, ``H(q) = log Z - E_q[log potential]`` (the bound
    of thesis eq. 5.13 for the collapsed HDP-HMM: the integrated model at the expected counts plus the entropy
    of ``q``; it charges every state its prior factors, which the collapsed predictive does not)."""
    logpi, logA, logD = fit._potentials(rule, result.trans, result.dur_stats)
    logpi, logA = logpi.copy(), logA.copy()
    logpi[list(deleted)], logA[:, list(deleted)] = -np.inf, -np.inf
    K, entropy, local = fit.n_states, 0.0, []
    C, N = np.zeros((K + 1, K)), np.zeros((K, fit.durations.max_duration))
    S = 0.0
    for X in sequences:
        rows = emission_rows(rule, fit.family, X, result.stats)
        logz, c, n, g = sequence_stats(logpi, logA, rows, logD)
        entropy += logz - _expected_potential(c, n, g, rows, logpi, logA, logD)
        C, N, S = C + c, N + n, S + fit.family.stats(X, g)
        local.append((X, c, n, g))
    Sd = fit.durations.stats(N)
    vpi, vA, vD = fit._potentials("vi", C, Sd)
    expected = sum(_expected_potential(c, n, g, emission_rows("vi", fit.family, X, S), vpi, vA, vD)
                   for X, c, n, g in local)
    bound = expected + entropy - fit.transition_bound(C) - fit.family.kl(S) - fit.durations.kl(Sd)
    return bound, (C, S, Sd)


def delete_moves(fit: HSMMFit, result, sequences: list[np.ndarray]) -> list[int]:
    """Delete moves (Hughes, Stephenson & Sudderth 2015) after a collapsed (cvi2, scvi) fit, for the states under
    :data:`DELETE_SHARE` of the steps: first all of them barred at once in one local step, kept when the bound of
    :func:`local_bound` beats the step with them allowed; else each, least used first, kept when it beats the step
    with it (and the states deleted before) allowed.  The fit's statistics become the last kept step's.

    The collapsed predictive of a nearly empty state is its broad prior predictive, which explains single outlying
    steps (Poisson tails) better than the used states' and is never charged for it, so the collapsed sweeps fill
    spare states with a few steps each (K = 4, Poisson emissions: 4-6 such states of 3-25 steps,
    docs/experiments/hsmm.md); the merge moves, on batch vi before the collapsed fit, never see them.  All at once
    first: cvi2 with a learned ``sigma`` of 30 spread one true state over 7 copies of 84-281 steps (K = 4, seed 7);
    barring any one copy lost 3-6 nats, the six small ones together gained 0.9.  Returns the deleted states;
    ``result`` is changed in place."""
    n_steps = sum(x.shape[0] for x in sequences)
    usage = fit.family.counts(result.stats)
    candidates = [int(l) for l in np.argsort(usage, kind="stable") if 0.5 <= usage[l] < DELETE_SHARE * n_steps]
    best, stats = local_bound(fit, result, sequences, fit.infer)
    if len(candidates) > 1:  # all at once: copies of one state gain only together
        trial, trial_stats = local_bound(fit, result, sequences, fit.infer, candidates)
        if trial > best:
            result.trans, result.stats, result.dur_stats = trial_stats
            return candidates
    deleted = []
    for l in candidates:
        trial, trial_stats = local_bound(fit, result, sequences, fit.infer, deleted + [l])
        if trial > best:
            best, stats = trial, trial_stats
            deleted.append(l)
    if deleted:
        result.trans, result.stats, result.dur_stats = stats
    return deleted

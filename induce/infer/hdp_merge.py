"""Merge moves for batch CVI of the HDP-HMM, accepted by the collapsed bound (thesis eq. 5.13).

Coordinate ascent from random local posteriors can end with one true state split
into two (docs/experiments/hdp_defaults.md, "Merge moves"): both halves emit alike,
and no single-sentence update can empty one of them.  A merge move, as in the
memoized variational inference of Hughes, Stephenson & Sudderth (2015) for the
HDP-HMM, relabels state ``l`` as state ``k`` in every stored local posterior
(the marginals ``q(z_t)`` and the expected transition counts, rows and columns),
runs a few ordinary CVI passes from there and from the unmerged state alike, and
keeps the merged fit if its collapsed bound (:func:`induce.infer.hdp.collapsed_bound`)
is the higher.  The bound, unlike the predictive log-likelihood, charges every
extra state its Dirichlet normalisers and stick, so a duplicated state is a loss.
"""

from __future__ import annotations

import copy
from typing import Callable

import numpy as np


def merge_locals(sent_trans: np.ndarray, gamma: np.ndarray, k: int, l: int) -> None:
    """Relabel state ``l`` as ``k`` in the local statistics, in place.

    ``gamma`` ``(N, K)``: ``q(z_t = k) += q(z_t = l)``; ``sent_trans`` ``(I, K+1, K)``: column
    ``l`` into column ``k``, then row ``l+1`` into row ``k+1`` (row 0 is the start state).  The
    result is the exact expected statistics of the merged posterior, so every total
    (:func:`induce.infer.hmm_passes.totals_from_local`) keeps its sum.
    """
    gamma[:, k] += gamma[:, l]
    gamma[:, l] = 0.0
    sent_trans[:, :, k] += sent_trans[:, :, l]
    sent_trans[:, :, l] = 0.0
    sent_trans[:, k + 1, :] += sent_trans[:, l + 1, :]
    sent_trans[:, l + 1, :] = 0.0


def candidate_pairs(emit: np.ndarray, min_usage: float) -> list[tuple[int, int]]:
    """Pairs of states with at least ``min_usage`` expected tokens, most alike emissions first.

    Alike = smallest Jensen-Shannon divergence between the normalised emission columns; the
    pair is ``(k, l)`` with ``k`` the more used state (the one that survives).
    """
    usage = emit.sum(axis=0)
    used = [int(k) for k in np.argsort(-usage, kind="stable") if usage[k] >= min_usage]
    P = emit / np.maximum(usage, 1e-300)[None, :]

    def js(a, b):
        m = 0.5 * (a + b)
        with np.errstate(divide="ignore", invalid="ignore"):
            ta = np.where(a > 0, a * np.log(a / m), 0.0)
            tb = np.where(b > 0, b * np.log(b / m), 0.0)
        return 0.5 * float(ta.sum() + tb.sum())

    pairs = [(used[i], used[j]) for i in range(len(used)) for j in range(i + 1, len(used))]
    return sorted(pairs, key=lambda p: js(P[:, p[0]], P[:, p[1]]))


def merge_round(state, step: Callable, score: Callable, trial_passes: int, min_usage: float,
                max_trials: int) -> tuple[object, list[dict]]:
    """Greedy merges: for each candidate pair (:func:`candidate_pairs`) compare ``trial_passes``
    passes from the merged state with as many from ``state``; keep the merged one when its bound
    is higher, then go on from it.  ``state`` has ``sent_trans``, ``gamma`` and ``emit`` and is
    copied (never changed); ``step(s)`` runs one pass on ``s``; ``score(s)`` is the bound.
    Returns the state to continue from (``state`` itself if nothing was accepted) and one record
    per trial."""

    def advance(s):
        for _ in range(trial_passes):
            step(s)
        return s, score(s)

    records, tried = [], 0
    base, base_score = advance(copy.deepcopy(state))
    current = state
    changed = True
    while changed and tried < max_trials:
        changed = False
        for k, l in candidate_pairs(current.emit, min_usage):
            if tried >= max_trials:
                break
            tried += 1
            trial = copy.deepcopy(current)
            merge_locals(trial.sent_trans, trial.gamma, k, l)
            trial, trial_score = advance(trial)
            accepted = trial_score > base_score
            records.append({"merge": [k, l], "bound": trial_score, "baseline": base_score, "accepted": accepted})
            if accepted:
                current = trial
                base, base_score = advance(copy.deepcopy(trial))
                changed = True
                break
    return current, records

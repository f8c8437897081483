"""Merge and split moves for the HDP-HMM's cvi and scvi, accepted by the collapsed bound (thesis eq. 5.13), and
their schedule (:class:`MoveSchedule`).

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

The opposite failure, one state holding two true ones, is undone by a split move
(:func:`split_locals`): the sentences that use state ``k`` are cut in two by 2-means
on what distinguishes them there (their words in ``k`` and the states they enter
``k`` from), the second group's share of ``k`` moves to an unused state, and the same
trial passes and bound decide.
"""

from __future__ import annotations

import copy
from typing import Callable

import numpy as np
from scipy.special import xlogy
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from ..infer import hdp



# split-merge moves (cvi, Dir(beta); see merge_moves): rounds from MERGE_EVERY (at most n_iter / 10) passes after the
# burn-in; each trial runs MERGE_TRIAL_PASSES passes from the changed and from the unchanged fit; states with fewer
# expected tokens than MERGE_MIN_USAGE are left alone; at most MERGE_MAX_TRIALS trials a round, and all rounds'
# trial passes (2 x 3 a trial, a generous count of the baselines) within n_iter / MOVE_BUDGET_SHARE = n_iter / 4
# (docs/experiments/hdp_defaults.md, "Split-merge moves").  scvi (the rounds on its sentence memory) runs fewer epochs
# (300 on the recovery data) and needs about as many trials: 2 passes a trial within n_iter / 3, which reach the
# true states there as 3 within n_iter / 2 do (hdp_defaults.md, "scvi: memoized split-merge moves")
MERGE_EVERY = 100
MERGE_TRIAL_PASSES = {"cvi": 3, "scvi": 2}
MERGE_MIN_USAGE = 1.0
MERGE_MAX_TRIALS = 20
MOVE_BUDGET_SHARE = {"cvi": 4, "scvi": 3}


class MoveSchedule:
    """When the split-merge rounds of one ``name`` (``cvi`` or ``scvi``) fit under ``loop``
    (:class:`induce.algorithms.loop.HDPLoop`) run, and their trial-pass budget: ``n_iter / 4`` passes for all
    rounds (``scvi``: ``n_iter / 3``, :data:`MOVE_BUDGET_SHARE`; a trial and its baseline count ``2 x``
    :data:`MERGE_TRIAL_PASSES`)."""

    def __init__(self, name: str, loop):
        self.loop, self.passes = loop, MERGE_TRIAL_PASSES[name]
        self.budget = loop.max_iter // MOVE_BUDGET_SHARE[name]
        self.every = max(1, min(MERGE_EVERY, loop.max_iter // 10))
        self.next = self.gap = None
        self.rounds_run = 0

    def due(self, it: int, stop: bool) -> bool:
        """Whether pass ``it`` ends with a round: the first ``every = min(MERGE_EVERY, n_iter // 10)`` passes after
        the burn-in, then ``every`` passes after a round that changed the fit and twice the last gap after one
        that did not, never in the last ``every`` passes; or a converged fit (``stop``) whose objective is finite
        while the budget still holds a trial."""
        if self.next is None:
            start = self.loop.learn_from if self.loop.burn_in is None else self.loop.burn_in + 1
            if start is not None:
                self.next, self.gap = start + self.every - 1, self.every
        scheduled = self.next is not None and it == self.next and it <= self.loop.max_iter - self.every
        return scheduled or (stop and not self.loop.monitor.diverged and self.budget >= 2 * self.passes)

    def run(self, state, step: Callable, score: Callable, data, seed: int, it: int,
            joint: bool = False) -> tuple[object, dict]:
        """One round (:func:`move_round`) from ``state``, its trials run by ``step`` and accepted by ``score``,
        within the budget; schedules the next.  Returns the state to go on from (``state`` itself if nothing
        was accepted) and the trace entries (accepted ``merges`` and ``splits``, ``move_trials``)."""
        trials = min(MERGE_MAX_TRIALS, self.budget // (2 * self.passes))
        state, records = move_round(state, step, score, self.passes, MERGE_MIN_USAGE, trials, data, int(seed), joint)
        self.budget -= 2 * self.passes * len(records)
        self.rounds_run += 1
        extra = {"merges": [r["merge"] for r in records if r["accepted"] and "merge" in r],
                 "splits": [r["split"] for r in records if r["accepted"] and "split" in r],
                 "move_trials": len(records)}
        self.gap = self.every if extra["merges"] or extra["splits"] else 2 * self.gap
        self.next = it + self.gap
        return state, extra


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
    # JS(p, q)^2 = (KL(p || m) + KL(q || m)) / 2 = H(m) - (H(p) + H(q)) / 2 with m = (p + q) / 2: one entropy per pair
    neg_h = xlogy(P, P).sum(axis=0)
    pairs, dist = [], []
    for i, k in enumerate(used):
        rest = used[i + 1:]
        m = 0.5 * (P[:, [k]] + P[:, rest])
        dist.extend(np.maximum(0.5 * (neg_h[k] + neg_h[rest]) - xlogy(m, m).sum(axis=0), 0.0))
        pairs.extend((k, l) for l in rest)
    return [pairs[i] for i in np.argsort(dist, kind="stable")]


def sentence_split(sent_trans: np.ndarray, gamma: np.ndarray, tokens: np.ndarray, offsets: np.ndarray, W: int,
                   k: int, seed: int) -> np.ndarray | None:
    """Sentences to move from state ``k`` to a new state: the smaller of two 2-means clusters.

    Each sentence with expected mass in ``k`` is described by its normalised word histogram within
    ``k`` (``q(z_t = k)`` per word) next to its normalised incoming transitions into ``k``
    (``E[C^i_{j,k}]``, ``j = 0..K``, self-transitions left out); clusters are weighted by that mass.
    Returns a boolean mask over sentences, or ``None`` if there is nothing to split.
    """
    I = offsets.shape[0] - 1
    sent = np.repeat(np.arange(I), np.diff(offsets))
    mass = np.bincount(sent, weights=gamma[:, k], minlength=I)
    words = np.zeros((I, W))
    np.add.at(words, (sent, tokens), gamma[:, k])
    incoming = sent_trans[:, :, k].copy()
    incoming[:, k + 1] = 0.0
    use = np.flatnonzero(mass > 0.5)
    if use.size < 2:
        return None
    feats = np.hstack([words[use] / mass[use, None],
                       incoming[use] / np.maximum(incoming[use].sum(axis=1, keepdims=True), 1e-300)])
    if np.allclose(feats, feats[0]):
        return None
    with threadpool_limits(1):  # a few hundred sentences: OpenMP threads would cost ten times the fit
        labels = KMeans(n_clusters=2, n_init=3, random_state=seed).fit(feats, sample_weight=mass[use]).labels_
    second = labels == 1 if mass[use][labels == 1].sum() <= mass[use][labels == 0].sum() else labels == 0
    mask = np.zeros(I, dtype=bool)
    mask[use[second]] = True
    return mask if 0 < mask.sum() < use.size else None


def split_locals(sent_trans: np.ndarray, gamma: np.ndarray, offsets: np.ndarray, k: int, l: int,
                 moved: np.ndarray) -> None:
    """Move state ``k`` of the sentences ``moved`` to the unused state ``l``, in place.

    Within a moved sentence every ``k`` becomes ``l`` (marginals, column ``k`` and row ``k+1`` of its
    expected transition counts), so the statistics stay the exact ones of a relabelled posterior.
    """
    tok = np.repeat(moved, np.diff(offsets))
    gamma[tok, l] = gamma[tok, k]
    gamma[tok, k] = 0.0
    st = sent_trans[moved]
    st[:, :, l] = st[:, :, k]
    st[:, :, k] = 0.0
    st[:, l + 1, :] = st[:, k + 1, :]
    st[:, k + 1, :] = 0.0
    sent_trans[moved] = st


def _advance(state, step: Callable, score: Callable, passes: int):
    """``passes`` passes of ``step`` on ``state`` (in place); returns it and its ``score``."""
    for _ in range(passes):
        step(state)
    return state, score(state)


def shared_states(gamma: np.ndarray, offsets: np.ndarray, moved: np.ndarray, k: int, share: float = 0.01) -> list[int]:
    """States other than ``k`` that both the ``moved`` sentences and the others use, most used first.

    A state is used by a group of sentences when it holds at least ``share`` of the group's expected
    tokens.  A joint split (:func:`move_round`) copies them with ``k``: where two kinds of sentences
    share a chain of states (the Beal grammar's ``(abc)*`` and ``(acb)*`` cycles in three states),
    splitting one state of the chain gains in its emissions what it loses in the transitions out of
    the others, and only splitting the whole chain is a gain.
    """
    tok = np.repeat(moved, np.diff(offsets))
    mass_in, mass_out = gamma[tok].sum(axis=0), gamma[~tok].sum(axis=0)
    both = (mass_in >= share * mass_in.sum()) & (mass_out >= share * mass_out.sum())
    both[k] = False
    return [int(j) for j in np.argsort(-(mass_in + mass_out), kind="stable") if both[j]]


def move_round(state, step: Callable, score: Callable, trial_passes: int, min_usage: float, max_trials: int,
               data, seed: int, joint: bool = False) -> tuple[object, list[dict]]:
    """Split trials for the used states, most used first (while an unused one is left; at most half of
    ``max_trials``), then :func:`merge_round` with the trials left.

    Each split (:func:`sentence_split`, :func:`split_locals`) is run for ``trial_passes`` passes and
    kept when its bound beats as many passes from the current state.  ``joint``: when the split of
    ``k`` alone is not kept, the same sentences also take a free state for each of the
    :func:`shared_states` (if enough are free), as one more trial.  Returns the state to go on from
    and one record per trial (``split``: the relabelled pairs ``[k, l, j, l', ...]``, flattened)."""

    records = []
    current = state
    base_score = None
    for k in [int(k) for k in np.argsort(-state.emit.sum(axis=0), kind="stable")]:
        usage = current.emit.sum(axis=0)
        free = np.flatnonzero(usage < min_usage)
        if usage[k] < 2 * min_usage or free.size == 0 or len(records) >= max_trials // 2:
            continue
        moved = sentence_split(current.sent_trans, current.gamma, data.tokens, data.offsets, data.W, k, seed)
        if moved is None:
            continue
        proposals = [[k]]
        if joint:
            others = shared_states(current.gamma, data.offsets, moved, k)
            if others and len(others) < free.size:
                proposals.append([k] + others)
        for states in proposals:
            if len(records) >= max_trials // 2:
                break
            if base_score is None:
                base_score = _advance(copy.deepcopy(current), step, score, trial_passes)[1]
            trial = copy.deepcopy(current)
            pairs = [(j, int(f)) for j, f in zip(states, free)]
            for j, f in pairs:
                split_locals(trial.sent_trans, trial.gamma, data.offsets, j, f, moved)
            trial, trial_score = _advance(trial, step, score, trial_passes)
            accepted = trial_score > base_score
            records.append({"split": [s for p in pairs for s in p], "bound": trial_score, "baseline": base_score,
                            "accepted": accepted})
            if accepted:
                current, base_score = trial, None
                break
    current, merged = merge_round(current, step, score, trial_passes, min_usage, max_trials - len(records))
    return current, records + merged


def merge_counts(trans: np.ndarray, emit: np.ndarray, k: int, l: int) -> None:
    """Merge state ``l`` into ``k`` in global counts, in place: transition column and row
    (``trans`` ``(K+1, K)``, row 0 the start) and emission column (``emit`` ``(W, K)``).
    (:func:`merge_locals` on one sentence, for the stochastic estimates that have no local store.)"""
    merge_locals(trans[None], emit, k, l)


def merge_entropy_loss(trans: np.ndarray, k: int, l: int) -> float:
    """What merging ``k`` and ``l`` takes from the entropy of ``q(z)``, estimated from the transition counts.

    Given the merged labels, the old ones say only which of ``k``, ``l`` each visit to the merged state
    was; read as a Markov chain with the expected counts ``E[C]``, every row ``j`` (the start, the
    other states, ``k`` and ``l`` themselves) chooses between them with entropy
    ``(a + b) log(a + b) - a log a - b log b``, ``a = E[C_jk]``, ``b = E[C_jl]``.  A sticky duplicate
    (whole sentences in ``k`` or in ``l``) loses little; a state whose tokens flip between the two
    loses about ``log 2`` a token, what it gains in eq. 5.10.
    """
    a = np.maximum(trans[:, k], 0.0)
    b = np.maximum(trans[:, l], 0.0)
    return float(np.sum(xlogy(a + b, a + b) - xlogy(a, a) - xlogy(b, b)))


def instant_merges(trans: np.ndarray, emit: np.ndarray, pi: np.ndarray, sigma: float, pseudo: np.ndarray,
                   total: float, min_usage: float, max_trials: int) -> list[tuple[int, int]]:
    """Greedy merges of global counts kept when they raise the bound of eq. 5.13 at once.

    For stochastic CVI, whose global counts ``N`` have no per-sentence store to run trial passes from:
    each candidate (:func:`candidate_pairs`) is scored without further passes, as eq. 5.10 plus the
    integrated emissions, ``pi`` of the merged state being the sum, minus the entropy the merge takes
    from ``q(z)`` (:func:`merge_entropy_loss`).  ``trans``, ``emit`` and ``pi`` are changed in place;
    returns the merged pairs.
    """
    def score(c_trans, c_emit, p):
        return (hdp.transition_log_evidence(c_trans, p, sigma)
                + hdp.emission_log_evidence(c_emit, pseudo, total))

    done, tried, changed = [], 0, True
    while changed and tried < max_trials:
        changed = False
        current = score(trans, emit, pi)
        for k, l in candidate_pairs(emit, min_usage):
            if tried >= max_trials:
                break
            tried += 1
            t2, e2, p2 = trans.copy(), emit.copy(), pi.copy()
            merge_counts(t2, e2, k, l)
            p2[k] += p2[l]
            if score(t2, e2, p2) - merge_entropy_loss(trans, k, l) > current:
                trans[:], emit[:], pi[:] = t2, e2, p2
                done.append((k, l))
                changed = True
                break
    return done


def merge_round(state, step: Callable, score: Callable, trial_passes: int, min_usage: float,
                max_trials: int) -> tuple[object, list[dict]]:
    """Greedy merges: for each candidate pair (:func:`candidate_pairs`) compare ``trial_passes``
    passes from the merged state with as many from ``state``; keep the merged one when its bound
    is higher, then go on from it.  A pair rejected once is not tried again in the round (the
    trials go to pairs not yet tried).  ``state`` has ``sent_trans``, ``gamma`` and ``emit`` and is
    copied (never changed); ``step(s)`` runs one pass on ``s``; ``score(s)`` is the bound.
    Returns the state to continue from (``state`` itself if nothing was accepted) and one record
    per trial."""

    records, tried, rejected = [], 0, set()
    if max_trials <= 0:
        return state, records
    base, base_score = _advance(copy.deepcopy(state), step, score, trial_passes)
    current = state
    changed = True
    while changed and tried < max_trials:
        changed = False
        for k, l in candidate_pairs(current.emit, min_usage):
            if tried >= max_trials:
                break
            if (k, l) in rejected:
                continue
            tried += 1
            trial = copy.deepcopy(current)
            merge_locals(trial.sent_trans, trial.gamma, k, l)
            trial, trial_score = _advance(trial, step, score, trial_passes)
            accepted = trial_score > base_score
            records.append({"merge": [k, l], "bound": trial_score, "baseline": base_score, "accepted": accepted})
            if not accepted:
                rejected |= {(k, l), (l, k)}
                continue
            current = trial
            base, base_score = _advance(copy.deepcopy(trial), step, score, trial_passes)
            changed = True
            break
    return current, records

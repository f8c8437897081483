"""Tagging metrics: predicted cluster ids (or tags) against gold tags.

All functions take flat integer arrays ``pred`` (predicted state / cluster id
per token) and ``gold`` (gold tag id per token) of equal length; ids need not be
contiguous.  ``offsets`` are CSR sentence offsets (``int64``, length
``n_sentences + 1``, ``offsets[0] == 0``, ``offsets[-1] == len(pred)``).

Definitions follow thesis section 3.8.2 ("Unsupervised PoS Induction"):

* many-to-one (M-1): each state is mapped to the gold tag it co-occurs with most
  often; the score is the accuracy of the mapped tagging;
* cross-validated many-to-one: the mapping is identified on one half of the
  sentences and the accuracy computed on the other half, and the reverse;
* greedy one-to-one (1-1): at most one state per tag, "greedily assigning hidden
  states to tags until either is used up";
* variation of information (V-I) = H(G|S) + H(S|G) (Meila 2003), in bits;
* V-measure (V-M, thesis eq. 3.105): h = 1 - H(G|S)/H(G), c = 1 - H(S|G)/H(S),
  V-M = 2hc / (h + c).

Metrics that depend on a mapping are invariant to renaming the predicted states.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import homogeneity_completeness_v_measure
from sklearn.metrics.cluster import contingency_matrix

from ..errors import InduceError


def _check_pair(pred, gold) -> tuple[np.ndarray, np.ndarray]:
    """Validate and return ``pred`` and ``gold`` as flat integer arrays of equal, non-zero length."""
    pred = np.asarray(pred)
    gold = np.asarray(gold)
    if pred.ndim != 1 or gold.ndim != 1:
        raise InduceError(f"tagging metrics expect flat arrays; got shapes {pred.shape} and {gold.shape}")
    if pred.shape != gold.shape:
        raise InduceError(f"predicted and gold tag arrays differ in length: {pred.size} vs {gold.size} tokens")
    if pred.size == 0:
        raise InduceError("tagging metrics need at least one token; got empty arrays")
    for name, arr in (("predicted", pred), ("gold", gold)):
        if not np.issubdtype(arr.dtype, np.integer):
            raise InduceError(f"{name} tags must be integer ids; got dtype {arr.dtype}")
    return pred, gold


def _contingency(pred: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Dense count matrix ``C[s, g]`` = #tokens with state ``s`` and gold tag ``g``
    (rows: sorted distinct states, columns: sorted distinct gold tags)."""
    return contingency_matrix(gold, pred, sparse=False).T.astype(np.int64)


def _majority_map(pred: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The many-to-one mapping learned from ``(pred, gold)``.

    Returns ``(states, tags)``: the sorted distinct states and, for each, the gold
    tag it co-occurs with most often (ties go to the smallest gold id).
    """
    states = np.unique(pred)
    tag_values = np.unique(gold)
    return states, tag_values[np.argmax(_contingency(pred, gold), axis=1)]


def _apply_map(states: np.ndarray, tags: np.ndarray, pred: np.ndarray, fallback: int) -> np.ndarray:
    """Map each predicted state through ``states -> tags``; unseen states get ``fallback``."""
    pos = np.minimum(np.searchsorted(states, pred), states.size - 1)
    known = states[pos] == pred
    return np.where(known, tags[pos], fallback)


def accuracy(pred, gold) -> float:
    """Share of tokens whose predicted id equals the gold id (for taggers whose
    states are tags, e.g. semi-supervised with a tag dictionary)."""
    pred, gold = _check_pair(pred, gold)
    return float(np.mean(pred == gold))


def many_to_one(pred, gold) -> float:
    """Many-to-one accuracy: map every state to its most frequent gold tag
    (thesis 3.8.2) and score the mapped tagging; equals sum_s max_g C[s, g] / N."""
    pred, gold = _check_pair(pred, gold)
    states, tags = _majority_map(pred, gold)
    return float(np.mean(_apply_map(states, tags, pred, fallback=-1) == gold))


def _check_offsets(offsets, n_tokens: int) -> np.ndarray:
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or offsets[-1] != n_tokens or np.any(np.diff(offsets) < 0):
        raise InduceError(
            f"sentence offsets must be non-decreasing, start at 0 and end at {n_tokens} (the token count)"
        )
    return offsets


def cross_validated_many_to_one(pred, gold, offsets) -> float:
    """Cross-validated many-to-one accuracy (thesis 3.8.2).

    Halving rule: with ``S`` sentences, the first half is sentences ``0 .. S//2 - 1``
    and the second half the remaining ``S - S//2`` sentences (contiguous, in corpus
    order, so the split is deterministic and never cuts a sentence).  The
    many-to-one mapping identified on one half is scored on the other half, and the
    reverse; the result is the plain mean of the two accuracies.  A state that never
    occurs in the half the mapping is learned from is mapped to that half's most
    frequent gold tag.  Needs at least two non-empty halves.
    """
    pred, gold = _check_pair(pred, gold)
    offsets = _check_offsets(offsets, pred.size)
    n_sent = offsets.size - 1
    cut = int(offsets[n_sent // 2])
    if n_sent < 2 or cut == 0 or cut == pred.size:
        raise InduceError("cross-validated many-to-one needs two halves with at least one token each")
    halves = [(slice(0, cut), slice(cut, None)), (slice(cut, None), slice(0, cut))]
    scores = []
    for train, test in halves:
        states, tags = _majority_map(pred[train], gold[train])
        values, counts = np.unique(gold[train], return_counts=True)
        mapped = _apply_map(states, tags, pred[test], fallback=int(values[np.argmax(counts)]))
        scores.append(np.mean(mapped == gold[test]))
    return float(np.mean(scores))


def _canonical_state_rank(counts: np.ndarray) -> np.ndarray:
    """Rank of each state (row) by its count row, descending lexicographically over gold tags.

    Used to break ties in the greedy mapping by a key that does not depend on the
    states' names: states with equal rows are interchangeable, so whichever of them
    is taken first, the greedy score is the same.
    """
    order = np.lexsort(tuple(-counts[:, g] for g in reversed(range(counts.shape[1]))))
    rank = np.empty(counts.shape[0], dtype=np.int64)
    rank[order] = np.arange(counts.shape[0])
    return rank


def one_to_one_greedy(pred, gold) -> float:
    """Greedy one-to-one accuracy (thesis 3.8.2).

    Cells ``(s, g)`` of the contingency matrix are visited by decreasing count; a
    cell assigns state ``s`` to tag ``g`` when neither is assigned yet, until states
    or tags are used up.  Unassigned states count as errors.  Ties are broken by the
    states' canonical rank (see ``_canonical_state_rank``), then by gold id, so the
    score is invariant to renaming the states.  Always <= :func:`one_to_one`.
    """
    pred, gold = _check_pair(pred, gold)
    counts = _contingency(pred, gold)
    rank = _canonical_state_rank(counts)
    rows, cols = np.nonzero(counts)
    cells = np.lexsort((cols, rank[rows], -counts[rows, cols]))
    used_states: set[int] = set()
    used_tags: set[int] = set()
    matched = 0
    for s, g in zip(rows[cells].tolist(), cols[cells].tolist()):
        if s in used_states or g in used_tags:
            continue
        used_states.add(s)
        used_tags.add(g)
        matched += int(counts[s, g])
        if len(used_states) == counts.shape[0] or len(used_tags) == counts.shape[1]:
            break
    return matched / pred.size


def one_to_one(pred, gold) -> float:
    """Optimal one-to-one accuracy: the injective state -> tag mapping maximising
    the number of correctly mapped tokens (Hungarian algorithm,
    ``scipy.optimize.linear_sum_assignment`` on the contingency matrix)."""
    pred, gold = _check_pair(pred, gold)
    counts = _contingency(pred, gold)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum()) / pred.size


def _entropy_bits(counts: np.ndarray) -> float:
    """Entropy in bits of the distribution proportional to the (non-negative) ``counts``."""
    p = counts[counts > 0].astype(np.float64)
    p /= p.sum()
    return float(-(p * np.log2(p)).sum())


def variation_of_information(pred, gold) -> float:
    """Variation of information in bits (Meila 2003):
    VI = H(S|G) + H(G|S) = 2 H(S, G) - H(S) - H(G) >= 0, zero iff the two
    partitions are equal up to renaming."""
    pred, gold = _check_pair(pred, gold)
    counts = _contingency(pred, gold)
    joint = _entropy_bits(counts)
    vi = 2.0 * joint - _entropy_bits(counts.sum(axis=1)) - _entropy_bits(counts.sum(axis=0))
    return max(vi, 0.0)


def v_measure(pred, gold) -> tuple[float, float, float]:
    """Homogeneity, completeness and V-measure (thesis eq. 3.105; Rosenberg &
    Hirschberg 2007), via ``sklearn.metrics.homogeneity_completeness_v_measure``."""
    pred, gold = _check_pair(pred, gold)
    h, c, v = homogeneity_completeness_v_measure(gold, pred)
    return float(h), float(c), float(v)


def tagging_report(pred, gold, offsets=None) -> dict:
    """Every unsupervised tagging metric at once.

    Keys: ``m1``, ``m1_cv`` (only with ``offsets``), ``1to1``, ``1to1_greedy``,
    ``vi`` (bits), ``homogeneity``, ``completeness``, ``vm``, plus ``tokens``,
    ``states`` and ``tags`` (distinct ids seen).
    """
    pred, gold = _check_pair(pred, gold)
    report = {"tokens": int(pred.size), "states": int(np.unique(pred).size), "tags": int(np.unique(gold).size)}
    report["m1"] = many_to_one(pred, gold)
    if offsets is not None:
        report["m1_cv"] = cross_validated_many_to_one(pred, gold, offsets)
    report["1to1"] = one_to_one(pred, gold)
    report["1to1_greedy"] = one_to_one_greedy(pred, gold)
    report["vi"] = variation_of_information(pred, gold)
    report["homogeneity"], report["completeness"], report["vm"] = v_measure(pred, gold)
    return report


#: the metrics :func:`tagging_scorer` can score with (higher is better for each)
SCORER_METRICS = {"vm": lambda pred, gold: v_measure(pred, gold)[2], "m1": many_to_one, "1to1": one_to_one}


def tagging_scorer(metric: str = "vm"):
    """A scikit-learn scorer ``scorer(estimator, X, y)``: ``metric`` (``vm``, ``m1`` or ``1to1``) of
    ``estimator.predict(X)`` against ``y``, the gold tags per sentence (lists of strings or ids, as
    ``[corpus.tag_strings("xpos", i) for i in range(len(corpus))]``), flattened; for ``GridSearchCV(...,
    scoring=tagging_scorer("vm"))`` and ``cross_val_score`` (docs/sklearn.md)."""
    if metric not in SCORER_METRICS:
        raise InduceError(f"tagging_scorer: metric must be one of {', '.join(SCORER_METRICS)}; got {metric!r}")
    measure = SCORER_METRICS[metric]

    def scorer(estimator, X, y) -> float:
        pred = np.concatenate([np.asarray(p).ravel() for p in estimator.predict(X)] or [np.zeros(0, int)])
        gold = [t for sentence in y for t in sentence]
        _, gold_ids = np.unique(np.asarray(gold, dtype=str), return_inverse=True)
        return float(measure(pred, gold_ids))

    scorer.__name__ = f"tagging_scorer_{metric}"
    return scorer

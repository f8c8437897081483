"""Word-alignment quality with sure and possible links (Och & Ney 2003).

For predicted links A, sure links S and possible links P (with S a subset of P),
summed over the corpus::

    precision = |A & P| / |A|
    recall    = |A & S| / |S|
    AER       = 1 - (|A & S| + |A & P|) / (|A| + |S|)
    F1        = 2 * precision * recall / (precision + recall)

Links are ``(i, j)`` pairs; their index base does not matter as long as the
three inputs agree.  ``possible`` is taken as ``possible | sure``, so callers may
pass the sure links only once.
"""

from __future__ import annotations

from ..errors import InduceError


def alignment_scores(predicted, sure, possible) -> dict:
    """Corpus-level precision, recall, AER and F1 (see the module docstring).

    ``predicted``, ``sure`` and ``possible`` are lists (one entry per sentence
    pair) of sets of ``(i, j)`` links.  Also returns the summed counts
    ``predicted_links``, ``sure_links``, ``possible_links`` and ``sentences``.
    Empty denominators give 0.0 for precision / recall and AER 0.0 when both A
    and S are empty.
    """
    if not len(predicted) == len(sure) == len(possible):
        raise InduceError(
            f"alignment lists differ in length: {len(predicted)} predicted, {len(sure)} sure, {len(possible)} possible"
        )
    n_a = n_s = n_p = a_and_s = a_and_p = 0
    for a, s, p in zip(predicted, sure, possible):
        a, s = set(a), set(s)
        p = set(p) | s
        n_a += len(a)
        n_s += len(s)
        n_p += len(p)
        a_and_s += len(a & s)
        a_and_p += len(a & p)
    precision = a_and_p / n_a if n_a else 0.0
    recall = a_and_s / n_s if n_s else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "aer": 1.0 - (a_and_s + a_and_p) / (n_a + n_s) if n_a + n_s else 0.0,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "sentences": len(predicted),
        "predicted_links": n_a,
        "sure_links": n_s,
        "possible_links": n_p,
    }

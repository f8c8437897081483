"""Dependency attachment accuracy (directed and undirected).

Heads are flat integer arrays over the corpus, one entry per word, in the
CoNLL convention: 1-based position of the head *within the sentence*, 0 = root.
``offsets`` are the CSR sentence offsets (``int64``, ``n_sentences + 1``); without
them the whole array is one sentence.

* directed accuracy: share of scored words ``i`` with ``pred[i] == gold[i]``;
* undirected accuracy: also accepts the reversed edge, i.e. ``pred[i] == j`` with
  ``j != 0`` and ``gold[j] == i`` (both 1-based within the sentence); a root
  attachment is the edge ``(0, i)`` and is correct only when ``gold[i] == 0``.

Punctuation: pass ``mask = ~punctuation_mask(tags, tagset)`` to score only
non-punctuation words (heads that point at punctuation are still allowed).  The
result states the convention in ``"punctuation"``: ``"included"`` when no mask is
given, ``"excluded"`` when one is.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..corpus.transforms import CONLL2007_PUNCT as CONLL2007_PUNCTUATION
from ..corpus.transforms import PTB_PUNCT as PTB_PUNCTUATION
from ..corpus.transforms import PUNCT_TAGSETS as _PUNCTUATION
from ..corpus.transforms import UPOS_PUNCT as UPOS_PUNCTUATION
from ..errors import InduceError


def punctuation_mask(tags, tagset: str = "ptb") -> np.ndarray:
    """Boolean array, True where the tag is punctuation in ``tagset``
    (``"ptb"``: '' `` , . : -LRB- -RRB- # $; ``"upos"``: PUNCT, SYM;
    ``"conll2007"``: the CPOS tags PUNT and F; ``"universal"``: ``.``); the sets
    are :data:`induce.corpus.transforms.PUNCT_TAGSETS`, shared with training."""
    if tagset not in _PUNCTUATION:
        raise InduceError(f"unknown punctuation tagset {tagset!r}; expected one of {sorted(_PUNCTUATION)}")
    punct = _PUNCTUATION[tagset]
    return np.fromiter((t in punct for t in tags), dtype=bool, count=len(tags))


@njit(cache=True)
def _attachment_counts(pred, gold, offsets, mask):
    """Numbers of (directed, undirected) correct words among the masked ones.

    Returns ``(directed, undirected, scored, bad)``; ``bad`` is the flat index of the
    first head outside ``0..sentence length`` (-1 when all heads are valid).
    """
    directed = 0
    undirected = 0
    scored = 0
    for s in range(offsets.size - 1):
        start = offsets[s]
        length = offsets[s + 1] - start
        for k in range(length):
            i = start + k
            if pred[i] < 0 or pred[i] > length or gold[i] < 0 or gold[i] > length:
                return directed, undirected, scored, i
            if not mask[i]:
                continue
            scored += 1
            head = pred[i]
            if head == gold[i]:
                directed += 1
                undirected += 1
            elif head != 0 and gold[start + head - 1] == k + 1:
                undirected += 1
    return directed, undirected, scored, -1


def attachment_scores(pred_heads, gold_heads, offsets=None, mask=None) -> dict:
    """Directed and undirected attachment accuracy over the scored words.

    Returns ``{"directed", "undirected", "tokens", "excluded", "punctuation"}``:
    ``tokens`` words were scored, ``excluded`` were masked out.  Raises
    :class:`InduceError` on arrays of different lengths or heads out of range.
    """
    pred = np.ascontiguousarray(pred_heads, dtype=np.int64)
    gold = np.ascontiguousarray(gold_heads, dtype=np.int64)
    if pred.ndim != 1 or pred.shape != gold.shape:
        raise InduceError(f"predicted and gold heads must be flat arrays of equal length; got {pred.shape} and {gold.shape}")
    if offsets is None:
        offsets = np.array([0, pred.size], dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != pred.size or np.any(np.diff(offsets) < 0):
        raise InduceError(f"sentence offsets must be non-decreasing, start at 0 and end at {pred.size}")
    keep = np.ones(pred.size, dtype=np.bool_) if mask is None else np.ascontiguousarray(mask, dtype=np.bool_)
    if keep.shape != pred.shape:
        raise InduceError(f"mask has {keep.size} entries for {pred.size} words")
    directed, undirected, scored, bad = _attachment_counts(pred, gold, offsets, keep)
    if bad >= 0:
        sent = int(np.searchsorted(offsets, bad, side="right")) - 1
        raise InduceError(
            f"sentence {sent + 1}, word {bad - offsets[sent] + 1}: expected a head in 0..{offsets[sent + 1] - offsets[sent]}; "
            f"got predicted {pred[bad]}, gold {gold[bad]}"
        )
    return {
        "directed": directed / scored if scored else 0.0,
        "undirected": undirected / scored if scored else 0.0,
        "tokens": int(scored),
        "excluded": int(pred.size - scored),
        "punctuation": "included" if mask is None else "excluded",
    }

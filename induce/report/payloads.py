"""Builders of the report's data sections from fitted models and corpora.

Each returns plain lists and dicts (JSON-ready) for the keys described in
:mod:`induce.report.document`.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from nltk import Tree

from ..errors import ConfigError
from ..eval.tagging import _check_pair, _contingency, _majority_map

N_EXAMPLES = 3
EXAMPLE_LENGTH = (3, 12)


def example_indices(lengths: Sequence[int], n: int = N_EXAMPLES, bounds: tuple[int, int] = EXAMPLE_LENGTH) -> list[int]:
    """The first ``n`` items whose length is within ``bounds`` (else the ``n`` shortest non-empty ones)."""
    lengths = np.asarray(lengths)
    picked = [i for i in range(len(lengths)) if bounds[0] <= lengths[i] <= bounds[1]][:n]
    if len(picked) < n:
        rest = [int(i) for i in np.argsort(lengths, kind="stable") if lengths[i] > 0 and i not in picked]
        picked += rest[: n - len(picked)]
    return sorted(int(i) for i in picked)


def confusion_data(pred, gold, state_names: Sequence[str], tag_names: Sequence[str]) -> dict:
    """The state x gold-tag contingency table (sklearn ``contingency_matrix``) and the many-to-one mapping
    (each state to the gold tag it co-occurs with most often, thesis 3.8.2; :mod:`induce.eval.tagging`).

    Columns are the gold tags present, by decreasing frequency; rows the states present, grouped by
    their mapped tag (in column order), larger states first.  ``mapping[r]`` is the column of row ``r``'s tag.
    """
    pred, gold = _check_pair(pred, gold)
    counts = _contingency(pred, gold)  # rows: sorted distinct states, columns: sorted distinct gold ids
    states, tags = _majority_map(pred, gold)
    gold_ids = np.unique(gold)
    col_order = np.argsort(-counts.sum(axis=0), kind="stable")
    col_pos = np.empty_like(col_order)
    col_pos[col_order] = np.arange(len(col_order))
    mapped_col = col_pos[np.searchsorted(gold_ids, tags)]
    row_order = np.lexsort((-counts.sum(axis=1), mapped_col))
    return {"states": [str(state_names[s]) for s in states[row_order]],
            "tags": [str(tag_names[g]) for g in gold_ids[col_order]],
            "counts": counts[row_order][:, col_order].tolist(),
            "mapping": mapped_col[row_order].tolist()}


def state_usage_data(pred, state_names: Sequence[str]) -> dict:
    """Tokens per state (every state of the model, used or not)."""
    counts = np.bincount(np.asarray(pred, dtype=np.int64), minlength=len(state_names))
    return {"names": [str(n) for n in state_names], "counts": counts.tolist()}


def tagging_data(corpus, states, state_names: Sequence[str], gold_column: str | None) -> dict:
    """``state_usage`` and, with a gold column, ``confusion`` for the flat predicted ``states`` of ``corpus``."""
    out = {"state_usage": state_usage_data(states, state_names)}
    if gold_column is not None:
        out["confusion"] = confusion_data(states, corpus.tags[gold_column], state_names,
                                          corpus.tag_vocabs[gold_column].itos)
    return out


def parse_examples(model, corpus, n: int = N_EXAMPLES, **parse_kw) -> dict:
    """Parses of a few short sentences of ``corpus`` with their gold analyses:
    ``trees`` for constituency parsers (``parse`` returns ``nltk.Tree``), ``dependencies`` for the DMV
    (``parse`` returns 1-based heads)."""
    idx = example_indices(corpus.lengths, n)
    sub = corpus.subset(idx)
    parsed = model.parse(sub, **parse_kw)
    sents = sub.sentences or [None] * len(idx)
    if parsed and not isinstance(parsed[0], Tree):  # (an nltk.Tree is a list too)
        return {"dependencies": [{"words": sub.words(k) if s is None else list(s.words), "heads": list(h),
                                  "gold": None if s is None or s.heads is None else list(s.heads)}
                                 for k, (s, h) in enumerate(zip(sents, parsed))]}
    return {"trees": [{"predicted": t.pformat(margin=10**6),
                       "gold": None if s is None or s.tree is None else s.tree.pformat(margin=10**6)}
                      for s, t in zip(sents, parsed)]}


def alignment_examples(pairs, links, gold=None, n: int = N_EXAMPLES) -> dict:
    """A few short sentence pairs with their predicted links and, where given, the gold
    alignments (objects with ``sure`` and ``possible`` link sets, as :func:`read_alignments` returns)."""
    candidates = range(len(gold)) if gold else range(len(pairs))
    lengths = [max(len(pairs[i][0]), len(pairs[i][1])) for i in candidates]
    out = []
    for i in example_indices(lengths, n, bounds=(3, 15)):
        item = {"source": list(pairs[i][0]), "target": list(pairs[i][1]), "links": sorted(map(list, links[i]))}
        if gold:
            item["sure"] = sorted(map(list, gold[i].sure))
            item["possible"] = sorted(map(list, gold[i].possible))
        out.append(item)
    return {"alignments": out}


def series_data(values, states, names: Sequence[str] | None = None, time=None) -> dict:
    """``{"series": ...}``: a time series (``(T,)`` or ``(T, D)`` values, ``names`` per dimension, ``time``
    stamps) with its state sequence ``(T,)``, for the report's series-coloured-by-state section."""
    values, states = np.asarray(values, dtype=float), np.asarray(states)
    if values.ndim not in (1, 2) or states.ndim != 1 or len(values) != len(states) or len(states) == 0:
        raise ConfigError(f"a series needs values of shape (T,) or (T, D) and states of shape (T,), T > 0; "
                          f"got {values.shape} and {states.shape}")
    if not np.issubdtype(states.dtype, np.integer):
        raise ConfigError(f"series states must be integer state ids; got dtype {states.dtype}")
    out = {"values": values.tolist(), "states": states.tolist()}
    if names is not None:
        out["names"] = list(names)
    if time is not None:
        out["time"] = np.asarray(time).tolist()
    return {"series": out}

"""Shared plumbing of the parsers: estimators on masked rows, encoding.

Rows of rule tables may allow only some outcomes (a grammar read from a file
lacks most of the ``N^2 + V`` rules of a nonterminal); the prior then spreads
over the ``|R_A|`` allowed rules only (thesis eq. 4.2), which
:func:`masked_params` does by applying :func:`induce.infer.estimators.params_from_counts`
to each row's allowed entries.
"""

from __future__ import annotations

import numpy as np

from ..corpus.corpus import Corpus
from ..corpus.vocab import Vocabulary
from ..errors import ConfigError
from ..infer.estimators import params_from_counts

UNK = "<unk>"


def masked_params(estimator: str, counts: np.ndarray, mask: np.ndarray, prior: float) -> np.ndarray:
    """Row-wise parameters over allowed outcomes (zero elsewhere); ``counts``/``mask`` are 2-d."""
    out = np.zeros(counts.shape, dtype=np.float64)
    for row in range(counts.shape[0]):
        allowed = mask[row]
        if allowed.any():
            out[row, allowed] = params_from_counts(estimator, counts[row, allowed], prior)
    return out


def column(corpus: Corpus, tag_column: str | None) -> tuple[np.ndarray, Vocabulary]:
    """The ids and vocabulary the model reads: a tag column, or the word tokens."""
    if tag_column is None:
        return corpus.tokens, corpus.vocab
    if tag_column not in corpus.tags:
        have = ", ".join(corpus.tags) or "none"
        raise ConfigError(f"corpus has no tag column {tag_column!r} (columns: {have})")
    return corpus.tags[tag_column], corpus.tag_vocabs[tag_column]


def encode_with(symbols: list[str], vocab: Vocabulary, ids: np.ndarray) -> np.ndarray:
    """Map ``vocab`` ids to indices in ``symbols``; unseen strings map to ``UNK``'s index."""
    index = {s: i for i, s in enumerate(symbols)}
    unk = index[UNK]
    lut = np.fromiter((index.get(s, unk) for s in vocab.itos), dtype=np.int32, count=len(vocab))
    return lut[ids] if len(ids) else np.zeros(0, dtype=np.int32)

"""The vectors a tagger looks words up in, and the rule for a word without one.

``VectorTable`` holds the (normalised) vectors of a vocabulary.  A word outside it gets, by ``unknown``:

* ``suffix``: the mean vector of the table's words that share its longest lowercased suffix of 3, 2 or 1
  characters (a character n-gram back-off in the spirit of fastText's subword vectors, Bojanowski et al. 2017,
  restricted to suffixes, which carry most of English and Turkish morphosyntax), else the mean vector;
* ``mean``: the mean of the table's vectors, one shared unknown vector.

Normalisations (applied once to the table, so new text sees the same vectors): ``unit``: every vector scaled to
length 1; ``standardize``: every dimension centred and scaled to variance 1 over the table's words; ``none``.
"""

from __future__ import annotations

import numpy as np

from ..corpus.vectors import WordVectors
from ..errors import ConfigError
from ..names import UNKNOWN_VECTOR_POLICIES as UNKNOWN_POLICIES, VECTOR_NORMS as NORMALIZATIONS
#: suffix lengths tried, longest first, by the ``suffix`` policy
SUFFIX_LENGTHS = (3, 2, 1)


def normalize(vectors: np.ndarray, how: str) -> np.ndarray:
    """``vectors`` normalised by ``how`` (one of :data:`NORMALIZATIONS`, see the module docstring)."""
    if how == "unit":
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    if how == "standardize":
        return (vectors - vectors.mean(axis=0)) / np.maximum(vectors.std(axis=0), 1e-12)
    if how == "none":
        return vectors
    raise ConfigError(f"unknown vector normalisation {how!r}; expected one of {', '.join(NORMALIZATIONS)}")


class VectorTable:
    """``words`` with ``vectors`` (``(len(words), d)``, already normalised) and the ``unknown`` policy."""

    def __init__(self, words: list[str], vectors: np.ndarray, unknown: str = "suffix"):
        if unknown not in UNKNOWN_POLICIES:
            raise ConfigError(f"unknown-word policy {unknown!r}; expected one of {', '.join(UNKNOWN_POLICIES)}")
        if not words:
            raise ConfigError("none of the corpus's words has a vector in the embeddings file (is it for another "
                              "language, or lowercased while the corpus is not? see --lowercase)")
        self.words = list(words)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float64)
        self.unknown = unknown
        self.index = {w: i for i, w in enumerate(self.words)}
        self.mean = self.vectors.mean(axis=0)
        self._suffixes = self._suffix_means() if unknown == "suffix" else {}

    @classmethod
    def from_vectors(cls, found: WordVectors, normalization: str = "none", unknown: str = "suffix") -> "VectorTable":
        """The table of the words read from a file, normalised."""
        return cls(found.words, normalize(found.vectors, normalization), unknown)

    def _suffix_means(self) -> dict[int, dict[str, np.ndarray]]:
        """Per suffix length, the mean vector of the table's words by lowercased suffix."""
        means = {}
        for length in SUFFIX_LENGTHS:
            rows = [i for i, w in enumerate(self.words) if len(w) >= length]
            keys = [self.words[i].lower()[-length:] for i in rows]
            unique, inverse = np.unique(np.asarray(keys, dtype=object), return_inverse=True)
            sums = np.zeros((len(unique), self.vectors.shape[1]))
            np.add.at(sums, inverse, self.vectors[rows])
            sums /= np.bincount(inverse, minlength=len(unique))[:, None]
            means[length] = dict(zip(unique.tolist(), sums))
        return means

    def backoff(self, word: str) -> np.ndarray:
        """The vector of a word outside the table under the ``unknown`` policy."""
        lower = word.lower()
        for length in SUFFIX_LENGTHS:
            found = self._suffixes.get(length, {}).get(lower[-length:]) if len(lower) >= length else None
            if found is not None:
                return found
        return self.mean

    def lookup(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors (len(words), d), known)``: each word's vector (its own, or the back-off) and whether the
        table has it.  One entry per word type: callers index the result with token ids."""
        known = np.array([w in self.index for w in words], dtype=bool)
        out = np.empty((len(words), self.vectors.shape[1]))
        rows = np.array([self.index.get(w, -1) for w in words], dtype=np.int64)
        out[known] = self.vectors[rows[known]]
        for i in np.flatnonzero(~known):
            out[i] = self.backoff(words[i])
        return out, known

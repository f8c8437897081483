"""Word vectors for the taggers: reading them (:mod:`induce.corpus.vectors`), training them from a corpus
(:func:`train_vectors`, gensim) and the lookup table with the rule for words without a vector
(:class:`VectorTable`)."""

from .table import NORMALIZATIONS, UNKNOWN_POLICIES, VectorTable
from .train import EMBED_DEFAULTS, train_vectors

__all__ = ["EMBED_DEFAULTS", "NORMALIZATIONS", "UNKNOWN_POLICIES", "VectorTable", "train_vectors"]

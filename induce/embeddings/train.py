"""Training word vectors from tokenised sentences with gensim (an optional dependency: ``pip install induce[embed]``).

The defaults aim at syntactic similarity, the kind of vectors a tagger wants: skip-gram with a window of one word
on each side (Lin, Ammar, Dyer & Levin, NAACL 2015, "Unsupervised POS induction with word embeddings", found the
small window best for Gaussian-HMM tagging; Bansal, Gimpel & Livescu 2014 likewise for syntax).  One worker thread
and a seed make the vectors the same run after run (gensim's ``seed`` and ``workers=1``).
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..corpus.vectors import WordVectors
from ..errors import ConfigError, check_int, check_seed
from ..names import EMBED_DEFAULTS


def _gensim():
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise ConfigError("training word vectors needs gensim: pip install 'induce[embed]' (or pip install gensim)"
                          ) from None
    return Word2Vec


def train_vectors(sentences: Iterable[list[str]], dim: int = EMBED_DEFAULTS["dim"],
                  window: int = EMBED_DEFAULTS["window"], min_count: int = EMBED_DEFAULTS["min_count"],
                  epochs: int = EMBED_DEFAULTS["epochs"], seed: int = EMBED_DEFAULTS["seed"]) -> WordVectors:
    """Skip-gram vectors with negative sampling (Mikolov et al. 2013, gensim ``Word2Vec(sg=1)``) of every word
    seen at least ``min_count`` times, most frequent first; deterministic for a given ``seed``."""
    dim, window = check_int("dim", dim, 1), check_int("window", window, 1)
    min_count, epochs = check_int("min_count", min_count, 1), check_int("epochs", epochs, 1)
    seed = check_seed("seed", seed)
    sentences = [s for s in sentences if s]
    if not sentences:
        raise ConfigError("no sentences to train word vectors on")
    model = _gensim()(sentences=sentences, vector_size=dim, window=window, min_count=min_count, sg=1,
                      epochs=epochs, seed=seed, workers=1)
    words = list(model.wv.index_to_key)
    if not words:
        raise ConfigError(f"no word occurs {min_count} times or more; lower --min-count")
    return WordVectors(words, np.asarray(model.wv.vectors, dtype=np.float64), dim)

"""Tag dictionaries for semi-supervised (Merialdo-style) tagging.

A tag dictionary lists the legal tags of each word type; the HMM's states are
the tags and emissions of illegal (word, tag) pairs are zero.  Following Smith
& Eisner (2005) and thesis Figure 3.12, words seen fewer than ``cutoff`` times in
the training text are left unconstrained (they may take any tag).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..corpus.corpus import Corpus
from ..corpus.read_lines import iter_lines
from ..corpus.vocab import Vocabulary
from ..errors import ConfigError, CorpusFormatError


class TagDictionary:
    """``allowed[w, k]`` is 1 when word ``w`` may carry tag ``k``.

    ``words`` and ``tags`` are the vocabularies the mask is indexed by.
    """

    def __init__(self, words: Vocabulary, tags: Vocabulary, allowed: np.ndarray):
        if allowed.shape != (len(words), len(tags)):
            raise ConfigError(f"tag dictionary mask has shape {allowed.shape}, expected {(len(words), len(tags))}")
        self.words = words
        self.tags = tags
        self.allowed = np.ascontiguousarray(allowed, dtype=np.uint8)

    @classmethod
    def from_gold(cls, corpus: Corpus, column: str, cutoff: int = 1) -> "TagDictionary":
        """All (word, tag) pairs seen in ``corpus``'s gold ``column``.

        Words occurring fewer than ``cutoff`` times in the corpus may take any
        tag (``cutoff=1``: the complete dictionary).
        """
        if column not in corpus.tags:
            raise ConfigError(f"corpus has no gold tag column {column!r}; it has {sorted(corpus.tags) or 'none'}")
        W, K = len(corpus.vocab), len(corpus.tag_vocabs[column])
        allowed = np.zeros((W, K), dtype=np.uint8)
        allowed[corpus.tokens, corpus.tags[column]] = 1
        freq = np.bincount(corpus.tokens, minlength=W)
        allowed[freq < cutoff] = 1
        return cls(corpus.vocab, corpus.tag_vocabs[column], allowed)

    @classmethod
    def from_file(cls, path: str | Path, words: Vocabulary, tags: Vocabulary | None = None) -> "TagDictionary":
        """Read ``word<TAB>tag [tag ...]`` lines; words not listed may take any tag."""
        entries: dict[str, list[str]] = {}
        tags = tags if tags is not None else Vocabulary()
        for n, line in iter_lines(path, require_text=False):  # strict UTF-8, NUL bytes refused, at file:line
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) < 2:
                raise CorpusFormatError(str(path), n, line, "'word<TAB>tag [tag ...]'")
            entries[parts[0]] = parts[1:]
            for tag in parts[1:]:
                tags.add(tag)
        allowed = np.ones((len(words), len(tags)), dtype=np.uint8)
        for word, legal in entries.items():
            if word in words:
                row = allowed[words[word]]
                row[:] = 0
                row[[tags[t] for t in legal]] = 1
        return cls(words, tags, allowed)

    def ambiguity(self, corpus: Corpus) -> float:
        """Average number of legal tags per token of ``corpus``."""
        return float(self.allowed.sum(axis=1)[corpus.tokens].mean()) if corpus.n_tokens else 0.0

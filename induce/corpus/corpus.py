"""The integer-encoded corpus every model consumes (CSR layout).

A corpus of ``I`` sentences and ``N`` tokens is

* ``tokens``  -- ``int32[N]`` word ids, sentences concatenated;
* ``offsets`` -- ``int64[I+1]``, sentence ``i`` is ``tokens[offsets[i]:offsets[i+1]]``;
* ``vocab``   -- :class:`Vocabulary` of word forms;
* ``tags``    -- gold tag columns by name, each ``int32[N]`` aligned with ``tokens``,
                 with their vocabularies in ``tag_vocabs``;
* ``heads``   -- optional ``int32[N]`` gold heads (1-based within the sentence, 0 = root);
* ``sentences`` -- optional list of the original :class:`Sentence` records (gold trees,
                 relations and every input column, for writers and tree metrics).

Encoding is a separate step from reading, and consumes the reader's iterator
in chunks, so readers can stream large files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from .sentence import Sentence
from .vocab import Vocabulary

_CHUNK = 1 << 16


class _Growable:
    """Append-only int array that grows geometrically (amortised O(1) appends)."""

    def __init__(self, dtype):
        self.data = np.empty(_CHUNK, dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            new = np.empty(max(need, 2 * len(self.data)), dtype=self.data.dtype)
            new[: self.size] = self.data[: self.size]
            self.data = new
        self.data[self.size : need] = values
        self.size = need

    def array(self) -> np.ndarray:
        return self.data[: self.size].copy()


@dataclass
class Corpus:
    tokens: np.ndarray
    offsets: np.ndarray
    vocab: Vocabulary
    tags: dict[str, np.ndarray] = field(default_factory=dict)
    tag_vocabs: dict[str, Vocabulary] = field(default_factory=dict)
    heads: np.ndarray | None = None
    sentences: list[Sentence] | None = None
    name: str = ""
    #: ``(path, format, lowercase)`` when re-reading ``path`` with :mod:`induce.corpus.stream`'s reader and encoding
    #: with the vocabulary gives these tokens, so that workers can read their own shards
    #: (:meth:`induce.distributed.WorkerCorpus.of`); ``None`` otherwise (subsets, in-memory data)
    source: tuple[str, str, bool] | None = None

    # ------------------------------------------------------------------ build
    @classmethod
    def from_sentences(
        cls,
        sentences: Iterable[Sentence],
        vocab: Vocabulary | None = None,
        grow_vocab: bool = True,
        tag_vocabs: dict[str, Vocabulary] | None = None,
        keep_sentences: bool = True,
        name: str = "",
    ) -> "Corpus":
        """Encode sentences into flat arrays.

        With a given ``vocab`` and ``grow_vocab=False`` unseen words map to the
        vocabulary's unknown item (a ``KeyError`` if it has none).  Tag columns
        present in every sentence are encoded; tag vocabularies grow.
        """
        vocab = vocab if vocab is not None else Vocabulary()
        tag_vocabs = dict(tag_vocabs or {})
        tokens = _Growable(np.int32)
        heads = _Growable(np.int32)
        tag_arrays: dict[str, _Growable] = {}
        offsets = [0]
        kept: list[Sentence] = []
        has_heads = True
        columns: set[str] | None = None
        for sent in sentences:
            tokens.extend(vocab.encode(sent.words, grow=grow_vocab))
            offsets.append(offsets[-1] + len(sent.words))
            names = set(sent.tags)
            if columns is None:
                columns = names
                for col in columns:
                    tag_arrays[col] = _Growable(np.int32)
                    tag_vocabs.setdefault(col, Vocabulary())
            else:
                for col in columns - names:
                    tag_arrays.pop(col, None)
                columns &= names
            for col in columns:
                tag_arrays[col].extend(tag_vocabs[col].encode(sent.tags[col], grow=True))
            if sent.heads is None:
                has_heads = False
            elif has_heads:
                heads.extend(np.asarray(sent.heads, dtype=np.int32))
            if keep_sentences:
                kept.append(sent)
        columns = columns or set()
        return cls(
            tokens=tokens.array(),
            offsets=np.asarray(offsets, dtype=np.int64),
            vocab=vocab,
            tags={c: tag_arrays[c].array() for c in sorted(columns)},
            tag_vocabs={c: tag_vocabs[c] for c in sorted(columns)},
            heads=heads.array() if (has_heads and len(offsets) > 1) else None,
            sentences=kept if keep_sentences else None,
            name=name,
        )

    # --------------------------------------------------------------- queries
    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n_sentences

    def __getitem__(self, key):
        """``corpus[i]``: sentence ``i``'s words (a list of strings, as :func:`as_corpus` takes them back);
        ``corpus[a:b]``, ``corpus[[i, j]]``, ``corpus[mask]``: those sentences as a :class:`Corpus` sharing the
        vocabularies (:meth:`subset`).  So scikit-learn's splitters and ``GridSearchCV`` index a corpus like a
        list of sentences."""
        if isinstance(key, (int, np.integer)):
            i = int(key) + (self.n_sentences if key < 0 else 0)
            if not 0 <= i < self.n_sentences:
                raise IndexError(f"sentence {key} of a corpus of {self.n_sentences}")
            return self.words(i)
        if isinstance(key, slice):
            return self.subset(np.arange(self.n_sentences)[key])
        idx = np.asarray(key)
        if idx.dtype == bool:
            if idx.shape != (self.n_sentences,):
                raise IndexError(f"a boolean mask of {idx.shape} for a corpus of {self.n_sentences} sentences")
            idx = np.flatnonzero(idx)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise IndexError(f"corpus indices must be integers, a slice or a boolean mask; got {key!r:.60}")
        if idx.size and (idx.min() < -self.n_sentences or idx.max() >= self.n_sentences):
            raise IndexError(f"sentence indices outside a corpus of {self.n_sentences}")
        return self.subset(np.where(idx < 0, idx + self.n_sentences, idx))

    def sentence_ids(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i] : self.offsets[i + 1]]

    def words(self, i: int) -> list[str]:
        return self.vocab.decode(self.sentence_ids(i))

    def tag_strings(self, column: str, i: int) -> list[str]:
        return self.tag_vocabs[column].decode(self.tags[column][self.offsets[i] : self.offsets[i + 1]])

    def iter_slices(self) -> Iterator[slice]:
        for i in range(self.n_sentences):
            yield slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def split(self, values: np.ndarray) -> list[np.ndarray]:
        """Per sentence, the views of ``values`` (a flat array aligned with ``tokens``) over its tokens."""
        return [values[s] for s in self.iter_slices()]

    # ------------------------------------------------------------- subsetting
    def subset(self, indices: Sequence[int] | np.ndarray) -> "Corpus":
        """The sentences ``indices`` (in that order), sharing vocabularies."""
        idx = np.asarray(indices, dtype=np.int64)
        gather, offsets = sentence_positions(self.offsets, idx)
        return Corpus(
            tokens=self.tokens[gather],
            offsets=offsets,
            vocab=self.vocab,
            tags={c: a[gather] for c, a in self.tags.items()},
            tag_vocabs=self.tag_vocabs,
            heads=None if self.heads is None else self.heads[gather],
            sentences=None if self.sentences is None else [self.sentences[i] for i in idx],
            name=self.name,
        )

    def head(self, n: int) -> "Corpus":
        """The first ``n`` sentences."""
        return self.subset(np.arange(min(n, self.n_sentences)))


def sentence_positions(offsets: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Token positions of the sentences ``idx`` of a CSR layout (in that order) and their new offsets (vectorised)."""
    idx = np.asarray(idx, dtype=np.int64)
    starts = offsets[idx]
    lengths = offsets[idx + 1] - starts
    new = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new[1:])
    return np.repeat(starts - new[:-1], lengths) + np.arange(new[-1], dtype=np.int64), new


def gather_sentences(tokens: np.ndarray, offsets: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sentences ``idx`` of a CSR corpus as a new CSR pair ``(tokens, offsets)``."""
    positions, new = sentence_positions(offsets, idx)
    return tokens[positions], new


def distinct(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(tokens, return_inverse=True)`` of non-negative ids: the sorted distinct ids and each token's
    index into them, by a table over the ids (``O(n + max id)``) where the largest id is below ``32 n + 2^16``,
    else by numpy's sort (``O(n log n)``).  A minibatch's words: 10,000 tokens of 6,000 ids, ~0.03 ms against
    ~0.4 ms for the sort (load ~2)."""
    tokens = np.asarray(tokens).reshape(-1)
    top = int(tokens.max()) + 1 if len(tokens) else 0
    if top > 32 * len(tokens) + 2**16:
        ids, inverse = np.unique(tokens, return_inverse=True)
        return ids, inverse.reshape(-1)
    present = np.zeros(top, dtype=bool)
    present[tokens] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[tokens]


def as_corpus(X) -> "Corpus":
    """What an estimator's ``fit``/``predict`` accepts, as a :class:`Corpus`.

    A :class:`Corpus` as given; a path (``str`` or ``os.PathLike``: a file or
    folder in any supported format, or a registry name such as ``demo``), read
    by :func:`induce.corpus.formats.load_corpus`; or an iterable of token lists
    (``[["the", "dog"], ...]``, scikit-learn / NLTK style).
    """
    import os

    if isinstance(X, Corpus):
        return X
    if isinstance(X, (str, os.PathLike)):
        from .formats import load_corpus

        return load_corpus(X)
    return Corpus.from_sentences((Sentence(words=[str(w) for w in words]) for words in X), keep_sentences=False)

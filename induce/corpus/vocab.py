"""Vocabulary: a bijection between strings and dense integer ids, with counts."""

from __future__ import annotations

from collections import Counter
from itertools import chain, repeat
from typing import Iterable, Sequence

import numpy as np


class Vocabulary:
    """Maps strings to ids ``0..len-1`` in order of first appearance.

    ``counts[i]`` is how often item ``i`` was added through :meth:`add`/:meth:`encode`
    with ``grow=True``.  A frozen vocabulary maps unseen strings to ``unk_id``
    (or raises ``KeyError`` when it has no unknown item).
    """

    def __init__(self, items: Iterable[str] = (), unk: str | None = None):
        self.itos: list[str] = []
        self.stoi: dict[str, int] = {}
        self._counts: list[int] = []
        self.unk = unk
        if unk is not None:
            self._intern(unk)
        for item in items:
            self._intern(item)

    def _intern(self, item: str) -> int:
        idx = self.stoi.get(item)
        if idx is None:
            idx = len(self.itos)
            self.stoi[item] = idx
            self.itos.append(item)
            self._counts.append(0)
        return idx

    @property
    def unk_id(self) -> int | None:
        return None if self.unk is None else self.stoi[self.unk]

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, item: str) -> bool:
        return item in self.stoi

    def __getitem__(self, item: str) -> int:
        return self.stoi[item]

    def __iter__(self):
        return iter(self.itos)

    @property
    def counts(self) -> np.ndarray:
        return np.asarray(self._counts, dtype=np.int64)

    def add(self, item: str) -> int:
        idx = self._intern(item)
        self._counts[idx] += 1
        return idx

    def lookup(self, item: str) -> int:
        """Id of ``item``; the unknown id for unseen items of a vocabulary with ``unk``."""
        idx = self.stoi.get(item)
        if idx is None:
            if self.unk is None:
                raise KeyError(item)
            return self.stoi[self.unk]
        return idx

    def encode(self, items: Sequence[str], grow: bool = True) -> np.ndarray:
        """Ids of ``items`` as int32; with ``grow`` new items are added and counted (as :meth:`add` one by one:
        ids in order of first appearance), else as :meth:`lookup`.  The per-token work runs in C (``Counter``,
        ``map`` over the dict's methods): no Python call per token."""
        if grow:
            for item, n in Counter(items).items():  # (a dict: the items in order of first appearance)
                self._counts[self._intern(item)] += n
        if grow or self.unk is None:
            ids = map(self.stoi.__getitem__, items)  # (KeyError for an unseen item, as lookup)
        else:
            ids = map(self.stoi.get, items, repeat(self.stoi[self.unk]))
        return np.fromiter(ids, dtype=np.int32, count=len(items))

    def encode_sentences(self, sentences: Sequence[Sequence[str]], grow: bool = True
                         ) -> tuple[np.ndarray, np.ndarray]:
        """The sentences' ids as CSR ``(tokens int32, offsets int64)``: what :meth:`encode` of each sentence in
        turn gives (ids, counts, an unseen item's error), in one call over all their words."""
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences)), out=offsets[1:])
        return self.encode(list(chain.from_iterable(sentences)), grow), offsets

    def add_counts(self, items: Sequence[str], counts: Sequence[int]) -> np.ndarray:
        """Ids of ``items`` (int32; new ones added in their order) with ``counts[i]`` added to item ``i``'s count:
        vocabularies of consecutive parts of a corpus added in order give the vocabulary of the whole, ids in
        order of first appearance."""
        ids = np.fromiter(map(self._intern, items), dtype=np.int32, count=len(items))
        for i, n in zip(ids.tolist(), np.asarray(counts).tolist()):
            self._counts[i] += n
        return ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        itos = self.itos
        return [itos[int(i)] for i in ids]

    def to_json(self) -> dict:
        return {"items": list(self.itos), "counts": list(self._counts), "unk": self.unk}

    @classmethod
    def from_json(cls, data: dict) -> "Vocabulary":
        vocab = cls(unk=None)
        for item in data["items"]:
            vocab._intern(item)
        vocab._counts = [int(c) for c in data.get("counts", [0] * len(vocab.itos))]
        vocab.unk = data.get("unk")
        return vocab

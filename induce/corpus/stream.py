"""Streaming a corpus from disk for stochastic inference: memory independent of corpus size.

Two passes over the file(s), each through the ordinary streaming readers
(:func:`induce.corpus.formats.read_sentences`):

1. :func:`scan` builds the vocabulary, counts training sentences and tokens
   (stochastic updates scale minibatch statistics by the corpus size) and sets
   aside a seeded random held-out sample of sentences (at most
   ``heldout_max_tokens`` tokens, kept in memory);
2. :func:`shuffled_minibatches` re-reads the training sentences in chunks of
   ``buffer_sentences``, shuffles each chunk with a seeded generator and cuts it
   into minibatches (CSR ``tokens``/``offsets``), epoch after epoch.

Memory is the vocabulary, the held-out sample and one buffer.  The minibatch
sequence is a function of the seed only, so a resumed run can skip the
minibatches it has already done.
"""

from __future__ import annotations

import heapq
import itertools
import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..errors import ConfigError
from .corpus import gather_sentences
from .formats import read_sentences
from .transforms import pipeline
from .vocab import Vocabulary


@dataclass
class StreamInfo:
    vocab: Vocabulary
    n_sentences: int          # training sentences
    n_tokens: int             # training tokens
    heldout_ids: np.ndarray   # sorted indices (in file order) of the held-out sentences
    heldout_tokens: np.ndarray
    heldout_offsets: np.ndarray


def _sentences(path, format: str, lowercase: bool):
    return pipeline(lowercase_words=lowercase)(read_sentences(path, format))


class HeldoutSample:
    """The held-out rule of :func:`scan`, offered the stream's sentences block by block in order: each non-empty
    sentence is a candidate with probability ``fraction`` and gets a random key (two draws of ``rng``; one for a
    sentence that is no candidate, none for an empty one); the candidates are taken in key order while they fit
    in ``cap`` tokens (at least one).  A max-heap keeps only the sentences that fit so far (memory bounded by the
    cap), and a candidate pushed out returns to training.  It counts what it was offered (``sentences`` in the
    stream, ``nonempty`` and ``tokens``): :meth:`info` is the stream's :class:`StreamInfo`."""

    def __init__(self, fraction: float, cap: int, rng: np.random.Generator):
        if not 0.0 <= fraction < 1.0:
            raise ConfigError(f"the held-out fraction must be in [0, 1), got {fraction}")
        self.fraction, self.cap, self.rng = fraction, cap, rng
        self.heap: list[tuple[float, int, int, object]] = []  # (-key, sentence, length, payload) held so far
        self.held_tokens = 0
        self.bound = np.inf  # the smallest key pushed out: a candidate above it comes after the cap in key order
        self.sentences = self.nonempty = self.tokens = 0  # offered so far

    def offer(self, offsets: np.ndarray, tokens: np.ndarray | None = None) -> None:
        """The stream's next sentences, CSR ``offsets`` (with ``tokens``, each held sentence keeps a copy of its
        ids)."""
        lengths = np.diff(offsets)
        first = self.sentences
        self.sentences += len(lengths)
        self.nonempty += int(np.count_nonzero(lengths))
        self.tokens += int(offsets[-1] - offsets[0])
        if self.fraction == 0:
            return
        starts = offsets.tolist()
        for j, n in enumerate(lengths.tolist()):
            if n == 0 or self.rng.random() >= self.fraction:
                continue
            key = self.rng.random()
            if key >= self.bound:
                continue
            ids = None if tokens is None else tokens[starts[j]:starts[j + 1]].copy()
            heapq.heappush(self.heap, (-key, first + j, n, ids))
            self.held_tokens += n
            while self.held_tokens > self.cap and len(self.heap) > 1:
                neg, _, out, _ = heapq.heappop(self.heap)
                self.bound = -neg
                self.held_tokens -= out

    def held(self) -> list[int]:
        """The held-out sentences' indices in the stream, in order."""
        return sorted(i for _, i, _, _ in self.heap)

    def info(self, path, vocab: Vocabulary, ids: list[np.ndarray] | None = None) -> StreamInfo:
        """The :class:`StreamInfo` of what was offered: the held-out sentences' ids kept by :meth:`offer`, or
        ``ids`` (those of :meth:`held`, in order)."""
        held = sorted((i, payload) for _, i, _, payload in self.heap)
        ids = [payload for _, payload in held] if ids is None else ids
        held = [i for i, _ in held]
        held_tok = sum(len(x) for x in ids)
        if self.tokens == held_tok:
            raise ConfigError(f"{path}: no training tokens")
        offsets = np.zeros(len(held) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in ids], out=offsets[1:])
        tokens = np.concatenate(ids).astype(np.int32) if ids else np.zeros(0, dtype=np.int32)
        return StreamInfo(vocab, self.nonempty - len(held), self.tokens - held_tok,
                          np.asarray(held, dtype=np.int64), tokens, offsets)


def scan(path: str | os.PathLike, format: str = "auto", *, lowercase: bool = False, heldout_fraction: float = 0.0,
         heldout_max_tokens: int = 100_000, seed: int = 0) -> StreamInfo:
    """One streaming pass: vocabulary, training size and a seeded held-out sample.

    The rule of :func:`induce.infer.stochastic_hmm.heldout_sentences`, in one pass (:class:`HeldoutSample`):
    each sentence is a candidate with probability ``heldout_fraction`` (a binomial count where that function
    rounds the share) and gets a random key; the candidates are taken in key order while they fit in
    ``heldout_max_tokens`` tokens (at least one); so every part of the file is sampled alike, not only its start.
    :func:`induce.distributed.shards.scan_read` gives the same on a cluster's workers.
    """
    sample = HeldoutSample(heldout_fraction, heldout_max_tokens, np.random.default_rng(seed))
    vocab = Vocabulary()
    for tokens, offsets in encoded_blocks(path, format, vocab, lowercase=lowercase, grow=True):
        sample.offer(offsets, tokens)
    return sample.info(path, vocab)


#: sentences read and encoded together (:func:`encoded_blocks`): the per-token work in C, a block's words in memory
BLOCK_SENTENCES = 256


def encoded_blocks(path, format: str, vocab: Vocabulary, *, lowercase: bool = False, grow: bool = False
                   ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every sentence of the file(s), empty ones included (a sentence's index is its place in the stream), as CSR
    blocks of :data:`BLOCK_SENTENCES`, encoded by :meth:`Vocabulary.encode_sentences` (``grow``: the vocabulary
    grows in order of first appearance, as sentence by sentence)."""
    sentences = (sent.words for sent in _sentences(path, format, lowercase))
    while block := list(itertools.islice(sentences, BLOCK_SENTENCES)):
        yield vocab.encode_sentences(block, grow)


def sentence_chunks(path, format: str, vocab: Vocabulary, *, chunk_sentences: int, lowercase: bool = False,
                    skip: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Training sentences as CSR chunks of ``chunk_sentences``, leaving out the empty ones and the indices in
    ``skip``."""
    skip = np.unique(np.asarray(skip if skip is not None else (), dtype=np.int64))
    parts: list[tuple[np.ndarray, np.ndarray]] = []  # CSR pieces of the chunk being filled
    held = first = 0
    for tokens, offsets in encoded_blocks(path, format, vocab, lowercase=lowercase):
        index = np.arange(first, first + len(offsets) - 1)
        keep = np.flatnonzero((np.diff(offsets) > 0) & ~np.isin(index, skip))
        first += len(index)
        while len(keep):
            take = keep[:chunk_sentences - held]
            parts.append(gather_sentences(tokens, offsets, take))
            held, keep = held + len(take), keep[len(take):]
            if held == chunk_sentences:
                yield joined(parts)
                parts, held = [], 0
    if held:
        yield joined(parts)


def joined(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """CSR pieces as one CSR (tokens int32, offsets int64)."""
    tokens = np.concatenate([t for t, _ in parts]).astype(np.int32, copy=False)
    lengths = np.concatenate([np.diff(o) for _, o in parts])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return tokens, offsets


def _check_buffer(buffer_sentences: int, batch_size: int) -> None:
    if buffer_sentences < batch_size:
        raise ConfigError(f"the shuffle buffer ({buffer_sentences} sentences) must hold at least one minibatch "
                          f"({batch_size})")


def shuffled_batches(n_sentences: int, *, batch_size: int, buffer_sentences: int, n_epochs: int,
                     rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Sorted indices of the sentences of each minibatch: a seeded shuffle of each buffer of ``buffer_sentences``
    consecutive sentences of ``n_sentences``, cut into minibatches of ``batch_size``, epoch after epoch (the
    schedule of :func:`shuffled_minibatches`; workers holding the sentences use it directly)."""
    _check_buffer(buffer_sentences, batch_size)
    for _ in range(n_epochs):
        for start in range(0, n_sentences, buffer_sentences):
            order = rng.permutation(min(buffer_sentences, n_sentences - start))
            for lo in range(0, len(order), batch_size):
                yield start + np.sort(order[lo:lo + batch_size])


def sharded_batches(bounds, *, batch_size: int, buffer_sentences: int, n_epochs: int,
                    rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Sorted indices of the sentences of each minibatch for workers holding consecutive runs of sentences
    (shard ``j`` = sentences ``bounds[j]:bounds[j+1]``): every minibatch joins the next minibatch of each shard's
    own :func:`shuffled_batches` schedule (``batch_size * n_j / N`` of its ``n_j`` sentences; generator ``rng``
    for one shard, else ``rng.spawn(n_shards)[j]``), so that every worker has a piece of every step.  (A
    buffer-local shuffle of the whole corpus would put each minibatch inside one shard: one worker busy per
    step.)  One shard: :func:`shuffled_batches` itself.  Several shards: each shard shuffled whole (its worker
    holds it: no buffer bounds memory there), so that every piece is a uniform sample of its shard, as the
    pieces of an in-memory corpus's minibatches are, and the pieces' tokens keep the shards' proportions: the
    workers wait for each other at the end of every round of local steps, and with buffer-local shuffles of
    Brown's genre-ordered halves one shard's pieces held 25-35% more tokens than the other's in the first rounds,
    8% of a worker's tokens waited for over an epoch (docs/experiments/distributed.md, "Seventh session")."""
    bounds = np.asarray(bounds, dtype=np.int64)
    sizes = np.diff(bounds)
    if len(sizes) == 1:
        yield from shuffled_batches(int(sizes[0]), batch_size=batch_size, buffer_sentences=buffer_sentences,
                                    n_epochs=n_epochs, rng=rng)
        return
    rngs = rng.spawn(len(sizes))
    share = np.maximum(1, np.rint(batch_size * sizes / max(1, sizes.sum()))).astype(np.int64)
    for _ in range(n_epochs):
        schedules = [shuffled_batches(int(n), batch_size=int(m), buffer_sentences=max(int(n), int(m)), n_epochs=1,
                                      rng=r) for n, m, r in zip(sizes, share, rngs) if n > 0]
        starts = bounds[:-1][sizes > 0]
        for pieces in itertools.zip_longest(*schedules):
            yield np.concatenate([lo + p for lo, p in zip(starts, pieces) if p is not None])


def shuffled_minibatches(path, format: str, vocab: Vocabulary, *, batch_size: int, buffer_sentences: int,
                         n_epochs: int, rng: np.random.Generator, lowercase: bool = False,
                         skip: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Minibatches of ``batch_size`` sentences from a seeded shuffle of each buffer of ``buffer_sentences``
    (:func:`shuffled_batches` on each buffer read)."""
    from .corpus import gather_sentences

    _check_buffer(buffer_sentences, batch_size)
    for _ in range(n_epochs):
        for tokens, offsets in sentence_chunks(path, format, vocab, chunk_sentences=buffer_sentences,
                                               lowercase=lowercase, skip=skip):
            n = len(offsets) - 1
            for idx in shuffled_batches(n, batch_size=batch_size, buffer_sentences=max(n, batch_size),
                                        n_epochs=1, rng=rng):
                yield gather_sentences(tokens, offsets, idx)

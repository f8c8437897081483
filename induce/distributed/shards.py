"""The corpus cut into shards held in the workers' memory (docs/experiments/distributed.md).

A :class:`WorkerCorpus` is a list of futures, one per shard, each the CSR
``(tokens, offsets)`` of a contiguous run of training sentences living on a
worker, across passes.  It is made either from arrays the client holds
(:meth:`WorkerCorpus.ship`: the tokens travel once) or by the workers reading
the corpus file(s) themselves (:meth:`WorkerCorpus.read`): the client sends
file names and byte ranges cut at sentence boundaries plus the vocabulary,
each worker parses its range with the ordinary readers
(:func:`induce.corpus.formats.read_sentences`) and encodes it, and no token
crosses the network; or (:func:`scan_read`, for streamed svi / scvi) each worker encodes its range with a
vocabulary of its own, and the client adds those and draws the held-out sample.  Shard ``j`` holds training
sentences
``sentence_bounds[j] .. sentence_bounds[j+1]-1`` in the order of the stream
(:mod:`induce.corpus.stream`), so a minibatch of global sentence indices
splits into per-shard pieces.  :meth:`WorkerCorpus.local` gives each shard its
own vocabulary ``V_s`` on its worker (:func:`local_vocabulary`), so that the
batch algorithms exchange only the rows ``V_s`` of the (W, K) emission tables.
"""

from __future__ import annotations

import operator
import os
import tempfile
import warnings
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..corpus import formats, registry, stream
from ..corpus.corpus import gather_sentences
from ..corpus.read_lines import _opener
from ..corpus.vocab import Vocabulary
from ..errors import ConfigError, InduceError
from . import cluster
from .cluster import same, submit

#: formats with a sentence per line (a cut after any newline is a sentence boundary)
LINE_FORMATS = ("plain", "brown")
#: formats with a blank line between sentences (a cut after a blank line is a sentence boundary)
BLOCK_FORMATS = ("conllu", "conllx", "conll2000", "malt")


def shard_bounds(offsets: np.ndarray, n_shards: int) -> np.ndarray:
    """Sentence indices ``b[0] = 0 < ... < b[n] = I`` cutting the corpus into ``n = min(n_shards, I)`` contiguous,
    non-empty shards of about equal token count."""
    offsets = np.asarray(offsets, dtype=np.int64)
    I = len(offsets) - 1
    n = max(1, min(int(n_shards), I))
    bounds = np.searchsorted(offsets, offsets[-1] * np.arange(n + 1) / n).astype(np.int64)
    bounds[0], bounds[n] = 0, I
    for j in range(1, n):  # keep every shard non-empty
        bounds[j] = min(max(bounds[j], bounds[j - 1] + 1), I - (n - j))
    return bounds


def piece(tokens, offsets, lo, hi):
    """Tokens and rebased offsets of sentences ``lo .. hi-1``."""
    s, e = offsets[lo], offsets[hi]
    return np.ascontiguousarray(tokens[s:e]), np.ascontiguousarray(offsets[lo:hi + 1] - s)


# ------------------------------------------------------------ byte ranges
def _next_boundary(handle, pos: int, fmt: str) -> int:
    """The first sentence boundary at or after byte ``pos`` (not at a line start) of an open file, past any
    blank lines: the end of the line holding ``pos`` for :data:`LINE_FORMATS`, the end of the next blank line
    for :data:`BLOCK_FORMATS`."""
    handle.seek(pos)
    handle.readline()
    if fmt in BLOCK_FORMATS:
        line = b"x"
        while line and line.strip():
            line = handle.readline()
    while True:  # skip blank lines: they hold no sentence
        at = handle.tell()
        line = handle.readline()
        if not line or line.strip():
            return at


def file_ranges(path, fmt: str, n_shards: int) -> list[list[tuple[str, int, int]]]:
    """The corpus at ``path`` (a file or a directory of files, read as :func:`read_sentences` reads it) cut into
    at most ``n_shards`` non-empty lists of ``(file, first byte, end byte)`` of about equal bytes, in reading
    order and at sentence boundaries.  Compressed files and ``ptb`` trees are cut only between files."""
    path = Path(registry.resolve(path))
    files = formats._data_files(path, fmt) if path.is_dir() else [path]
    sizes = [f.stat().st_size for f in files]
    total = sum(sizes)
    targets = total * np.arange(1, n_shards) / n_shards
    cuts = []  # global byte positions where a shard starts
    start = 0
    for f, size in zip(files, sizes):
        inside = targets[(targets > start) & (targets < start + size)]
        splittable = fmt in LINE_FORMATS + BLOCK_FORMATS and _opener(f)[1] == "file"
        if len(inside) and splittable:
            with open(f, "rb") as handle:
                cuts.extend(start + _next_boundary(handle, int(t - start), fmt) for t in inside)
        elif len(inside):
            cuts.extend([start + size] * len(inside))
        start += size
    edges = sorted(set([0, *cuts, total]))
    shards: list[list[tuple[str, int, int]]] = [[] for _ in range(len(edges) - 1)]
    start = 0
    for f, size in zip(files, sizes):
        for j, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
            a, b = max(lo, start), min(hi, start + size)
            if a < b:
                shards[j].append((str(f), a - start, b - start))
        start += size
    return [s for s in shards if s]


def line_cuts(first, second, n_shards: int) -> list[tuple[tuple[str, int, int], tuple[str, int, int]]]:
    """Two line-aligned (uncompressed) files cut at the same lines into at most ``n_shards`` pairs of byte ranges
    ``(file, first byte, end byte)``: ``first`` cut by :func:`file_ranges` (lines of about equal bytes), and
    ``second`` at the starts of the same lines."""
    starts = [ranges[0][1] for ranges in file_ranges(first, "plain", n_shards)]
    ends = [_line_ends(path) for path in (first, second)]
    lines = np.searchsorted(ends[0], starts, side="right")  # lines before each cut
    cuts = [[int(e[n - 1]) if n else 0 for n in lines] + [os.path.getsize(path)]
            for e, path in zip(ends, (first, second))]
    return [((str(first), a, b), (str(second), c, d))
            for a, b, c, d in zip(cuts[0][:-1], cuts[0][1:], cuts[1][:-1], cuts[1][1:])]


def _line_ends(path) -> np.ndarray:
    """The byte positions just past each newline of an uncompressed file."""
    ends = []
    base = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 24):
            ends.append(base + 1 + np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == ord("\n")))
            base += len(chunk)
    return np.concatenate(ends) if ends else np.zeros(0, dtype=np.int64)


@contextmanager
def range_file(file, lo: int, hi: int):
    """A path holding bytes ``lo .. hi-1`` of ``file``: the file itself when that is all of it, else a temporary
    copy (for the ordinary readers, which read whole files)."""
    if lo == 0 and hi == os.path.getsize(file):
        yield file
        return
    with open(file, "rb") as src, tempfile.NamedTemporaryFile(suffix=".part") as part:
        src.seek(lo)
        left = hi - lo
        while left:
            chunk = src.read(min(left, 1 << 24))
            part.write(chunk)
            left -= len(chunk)
        part.flush()
        yield part.name


def _read_ranges(ranges, fmt: str, lowercase: bool, vocab, grow: bool = False):
    """On a worker: the sentences of ``ranges`` encoded with ``vocab`` (``grow``: which grows), CSR, empty
    sentences kept (a sentence's index is its place in the stream)."""
    blocks: list[tuple[np.ndarray, np.ndarray]] = []
    for file, lo, hi in ranges:
        with range_file(file, lo, hi) as part:
            blocks.extend(stream.encoded_blocks(part, fmt, vocab, lowercase=lowercase, grow=grow))
    return stream.joined(blocks) if blocks else (np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64))


def _scan_ranges(ranges, fmt: str, lowercase: bool):
    """On a worker: the sentences of ``ranges`` encoded with a vocabulary of their own, as :func:`_read_ranges`
    does with the client's, ``((local tokens, offsets), items, counts)``."""
    vocab = Vocabulary()
    return _read_ranges(ranges, fmt, lowercase, vocab, grow=True), vocab.itos, vocab.counts


def _summary(scanned):
    """A scanned range's vocabulary (items, counts) and sentence lengths (int32), for the client."""
    (_, offsets), items, counts = scanned
    return items, counts, np.diff(offsets).astype(np.int32)


def _mapped(scanned, ids: np.ndarray):
    """A scanned range's shard in the client's word ids (``ids[local id]``)."""
    (tokens, offsets), _, _ = scanned
    return ids[tokens], offsets


def scan_read(client, path, format: str = "auto", *, lowercase: bool = False, heldout_fraction: float = 0.0,
              heldout_max_tokens: int = 100_000, seed: int = 0, n_shards: int | None = None
              ) -> tuple["stream.StreamInfo", "WorkerCorpus"]:
    """:func:`induce.corpus.stream.scan` and :meth:`WorkerCorpus.read` in one pass made by the workers: each
    reads and encodes its byte ranges with a vocabulary of its own; the client adds the vocabularies in file
    order (:meth:`~induce.corpus.vocab.Vocabulary.add_counts`: the whole file's, ids in order of first
    appearance), draws the held-out sample over the gathered sentence lengths
    (:class:`~induce.corpus.stream.HeldoutSample`, the same draws in the same order) and fetches the held-out
    sentences; the workers map their shards to the client's ids and drop those.  The same ``StreamInfo`` and
    shards as the serial scan and the read (4 bytes a sentence and each range's vocabulary gathered, instead of
    the client reading the whole corpus)."""
    sample = stream.HeldoutSample(heldout_fraction, heldout_max_tokens, np.random.default_rng(seed))
    path, fmt = _readable(path, format)
    scanned = [submit(client, _scan_ranges, ranges, fmt, lowercase)
               for ranges in file_ranges(path, fmt, n_shards or cluster.n_workers(client))]
    vocab, maps, starts = Vocabulary(), [], [0]
    for items, counts, lengths in client.gather([submit(client, _summary, f) for f in scanned]):
        maps.append(vocab.add_counts(items, counts))
        sample.offer(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]))
        starts.append(sample.sentences)
    shards = [submit(client, _mapped, f, ids) for f, ids in zip(scanned, maps)]
    local = _by_shard(sample.held(), starts)
    parts = client.gather([submit(client, _sentences_of, f, h) for f, h in zip(shards, local) if len(h)])
    ids = [t[o[k]:o[k + 1]] for t, o in parts for k in range(len(o) - 1)]
    return sample.info(path, vocab, ids), WorkerCorpus(client, [submit(client, _training, f, h, False)
                                                                for f, h in zip(shards, local)])


def _sentences_of(shard, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """On a worker: the sentences ``idx`` of a shard (CSR)."""
    return gather_sentences(*shard, idx)


def _by_shard(indices, starts) -> list[np.ndarray]:
    """Stream indices of sentences as each shard's local indices (shard ``j`` holds ``starts[j] ..
    starts[j+1]-1``)."""
    indices = np.asarray(indices, dtype=np.int64)
    return [indices[(indices >= lo) & (indices < hi)] - lo for lo, hi in zip(starts[:-1], starts[1:])]


def _readable(path, format: str) -> tuple:
    """``(path, format)`` of a corpus the workers can read (files or a directory), its format detected."""
    path = registry.resolve(path)
    if str(path) in (formats.DEMO, "-") or not Path(path).exists():
        raise ConfigError(f"the workers read the corpus from files; {path} is not a file or directory")
    return path, formats.detect_format(path) if format == "auto" else format


def _n_sentences(shard) -> int:
    return len(shard[1]) - 1


def _training(shard, held, keep_empty: bool):
    """A read shard less its held-out sentences (local indices ``held``) and, unless ``keep_empty``, its empty
    ones."""
    tokens, offsets = shard
    keep = np.ones(len(offsets) - 1, dtype=bool) if keep_empty else np.diff(offsets) > 0
    keep[held] = False
    return gather_sentences(tokens, offsets, np.flatnonzero(keep))


def local_vocabulary(shard):
    """On a worker: a shard with its own vocabulary, ``(V_s, (local tokens, offsets))``: ``V_s`` the shard's
    sorted unique word ids, its tokens as indices into ``V_s`` (``tokens == V_s[local]``).  A kernel given the
    local tokens and the rows ``V_s`` of a (W, K) table computes what it computes on the whole table with the
    shard's own tokens wherever it only reads and fills its tokens' rows (the em / vi E-step), so the client
    sends and receives ``(|V_s|, K)`` tables; the cvi2 sweep, which also divides by column totals over all W
    words, gets one more row (:meth:`induce.distributed.cvi2.ClusterCVI2.rows`)."""
    tokens, offsets = shard
    vocab, local = np.unique(tokens, return_inverse=True)
    return vocab.astype(np.int64), (np.ascontiguousarray(local, dtype=np.int32), offsets)


def _lengths(shard) -> np.ndarray:
    return np.diff(shard[1]).astype(np.int32)


def _sizes(shard) -> tuple[int, int]:
    return len(shard[1]) - 1, len(shard[0])


def checksum(arrays) -> int:
    """CRC-32 of a tuple of arrays (their bytes in turn): a shard on a worker against the client's copy."""
    crc = 0
    for a in arrays:
        crc = zlib.crc32(np.ascontiguousarray(a), crc)
    return crc


class WorkerCorpus:
    """A corpus cut into shards held on the workers (see the module docstring).

    ``shards`` are futures of ``(tokens, offsets)``; ``sentence_bounds`` and
    ``token_bounds`` (``n_shards + 1``) place each shard in the corpus.
    """

    def __init__(self, client, shards: list):
        self.client = client
        self.shards = shards
        sizes = np.array(client.gather([submit(client, _sizes, s) for s in shards]), dtype=np.int64).reshape(-1, 2)
        self.sentence_bounds = np.concatenate([[0], np.cumsum(sizes[:, 0])])
        self.token_bounds = np.concatenate([[0], np.cumsum(sizes[:, 1])])

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    @property
    def n_sentences(self) -> int:
        return int(self.sentence_bounds[-1])

    @property
    def n_tokens(self) -> int:
        return int(self.token_bounds[-1])

    @classmethod
    def ship(cls, client, tokens: np.ndarray, offsets: np.ndarray, n_shards: int | None = None) -> "WorkerCorpus":
        """Shards of an in-memory corpus, ``n_shards`` (default: one per worker) of about equal tokens
        (:func:`shard_bounds`): the client sends each worker its tokens once."""
        bounds = shard_bounds(offsets, n_shards or cluster.n_workers(client))
        return cls(client, [submit(client, same, *piece(tokens, offsets, lo, hi))
                            for lo, hi in zip(bounds[:-1], bounds[1:])])

    @classmethod
    def read(cls, client, path, format: str, vocab, *, lowercase: bool = False, skip: np.ndarray | None = None,
             keep_empty: bool = False, n_shards: int | None = None) -> "WorkerCorpus":
        """The training sentences of the file or directory ``path``, read by the workers themselves from byte
        ranges of about equal size (:func:`file_ranges`), one per worker by default; ``skip`` are the
        (stream) indices of held-out sentences (:func:`induce.corpus.stream.scan`), and empty sentences are
        left out unless ``keep_empty`` (then shard sentences are the reader's sentences, one for one).  The
        files must be at the same path on every worker."""
        path, fmt = _readable(path, format)
        raw = [submit(client, _read_ranges, ranges, fmt, lowercase, vocab)
               for ranges in file_ranges(path, fmt, n_shards or cluster.n_workers(client))]
        starts = np.concatenate([[0], np.cumsum(client.gather([submit(client, _n_sentences, r) for r in raw]))])
        return cls(client, [submit(client, _training, r, held, keep_empty)
                            for r, held in zip(raw, _by_shard(() if skip is None else skip, starts))])

    @classmethod
    def of(cls, client, tokens: np.ndarray, offsets: np.ndarray, source: tuple[str, str, bool] | None = None,
           vocab=None, n_shards: int | None = None) -> "WorkerCorpus":
        """The corpus ``tokens`` / ``offsets`` (the client's copy) on the workers.  With ``source`` (``(path,
        format, lowercase)``, :attr:`induce.corpus.corpus.Corpus.source`) the workers read it themselves
        (:meth:`read`, encoding with ``vocab``, the one that gave ``tokens``) and no token crosses the network;
        their shards are checked against the client's copy (sizes and a CRC-32 per shard), and if the file
        changed since the client read it, or the workers cannot read it, the corpus is shipped instead, with a
        warning.  Without ``source``
        (data given in memory, or a subset of a file) shipping once (:meth:`ship`) is the only way."""
        if source is not None:
            path, fmt, lowercase = source
            try:
                read = cls.read(client, path, fmt, vocab, lowercase=lowercase, keep_empty=True, n_shards=n_shards)
            except (OSError, InduceError) as exc:  # e.g. the file is not at that path on the workers' machines
                warnings.warn(f"the workers cannot read {path} ({exc}): the corpus is shipped to them")
            else:
                if read.equals(tokens, offsets):
                    return read
                warnings.warn(f"{path} is not what was read from it: the corpus is shipped to the workers")
        return cls.ship(client, tokens, offsets, n_shards)

    def local(self) -> tuple[list, list[np.ndarray]]:
        """The shards with their own vocabularies (:func:`local_vocabulary`), made on their workers: the futures
        of the local shards ``(local tokens, offsets)`` and the vocabularies ``V_s`` (gathered, sorted word
        ids)."""
        both = [submit(self.client, local_vocabulary, s) for s in self.shards]
        vocabs = self.client.gather([submit(self.client, operator.getitem, f, 0) for f in both])
        return [submit(self.client, operator.getitem, f, 1) for f in both], vocabs

    def lengths(self) -> np.ndarray:
        """The length of every sentence, in corpus order (int32, gathered once: 4 bytes a sentence)."""
        parts = self.client.gather([submit(self.client, _lengths, s) for s in self.shards])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)

    def equals(self, tokens: np.ndarray, offsets: np.ndarray) -> bool:
        """Whether the shards hold exactly the sentences ``tokens`` / ``offsets``, in order (by CRC-32)."""
        if self.n_sentences != len(offsets) - 1 or self.n_tokens != len(tokens):
            return False
        mine = self.client.gather([submit(self.client, checksum, s) for s in self.shards])
        b = self.sentence_bounds
        return mine == [checksum(piece(tokens, offsets, lo, hi)) for lo, hi in zip(b[:-1], b[1:])]

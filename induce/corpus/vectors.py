"""Word vectors from a file, checked line by line.

Two layouts are read:

* the word2vec / fastText text format (``.vec``, ``.txt``; gzip-compressed when the name ends in ``.gz``): a
  header line ``N D`` (number of words, dimension), then ``N`` lines ``word v_1 ... v_D`` separated by single
  spaces (fastText's trailing space is allowed);
* a ``.npy`` matrix ``(N, D)`` with a vocabulary file of ``N`` lines, one word per line, line ``i`` naming row
  ``i`` (by default the ``.npy`` path with the suffix ``.vocab``).

Anything else is a :class:`~induce.errors.CorpusFormatError` naming ``file:line`` and what was expected (a wrong
header, a row with another number of values, a value that is not a finite number, a word given twice, fewer or
more rows than the header or the vocabulary says).  With ``keep`` (the words a corpus uses) only those rows are
held in memory; every row is still checked.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Collection

import numpy as np

from ..errors import CorpusFormatError


@dataclass
class WordVectors:
    """``words[i]`` has the vector ``vectors[i]`` (float64, ``(len(words), dim)``); ``dim`` is the file's."""

    words: list[str]
    vectors: np.ndarray
    dim: int

    def __post_init__(self):
        self.index = {w: i for i, w in enumerate(self.words)}


def read_vectors(path: str | os.PathLike, keep: Collection[str] | None = None,
                 vocab_path: str | os.PathLike | None = None) -> WordVectors:
    """The vectors of ``path`` (text format, ``.gz`` or ``.npy``, see the module docstring); with ``keep`` only
    the rows of those words.  ``vocab_path``: the vocabulary file of a ``.npy`` matrix."""
    path = Path(path)
    if path.suffix == ".npy":
        return _read_npy(path, Path(vocab_path) if vocab_path is not None else path.with_suffix(".vocab"), keep)
    return _read_text(path, keep)


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def _header(path: Path, line: str | None) -> tuple[int, int]:
    parts = (line or "").split()
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise CorpusFormatError(str(path), 1, (line or "").rstrip("\n"),
                                "a header line 'N D' (the number of words and the dimension, positive integers)")
    return int(parts[0]), int(parts[1])


def _row(path: Path, number: int, line: str, dim: int) -> tuple[str, np.ndarray]:
    """The word and vector of one text line, or the error saying what was expected."""
    parts = line.rstrip("\r\n").rstrip(" ").split(" ")
    if len(parts) != dim + 1 or not parts[0]:
        raise CorpusFormatError(str(path), number, line.rstrip("\r\n"),
                                f"a word and {dim} numbers separated by single spaces (the dimension of line 1); "
                                f"the line has {len(parts) - 1} values")
    try:
        vector = np.array(parts[1:], dtype=np.float64)
    except ValueError:
        raise CorpusFormatError(str(path), number, line.rstrip("\r\n"), f"{dim} numbers after the word") from None
    if not np.isfinite(vector).all():
        raise CorpusFormatError(str(path), number, line.rstrip("\r\n"), "finite numbers (no NaN or inf)")
    return parts[0], vector


def _read_text(path: Path, keep) -> WordVectors:
    words, rows, seen = [], [], {}
    number = 1
    try:
        with _open_text(path) as handle:
            n, dim = _header(path, handle.readline())
            for number, line in enumerate(handle, start=2):
                if number > n + 1:
                    raise CorpusFormatError(str(path), number, line.rstrip("\r\n"),
                                            f"the end of the file after the {n} rows line 1 announces")
                word, vector = _row(path, number, line, dim)
                if word in seen:
                    raise CorpusFormatError(str(path), number, word, f"a word not given before (line {seen[word]})")
                seen[word] = number
                if keep is None or word in keep:
                    words.append(word)
                    rows.append(vector)
    except UnicodeDecodeError as exc:
        raise CorpusFormatError(str(path), number + 1, None, f"UTF-8 text ({exc.reason})") from None
    except (OSError, EOFError) as exc:  # a damaged gzip stream
        raise CorpusFormatError(str(path), number + 1, None, f"a readable file ({exc})") from None
    if len(seen) < n:
        raise CorpusFormatError(str(path), len(seen) + 2, None,
                                f"{n} rows as line 1 announces; the file ends after {len(seen)}")
    matrix = np.vstack(rows) if rows else np.zeros((0, dim))
    return WordVectors(words, matrix, dim)


def _read_vocab(path: Path, n: int, npy: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", newline="\n") as handle:
            words = [line.rstrip("\r\n") for line in handle]
    except UnicodeDecodeError as exc:
        raise CorpusFormatError(str(path), None, None, f"UTF-8 text ({exc.reason})") from None
    except FileNotFoundError:
        raise CorpusFormatError(str(path), None, None,
                                f"the vocabulary of {npy.name} (one word per line, line i naming row i)") from None
    seen: dict[str, int] = {}
    for number, word in enumerate(words, start=1):
        if not word:
            raise CorpusFormatError(str(path), number, word, "a word (one per line)")
        if word in seen:
            raise CorpusFormatError(str(path), number, word, f"a word not given before (line {seen[word]})")
        seen[word] = number
    if len(words) != n:
        raise CorpusFormatError(str(path), min(len(words), n) + 1, None,
                                f"{n} words, one per row of {npy.name}; the file has {len(words)}")
    return words


def _read_npy(path: Path, vocab_path: Path, keep) -> WordVectors:
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise CorpusFormatError(str(path), None, None, f"a .npy matrix ({exc})") from None
    if matrix.ndim != 2 or matrix.shape[1] == 0 or matrix.dtype.kind not in "fiu":
        raise CorpusFormatError(str(path), None, None,
                                f"a 2-D numeric matrix (words x dimension); got shape {matrix.shape}, "
                                f"dtype {matrix.dtype}")
    words = _read_vocab(vocab_path, matrix.shape[0], path)
    bad = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
    if bad.size:
        row = int(bad[0])
        raise CorpusFormatError(str(vocab_path), row + 1, words[row],
                                f"a word whose row ({row + 1} of {path.name}) holds finite numbers (no NaN or inf)")
    chosen = np.arange(len(words)) if keep is None else np.array([i for i, w in enumerate(words) if w in keep],
                                                                   dtype=np.int64)
    vectors = np.asarray(matrix[chosen], dtype=np.float64)
    return WordVectors([words[i] for i in chosen], vectors, int(matrix.shape[1]))


def write_vectors(path: str | os.PathLike, words: list[str], vectors: np.ndarray) -> None:
    """Write ``vectors`` atomically: a ``.npy`` name as the matrix plus its ``.vocab`` file, any other in the
    word2vec text format (header ``N D``; gzip-compressed for ``.gz``), which cannot hold a word with a space."""
    from ..atomic import atomic_write
    from ..errors import ConfigError

    path = Path(path)
    if path.suffix == ".npy":
        with atomic_write(path.with_suffix(".vocab")) as handle:
            handle.write("".join(f"{w}\n" for w in words))
        with atomic_write(path, "wb") as handle:
            np.save(handle, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
        return
    spaced = next((w for w in words if " " in w or not w), None)
    if spaced is not None:
        raise ConfigError(f"{path}: the word {spaced!r} cannot be written in the text format (words are separated "
                          "by spaces); write a .npy matrix (with its .vocab file) instead")
    lines = [f"{len(words)} {vectors.shape[1]}\n"]
    lines += [f"{w} {' '.join(format(float(v), '.9g') for v in row)}\n" for w, row in zip(words, vectors)]
    data = "".join(lines).encode("utf-8")
    with atomic_write(path, "wb") as handle:
        handle.write(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)

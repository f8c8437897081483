"""Line-level input shared by every reader: UTF-8 checking, blocks, plain text.

Every reader goes through :func:`iter_lines`, so every format reports invalid
UTF-8 and empty files the same way: a :class:`~induce.errors.CorpusFormatError`
naming the file and the 1-based line.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import sys
import zlib
from typing import Iterator

from ..errors import CorpusFormatError
from .sentence import Sentence

Line = tuple[int, str]
#: The path that means standard input.
STDIN = "-"


class Rows(list):
    """The raw rows (lists of strings) of one sentence as read, with the name of their format.

    The ``Sentence.record`` of the line and column formats; writers copy it
    when writing the same format.  Compares equal to a list with the same rows.
    """

    def __init__(self, rows, format: str):
        super().__init__(rows)
        self.format = format


def _stdin_lines() -> list[bytes]:
    """Standard input as binary lines, read once and kept, so that format detection and reading share it."""
    global _STDIN
    if _STDIN is None:
        _STDIN = sys.stdin.buffer.readlines()
    return _STDIN


_STDIN: list[bytes] | None = None


#: compressed inputs, recognised by their first bytes (whatever the file is called)
COMPRESSIONS = ((b"\x1f\x8b", gzip.open, "gzip"), (b"BZh", bz2.open, "bzip2"), (b"\xfd7zXZ\x00", lzma.open, "xz"))
#: file name endings of compressed files, dropped before a format is guessed from the name
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")


def _opener(path: str | os.PathLike):
    """``(open function, what)`` for ``path``: a decompressing one for gzip, bzip2 and xz files."""
    with open(path, "rb") as probe:
        head = probe.read(6)
    for magic, opener, what in COMPRESSIONS:
        if head.startswith(magic):
            return opener, what
    return open, "file"


def _open_lines(path: str | os.PathLike) -> Iterator[bytes]:
    """The raw lines of ``path`` (``-``: standard input; ``.gz``, ``.bz2``, ``.xz`` read transparently);
    an unreadable or damaged path is a ``CorpusFormatError``."""
    if str(path) == STDIN:
        yield from _stdin_lines()
        return
    try:
        opener, what = _opener(path)
        handle = opener(path, "rb")
    except OSError as exc:
        raise CorpusFormatError(str(path), None, None, f"a readable file ({exc.strerror})") from None
    with handle:
        try:
            yield from handle
        except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:  # EISDIR, EIO; a truncated or damaged archive
            reason = exc.strerror if getattr(exc, "strerror", None) else f"a complete {what} stream: {exc}"
            raise CorpusFormatError(str(path), None, None, f"a readable file ({reason})") from None


def _split_lines(raw_lines: Iterator[bytes]) -> Iterator[bytes]:
    r"""Lines without their ending, split at ``\n``, ``\r\n`` and a lone ``\r`` (old Mac files)."""
    for raw in raw_lines:
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if b"\r" in raw:
            yield from raw.split(b"\r")
        else:
            yield raw


def iter_lines(path: str | os.PathLike, encoding: str = "utf-8", require_text: bool = True) -> Iterator[Line]:
    """``(line_number, text)`` for every line of ``path`` (1-based, line ending removed).

    Lines end at LF, CRLF or a lone CR.  They are decoded one by one (strictly,
    in ``encoding``; UTF-8 unless the corpus says otherwise, e.g. ``latin-1``
    for the CoNLL-2007 Basque files), so an undecodable byte is reported at its
    line.  A UTF-8 byte-order mark on line 1 is dropped.  ``path`` ``-`` is
    standard input.  A missing or unreadable path, a NUL byte (a binary file)
    and (with ``require_text``) a file with no non-blank line raise
    ``CorpusFormatError`` naming the file and the line.
    """
    name = str(path)
    seen_text = False
    for number, raw in enumerate(_split_lines(_open_lines(path)), 1):
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as exc:
            shown = raw.decode(encoding, "replace")
            raise CorpusFormatError(
                name, number, shown, f"valid {exc.encoding.upper()} (invalid byte at column {exc.start + 1}; "
                "give the file's encoding if it is not UTF-8)"
            ) from None
        if "\x00" in text:
            raise CorpusFormatError(name, number, text.replace("\x00", "\\0"),
                                    "text without NUL bytes (is this a binary file?)")
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        seen_text = seen_text or bool(text.strip())
        yield number, text
    if require_text and not seen_text:
        raise CorpusFormatError(name, 1, "", "a non-empty corpus file")


def iter_blocks(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[list[Line]]:
    """Runs of non-blank lines separated by blank lines (one run per sentence)."""
    block: list[Line] = []
    for number, text in iter_lines(path, encoding):
        if text.strip():
            block.append((number, text))
        elif block:
            yield block
            block = []
    if block:
        yield block


def read_plain(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[Sentence]:
    """Plain tokenized text: one sentence per non-blank line, tokens split on whitespace.

    ``record`` holds one row ``[word]`` per token, like the column formats.
    """
    name = str(path)
    for number, text in iter_lines(path, encoding):
        words = text.split()
        if words:
            yield Sentence(words=words, source=(name, number), record=Rows([[w] for w in words], "plain"))

"""Parallel text and gold word alignments.

Parallel text is either two line-aligned files or one file of ``src ||| tgt``
lines.  An alignment is a set of 0-based links ``(i, j)``: ``i`` is a position in
the *first* (source) sentence, ``j`` in the *second* (target) one -- the order
in which the link file writes them.  For the shared gold sets:

=============================  =====================  ========================  ===========
file                           format                 ``i`` / ``j``             index base
=============================  =====================  ========================  ===========
``en-fr/*.wa.nonullalign``     naacl ``s e f S|P``    English / French          1-based
``de-en/de-en.ref.wa``         naacl ``s de en S``    German / English          0-based
``de-en/de-en.wa``             pharaoh ``i-j``        German / English          0-based
``ro-en/roen.gold``            pharaoh ``i-j``        Romanian / English        1-based
``ja-en/jaen.gold``            pharaoh ``i-j``        Japanese / English        1-based
=============================  =====================  ========================  ===========

So read en-fr with ``read_parallel("test.e", "test.f")`` and ro-en with
``read_parallel("roen.src-tgt")``: the first side of the text is ``i``.
NAACL sentence ids are always 1-based.  ``one_based`` defaults to the format's
convention (naacl: 1-based, pharaoh: 0-based) and must be given for the 1-based
Pharaoh files (ro-en, ja-en) and the 0-based NAACL file (de-en); a 0 index in a
file read as 1-based is an error, which catches the common mistake.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Iterable, Iterator

from ..atomic import atomic_write
from ..errors import ConfigError, CorpusFormatError
from .read_lines import iter_lines

Link = tuple[int, int]
SEPARATOR = "|||"
from ..names import ALIGNMENT_FORMATS
_ONE_BASED_DEFAULT = {"naacl": True, "pharaoh": False}
_PHARAOH_LINK = re.compile(r"^([0-9]+)([-?p])([0-9]+)$")
_NAACL_INTEGER = re.compile(r"[0-9]+")  # not str.isdigit(): it takes '²', which int() refuses
#: Largest sentence id and word position a gold alignment file may hold.  A sentence id becomes a list
#: index (the pairs without links in between are empty alignments), so a stray 10^20 must fail here.
MAX_SENTENCE_ID = 1_000_000
MAX_POSITION = 100_000


@dataclass
class Alignment:
    """Gold links of one sentence pair: ``sure`` (S) and ``possible`` (P, a superset of S)."""

    sure: set[Link] = field(default_factory=set)
    possible: set[Link] = field(default_factory=set)

    def add(self, link: Link, sure: bool) -> None:
        if sure:
            self.sure.add(link)
        self.possible.add(link)


def read_parallel(src_path: str | os.PathLike, tgt_path: str | os.PathLike | None = None) -> Iterator[tuple[list[str], list[str]]]:
    """Token lists ``(source, target)`` of every sentence pair, in file order.

    With one file each line is ``source ||| target``; with two files line ``k``
    of one pairs with line ``k`` of the other and a different number of lines is
    an error.  Blank lines give empty sentences (pairs stay line-aligned).
    """
    if tgt_path is None:
        name = str(src_path)
        for number, text in iter_lines(src_path):
            parts = text.split(SEPARATOR)
            if len(parts) != 2:
                raise CorpusFormatError(name, number, text, "'source tokens ||| target tokens'")
            yield parts[0].split(), parts[1].split()
        return
    last = {str(src_path): 0, str(tgt_path): 0}
    for src, tgt in zip_longest(iter_lines(src_path), iter_lines(tgt_path)):
        if src is None or tgt is None:
            short, long_ = (str(src_path), str(tgt_path)) if src is None else (str(tgt_path), str(src_path))
            number, text = src or tgt
            raise CorpusFormatError(
                short, last[short] + 1, None, f"as many lines as {long_}, which has line {number}: {text!r}"
            )
        last[str(src_path)], last[str(tgt_path)] = src[0], tgt[0]
        yield src[1].split(), tgt[1].split()


def _index(value: str, one_based: bool, path: str, number: int, text: str) -> int:
    index = int(value) - (1 if one_based else 0)
    if index < 0:
        raise CorpusFormatError(path, number, text, "positions >= 1 in a 1-based file (pass one_based=False)")
    if index >= MAX_POSITION:
        raise CorpusFormatError(path, number, text, f"word positions below {MAX_POSITION}")
    return index


def _read_naacl(path: str, one_based: bool) -> dict[int, Alignment]:
    pairs: dict[int, Alignment] = {}
    for number, text in iter_lines(path):
        fields = text.split()
        if not fields:
            continue
        if (len(fields) not in (3, 4) or not all(_NAACL_INTEGER.fullmatch(f) for f in fields[:3])
                or fields[3:] not in ([], ["S"], ["P"])):
            raise CorpusFormatError(path, number, text, "'sentence position position [S|P]' with integer fields")
        sent = int(fields[0])
        if not 1 <= sent <= MAX_SENTENCE_ID:
            raise CorpusFormatError(path, number, text, f"a 1-based sentence id of at most {MAX_SENTENCE_ID}")
        link = (_index(fields[1], one_based, path, number, text), _index(fields[2], one_based, path, number, text))
        pairs.setdefault(sent - 1, Alignment()).add(link, fields[3:] != ["P"])
    return pairs


def _read_pharaoh(path: str, one_based: bool) -> dict[int, Alignment]:
    pairs: dict[int, Alignment] = {}
    for number, text in iter_lines(path):
        alignment = Alignment()
        for token in text.split():
            match = _PHARAOH_LINK.match(token)
            if match is None:
                raise CorpusFormatError(path, number, text, f"links 'i-j' (sure) or 'i?j'/'ipj' (possible); got {token!r}")
            i, kind, j = match.groups()
            alignment.add((_index(i, one_based, path, number, text), _index(j, one_based, path, number, text)), kind == "-")
        pairs[number - 1] = alignment
    return pairs


def detect_alignment_format(path: str | os.PathLike) -> str:
    """``naacl`` or ``pharaoh`` from the first line with links: ``sent i j [S|P]`` (3-4 fields, the first ones
    numbers) is NAACL, ``i-j``/``i?j``/``ipj`` tokens are Pharaoh."""
    import re

    for number, text in iter_lines(path):
        fields = text.split()
        if not fields:
            continue
        if all(re.fullmatch(r"[0-9]+[-?p][0-9]+", f) for f in fields):
            return "pharaoh"
        if len(fields) in (3, 4) and all(f.isdecimal() for f in fields[:3]) and fields[3:] in ([], ["S"], ["P"]):
            return "naacl"
        raise CorpusFormatError(str(path), number, text, "NAACL 'sent i j [S|P]' or Pharaoh 'i-j ...' links")
    return "pharaoh"  # no links at all: every pair unaligned


def read_alignments(
    path: str | os.PathLike, format: str = "naacl", n_pairs: int | None = None, one_based: bool | None = None
) -> list[Alignment]:
    """Gold alignments of every sentence pair, 0-based links ``(i, j)`` (see the module docstring).

    ``format="auto"`` detects the format (:func:`detect_alignment_format`).
    ``naacl``: one link per line ``sent i j [S|P]`` (label missing = S), sentence
    ids 1-based.  ``pharaoh``: one line per pair, ``i-j`` sure, ``i?j`` or ``ipj``
    possible.  The list has ``n_pairs`` entries (pairs without links are empty);
    by default as many as the last sentence id (naacl) or line (pharaoh).
    """
    if format == "auto":
        format = detect_alignment_format(path)
    if format not in ALIGNMENT_FORMATS:
        raise ConfigError(f"alignment format must be one of auto, {', '.join(ALIGNMENT_FORMATS)}, got {format!r}")
    name = str(path)
    base = _ONE_BASED_DEFAULT[format] if one_based is None else one_based
    pairs = (_read_naacl if format == "naacl" else _read_pharaoh)(name, base)
    size = max(pairs, default=-1) + 1
    if n_pairs is not None:
        if size > n_pairs or (format == "pharaoh" and size != n_pairs):
            bound = "exactly" if format == "pharaoh" else "at most"
            raise CorpusFormatError(name, None, None, f"{bound} {n_pairs} sentence pairs; got {size}")
        size = n_pairs
    return [pairs.get(k, Alignment()) for k in range(size)]


def clip_alignments(alignments: Iterable[Alignment], pairs: Iterable[tuple[list[str], list[str]]]) -> tuple[list[Alignment], int]:
    """Alignments without links pointing past the end of their sentences, and how many were dropped.

    Needed for the known defects of the shared gold sets (de-en pair 63,
    ja-en pairs 351-356; see their READMEs).
    """
    clipped, dropped = [], 0
    for alignment, (src, tgt) in zip(alignments, pairs):
        def inside(link: Link) -> bool:
            return link[0] < len(src) and link[1] < len(tgt)

        kept = Alignment({l for l in alignment.sure if inside(l)}, {l for l in alignment.possible if inside(l)})
        dropped += len(alignment.possible) - len(kept.possible)
        clipped.append(kept)
    return clipped, dropped


def write_pharaoh(path: str | os.PathLike, alignments: Iterable[set[Link] | Alignment]) -> None:
    """Write 0-based Pharaoh links, one line per pair, atomically.

    A set of links is written as sure links ``i-j``; an :class:`Alignment` as its
    sure links ``i-j`` and its other possible links ``i?j``.
    """
    with atomic_write(path) as out:
        for alignment in alignments:
            if isinstance(alignment, Alignment):
                links = [(l, "-") for l in alignment.sure] + [(l, "?") for l in alignment.possible - alignment.sure]
                out.write(" ".join(f"{i}{mark}{j}" for (i, j), mark in sorted(links)) + "\n")
            else:  # (sure links only, the aligner's output: no mark per link to carry, 1.5x faster)
                out.write(" ".join([f"{i}-{j}" for i, j in sorted(alignment)]) + "\n")

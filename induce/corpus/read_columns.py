"""Column formats: CoNLL-X / CoNLL-2007, CoNLL-2000 and Malt-style ``word tag head``.

One sentence is a block of non-blank lines, one token per line.  Each format is
a :class:`ColumnFormat` (column layout + separator); one reader serves all of
them.  A row may carry exactly one column more than the format defines: that is
where :func:`induce.corpus.writers.write_tagged` appends induced tags, and it is
read back as the tag column ``"induced"``.

``Sentence.record`` is the list of raw rows (lists of strings), so writers can
reproduce every input column.  Heads are validated here (integer, in range,
acyclic) with a compiled kernel; the CoNLL-U reader reuses :func:`check_heads`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
from numba import njit

from ..errors import CorpusFormatError
from .read_lines import Line, Rows, iter_blocks
from .sentence import Sentence

INDUCED = "induced"
_INTEGER = re.compile(r"-?[0-9]+")
MISSING = "_"


@dataclass(frozen=True)
class ColumnFormat:
    """Layout of a column format: column names, separator and the roles of columns.

    ``sep=None`` splits on runs of whitespace; ``tags`` maps tag-column names to
    column indices; ``id_col`` (if any) must count 1, 2, ... within a sentence.
    """

    name: str
    columns: tuple[str, ...]
    sep: str | None
    word: int
    tags: dict[str, int] = field(default_factory=dict)
    head: int | None = None
    deprel: int | None = None
    id_col: int | None = None

    def describe(self) -> str:
        sep = "TAB" if self.sep == "\t" else "space"
        return f"{len(self.columns)} {sep}-separated columns ({' '.join(self.columns)}), optionally one more"


CONLLX = ColumnFormat(
    "conllx",
    ("ID", "FORM", "LEMMA", "CPOSTAG", "POSTAG", "FEATS", "HEAD", "DEPREL", "PHEAD", "PDEPREL"),
    "\t", word=1, tags={"cpos": 3, "pos": 4}, head=6, deprel=7, id_col=0,
)
CONLL2000 = ColumnFormat("conll2000", ("word", "POS", "chunk"), None, word=0, tags={"pos": 1, "chunk": 2})
MALT = ColumnFormat("malt", ("word", "tag", "head"), "\t", word=0, tags={"pos": 1}, head=2)
COLUMN_FORMATS = {f.name: f for f in (CONLLX, CONLL2000, MALT)}


@njit(cache=True)
def _first_bad_head(heads):
    """``(index, kind)`` of the first invalid head: kind 1 = out of range, 2 = on a cycle; ``(-1, 0)`` if valid.

    ``heads`` are 1-based with 0 = root.  Cycle search walks each token's head
    chain once, marking tokens as on the current walk (1) or finished (2):
    reaching a token of the current walk closes a cycle.  O(n) per sentence.
    """
    n = heads.shape[0]
    for i in range(n):
        if heads[i] < 0 or heads[i] > n:
            return i, 1
    state = np.zeros(n, np.int8)
    for i in range(n):
        j = i
        while j >= 0 and state[j] == 0:
            state[j] = 1
            j = heads[j] - 1
        if j >= 0 and state[j] == 1:
            return j, 2
        j = i
        while j >= 0 and state[j] == 1:
            state[j] = 2
            j = heads[j] - 1
    return -1, 0


def check_heads(heads: list[int], lines: list[Line], path: str) -> None:
    """Raise ``CorpusFormatError`` at the line of the first out-of-range or cyclic head."""
    try:
        values = np.asarray(heads, dtype=np.int64)
    except OverflowError:  # a head beyond int64 is out of range; find it without the kernel
        index, kind = next(i for i, h in enumerate(heads) if not -2**63 <= h < 2**63), 1
    else:
        index, kind = _first_bad_head(values)
    if kind == 0:
        return
    number, text = lines[index]
    if kind == 1:
        expected = f"a head between 0 and {len(heads)} (the sentence length)"
    else:
        expected = f"an acyclic dependency tree (token {index + 1} lies on a head cycle)"
    raise CorpusFormatError(path, number, text, expected)


def parse_heads(values: list[str], lines: list[Line], path: str) -> list[int] | None:
    """Integer heads of a sentence, ``None`` if every value is ``_``; validated by :func:`check_heads`."""
    if all(v == MISSING for v in values):
        return None
    heads = []
    for value, (number, text) in zip(values, lines):
        if not _INTEGER.fullmatch(value):  # int() would also take '1_0', ' 1' and non-ASCII digits
            raise CorpusFormatError(path, number, text, f"an integer head; got head {value!r}")
        heads.append(int(value))
    check_heads(heads, lines, path)
    return heads


def _split_rows(block: list[Line], fmt: ColumnFormat, path: str) -> list[list[str]]:
    width = len(fmt.columns)
    rows = []
    for number, text in block:
        row = text.split(fmt.sep) if fmt.sep is not None else text.split()
        if len(row) not in (width, width + 1) or (rows and len(row) != len(rows[0])):
            got = f"{len(row)} columns" + (f", the sentence's first token {len(rows[0])}" if rows else "")
            raise CorpusFormatError(path, number, text, f"{fmt.describe()}; got {got}")
        if fmt.id_col is not None and row[fmt.id_col] != str(len(rows) + 1):
            raise CorpusFormatError(path, number, text, f"token id {len(rows) + 1} in column {fmt.id_col + 1}")
        rows.append(row)
    return rows


def read_columns(path: str | os.PathLike, fmt: ColumnFormat, encoding: str = "utf-8") -> Iterator[Sentence]:
    """Sentences of a column-format file (see the module docstring)."""
    name = str(path)
    width = len(fmt.columns)
    for block in iter_blocks(path, encoding):
        rows = _split_rows(block, fmt, name)
        columns = list(zip(*rows))
        tags = {tag: list(columns[i]) for tag, i in fmt.tags.items()}
        if len(rows[0]) > width:
            tags[INDUCED] = list(columns[width])
        heads = None if fmt.head is None else parse_heads(list(columns[fmt.head]), block, name)
        yield Sentence(
            words=list(columns[fmt.word]),
            tags=tags,
            heads=heads,
            deprels=None if fmt.deprel is None else list(columns[fmt.deprel]),
            source=(name, block[0][0]),
            record=Rows(rows, fmt.name),
        )

"""Readers of numeric sequences: CSV/TSV with a header row, ``.npy`` and ``.npz``.

CSV/TSV (tab-separated when the name ends in ``.tsv`` or ``.tab``): one row per time step; sequences
are separated by a blank line or, with ``id_column``, by changes of that column's value.  ``columns``
picks the numeric columns (default: every column but the id column).  A missing, non-numeric or
non-finite value raises :class:`~induce.errors.CorpusFormatError` with ``file:line``.
``.npy``: one ``(T,)`` or ``(T, d)`` array; ``.npz``: one sequence per stored array, in file order.
"""

from __future__ import annotations

import csv
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from tokenize import TokenError

import numpy as np

from ..errors import CorpusFormatError


@dataclass
class SeriesTable:
    """Sequences read from a file, plus what is needed to write the rows back with new columns.

    ``header`` and ``rows`` are the original cells (strings); ``seq_of_row``/``step_of_row`` map every
    data row to its sequence and step.  For ``.npy``/``.npz`` input the rows are the values themselves.
    """

    path: str
    header: list[str]
    columns: list[str]
    sequences: list[np.ndarray]
    rows: list[list[str]] = field(default_factory=list)
    seq_of_row: list[int] = field(default_factory=list)
    lines: list[list[int]] = field(default_factory=list)

    def locate(self, error: CorpusFormatError, seq: int) -> CorpusFormatError:
        """``error`` raised at ``error.step`` of sequence ``seq`` (see :func:`induce.emissions.base.bad_step`),
        re-addressed to this file and line (CSV/TSV) or array (``.npy``/``.npz``)."""
        step = getattr(error, "step", None)
        if step is None:
            return error
        expected = getattr(error, "bare", error.expected)
        if seq < len(self.lines) and step < len(self.lines[seq]):
            return CorpusFormatError(self.path, self.lines[seq][step], error.text, expected)
        return CorpusFormatError(self.path, None, error.text, f"{expected} (array {seq}, step {step})")


def read_series(path, columns: list[str] | None = None, id_column: str | None = None) -> SeriesTable:
    """Read ``path`` by its extension (``.npy``, ``.npz``, otherwise CSV/TSV; ``-`` is CSV on standard input)."""
    if str(path) != "-" and Path(path).suffix in (".npy", ".npz"):
        return _read_numpy(Path(path), columns)
    return _read_delimited(str(path), columns, id_column)


def _delimiter(path: str) -> str:
    """Tab for ``.tsv`` / ``.tab`` files (also compressed: ``x.tsv.gz``), else comma."""
    from ..corpus.read_lines import COMPRESSED_SUFFIXES

    stem = path[: -len(suffix)] if (suffix := Path(path).suffix) in COMPRESSED_SUFFIXES else path
    return "\t" if Path(stem).suffix in (".tsv", ".tab") else ","


def _csv_rows(path: str, delimiter: str):
    """``csv.reader`` over the decoded lines of ``path`` (:func:`induce.corpus.read_lines.iter_lines`: ``-`` for
    stdin, gzip / bzip2 / xz, strict UTF-8 with ``file:line`` errors, NUL bytes refused, a BOM dropped); a
    malformed row (an over-long field, a broken quote) is a ``CorpusFormatError`` at its line."""
    from ..corpus.read_lines import iter_lines

    reader = csv.reader((text + "\n" for _, text in iter_lines(path)), delimiter=delimiter)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise CorpusFormatError(path, reader.line_num or None, None, f"a well-formed {delimiter!r}-separated "
                                    f"row ({exc})") from None
        yield reader.line_num, cells


def _header(path: str, rows, id_column, columns) -> tuple[list[str], dict[str, int], list[str]]:
    """The header row (names stripped, each once), its index, and the columns to model."""
    _, header = next(rows, (1, None))
    if not header:
        raise CorpusFormatError(path, 1, None, "a header row naming the columns")
    header = [h.strip() for h in header]
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise CorpusFormatError(path, 1, ",".join(header), f"distinct column names (repeated: {', '.join(repeated)})")
    index = {name: i for i, name in enumerate(header)}
    if id_column is not None and id_column not in index:
        raise CorpusFormatError(path, 1, ",".join(header), f"a column named {id_column!r}")
    if columns is None:
        columns = [h for h in header if h != id_column]
    missing = [c for c in columns if c not in index]
    if missing or not columns:
        raise CorpusFormatError(path, 1, ",".join(header), f"columns {missing or columns} in the header")
    if len(set(columns)) < len(columns):
        raise CorpusFormatError(path, None, ",".join(columns), "each --columns name once")
    return header, index, list(columns)


def _read_delimited(path: str, columns, id_column) -> SeriesTable:
    delimiter = _delimiter(path)
    rows = _csv_rows(path, delimiter)
    header, index, columns = _header(path, rows, id_column, columns)
    picks = [index[c] for c in columns]
    id_at = index.get(id_column) if id_column is not None else None
    table = SeriesTable(path, header, columns, [])
    current: list[list[float]] = []
    current_lines: list[int] = []
    last_id = None
    for line, cells in rows:
        if not cells or all(not c.strip() for c in cells):
            if current:
                table.sequences.append(np.asarray(current))
                table.lines.append(current_lines)
                current, current_lines = [], []
            continue
        if len(cells) != len(header):
            raise CorpusFormatError(path, line, delimiter.join(cells), f"{len(header)} fields like the header")
        if id_at is not None and cells[id_at] != last_id and current:
            table.sequences.append(np.asarray(current))
            table.lines.append(current_lines)
            current, current_lines = [], []
        last_id = cells[id_at] if id_at is not None else None
        current.append([_number(cells[i], path, line, header[i]) for i in picks])
        current_lines.append(line)
        table.rows.append(cells)
        table.seq_of_row.append(len(table.sequences))
    if current:
        table.sequences.append(np.asarray(current))
        table.lines.append(current_lines)
    if not table.sequences:
        raise CorpusFormatError(path, None, None, "at least one data row after the header")
    return table


def _number(cell: str, path: str, line: int, name: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise CorpusFormatError(str(path), line, cell, f"a finite number in column {name!r}")
    return value


def _read_numpy(path: Path, columns) -> SeriesTable:
    try:
        loaded = np.load(path, allow_pickle=False)
        if path.suffix == ".npz":
            with loaded as data:
                arrays = [data[k] for k in data.files]
        else:
            arrays = [loaded]
    except (OSError, ValueError, AttributeError, EOFError, SyntaxError, TokenError, zipfile.BadZipFile) as exc:
        raise CorpusFormatError(str(path), None, None,
                                f"a readable {path.suffix} file without pickles ({exc})") from None
    if not arrays:
        raise CorpusFormatError(str(path), None, None, "at least one array in the .npz file")
    seqs = []
    for n, a in enumerate(arrays):
        a = np.asarray(a)
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2 or a.shape[0] == 0 or a.dtype.kind not in "biuf" or not np.all(np.isfinite(a)):
            raise CorpusFormatError(str(path), None, f"array {n} of shape {a.shape} dtype {a.dtype}",
                                    "non-empty 1-D or 2-D arrays of finite numbers")
        seqs.append(a.astype(np.float64))
    d = seqs[0].shape[1]
    if any(s.shape[1] != d for s in seqs):
        raise CorpusFormatError(str(path), None, None, f"every array with {d} columns")
    header = [f"x{i}" for i in range(d)]
    if columns is not None:
        bad = [c for c in columns if c not in header]
        if bad:
            raise CorpusFormatError(str(path), None, ",".join(bad), f"column names among {header}")
        idx = [header.index(c) for c in columns]
        seqs = [s[:, idx] for s in seqs]
    else:
        columns = header
    table = SeriesTable(str(path), header, list(columns), seqs)
    for n, s in enumerate(arrays):
        s = np.asarray(s, dtype=np.float64).reshape(len(s), -1)
        table.rows.extend([[repr(float(v)) for v in row] for row in s])
        table.seq_of_row.extend([n] * len(s))
    return table

"""One model-file format for every estimator and checkpoint: arrays + a JSON header in one ``.npz``.

A file holds the estimator's arrays and one extra array ``header``: the UTF-8
bytes (``uint8``) of a JSON object ``{"format": "induce.<kind>",
"format_version": 1, ...}`` whose other keys are the estimator's own header
(hyperparameters, vocabularies, traces).  Files are written atomically
(:func:`induce.atomic.atomic_write`) and read with ``allow_pickle=False``.

On load every array is checked against the estimator's **schema** (a sequence
of :class:`Field`, or a function of the header returning one or a
:class:`Schema`): its name, dtype kind, shape (entries are ints, or names and
``+ - *`` expressions over sizes taken from the header or bound by the first
array that has them), finite values, non-negative values, integer indices
within bounds, nondecreasing offsets, rows that sum to one.  Arrays come back
cast to the declared dtype and C-contiguous, so nothing read from a file
reaches a compiled kernel unchecked.  Any failure -- an unreadable, truncated or
non-zip file, a bad JSON header, another kind, an unsupported or non-integer
version, a missing or malformed field -- raises
:class:`induce.errors.ModelFormatError` naming the file (and the field).

Files written before this module (the per-estimator layouts of induce 0.x:
``__meta__`` / ``meta`` JSON arrays) are read too; their headers are mapped to
the layout above by :func:`_any_header`.
"""

from __future__ import annotations

import ast
import contextlib
import json
import operator
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence, Union

import numpy as np

from .atomic import atomic_write
from .errors import ModelFormatError

FORMAT_VERSION = 1
HEADER = "header"
_RESERVED = ("format", "format_version")
_STOCHASTIC_TOL = 1e-6
#: what reading a damaged file can raise, from the zip layer up to the JSON header
#: (MemoryError: a member whose .npy header claims a huge shape)
READ_ERRORS = (zipfile.BadZipFile, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError, KeyError,
               ValueError, OSError, TypeError, IndexError, AttributeError, MemoryError)


@dataclass(frozen=True)
class Field:
    """One array of a model file and the checks it must pass on load.

    ``dtype`` is the numpy dtype the array is returned as (``"f8"``, ``"i4"``,
    ``"i8"``, ``"u1"``, ``"?"``); the stored array must have the same kind
    (float for float; signed or unsigned integers, within range, for integers;
    bool for bool).  ``finite``, ``nonnegative``, ``positive``: value checks.  ``shape`` entries are ints, ``None`` (any size) or size
    expressions (``"K"``, ``"W+1"``, ``"2*J+1"``).  ``bound``: integer arrays
    hold values in ``[0, bound)`` -- one expression for the whole array or one
    per column of the last axis.  ``increasing``: nondecreasing (CSR offsets).
    ``stochastic_axis``: sums along that axis are 1 within 1e-6.
    """

    name: str
    dtype: str
    shape: tuple = ()
    finite: bool = True
    nonnegative: bool = False
    positive: bool = False
    stochastic_axis: int | None = None
    bound: Union[int, str, tuple, None] = None
    increasing: bool = False
    optional: bool = False


@dataclass(frozen=True)
class Schema:
    """Fields plus sizes taken from the header (names used in the fields' shapes and bounds)."""

    fields: Sequence[Field]
    dims: Mapping[str, int] = field(default_factory=dict)


SchemaLike = Union[Schema, Sequence[Field], Callable[[dict], Union[Schema, Sequence[Field]]]]


def save(path, kind: str, header: dict, arrays: Mapping[str, np.ndarray], compressed: bool = True) -> None:
    """Write ``arrays`` and the JSON-serialisable ``header`` of a ``kind`` model to ``path`` atomically."""
    clash = [k for k in _RESERVED if k in header] + [k for k in arrays if k == HEADER]
    if clash:
        raise ValueError(f"reserved model-file names in header/arrays: {clash}")
    full = {"format": f"induce.{kind}", "format_version": FORMAT_VERSION, **header}
    payload = {k: np.asarray(v) for k, v in arrays.items()}
    payload[HEADER] = np.frombuffer(json.dumps(full).encode("utf-8"), dtype=np.uint8)
    with atomic_write(path, "wb") as handle:
        (np.savez_compressed if compressed else np.savez)(handle, **payload)


def load(path, kind: str, schema: SchemaLike) -> tuple[dict, dict[str, np.ndarray]]:
    """``(header, arrays)`` of a ``kind`` file, every array checked against ``schema``.

    ``header`` is the file's JSON header without the format keys; ``arrays``
    holds the schema's fields that are present (optional ones may be missing),
    cast to their dtype and C-contiguous.  Raises :class:`ModelFormatError`.
    """
    raw = _read(path)
    header = _header(path, raw, kind)
    with reading(path, "header"):
        spec = schema(header) if callable(schema) else schema
    if not isinstance(spec, Schema):
        spec = Schema(tuple(spec))
    return header, _check(path, raw, spec)


def kind_of(path) -> str:
    """The estimator class a model file holds (``HMMTagger``, ``DMVParser``, ``HSMMSegmenter``, ...), read from its
    header in any layout; :class:`ModelFormatError` when the file is no readable induce model."""
    header = _any_header(path, _read(path))
    kind = header.get("format")
    if not isinstance(kind, str) or not kind.startswith("induce."):
        raise ModelFormatError(f"{path}: not an induce model file (format {kind!r})")
    return kind.removeprefix("induce.")


@contextlib.contextmanager
def reading(path, what: str) -> Iterator[None]:
    """Turn a lookup or type error while decoding ``what`` of a model file into :class:`ModelFormatError`.

    Estimators wrap the code that rebuilds themselves from a loaded header in it
    (a missing key, a value of the wrong type, an unknown parameter).
    """
    try:
        yield
    except ModelFormatError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise ModelFormatError(f"{path}: {what}: malformed ({type(exc).__name__}: {exc})") from exc


# ------------------------------------------------------------------ reading
def _read(path) -> dict[str, np.ndarray]:
    """Every array of the archive at ``path`` (read eagerly, so a damaged member fails here)."""
    path = Path(path)
    if not path.is_file():
        raise ModelFormatError(f"{path}: no such model file" if not path.exists() else f"{path}: not a regular file")
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ModelFormatError(f"{path}: not an induce model file (an .npy array, not an .npz archive)")
        with data:
            return {k: data[k] for k in data.files}
    except ModelFormatError:
        raise
    except READ_ERRORS as exc:
        raise ModelFormatError(f"{path}: not a readable induce model file ({type(exc).__name__}: {exc})") from exc


def _json(path, array: np.ndarray, name: str) -> dict:
    try:
        if array.dtype == np.uint8 and array.ndim == 1:
            text = array.tobytes().decode("utf-8")
        elif array.dtype.kind == "U" and array.ndim == 0:
            text = str(array)
        else:
            raise ValueError(f"expected UTF-8 bytes, got a {array.dtype} array of shape {array.shape}")
        value = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelFormatError(f"{path}: field '{name}': not a JSON header ({exc})") from exc
    if not isinstance(value, dict):
        raise ModelFormatError(f"{path}: field '{name}': expected a JSON object, got {type(value).__name__}")
    return value


def _any_header(path, raw: dict[str, np.ndarray]) -> dict:
    """The header of a file in any layout, mapped to ``{"format", "format_version", ...}``.

    Layouts before :mod:`induce.modelfile`: the parsers' and the HDP tagger's
    ``__meta__`` (``{"kind": k, "format": 1, ...}``; kinds ``pcfg``, ``dmv``,
    ``pcfg-la``, ``induce.HDPHMMTagger``) and the word aligner's ``meta``
    (``{"format_version": 1, ...}``).  The HMM tagger's and the checkpoints'
    ``header`` already had the current layout.
    """
    if HEADER in raw:
        return _json(path, raw.pop(HEADER), HEADER)
    if "__meta__" in raw:
        meta = _json(path, raw.pop("__meta__"), "__meta__")
        old = {"pcfg": "PCFGInducer", "dmv": "DMVParser", "pcfg-la": "LatentPCFGParser",
               "induce.HDPHMMTagger": "HDPHMMTagger"}
        kind = meta.pop("kind", None)
        version = meta.pop("format", None)
        return {"format": f"induce.{old.get(kind, kind)}", "format_version": version, **meta}
    if "meta" in raw:
        meta = _json(path, raw.pop("meta"), "meta")
        return {"format": "induce.WordAligner", **meta}
    raise ModelFormatError(f"{path}: field '{HEADER}': missing; not an induce model file")


def _header(path, raw: dict[str, np.ndarray], kind: str) -> dict:
    header = _any_header(path, raw)
    want = f"induce.{kind}"
    if header.get("format") != want:
        raise ModelFormatError(f"{path}: holds {header.get('format')!r}, not an {want} file")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelFormatError(f"{path}: format_version must be an integer; got {version!r} "
                               f"({type(version).__name__})")
    if version != FORMAT_VERSION:
        raise ModelFormatError(f"{path}: format version {version} is not supported "
                               f"(this induce reads version {FORMAT_VERSION}); retrain or convert the model")
    return {k: v for k, v in header.items() if k not in _RESERVED}


# ------------------------------------------------------------------ checking
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def _names(expr: str) -> list[str]:
    return [n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)]


def _evaluate(expr, dims: Mapping[str, int]) -> int:
    """Value of a size: an int, or an expression over ``dims`` with ``+ - *``."""
    if isinstance(expr, (int, np.integer)):
        return int(expr)

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return dims[node.id]
        raise ValueError(f"unsupported size expression {expr!r}")

    return int(ev(ast.parse(expr, mode="eval")))


def _show(expr, dims: Mapping[str, int]) -> str:
    if expr is None:
        return "*"
    if isinstance(expr, str):
        return f"{expr}={_evaluate(expr, dims)}" if all(n in dims for n in _names(expr)) else expr
    return str(expr)


def _shape_text(shape, dims) -> str:
    parts = [_show(s, dims) for s in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _check(path, raw: dict[str, np.ndarray], spec: Schema) -> dict[str, np.ndarray]:
    dims = {k: int(v) for k, v in spec.dims.items()}
    present = [f for f in spec.fields if f.name in raw]
    for f in spec.fields:
        if f.name not in raw and not f.optional:
            raise ModelFormatError(f"{path}: field '{f.name}': missing")
    # first pass: number of axes, and sizes named by a bare name bind to the first array that has them
    for f in present:
        arr = raw[f.name]
        if arr.ndim != len(f.shape):
            raise ModelFormatError(f"{path}: field '{f.name}': expected shape {_shape_text(f.shape, dims)}, "
                                   f"got {arr.shape}")
        for want, got in zip(f.shape, arr.shape):
            if isinstance(want, str) and want.isidentifier() and want not in dims:
                dims[want] = got
    out = {}
    for f in present:
        out[f.name] = _check_field(path, f, raw[f.name], dims)
    return out


def _check_field(path, f: Field, arr: np.ndarray, dims: Mapping[str, int]) -> np.ndarray:
    where = f"{path}: field '{f.name}'"
    if any(w is not None and _evaluate(w, dims) != g for w, g in zip(f.shape, arr.shape)):
        raise ModelFormatError(f"{where}: expected shape {_shape_text(f.shape, dims)}, got {arr.shape}")
    target = np.dtype(f.dtype)
    kinds = {"f": "f", "i": "iu", "u": "iu", "b": "b"}[target.kind]
    if arr.dtype.kind not in kinds:
        raise ModelFormatError(f"{where}: expected a {target.name} array, got {arr.dtype.name}")
    if target.kind in "iu" and arr.size:
        info = np.iinfo(target)
        lo, hi = arr.min(), arr.max()
        if lo < info.min or hi > info.max:
            raise ModelFormatError(f"{where}: values {lo}..{hi} do not fit {target.name}")
    if target.kind == "f" and f.finite and arr.size and not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))
        raise ModelFormatError(f"{where}: {len(bad)} non-finite values (first {arr[tuple(bad[0])]} at "
                               f"index {tuple(int(i) for i in bad[0])})")
    if (f.nonnegative or f.bound is not None) and arr.size and (arr < 0).any():
        bad = np.argwhere(arr < 0)[0]
        raise ModelFormatError(f"{where}: negative value {arr[tuple(bad)]} at index {tuple(int(i) for i in bad)}")
    if f.positive and arr.size and not (arr > 0).all():
        bad = np.argwhere(~(arr > 0))[0]
        raise ModelFormatError(f"{where}: expected positive values; got {arr[tuple(bad)]} at index "
                               f"{tuple(int(i) for i in bad)}")
    if f.bound is not None and arr.size:
        _check_bound(where, f.bound, arr, dims)
    if f.increasing and arr.size > 1 and (np.diff(arr.ravel()) < 0).any():
        raise ModelFormatError(f"{where}: expected nondecreasing values")
    if f.stochastic_axis is not None and arr.size:
        sums = arr.sum(axis=f.stochastic_axis, dtype=np.float64)
        worst = np.abs(sums - 1.0).max() if sums.size else 0.0
        if not worst <= _STOCHASTIC_TOL:
            raise ModelFormatError(f"{where}: sums along axis {f.stochastic_axis} must be 1; off by {worst:.3g}")
    return arr.astype(target, order="C", copy=False)  # C-contiguous, as the kernels expect (also 0-d)


def _check_bound(where: str, bound, arr: np.ndarray, dims) -> None:
    if isinstance(bound, tuple):
        columns = [(arr[..., j], b) for j, b in enumerate(bound)]
        if arr.shape[-1] != len(bound):
            raise ModelFormatError(f"{where}: expected {len(bound)} columns, got {arr.shape[-1]}")
    else:
        columns = [(arr, bound)]
    for j, (values, b) in enumerate(columns):
        limit = _evaluate(b, dims)
        if values.size and values.max() >= limit:
            col = f" column {j}" if isinstance(bound, tuple) else ""
            raise ModelFormatError(f"{where}{col}: index {values.max()} out of range "
                                   f"(expected below {_show(b, dims)})")


__all__ = ["FORMAT_VERSION", "Field", "Schema", "load", "reading", "save"]

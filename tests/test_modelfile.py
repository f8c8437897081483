"""induce.modelfile: the npz + JSON header format, its schema checks, and damaged files (hand-made cases)."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from induce import modelfile
from induce.errors import ModelFormatError
from induce.modelfile import Field, Schema

HEADER = {"vocab": ["a", "b", "c"], "params": {"n_states": 2}}


def _schema(header: dict) -> Schema:
    return Schema((
        Field("trans", "f8", ("K+1", "K"), nonnegative=True, stochastic_axis=1),
        Field("emit", "f8", ("W+1", "K"), nonnegative=True),
        Field("order", "i8", ("K",), bound="K"),
        Field("offsets", "i8", ("W+2",), bound="nnz+1", increasing=True),
        Field("cols", "i4", ("nnz",), bound="W"),
        Field("pairs", "i4", (None, 2), bound=("K", "W")),
        Field("mask", "?", ("W",)),
        Field("scale", "f8", (), positive=True),
        Field("extra", "f8", ("K",), optional=True),
    ), {"K": int(header["params"]["n_states"]), "W": len(header["vocab"])})


def _arrays() -> dict[str, np.ndarray]:
    return {
        "trans": np.array([[0.5, 0.5], [0.25, 0.75], [1.0, 0.0]]),
        "emit": np.full((4, 2), 0.25),
        "order": np.array([1, 0]),
        "offsets": np.array([0, 1, 1, 3, 4]),
        "cols": np.array([0, 2, 1, 2], dtype=np.int32),
        "pairs": np.array([[0, 2], [1, 0], [1, 1]], dtype=np.int32),
        "mask": np.array([True, False, True]),
        "scale": np.array(2.5),
    }


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m.npz"
    modelfile.save(path, "Toy", HEADER, _arrays())
    return path


def _write(path, arrays: dict, header: dict | None = None) -> None:
    """An npz in the current layout with any arrays and header (what a tamperer would write)."""
    full = {"format": "induce.Toy", "format_version": 1, **HEADER} if header is None else header
    np.savez(path, header=np.frombuffer(json.dumps(full).encode(), dtype=np.uint8), **arrays)


def _raw(path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files if k != "header"}


def test_round_trip_casts_and_makes_c_contiguous(tmp_path):
    arrays = _arrays()
    arrays["emit"] = np.asfortranarray(arrays["emit"].astype(np.float32))
    arrays["order"] = arrays["order"].astype(np.uint8)
    path = tmp_path / "m.npz"
    modelfile.save(path, "Toy", HEADER, arrays)
    header, loaded = modelfile.load(path, "Toy", _schema)
    assert header == HEADER
    assert set(loaded) == set(arrays)  # the optional 'extra' is absent
    for name, value in loaded.items():
        np.testing.assert_array_equal(value, arrays[name])
        assert value.flags["C_CONTIGUOUS"] and value.dtype == np.dtype(
            {f.name: f.dtype for f in _schema(HEADER).fields}[name])
    assert loaded["scale"].shape == ()


def test_save_refuses_reserved_names(tmp_path):
    with pytest.raises(ValueError):
        modelfile.save(tmp_path / "x.npz", "Toy", {"format_version": 2}, {})
    with pytest.raises(ValueError):
        modelfile.save(tmp_path / "x.npz", "Toy", {}, {"header": np.zeros(1)})


def _tampered(name, fn):
    arrays = _arrays()
    if fn is None:
        del arrays[name]
    else:
        arrays[name] = fn(arrays[name])
    return arrays


def _set(index, value, dtype=None):
    def fn(a):
        a = a.astype(dtype) if dtype is not None else a.copy()
        a[index] = value
        return a
    return fn


TAMPER = [
    ("trans", lambda a: a.T, r"field 'trans': expected shape \(K\+1=3, K=2\), got \(2, 3\)"),
    ("emit", lambda a: a.T, r"field 'emit': expected shape \(W\+1=4, K=2\), got \(2, 4\)"),
    ("emit", lambda a: a[:-1], r"field 'emit': expected shape"),
    ("emit", lambda a: a[None], r"field 'emit': expected shape"),
    ("emit", _set((0, 0), np.nan), r"field 'emit': 1 non-finite values \(first nan at index \(0, 0\)\)"),
    ("emit", _set((2, 1), -np.inf), r"field 'emit': 1 non-finite"),
    ("emit", _set((1, 1), -0.5), r"field 'emit': negative value -0.5 at index \(1, 1\)"),
    ("emit", lambda a: a.astype(np.int64), r"field 'emit': expected a float64 array, got int64"),
    ("emit", lambda a: a.astype(str), r"field 'emit': expected a float64 array, got str"),
    ("emit", lambda a: a.astype(np.complex128), r"field 'emit': expected a float64 array"),
    ("emit", None, r"field 'emit': missing"),
    ("trans", _set((1, 0), 0.3), r"field 'trans': sums along axis 1 must be 1"),
    ("order", lambda a: a.astype(float), r"field 'order': expected a int64 array, got float64"),
    ("order", _set(0, 2), r"field 'order': index 2 out of range \(expected below K=2\)"),
    ("order", _set(0, -1), r"field 'order': negative value -1"),
    ("order", lambda a: a.astype(np.uint64) + np.uint64(2**63), r"field 'order': values .* do not fit int64"),
    ("offsets", _set(2, 0), r"field 'offsets': expected nondecreasing values"),
    ("offsets", _set(4, 5), r"field 'offsets': index 5 out of range \(expected below nnz\+1=5\)"),
    ("cols", lambda a: a[:-1], r"field 'offsets': index 4 out of range"),
    ("cols", _set(0, 3), r"field 'cols': index 3 out of range \(expected below W=3\)"),
    ("pairs", _set((1, 0), 2), r"field 'pairs' column 0: index 2 out of range \(expected below K=2\)"),
    ("pairs", lambda a: a[:, :1], r"field 'pairs': expected shape \(\*, 2\), got \(3, 1\)"),
    ("mask", lambda a: a.astype(np.uint8), r"field 'mask': expected a bool array, got uint8"),
    ("scale", lambda a: a.reshape(1), r"field 'scale': expected shape \(\), got \(1,\)"),
    ("scale", _set((), np.nan), r"field 'scale': 1 non-finite"),
    ("scale", _set((), 0.0), r"field 'scale': expected positive values; got 0.0 at index \(\)"),
]


@pytest.mark.parametrize("name,fn,message", TAMPER, ids=[f"{t[0]}-{i}" for i, t in enumerate(TAMPER)])
def test_tampered_arrays_raise_naming_file_and_field(tmp_path, name, fn, message):
    path = tmp_path / "bad.npz"
    _write(path, _tampered(name, fn))
    with pytest.raises(ModelFormatError, match=message) as info:
        modelfile.load(path, "Toy", _schema)
    assert str(info.value).startswith(f"{path}: ")


def test_an_optional_field_is_checked_when_present(tmp_path):
    path = tmp_path / "m.npz"
    _write(path, _arrays() | {"extra": np.array([1.0, np.inf])})
    with pytest.raises(ModelFormatError, match="field 'extra'"):
        modelfile.load(path, "Toy", _schema)
    _write(path, _arrays() | {"extra": np.array([1.0, 2.0]), "unknown": np.zeros(3)})
    _, arrays = modelfile.load(path, "Toy", _schema)
    assert "extra" in arrays and "unknown" not in arrays  # only declared fields come back


def test_sizes_bind_to_the_first_array_that_names_them(tmp_path):
    schema = [Field("a", "f8", ("N", 2)), Field("b", "f8", ("N*2+1",)), Field("c", "f8", ("N",))]
    path = tmp_path / "m.npz"
    modelfile.save(path, "Toy", {}, {"a": np.zeros((3, 2)), "b": np.zeros(7), "c": np.zeros(3)})
    assert modelfile.load(path, "Toy", schema)[1]["b"].shape == (7,)
    modelfile.save(path, "Toy", {}, {"a": np.zeros((3, 2)), "b": np.zeros(6), "c": np.zeros(3)})
    with pytest.raises(ModelFormatError, match=r"field 'b': expected shape \(N\*2\+1=7,\), got \(6,\)"):
        modelfile.load(path, "Toy", schema)


@pytest.mark.parametrize("version,message", [
    ("1", r"format_version must be an integer; got '1' \(str\)"),
    (1.0, r"format_version must be an integer; got 1.0 \(float\)"),
    (True, r"format_version must be an integer; got True \(bool\)"),
    (None, r"format_version must be an integer; got None"),
    (99, r"format version 99 is not supported \(this induce reads version 1\)"),
])
def test_version_must_be_the_supported_integer(tmp_path, version, message):
    path = tmp_path / "m.npz"
    _write(path, _arrays(), {"format": "induce.Toy", "format_version": version, **HEADER})
    with pytest.raises(ModelFormatError, match=message):
        modelfile.load(path, "Toy", _schema)


def test_wrong_kind_and_broken_headers(tmp_path, saved):
    with pytest.raises(ModelFormatError, match=r"holds 'induce.Toy', not an induce.Other file"):
        modelfile.load(saved, "Other", _schema)
    path = tmp_path / "h.npz"
    for header, message in [(b'{"format": ', "not a JSON header"), (b"\xff\xfe", "not a JSON header"),
                            (b"[1, 2]", "expected a JSON object"), (b'{"format": 3}', "holds 3")]:
        np.savez(path, header=np.frombuffer(header, dtype=np.uint8), **_arrays())
        with pytest.raises(ModelFormatError, match=message):
            modelfile.load(path, "Toy", _schema)
    np.savez(path, header=np.zeros((2, 2)))
    with pytest.raises(ModelFormatError, match="field 'header': not a JSON header"):
        modelfile.load(path, "Toy", _schema)
    np.savez(path, **_arrays())
    with pytest.raises(ModelFormatError, match="field 'header': missing"):
        modelfile.load(path, "Toy", _schema)
    # a header the schema cannot read (no 'vocab'): named, not a KeyError
    _write(path, _arrays(), {"format": "induce.Toy", "format_version": 1, "params": {"n_states": 2}})
    with pytest.raises(ModelFormatError, match=r"header: malformed \(KeyError: 'vocab'\)"):
        modelfile.load(path, "Toy", _schema)


def test_damaged_or_foreign_files(tmp_path, saved):
    data = saved.read_bytes()
    bad = tmp_path / "bad.npz"
    rng = np.random.default_rng(0)
    cases = {"empty": b"", "text": b"not a model\n", "random": rng.bytes(len(data)),
             "zip magic + junk": b"PK\x03\x04" + rng.bytes(200), "pickle": b"\x80\x04K\x01."}
    cases.update({f"cut at {n}": data[:n] for n in (1, 30, len(data) // 2, len(data) - 1)})
    for name, content in cases.items():
        bad.write_bytes(content)
        with pytest.raises(ModelFormatError, match="not a readable induce model file"):
            modelfile.load(bad, "Toy", _schema)
    with zipfile.ZipFile(bad, "w") as archive:  # a member whose .npy header claims 8 TB
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)})
        archive.writestr("emit.npy", head.getvalue() + bytes(64))
    with pytest.raises(ModelFormatError, match="MemoryError|ValueError"):
        modelfile.load(bad, "Toy", _schema)
    np.save(tmp_path / "plain.npy", np.zeros(3))
    (tmp_path / "plain.npy").rename(bad)
    with pytest.raises(ModelFormatError, match=r"an \.npy array, not an \.npz archive"):
        modelfile.load(bad, "Toy", _schema)
    np.savez(bad, header=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ModelFormatError, match="not a readable"):
        modelfile.load(bad, "Toy", _schema)
    with pytest.raises(ModelFormatError, match="no such model file"):
        modelfile.load(tmp_path / "missing.npz", "Toy", _schema)
    with pytest.raises(ModelFormatError, match="not a regular file"):
        modelfile.load(tmp_path, "Toy", _schema)


def test_corrupted_bytes_never_escape_as_other_errors(tmp_path, saved):
    """Flipping bytes anywhere gives ModelFormatError (CRC, zlib, JSON, schema) or, in slack bytes, the same model."""
    data = bytearray(saved.read_bytes())
    _, good = modelfile.load(saved, "Toy", _schema)
    bad = tmp_path / "bad.npz"
    rng = np.random.default_rng(1)
    errors = 0
    for pos in rng.choice(len(data), size=min(len(data), 150), replace=False):
        flipped = bytearray(data)
        flipped[pos] ^= 0xFF
        bad.write_bytes(bytes(flipped))
        try:
            _, arrays = modelfile.load(bad, "Toy", _schema)
        except ModelFormatError:
            errors += 1
            continue
        for k in good:
            np.testing.assert_array_equal(arrays[k], good[k])
    assert errors > 100


def test_compressed_member_corruption_is_a_model_format_error(tmp_path, saved):
    """A member whose deflate stream is damaged (zlib.error / bad CRC inside np.load)."""
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(saved) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            payload = src.read(info.filename)
            dst.writestr(info, payload)
    raw = bytearray(bad.read_bytes())
    start = raw.index(b"emit.npy") + 40
    raw[start:start + 8] = b"\x00" * 8
    bad.write_bytes(bytes(raw))
    with pytest.raises(ModelFormatError, match="not a readable induce model file"):
        modelfile.load(bad, "Toy", _schema)


def test_legacy_layouts_are_read(tmp_path):
    """Files of induce before this module: ``__meta__`` (parsers, HDP tagger) and ``meta`` (aligner)."""
    path = tmp_path / "old.npz"
    meta = json.dumps({"kind": "pcfg", "format": 1, **HEADER})
    np.savez_compressed(path, __meta__=np.array(meta), **_arrays())
    header, arrays = modelfile.load(path, "PCFGInducer", _schema)
    assert header == HEADER and set(arrays) == set(_arrays())
    np.savez_compressed(path, __meta__=np.array(json.dumps({"kind": "pcfg", "format": "1", **HEADER})))
    with pytest.raises(ModelFormatError, match="format_version must be an integer; got '1'"):
        modelfile.load(path, "PCFGInducer", _schema)
    old = json.dumps({"format_version": 1, **HEADER}).encode()
    np.savez(path, meta=np.frombuffer(old, dtype=np.uint8), **_arrays())
    assert modelfile.load(path, "WordAligner", _schema)[0] == HEADER
    with pytest.raises(ModelFormatError, match="not an induce.HMMTagger file"):
        modelfile.load(path, "HMMTagger", _schema)

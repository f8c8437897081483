"""Series input that used to crash or be misread (issue 39): each is a one-line ``file[:line]: expected ...``
error (status 2), or read correctly (compressed CSV, stdin, a BOM)."""

from __future__ import annotations

import bz2
import gzip

import numpy as np
import pytest

from induce.cli import main
from induce.errors import ConfigError, CorpusFormatError
from induce.series import read_series


def _write(path, text: str | bytes):
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def test_compressed_csv_reads_like_plain(tmp_path):
    rows = "a,b\n" + "".join(f"{i % 3},{i % 5}\n" for i in range(20))
    plain = read_series(_write(tmp_path / "x.csv", rows))
    with gzip.open(tmp_path / "x.csv.gz", "wt") as f:
        f.write(rows)
    _write(tmp_path / "x.tsv.bz2", bz2.compress(rows.replace(",", "\t").encode()))
    for name in ("x.csv.gz", "x.tsv.bz2"):
        table = read_series(tmp_path / name)
        assert table.columns == ["a", "b"] and np.array_equal(table.sequences[0], plain.sequences[0])


def test_bom_is_dropped_from_the_first_column_name(tmp_path):
    path = _write(tmp_path / "b.csv", "\ufeffa,b\n1,2\n3,4\n".encode("utf-8"))
    assert read_series(path).columns == ["a", "b"]


@pytest.mark.parametrize("name, content, expected", [
    ("latin.csv", "a\n1\n\u00e9\n".encode("latin-1"), ":3: expected valid UTF-8"),
    ("bin.csv", bytes(range(256)), ":1: expected text without NUL bytes"),
    ("long.csv", "a\n" + "1" * 200_000 + "\n", ":2: expected a well-formed ','-separated row"),
    ("dup.csv", "a,a\n1,2\n", ":1: expected distinct column names (repeated: a)"),
])
def test_malformed_csv_is_one_located_error(tmp_path, name, content, expected):
    with pytest.raises(CorpusFormatError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        read_series(_write(tmp_path / name, content))


def test_broken_numpy_files_are_format_errors(tmp_path):
    np.save(tmp_path / "good.npy", np.ones((5, 2)))
    raw = (tmp_path / "good.npy").read_bytes()
    _write(tmp_path / "header.npy", raw[:10] + b"garbage{{{" + raw[20:])
    np.savez(tmp_path / "empty.npz")
    np.savez(tmp_path / "two.npz", a=np.ones(9), b=np.zeros(9))
    _write(tmp_path / "cut.npz", (tmp_path / "two.npz").read_bytes()[:100])
    for name, expected in (("header.npy", "a readable .npy file"), ("empty.npz", "at least one array"),
                           ("cut.npz", "a readable .npz file")):
        with pytest.raises(CorpusFormatError, match=expected):
            read_series(tmp_path / name)


@pytest.mark.parametrize("values, expected", [
    ([1.0, 2.0, 1e200, 3.0] * 5, "test.csv:4: expected values of magnitude at most 1e+100"),
    ([5.0] * 20, "every modelled value is the same"),
])
def test_gaussian_values_it_cannot_model_are_refused(tmp_path, capsys, values, expected):
    path = _write(tmp_path / "test.csv", "a\n" + "".join(f"{v}\n" for v in values))
    assert main(["segment", str(path), "--iterations", "3"]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1


def test_gaussian_family_refuses_a_constant_series_from_python():
    from induce.series import HMMSegmenter

    with pytest.raises(ConfigError, match="the same"):
        HMMSegmenter(n_iter=2).fit([np.full((10, 1), 3.0)])

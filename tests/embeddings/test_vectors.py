"""Reading word vectors (issue 36): round trips of every layout, and every malformed file refused with one line
``induce: error: file:line: expected ...`` and status 2 through the CLI."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from induce.cli import main
from induce.corpus.vectors import read_vectors, write_vectors
from induce.embeddings import VectorTable
from induce.embeddings.table import normalize
from induce.errors import ConfigError, CorpusFormatError

WORDS = ["the", "dog", "dogs", "ran", "walked", "Paris"]


def _vectors(d: int = 3) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(len(WORDS), d))


@pytest.mark.parametrize("name", ["v.vec", "v.txt.gz", "v.npy"])
def test_round_trip_of_every_layout(tmp_path, name):
    X = _vectors()
    write_vectors(tmp_path / name, WORDS, X)
    found = read_vectors(tmp_path / name)
    assert found.words == WORDS and found.dim == 3
    np.testing.assert_allclose(found.vectors, X, rtol=1e-6 if name.endswith(".npy") else 1e-8)
    kept = read_vectors(tmp_path / name, keep={"dog", "Paris", "absent"})
    assert kept.words == ["dog", "Paris"]
    np.testing.assert_allclose(kept.vectors, X[[1, 5]], rtol=1e-6)


def test_fasttext_trailing_space_and_gzip(tmp_path):
    text = "2 2\nhello 0.5 1 \nworld -1 2e-3 \n"
    (tmp_path / "f.vec.gz").write_bytes(gzip.compress(text.encode()))
    found = read_vectors(tmp_path / "f.vec.gz")
    assert found.words == ["hello", "world"]
    np.testing.assert_array_equal(found.vectors, [[0.5, 1.0], [-1.0, 0.002]])


BAD_TEXT = [
    ("2\na 1 2\nb 3 4\n", 1, "header line 'N D'"),
    ("2 x\na 1 2\nb 3 4\n", 1, "header line 'N D'"),
    ("2 2\na 1 2\nb 3\n", 3, "a word and 2 numbers"),
    ("2 2\na 1 2 5\nb 3 4\n", 2, "a word and 2 numbers"),
    ("2 2\na 1 nan\nb 3 4\n", 2, "finite numbers"),
    ("2 2\na 1 inf\nb 3 4\n", 2, "finite numbers"),
    ("2 2\na 1 two\nb 3 4\n", 2, "2 numbers after the word"),
    ("2 2\na 1 2\na 3 4\n", 3, "not given before (line 2)"),
    ("3 2\na 1 2\nb 3 4\n", 4, "3 rows as line 1 announces"),
    ("1 2\na 1 2\nb 3 4\n", 3, "the end of the file"),
]


@pytest.mark.parametrize("text, line, expected", BAD_TEXT)
def test_malformed_text_file_names_its_line(tmp_path, text, line, expected):
    path = tmp_path / "bad.vec"
    path.write_text(text)
    with pytest.raises(CorpusFormatError) as info:
        read_vectors(path)
    assert info.value.line == line and expected in str(info.value)


@pytest.mark.parametrize("vocab, matrix, where, expected", [
    ("a\nb\n", np.ones((3, 2)), "v.vocab:3", "3 words, one per row"),
    ("a\na\n", np.ones((2, 2)), "v.vocab:2", "not given before"),
    ("a\nb\n", np.array([[1.0, 2.0], [np.nan, 1.0]]), "v.vocab:2", "finite numbers"),
    ("a\nb\n", np.ones(2), "v.npy", "2-D numeric matrix"),
])
def test_malformed_npy_or_vocabulary(tmp_path, vocab, matrix, where, expected):
    np.save(tmp_path / "v.npy", matrix)
    (tmp_path / "v.vocab").write_text(vocab)
    with pytest.raises(CorpusFormatError) as info:
        read_vectors(tmp_path / "v.npy")
    assert f"{where}: expected" in str(info.value) and expected in str(info.value)


def test_cli_refuses_a_bad_vectors_file_with_one_line_and_status_2(tmp_path, capsys):
    (tmp_path / "c.txt").write_text("a b c\nb c a\n")
    (tmp_path / "bad.vec").write_text("3 2\na 1 2\nb 3\nc 1 1\n")
    status = main(["tag", str(tmp_path / "c.txt"), "--format", "plain", "--emission", "embeddings",
                   "--embeddings", str(tmp_path / "bad.vec"), "--states", "2", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and err.count("\n") == 0
    assert err.startswith(f"induce: error: {tmp_path / 'bad.vec'}:3: expected a word and 2 numbers")


def test_text_writer_refuses_words_with_spaces(tmp_path):
    with pytest.raises(ConfigError, match=".npy"):
        write_vectors(tmp_path / "v.vec", ["a b"], np.ones((1, 2)))


def test_unknown_words_back_off_to_their_suffix_or_the_mean():
    X = _vectors()
    table = VectorTable(WORDS, X, "suffix")
    got, known = table.lookup(["dog", "cats", "jumped", "xyzq"])
    np.testing.assert_array_equal(known, [True, False, False, False])
    np.testing.assert_allclose(got[0], X[1])
    np.testing.assert_allclose(got[1], X[[2, 5]].mean(axis=0))  # "-s": "dogs" and "Paris" (no "ats", "ts")
    np.testing.assert_allclose(got[2], X[4])                  # "-ed": only "walked"
    np.testing.assert_allclose(got[3], X.mean(axis=0))        # no suffix shared: the mean vector
    mean_table = VectorTable(WORDS, X, "mean")
    np.testing.assert_allclose(mean_table.lookup(["cats"])[0][0], X.mean(axis=0))


def test_suffix_back_off_averages_the_words_sharing_the_suffix():
    X = np.array([[1.0, 0.0], [3.0, 2.0], [0.0, 5.0]])
    table = VectorTable(["walked", "talked", "dog"], X, "suffix")
    np.testing.assert_allclose(table.backoff("jumped"), [2.0, 1.0])  # "-ked" no; "ed": walked, talked
    np.testing.assert_allclose(table.backoff("Barked"), [2.0, 1.0])  # "ked", lowercased


def test_normalisations():
    X = _vectors(4)
    np.testing.assert_allclose(np.linalg.norm(normalize(X, "unit"), axis=1), 1.0)
    Z = normalize(X, "standardize")
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1.0)
    assert normalize(X, "none") is X

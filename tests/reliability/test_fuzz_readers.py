"""Hypothesis fuzz of every reader: only ``InduceError`` subclasses may escape (docs/experiments/reliability_inputs.md).

Inputs are byte strings built from the characters that matter to the formats
(TABs, spaces, line endings including lone CRs, digits and non-ASCII digits
such as ``²``, brackets, slashes, ``|||``, ``#`` comments, NUL, invalid UTF-8)
and from valid lines of each format with characters inserted or cut out.  Each example is written to a
file and read to the end through the format's reader, format detection, and
the parallel-text and alignment readers.

Budget: ``INDUCE_FUZZ_EXAMPLES`` examples per reader (default 200, the CI
size; run by hand with ``INDUCE_FUZZ_EXAMPLES=10000``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from induce.corpus.formats import READERS, detect_format, read_sentences
from induce.corpus.parallel import read_alignments, read_parallel
from induce.errors import InduceError

EXAMPLES = int(os.environ.get("INDUCE_FUZZ_EXAMPLES", "200"))

VALID_LINES = {
    "conllu": ["# text = a b", "1\ta\ta\tDET\tDT\t_\t2\tdet\t_\t_", "2\tb\tb\tNOUN\tNN\t_\t0\troot\t_\tinduced=S1",
               "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_", "2.1\tx\t_\t_\t_\t_\t_\t_\t_\t_",
               "1\ta\t_\tX\t_\t_\t0\troot\t_\t"],  # the last: an empty MISC column
    "conllx": ["1\ta\ta\tD\tDT\t_\t2\tdet\t_\t_", "2\tb\tb\tN\tNN\t_\t0\troot\t_\t_"],
    "conll2000": ["Confidence NN B-NP", "in IN B-PP", "the DT B-NP O"],
    "malt": ["a\tDT\t2", "b\tNN\t0", "c\tNN\t\u00b2"],
    "brown": ["The/at Fulton/np-tl said/vbd ./.", "a/b/c x/y"],
    "ptb": ["( (S (NP-SBJ (DT a) (NN b)) (VP (VBD c) (-NONE- *T*-1))) )", "(S (NP (-LRB- -LRB-)) )"],
    "plain": ["a b c", "d e"],
    "naacl": ["1 1 1 S", "1 2 3 P", "2 1 1", "1 \u00b2 1 S"],
    "pharaoh": ["0-0 1?2 3p4", "1-1"],
    "parallel": ["a b ||| x y", "c ||| z"],
}
ALPHABET = list("\t \n\r\r\n0123456789-_#()/|?pSP=.") + ["²", "٣", "\x00", "\ufeff", "\u2028", "é", "a", "NN", "B-NP",
                                                            "|||", "99999999999999999999", "-1", "\t_"]


def _line(fmt: str):
    mutated = st.tuples(st.sampled_from(VALID_LINES[fmt]), st.integers(0, 60), st.integers(0, 4),
                        st.sampled_from(ALPHABET)).map(lambda t: t[0][: t[1]] + t[3] * t[2] + t[0][t[1]:])
    cut = st.tuples(st.sampled_from(VALID_LINES[fmt]), st.integers(0, 60), st.integers(0, 8)).map(
        lambda t: t[0][: t[1]] + t[0][t[1] + t[2]:])
    noise = st.lists(st.sampled_from(ALPHABET), max_size=12).map("".join)
    return st.one_of(st.sampled_from(VALID_LINES[fmt]), mutated, cut, noise)


def _document(fmt: str):
    text = st.lists(_line(fmt), min_size=0, max_size=8).map(lambda lines: "\n".join(lines))
    encoded = text.map(lambda t: t.encode("utf-8", "surrogatepass"))
    return st.one_of(encoded, encoded.map(lambda b: b + b"\xff"), st.binary(max_size=64))


def _read_all(fmt: str, path: Path) -> None:
    if fmt in ("naacl", "pharaoh"):
        read_alignments(path, fmt)
    elif fmt == "parallel":
        list(read_parallel(path))
        list(read_parallel(path, path))
    else:
        list(READERS[fmt](path, "utf-8"))
        detected = detect_format(path)
        list(read_sentences(path, detected))


@pytest.mark.parametrize("fmt", list(VALID_LINES))
def test_reader_raises_only_typed_errors(fmt):
    suffix = {"conllu": ".conllu", "conllx": ".conll", "ptb": ".mrg", "malt": ".dp"}.get(fmt, "")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"

        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(_document(fmt))
        def run(data: bytes) -> None:
            path.write_bytes(data)
            try:
                _read_all(fmt, path)
            except InduceError:
                pass

        run()

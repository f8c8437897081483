"""Parallel text and gold alignments: the counts of corpora/README.md and hand cases."""

from __future__ import annotations

import pytest

from induce.corpus import Alignment, read_alignments, read_parallel, write_pharaoh
from induce.corpus.parallel import clip_alignments


def _links(alignments):
    sure = sum(len(a.sure) for a in alignments)
    return sure, sum(len(a.possible) for a in alignments) - sure


def _tokens(pairs):
    return sum(len(s) for s, _ in pairs), sum(len(t) for _, t in pairs)


# set, text files, gold file, format, one_based, pairs, (src, tgt) tokens, (S, P-only) links, out-of-range links
SETS = [
    ("en-fr trial", ("en-fr/trial.e", "en-fr/trial.f"), "en-fr/trial.wa.nonullalign", "naacl", None, 37, (661, 721), (338, 1446), 0),
    ("en-fr test", ("en-fr/test.e", "en-fr/test.f"), "en-fr/test.wa.nonullalign", "naacl", None, 447, (7020, 7761), (4038, 13400), 0),
    ("ro-en", ("ro-en/roen.src-tgt",), "ro-en/roen.gold", "pharaoh", True, 248, (5495, 5639), (6198, 0), 0),
    ("ja-en", ("ja-en/jaen.src-tgt",), "ja-en/jaen.gold", "pharaoh", True, 582, (14442, 12608), (13562, 0), 6),
    ("de-en", ("de-en/test.de", "de-en/test.en"), "de-en/de-en.wa", "pharaoh", None, 100, (1445, 1478), (1233, 0), 1),
    ("de-en ref", ("de-en/test.de", "de-en/test.en"), "de-en/de-en.ref.wa", "naacl", False, 100, (1445, 1478), (1233, 0), 1),
]


@pytest.mark.parametrize("name,texts,gold,fmt,one_based,n_pairs,tokens,links,outside", SETS, ids=[s[0] for s in SETS])
def test_gold_sets_match_readme(corpora, name, texts, gold, fmt, one_based, n_pairs, tokens, links, outside):
    root = corpora / "align"
    pairs = list(read_parallel(*(root / t for t in texts)))
    assert len(pairs) == n_pairs and _tokens(pairs) == tokens
    alignments = read_alignments(root / gold, fmt, n_pairs=n_pairs, one_based=one_based)
    assert len(alignments) == n_pairs and _links(alignments) == links
    assert all(a.sure <= a.possible for a in alignments)
    clipped, dropped = clip_alignments(alignments, pairs)
    assert dropped == outside
    assert all(i < len(s) and j < len(t) for a, (s, t) in zip(clipped, pairs) for i, j in a.possible)


def test_de_en_both_notations_agree(corpora):
    root = corpora / "align" / "de-en"
    assert read_alignments(root / "de-en.wa", "pharaoh") == read_alignments(root / "de-en.ref.wa", "naacl", one_based=False)


def test_en_fr_first_links_are_english_french(corpora):
    (first, second, *_) = read_alignments(corpora / "align" / "en-fr" / "test.wa.nonullalign")
    assert (0, 0) in first.sure  # "0001 1 1 S" -> 0-based (0, 0)
    pairs = list(read_parallel(corpora / "align" / "en-fr" / "test.e", corpora / "align" / "en-fr" / "test.f"))
    assert pairs[2] == (["oh", ",", "oh", "!"], ["oh", ",", "oh", "!"])


@pytest.mark.slow
def test_hansard_training_bitext(corpora):
    root = corpora / "align" / "en-fr" / "train"
    n = sum(1 for _ in read_parallel(root / "hansard.36.1.house.e", root / "hansard.36.1.house.f"))
    assert n == 251171


def test_naacl_hand_case(write):
    path = write("a.wa", "1 1 1 S\n1 2 3 P\n0003 2 2\n")
    alignments = read_alignments(path, "naacl", n_pairs=4)
    assert alignments == [
        Alignment({(0, 0)}, {(0, 0), (1, 2)}),
        Alignment(),
        Alignment({(1, 1)}, {(1, 1)}),
        Alignment(),
    ]


def test_pharaoh_hand_case_and_round_trip(write, tmp_path):
    path = write("a.txt", "0-0 1?2 2p1\n\n3-3\n")
    alignments = read_alignments(path, "pharaoh")
    assert alignments == [Alignment({(0, 0)}, {(0, 0), (1, 2), (2, 1)}), Alignment(), Alignment({(3, 3)}, {(3, 3)})]
    write_pharaoh(tmp_path / "b.txt", alignments)
    assert (tmp_path / "b.txt").read_text() == "0-0 1?2 2?1\n\n3-3\n"
    assert read_alignments(tmp_path / "b.txt", "pharaoh") == alignments
    write_pharaoh(tmp_path / "c.txt", [{(2, 1), (0, 0)}, set()])
    assert (tmp_path / "c.txt").read_text() == "0-0 2-1\n\n"
    one = read_alignments(write("d.txt", "1-1 2-3\n"), "pharaoh", one_based=True)
    assert one == [Alignment({(0, 0), (1, 2)}, {(0, 0), (1, 2)})]


def test_n_pairs_checks(write):
    from induce.errors import CorpusFormatError

    with pytest.raises(CorpusFormatError):
        read_alignments(write("a.wa", "5 1 1 S\n"), "naacl", n_pairs=3)
    with pytest.raises(CorpusFormatError):
        read_alignments(write("b.txt", "0-0\n1-1\n"), "pharaoh", n_pairs=3)


def test_single_file_parallel(write):
    path = write("a.txt", "a b   ||| x y z  \n ||| \n")
    assert list(read_parallel(path)) == [(["a", "b"], ["x", "y", "z"]), ([], [])]

"""Symmetrisation heuristics on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from induce.align.symmetrize import matrices_to_links, symmetrize, symmetrize_corpus
from induce.errors import ConfigError

# 3 source x 4 target words.  forward (one link per target word) and reverse
# (one link per source word) agree on (0,0) and (2,3).
FWD = {(0, 0), (1, 1), (1, 2), (2, 3)}
REV = {(0, 0), (1, 2), (2, 3), (0, 1)}


def test_intersection_and_union():
    assert symmetrize(FWD, REV, 3, 4, "intersection") == {(0, 0), (1, 2), (2, 3)}
    assert symmetrize(FWD, REV, 3, 4, "union") == FWD | REV


def test_grow_diag_adds_neighbours_of_unaligned_words():
    # neighbours are tried in Koehn's order (left, up, right, down, then diagonals): from (0,0)
    # the union link (0,1) is added first (target 1 unaligned); afterwards (1,1) joins two
    # aligned words and is not added
    assert symmetrize(FWD, REV, 3, 4, "grow-diag") == {(0, 0), (0, 1), (1, 2), (2, 3)}
    assert symmetrize({(0, 0), (1, 1)}, {(0, 0)}, 2, 2, "grow-diag") == {(0, 0), (1, 1)}


def test_final_and_requires_both_words_unaligned():
    fwd = {(0, 0), (2, 2)}
    rev = {(0, 0), (1, 2)}
    # the intersection is {(0,0)}; neither (1,2) nor (2,2) is adjacent to it
    assert symmetrize(fwd, rev, 3, 3, "grow-diag") == {(0, 0)}
    # final (forward links first): (2,2) joins two unaligned words; then (1,2) has source 1 unaligned
    assert symmetrize(fwd, rev, 3, 3, "grow-diag-final") == {(0, 0), (2, 2), (1, 2)}
    # final-and: (1,2) needs both unaligned, target 2 is taken by (2,2)
    assert symmetrize(fwd, rev, 3, 3, "grow-diag-final-and") == {(0, 0), (2, 2)}


def test_grow_diag_iterates_until_nothing_changes():
    # a diagonal chain in the union grows link by link from one intersection point
    fwd = {(0, 0), (1, 1), (2, 2), (3, 3)}
    rev = {(0, 0)}
    assert symmetrize(fwd, rev, 4, 4, "grow-diag") == fwd


def test_corpus_version_matches_single_pairs():
    pairs = [(FWD, REV, 3, 4), ({(0, 0), (2, 2)}, {(0, 0), (1, 2)}, 3, 3), (set(), set(), 0, 2)]
    src_off = np.cumsum([0] + [p[2] for p in pairs]).astype(np.int64)
    tgt_off = np.cumsum([0] + [p[3] for p in pairs]).astype(np.int64)

    def flat(index):
        parts = []
        for p in pairs:
            m = np.zeros((p[2], p[3]), dtype=np.bool_)
            for i, j in p[index]:
                m[i, j] = True
            parts.append(m.ravel())
        return np.concatenate(parts)

    out = symmetrize_corpus(src_off, tgt_off, flat(0), flat(1), "grow-diag-final-and")
    links = matrices_to_links(src_off, tgt_off, out)
    assert [set(x) for x in links] == [symmetrize(f, r, n, m, "grow-diag-final-and") for f, r, n, m in pairs]


def test_unknown_method():
    with pytest.raises(ConfigError):
        symmetrize(FWD, REV, 3, 4, "grow-diag-final-or")

"""Symmetrisation of two directional alignments (Och & Ney 2003 sec. 4.3; Koehn et al. 2003).

Links are 0-based ``(i, j)`` = (source position, target position).  The
work happens in :func:`induce.kernels.align.symmetrize_matrix`; this module
names the methods and converts between link sets and matrices.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from ..errors import ConfigError
from ..kernels.align import symmetrize_matrix, symmetrize_pass

from ..names import SYMMETRIZATIONS as METHODS


def method_code(method: str) -> int:
    """Kernel code of a method name (a :class:`ConfigError` for unknown names)."""
    try:
        return METHODS.index(method)
    except ValueError:
        raise ConfigError(f"unknown symmetrisation {method!r}; expected one of {', '.join(METHODS)}") from None


def _matrix(links: Iterable[tuple[int, int]], n_src: int, n_tgt: int) -> np.ndarray:
    out = np.zeros((n_src, n_tgt), dtype=np.bool_)
    for i, j in links:
        out[i, j] = True
    return out


def symmetrize(forward: Iterable[tuple[int, int]], reverse: Iterable[tuple[int, int]], n_src: int, n_tgt: int,
               method: str = "grow-diag-final-and") -> set[tuple[int, int]]:
    """Symmetrised links of one sentence pair from the two directional link sets."""
    out = np.zeros((n_src, n_tgt), dtype=np.bool_)
    symmetrize_matrix(_matrix(forward, n_src, n_tgt), _matrix(reverse, n_src, n_tgt), method_code(method), out)
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(out))}


def symmetrize_corpus(src_off: np.ndarray, tgt_off: np.ndarray, forward: np.ndarray, reverse: np.ndarray,
                      method: str) -> np.ndarray:
    """Symmetrise flat row-major ``I x J`` link matrices of a whole corpus in one compiled call."""
    return symmetrize_pass(src_off, tgt_off, forward, reverse, method_code(method))


def matrices_to_links(src_off: np.ndarray, tgt_off: np.ndarray, flat: np.ndarray) -> list[list[tuple[int, int]]]:
    """Per-pair sorted ``(i, j)`` link lists of flat row-major ``I x J`` matrices."""
    n_src = np.diff(src_off)
    n_tgt = np.diff(tgt_off)
    starts = np.concatenate([[0], np.cumsum(n_src * n_tgt)])
    hits = np.flatnonzero(flat)
    pair = np.searchsorted(starts, hits, side="right") - 1
    local = hits - starts[pair]
    width = n_tgt[pair]
    src_pos = (local // np.maximum(width, 1)).tolist()
    tgt_pos = (local % np.maximum(width, 1)).tolist()
    bounds = np.searchsorted(pair, np.arange(len(n_src) + 1))
    return [list(zip(src_pos[lo:hi], tgt_pos[lo:hi])) for lo, hi in zip(bounds[:-1], bounds[1:])]

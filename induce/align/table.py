"""Sparse translation tables: CSR by source word over co-occurring pairs only.

Row 0 is the NULL word, row ``e + 1`` source word ``e``; ``cols`` holds the
target word ids of each row in increasing order.  Only pairs that co-occur in
some sentence pair get an entry (the posterior of any other pair is zero under
every estimator), so the table grows with the bitext, not with ``V_e * V_f``.

The estimators (thesis ch. 3) on a CSR table with ``K = V_f`` outcomes per row:

* ``em``  -- ``t = C / C.`` (eq. 3.13-3.14),
* ``vi``  -- ``t = exp(psi(C + a) - psi(C. + K a))`` (eq. 3.21-3.22; Riley & Gildea 2012),
* ``cvi`` -- ``t = (C + a) / (C. + K a)`` (eq. 3.49-3.50 with all counts: the
  posterior mean used for decoding after CVI training).

These are the row-wise formulas of :mod:`induce.infer.estimators` applied to
sparse rows, whose length is not the number of outcomes ``K``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

from ..kernels.align import cell_keys, lookup_cells

#: probability floor for a pair never seen with a seen source word under EM (GIZA++'s PROB_SMOOTH)
EM_FLOOR = 1e-7


@dataclass
class TranslationTable:
    row_ptr: np.ndarray  # int64[n_rows + 1]
    cols: np.ndarray  # int32[nnz]
    entry_row: np.ndarray  # int32[nnz]
    n_outcomes: int  # K = target vocabulary size

    @property
    def nnz(self) -> int:
        return int(self.row_ptr[-1])

    @property
    def n_rows(self) -> int:
        return len(self.row_ptr) - 1

    def row_totals(self, counts: np.ndarray) -> np.ndarray:
        """``C_e.``: the sum of each row of an entry-aligned count array."""
        return np.bincount(self.entry_row, weights=counts, minlength=self.n_rows)

    def lookup(self, src_tok, src_off, tgt_tok, tgt_off) -> tuple[np.ndarray, np.ndarray]:
        """Cells of new pairs; unseen entries point past ``nnz`` (see :func:`fallback_params`)."""
        return lookup_cells(self.row_ptr, self.cols, src_tok, src_off, tgt_tok, tgt_off)


def build_table(src_tok, src_off, tgt_tok, tgt_off, n_src_vocab: int, n_tgt_vocab: int):
    """Table of the co-occurring pairs of a bitext and the table entry of every cell.

    Returns ``(table, cells int32[n_cells], cell_off int64[P+1])`` in the layout of
    :mod:`induce.kernels.align`.
    """
    keys, cell_off = cell_keys(src_tok, src_off, tgt_tok, tgt_off, np.int64(n_tgt_vocab))
    uniq, inverse = np.unique(keys, return_inverse=True)
    del keys
    rows = (uniq // n_tgt_vocab).astype(np.int32)
    cols = (uniq % n_tgt_vocab).astype(np.int32)
    row_ptr = np.zeros(n_src_vocab + 2, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_src_vocab + 1), out=row_ptr[1:])
    table = TranslationTable(row_ptr=row_ptr, cols=cols, entry_row=rows, n_outcomes=int(n_tgt_vocab))
    return table, inverse.astype(np.int32).ravel(), cell_off


def table_params(estimator: str, counts: np.ndarray, totals: np.ndarray, entry_row: np.ndarray,
                 prior: float, n_outcomes: int) -> np.ndarray:
    """Translation parameters of every entry from expected counts (see module docstring)."""
    row_total = totals[entry_row]
    if estimator == "em":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(row_total > 0, counts / np.where(row_total > 0, row_total, 1.0), 1.0 / n_outcomes)
    if estimator == "vi":
        return np.exp(digamma(counts + prior) - digamma(row_total + n_outcomes * prior))
    if estimator == "cvi":
        return (np.maximum(counts, 0.0) + prior) / (np.maximum(row_total, 0.0) + n_outcomes * prior)
    raise ValueError(f"unknown estimator {estimator!r}")


def fallback_params(estimator: str, totals: np.ndarray, prior: float, n_outcomes: int) -> np.ndarray:
    """Value of an unseen pair per row (``C(e, f) = 0``), then one for an unknown source word."""
    totals = np.append(np.maximum(totals, 0.0), 0.0)
    if estimator == "em":
        return np.where(totals > 0, EM_FLOOR, 1.0 / n_outcomes)
    if estimator == "vi":
        return np.exp(digamma(prior) - digamma(totals + n_outcomes * prior))
    if estimator == "cvi":
        return prior / (totals + n_outcomes * prior)
    raise ValueError(f"unknown estimator {estimator!r}")


def jump_weights(estimator: str, jumps: np.ndarray, jump_denom: np.ndarray, prior: float,
                 previous: np.ndarray) -> np.ndarray:
    """Jump-width weights ``w_d`` from expected bucket counts ``C_d``.

    The jump model ``p(i | p) = w[b(i-p)] / sum_l w[b(l-p)]`` (Vogel et al. 1996)
    is normalised over each sentence's valid range, so the MLE has no closed
    form.  ``em`` takes one minorise-maximise step, ``w_d = C_d / D_d`` with
    ``D_d = sum_p N_p n_d(p) / Z_p(w_old)`` (``jump_denom``), which never
    decreases the likelihood (a generalised EM step; from
    ``-log Z >= -log Z_old - Z / Z_old + 1``).  ``vi`` and ``cvi`` treat the
    buckets as one Dirichlet-categorical: ``exp(psi(C_d + a))`` (eq. 3.21; the
    shared denominator cancels in the range normalisation) and ``C_d + a``.
    """
    if estimator == "em":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(jump_denom > 0, jumps / np.where(jump_denom > 0, jump_denom, 1.0), previous)
    if estimator == "vi":
        return np.exp(digamma(np.maximum(jumps, 0.0) + prior))
    if estimator == "cvi":
        return np.maximum(jumps, 0.0) + prior
    raise ValueError(f"unknown estimator {estimator!r}")

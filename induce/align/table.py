"""Sparse translation tables: CSR by source word over co-occurring pairs only.

Row 0 is the NULL word, row ``e + 1`` source word ``e``; ``cols`` holds the
target word ids of each row in increasing order.  Only pairs that co-occur in
some sentence pair get an entry (the posterior of any other pair is zero under
every estimator), so the table grows with the bitext, not with ``V_e * V_f``.

The estimators (thesis ch. 3) on a CSR table with ``K_e`` outcomes in row ``e``:

* ``em``  -- ``t = C / C.`` (eq. 3.13-3.14),
* ``vi``  -- ``t = exp(psi(C + a) - psi(C. + K_e a))`` (eq. 3.21-3.22; Riley & Gildea 2012),
* ``cvi`` -- ``t = (C + a) / (C. + K_e a)`` (eq. 3.49-3.50 with all counts: the
  posterior mean used for decoding after CVI training).

The Dirichlet prior of a row is over either the whole target vocabulary
(``support="vocabulary"``, ``K_e = V_f``) or the row's co-occurring target
words (``support="cooccur"``, ``K_e`` = row length): the only outcomes that can
ever receive posterior mass.  With ``V_f`` in the tens of thousands the former
adds ``V_f * a`` pseudo-counts to every row and swamps rare source words.

These are the row-wise formulas of :mod:`induce.infer.estimators` applied to
sparse rows, whose length is not the number of outcomes ``K``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

from ..kernels.align import cell_keys, lookup_cells, table_entries

#: probability floor for a pair never seen with a seen source word under EM (GIZA++'s PROB_SMOOTH)
EM_FLOOR = 1e-7


@dataclass
class TranslationTable:
    row_ptr: np.ndarray  # int64[n_rows + 1]
    cols: np.ndarray  # int32[nnz]
    entry_row: np.ndarray  # int32[nnz]
    n_outcomes: int  # V_f = target vocabulary size
    #: ``build_table(by_column=True)``: the number of each entry when numbered by column, then row, the ``n_hot``
    #: entries of the most cells first (the cells then hold these numbers); else empty
    column_rank: np.ndarray | None = None

    @property
    def nnz(self) -> int:
        return int(self.row_ptr[-1])

    @property
    def n_rows(self) -> int:
        return len(self.row_ptr) - 1

    def row_outcomes(self, support: str) -> np.ndarray:
        """``K_e`` per row (float64), then one entry for unknown source words (``V_f``)."""
        if support == "vocabulary":
            sizes = np.full(self.n_rows, float(self.n_outcomes))
        elif support == "cooccur":
            sizes = np.maximum(np.diff(self.row_ptr), 1).astype(np.float64)
        else:
            raise ValueError(f"unknown prior support {support!r}")
        return np.append(sizes, float(self.n_outcomes))

    def row_totals(self, counts: np.ndarray) -> np.ndarray:
        """``C_e.``: the sum of each row of an entry-aligned count array."""
        return np.bincount(self.entry_row, weights=counts, minlength=self.n_rows)

    def lookup(self, src_tok, src_off, tgt_tok, tgt_off) -> tuple[np.ndarray, np.ndarray]:
        """Cells of new pairs; unseen entries point past ``nnz`` (see :func:`fallback_params`)."""
        return lookup_cells(self.row_ptr, self.cols, src_tok, src_off, tgt_tok, tgt_off)


def build_table(src_tok, src_off, tgt_tok, tgt_off, n_src_vocab: int, n_tgt_vocab: int, by_column: bool = False,
                n_hot: int = 0):
    """Table of the co-occurring pairs of a bitext and the table entry of every cell.

    Returns ``(table, cells int32[n_cells], cell_off int64[P+1])`` in the layout of
    :mod:`induce.kernels.align`; with ``by_column`` the cells hold the entries' numbers in column, then row order
    (``table.column_rank``), the ``n_hot`` entries of the most cells first
    (:func:`~induce.kernels.align.table_entries`).
    """
    keys, cell_off = cell_keys(src_tok, src_off, tgt_tok, tgt_off, np.int64(n_tgt_vocab))
    row_ptr, cols, rows, inverse, rank = table_entries(keys, n_src_vocab + 1, np.int64(max(n_tgt_vocab, 1)),
                                                       by_column, n_hot)
    table = TranslationTable(row_ptr=row_ptr, cols=cols, entry_row=rows, n_outcomes=int(n_tgt_vocab),
                             column_rank=rank if by_column else None)
    return table, inverse, cell_off


def table_params(estimator: str, counts: np.ndarray, totals: np.ndarray, entry_row: np.ndarray,
                 prior: float, outcomes: np.ndarray) -> np.ndarray:
    """Translation parameters of every entry from expected counts (see module docstring).

    ``outcomes`` is :meth:`TranslationTable.row_outcomes`.
    """
    row_total = totals[entry_row]
    n_outcomes = outcomes[entry_row]
    if estimator == "em":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(row_total > 0, counts / np.where(row_total > 0, row_total, 1.0), 1.0 / n_outcomes)
    if estimator == "vi":
        return np.exp(digamma(counts + prior) - digamma(row_total + n_outcomes * prior))
    if estimator == "cvi":
        return (np.maximum(counts, 0.0) + prior) / (np.maximum(row_total, 0.0) + n_outcomes * prior)
    raise ValueError(f"unknown estimator {estimator!r}")


def fallback_params(estimator: str, totals: np.ndarray, prior: float, n_outcomes: np.ndarray) -> np.ndarray:
    """Value of an unseen pair per row (``C(e, f) = 0``), then one for an unknown source word.

    ``n_outcomes`` is :meth:`TranslationTable.row_outcomes` (one entry longer than ``totals``).
    """
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

    The jump model (:func:`induce.kernels.align.jump_matrix`) normalises the
    weights over the buckets reachable from each position, so the MLE has no
    closed form.  ``em`` takes one minorise-maximise step, ``w_d = C_d / D_d``
    with ``D_d = sum_p N_p [d reachable from p] / Z_p(w_old)`` (``jump_denom``),
    which never decreases the likelihood (a generalised EM step; from
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

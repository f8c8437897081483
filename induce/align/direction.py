"""One alignment direction: the bitext arrays, training schedules and decoding.

A direction generates the *target* words of each pair from its *source*
words (``p(f | e)``); the reverse direction is the same code on the swapped
bitext.  Training schedules (thesis ch. 3):

* ``em`` / ``vi`` -- batch: run the E-step over all pairs with fixed
  parameters, then re-estimate (EM eq. 3.13-3.14, VI eq. 3.21-3.22); the HMM
  stage starts from the Model 1 counts (the GIZA++ pipeline).
* ``cvi`` -- incremental: Model 1 with CVI-1 per target word, then the HMM
  with CVI-2 per sentence pair (``hmm_cvi="cvi2"``, thesis sec. 3.5) or CVI-1
  per target position (``"cvi1"``, sec. 3.4), started from the Model 1
  posteriors.  Pairs are visited in a random order each pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from ..kernels import align as K
from .table import build_table, fallback_params, jump_weights, table_params

CHUNK = 8192  # pairs per compiled call (progress granularity)


@dataclass
class Bitext:
    """Two CSR corpora of equal length: ``src`` and ``tgt`` token ids and offsets.

    A word id ``-1`` marks a word unknown to the vocabulary.
    """

    src_tok: np.ndarray
    src_off: np.ndarray
    tgt_tok: np.ndarray
    tgt_off: np.ndarray

    @property
    def n_pairs(self) -> int:
        return len(self.src_off) - 1

    def swapped(self) -> "Bitext":
        return Bitext(self.tgt_tok, self.tgt_off, self.src_tok, self.src_off)


def encode_side(sentences: Iterable[Sequence[str]], vocab, grow: bool) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (``int32``, ``-1`` for unknown words when not growing) and ``int64`` offsets."""
    lengths = [0]
    chunks = []
    stoi = vocab.stoi
    for words in sentences:
        if grow:
            chunks.append(vocab.encode(words, grow=True))
        else:
            chunks.append(np.fromiter((stoi.get(w, -1) for w in words), dtype=np.int32, count=len(words)))
        lengths.append(len(words))
    tokens = np.concatenate(chunks).astype(np.int32) if chunks else np.zeros(0, dtype=np.int32)
    return tokens, np.cumsum(np.asarray(lengths, dtype=np.int64))


@dataclass
class DirectionParams:
    """Learned parameters of one direction (what is saved and used for decoding)."""

    model: str  # "ibm1" | "hmm"
    row_ptr: np.ndarray  # CSR translation table, row 0 = NULL
    cols: np.ndarray
    values: np.ndarray  # nnz entries, then one fallback per row and one for unknown words
    weights: np.ndarray  # jump-width weights (2 * max_jump + 1)
    null_prob: float
    max_jump: int
    history: list = field(default_factory=list)

    def _cells(self, bitext: Bitext):
        return K.lookup_cells(self.row_ptr, self.cols, bitext.src_tok, bitext.src_off, bitext.tgt_tok, bitext.tgt_off)

    def viterbi(self, bitext: Bitext) -> np.ndarray:
        """Best source position (0-based, -1 = NULL) of every target token."""
        cells, cell_off = self._cells(bitext)
        links = np.full(len(bitext.tgt_tok), -1, dtype=np.int64)
        if self.model == "ibm1":
            K.ibm1_viterbi_pass(bitext.src_off, bitext.tgt_off, cell_off, cells, self.values, links)
        else:
            K.hmm_decode_pass(bitext.src_off, bitext.tgt_off, cell_off, cells, self.values, self.weights,
                              self.null_prob, self.max_jump, True, links, np.zeros(0))
        return links

    def posteriors(self, bitext: Bitext) -> tuple[np.ndarray, np.ndarray]:
        """Posterior of every cell (layout of :mod:`induce.kernels.align`) and the cell offsets."""
        cells, cell_off = self._cells(bitext)
        post = np.zeros(len(cells))
        if self.model == "ibm1":
            K.ibm1_posterior_pass(bitext.src_off, bitext.tgt_off, cell_off, cells, self.values, post)
        else:
            K.hmm_decode_pass(bitext.src_off, bitext.tgt_off, cell_off, cells, self.values, self.weights,
                              self.null_prob, self.max_jump, False, np.zeros(0, dtype=np.int64), post)
        return post, cell_off


@dataclass
class TrainConfig:
    model: str = "hmm"
    infer: str = "cvi"
    n_iter: int = 5
    n_iter_ibm1: int = 5
    alpha: float = 1e-4
    jump_alpha: float = 0.1
    null_prob: float = 0.2
    max_jump: int = 7
    hmm_cvi: str = "cvi2"
    prior_support: str = "vocabulary"


class _Trainer:
    """Holds the arrays of one direction during training."""

    def __init__(self, bitext: Bitext, n_src_vocab: int, n_tgt_vocab: int, config: TrainConfig,
                 rng: np.random.Generator, progress: Callable[[int], None]):
        self.b = bitext
        self.cfg = config
        self.rng = rng
        self.progress = progress
        self.table, self.cells, self.cell_off = build_table(
            bitext.src_tok, bitext.src_off, bitext.tgt_tok, bitext.tgt_off, n_src_vocab, n_tgt_vocab)
        self.history: list = []
        self.n_buckets = 2 * config.max_jump + 1
        self.outcomes = self.table.row_outcomes(config.prior_support)

    # -------------------------------------------------------------- helpers
    def _chunks(self, order: np.ndarray):
        for lo in range(0, len(order), CHUNK):
            chunk = order[lo:lo + CHUNK]
            yield chunk
            self.progress(len(chunk))

    def _order(self, shuffle: bool) -> np.ndarray:
        n = self.b.n_pairs
        return self.rng.permutation(n).astype(np.int64) if shuffle else np.arange(n, dtype=np.int64)

    def _params(self, estimator: str, counts: np.ndarray) -> np.ndarray:
        t = self.table
        totals = t.row_totals(counts)
        return table_params(estimator, counts, totals, t.entry_row, self.cfg.alpha, self.outcomes)

    def _result(self, estimator: str, counts: np.ndarray, weights: np.ndarray, model: str) -> DirectionParams:
        t = self.table
        totals = t.row_totals(counts)
        values = np.concatenate([
            table_params(estimator, counts, totals, t.entry_row, self.cfg.alpha, self.outcomes),
            fallback_params(estimator, totals, self.cfg.alpha, self.outcomes),
        ])
        return DirectionParams(model=model, row_ptr=t.row_ptr, cols=t.cols, values=values,
                               weights=np.asarray(weights, dtype=np.float64), null_prob=self.cfg.null_prob,
                               max_jump=self.cfg.max_jump, history=self.history)

    # ------------------------------------------------------- batch EM / VI
    def ibm1_estep(self, order, vals, counts) -> float:
        """IBM-1 expected counts of the pairs ``order`` added to ``counts``; returns their log-likelihood
        (a dask cluster maps it over shards of pairs: :mod:`induce.distributed.align`)."""
        b = self.b
        return sum(K.ibm1_batch_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, vals, counts)
                   for chunk in self._chunks(order))

    def hmm_estep(self, order, vals, weights, counts, jumps, denom) -> float:
        """HMM-alignment expected counts and jump statistics of the pairs ``order`` added to ``counts``,
        ``jumps``, ``denom``; returns their log-likelihood."""
        b, cfg = self.b, self.cfg
        return sum(K.hmm_batch_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, vals, weights,
                                    cfg.null_prob, cfg.max_jump, counts, jumps, denom)
                   for chunk in self._chunks(order))

    def train_batch(self) -> DirectionParams:
        cfg, t = self.cfg, self.table
        order = self._order(shuffle=False)
        vals = np.full(t.nnz, 1.0 / t.n_outcomes)  # uniform t(f|e) = 1 / V_f
        counts = np.zeros(t.nnz)
        n_ibm1 = cfg.n_iter if cfg.model == "ibm1" else cfg.n_iter_ibm1
        for it in range(n_ibm1):
            counts[:] = 0.0
            ll = self.ibm1_estep(order, vals, counts)
            self.history.append({"stage": "ibm1", "iteration": it + 1, "log_likelihood": ll})
            vals = self._params(cfg.infer, counts)
        weights = np.ones(self.n_buckets)
        if cfg.model == "hmm":
            jumps = np.zeros(self.n_buckets)
            denom = np.zeros(self.n_buckets)
            for it in range(cfg.n_iter):
                counts[:] = 0.0
                jumps[:] = 0.0
                denom[:] = 0.0
                ll = self.hmm_estep(order, vals, weights, counts, jumps, denom)
                self.history.append({"stage": "hmm", "iteration": it + 1, "log_likelihood": ll})
                vals = self._params(cfg.infer, counts)
                weights = jump_weights(cfg.infer, jumps, denom, cfg.jump_alpha, weights)
        return self._result(cfg.infer, counts, weights, cfg.model)

    # ------------------------------------------------------------------ CVI
    def initial_posteriors(self) -> np.ndarray:
        """Uniform ``q(a_j = i) = 1 / (I+1)`` for every cell (float32)."""
        b = self.b
        n_src = np.diff(b.src_off)
        sizes = (n_src + 1) * np.diff(b.tgt_off)
        return np.repeat((1.0 / (n_src + 1)).astype(np.float32), sizes)

    def train_cvi(self) -> DirectionParams:
        cfg, b, t = self.cfg, self.b, self.table
        q = self.initial_posteriors()
        counts = np.bincount(self.cells, weights=q, minlength=t.nnz).astype(np.float64)
        totals = t.row_totals(counts)
        n_ibm1 = cfg.n_iter if cfg.model == "ibm1" else cfg.n_iter_ibm1
        for it in range(n_ibm1):
            for chunk in self._chunks(self._order(shuffle=True)):
                K.ibm1_cvi_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row,
                                counts, totals, q, cfg.alpha, self.outcomes)
            self.history.append({"stage": "ibm1", "iteration": it + 1})
        jumps = np.zeros(self.n_buckets)
        if cfg.model == "hmm" and cfg.hmm_cvi == "cvi2":
            sent_jumps = np.zeros((b.n_pairs, self.n_buckets))
            for it in range(cfg.n_iter):
                for chunk in self._chunks(self._order(shuffle=True)):
                    K.hmm_cvi2_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row, counts,
                                    totals, q, jumps, sent_jumps, cfg.alpha, self.outcomes, cfg.jump_alpha,
                                    cfg.null_prob, cfg.max_jump)
                self.history.append({"stage": "hmm-cvi2", "iteration": it + 1})
        elif cfg.model == "hmm":
            state_off, qs = K.cvi1_states_from_cells(b.src_off, b.tgt_off, self.cell_off, q)
            del q
            counts[:] = 0.0
            totals[:] = 0.0
            K.hmm_cvi1_counts(b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row, state_off, qs,
                              counts, totals, jumps)
            for it in range(cfg.n_iter):
                for chunk in self._chunks(self._order(shuffle=True)):
                    K.hmm_cvi1_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row,
                                    state_off, qs, counts, totals, jumps, cfg.alpha, self.outcomes,
                                    cfg.jump_alpha, cfg.null_prob)
                self.history.append({"stage": "hmm-cvi1", "iteration": it + 1})
        return self._result("cvi", counts, jumps + cfg.jump_alpha, cfg.model)


def n_passes(config: TrainConfig) -> int:
    """Corpus passes one direction makes (for progress totals)."""
    if config.model == "ibm1":
        return config.n_iter
    return config.n_iter_ibm1 + config.n_iter


def train_direction(bitext: Bitext, n_src_vocab: int, n_tgt_vocab: int, config: TrainConfig,
                    rng: np.random.Generator, progress: Callable[[int], None] = lambda n: None,
                    trainer: type = _Trainer) -> DirectionParams:
    """Train one direction with the schedule of ``config.infer`` (``trainer``: a :class:`_Trainer` subclass)."""
    trainer = trainer(bitext, n_src_vocab, n_tgt_vocab, config, rng, progress)
    return trainer.train_cvi() if config.infer == "cvi" else trainer.train_batch()

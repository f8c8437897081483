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

Each stage (Model 1, then the HMM) runs at most its number of passes and stops
earlier once the relative change of its per-pass objective stays below ``tol``
for 3 passes (:class:`induce.infer.convergence.ConvergenceMonitor`): the
log-likelihood ``sum log p(f | e)`` under the parameters of the pass (EM: never
decreasing; VI: its sub-normalised parameters; CVI-2 and Model 1 CVI: the
collapsed surrogates; CVI-1: the summed log normalisers of its updates).

With ``learn`` the translation prior ``alpha`` and the jump prior ``jump_alpha``
(vi, cvi) are re-estimated after every pass by empirical Bayes
(:func:`induce.infer.hyper.fit_symmetric_dirichlet`) from the counts of the
alignment decoded under the current parameters (Viterbi links; for the jumps,
the widths between consecutive non-NULL links), as the HMM tagger does with
its decoded states (docs/experiments/alignment.md, "Learned priors").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Callable, Iterable, Sequence

import numpy as np

from scipy import sparse

from ..infer.convergence import ConvergenceMonitor
from ..infer.hyper import fit_symmetric_dirichlet
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
    """Token ids (``int32``, ``-1`` for unknown words when not growing) and ``int64`` offsets (one encoding call
    for the whole side: per-sentence calls cost more than the lookups on large bitexts)."""
    sentences = list(sentences)
    lengths = np.zeros(len(sentences) + 1, dtype=np.int64)
    lengths[1:] = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
    flat = list(chain.from_iterable(sentences))  # (no Python loop per sentence)
    if grow:
        tokens = vocab.encode(flat, grow=True)
    else:
        tokens = np.fromiter(map(vocab.stoi.get, flat, repeat(-1)), dtype=np.int32, count=len(flat))
    return tokens, np.cumsum(lengths)


def _cell_offsets(bitext: Bitext) -> np.ndarray:
    """``cell_off`` of :mod:`induce.kernels.align`: pair ``s`` owns ``(I+1) * J`` cells."""
    sizes = (np.diff(bitext.src_off) + 1) * np.diff(bitext.tgt_off)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


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
    alpha: float | None = None  # the priors the fit ended with (learned or given); None in older files
    jump_alpha: float | None = None
    #: per stage (name, monitor, passes run, cap) of the fit that made these parameters (not saved)
    stages: list = field(default_factory=list, repr=False, compare=False)
    #: per-cell link marginals of the training pairs (``infer="gibbs"``: :mod:`induce.align.gibbs`; not saved)
    marginals: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: ``model="fertility"``: posterior-mean fertility distribution (columns 0.. F-1, the last ">= F-1") of every
    #: source word (rows), averaged over the chains (not saved)
    fertility: np.ndarray | None = field(default=None, repr=False, compare=False)

    def _cells(self, bitext: Bitext):
        return K.lookup_cells(self.row_ptr, self.cols, bitext.src_tok, bitext.src_off, bitext.tgt_tok, bitext.tgt_off)

    def viterbi(self, bitext: Bitext, training: bool = False) -> np.ndarray:
        """Best source position (0-based, -1 = NULL) of every target token; with ``training`` (``bitext`` is the
        training bitext) and ``marginals``, the argmax of the marginals."""
        links = np.full(len(bitext.tgt_tok), -1, dtype=np.int64)
        if training and self.marginals is not None:
            K.cell_argmax(bitext.src_off, bitext.tgt_off, _cell_offsets(bitext), self.marginals, links)
            return links
        cells, cell_off = self._cells(bitext)
        if self.model == "ibm1":
            K.cell_argmax(bitext.src_off, bitext.tgt_off, cell_off, self.values[cells], links)
        else:
            K.hmm_decode_pass(bitext.src_off, bitext.tgt_off, cell_off, cells, self.values, self.weights,
                              self.null_prob, self.max_jump, True, links, np.zeros(0))
        return links

    def posteriors(self, bitext: Bitext, training: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Posterior of every cell (layout of :mod:`induce.kernels.align`) and the cell offsets; with ``training``
        and ``marginals``, the marginals."""
        if training and self.marginals is not None:
            return self.marginals, _cell_offsets(bitext)
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
    hmm_cvi: str = "cvi1"
    prior_support: str = "vocabulary"
    tol: float = 0.0
    learn: tuple = ()  # names among ("alpha", "jump_alpha") learned by empirical Bayes (vi, cvi)
    samplers: int = 3  # gibbs: independent chains
    n_samples: int = 1  # gibbs: averaged sweeps per chain after its stages
    gibbs_passes: tuple | None = None  # gibbs: passes per stage (None: eflomal's rule, align.gibbs.gibbs_schedule)
    workers: int = 1  # gibbs: threads running the chains


class _Trainer:
    """Holds the arrays of one direction during training."""

    #: number the table entries of the cells by target word, then source row (:func:`build_table`)
    cells_by_column = False
    #: with ``cells_by_column``: number this many entries of the most cells first (:func:`build_table`)
    hot_entries = 0

    def __init__(self, bitext: Bitext, n_src_vocab: int, n_tgt_vocab: int, config: TrainConfig,
                 rng: np.random.Generator, progress: Callable[[int], None]):
        self.b = bitext
        self.cfg = config
        self.rng = rng
        self.progress = progress
        self.table, self.cells, self.cell_off = build_table(
            bitext.src_tok, bitext.src_off, bitext.tgt_tok, bitext.tgt_off, n_src_vocab, n_tgt_vocab,
            self.cells_by_column, self.hot_entries)
        self.history: list = []
        self.stages: list = []
        self.n_buckets = 2 * config.max_jump + 1
        self.outcomes = self.table.row_outcomes(config.prior_support)
        self.alpha, self.jump_alpha = config.alpha, config.jump_alpha
        self.learn = tuple(config.learn) if config.infer != "em" else ()

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
        return table_params(estimator, counts, totals, t.entry_row, self.alpha, self.outcomes)

    def _result(self, estimator: str, counts: np.ndarray, weights: np.ndarray, model: str) -> DirectionParams:
        t = self.table
        totals = t.row_totals(counts)
        values = np.concatenate([
            table_params(estimator, counts, totals, t.entry_row, self.alpha, self.outcomes),
            fallback_params(estimator, totals, self.alpha, self.outcomes),
        ])
        return DirectionParams(model=model, row_ptr=t.row_ptr, cols=t.cols, values=values,
                               weights=np.asarray(weights, dtype=np.float64), null_prob=self.cfg.null_prob,
                               max_jump=self.cfg.max_jump, history=self.history, alpha=self.alpha,
                               jump_alpha=self.jump_alpha, stages=self.stages)

    def _stage(self, stage: str, n_max: int, one_pass: Callable[[], float],
               current: Callable[[], DirectionParams]) -> None:
        """Up to ``n_max`` passes of ``one_pass`` (returns the pass's objective) until the stopping rule fires.

        With learned priors, after each pass the priors are re-estimated from the
        alignment decoded under ``current()`` (the parameters after the pass).
        """
        monitor = ConvergenceMonitor(self.cfg.tol, monotone=self.cfg.infer == "em")
        passes = 0
        for passes in range(1, n_max + 1):
            objective = float(one_pass())
            record = {"stage": stage, "iteration": passes, "log_likelihood": objective}
            if self.learn:
                self._learn_priors(current())
                record.update(alpha=self.alpha, jump_alpha=self.jump_alpha)
            self.history.append(record)
            if monitor.update(objective) or monitor.diverged:
                break
        if n_max:
            self.stages.append((stage, monitor, passes, n_max))

    def _learn_priors(self, params: DirectionParams) -> None:
        """Empirical Bayes on the decoded alignment: translation counts ``n(e, f)`` (row 0 = NULL) over the
        rows' outcomes (:meth:`TranslationTable.row_outcomes`), and the jump-bucket counts as one row."""
        b, t = self.b, self.table
        links = params.viterbi(b)  # 0-based source position per target token, -1 = NULL
        sentence = np.repeat(np.arange(b.n_pairs), np.diff(b.tgt_off))
        rows = np.where(links >= 0, b.src_tok[b.src_off[sentence] + np.maximum(links, 0)] + 1, 0)
        if "alpha" in self.learn:
            counts = sparse.csr_matrix((np.ones(len(rows)), (rows, b.tgt_tok)), shape=(t.n_rows, t.n_outcomes))
            self.alpha = fit_symmetric_dirichlet(counts, self.alpha, outcomes=self.outcomes[:-1])
        if "jump_alpha" in self.learn and params.model == "hmm":
            self.jump_alpha = fit_symmetric_dirichlet(self._jump_counts(links, sentence)[None, :], self.jump_alpha)

    def _jump_counts(self, links: np.ndarray, sentence: np.ndarray) -> np.ndarray:
        """Jump-bucket counts of hard links: ``b(i - p)`` for every non-NULL link to (1-based) ``i``, ``p``
        the previous non-NULL link's position in the pair (0 at its start), as in
        :func:`induce.kernels.align.jump_matrix`."""
        position = links + 1  # 0 = NULL
        index = np.arange(len(links))
        start = self.b.tgt_off[sentence]
        last = np.maximum.accumulate(np.where(position > 0, index, start - 1))
        previous = np.concatenate([[-1], last[:-1]])
        prev_pos = np.where(previous >= start, position[np.maximum(previous, 0)], 0)
        width = np.clip(position - prev_pos, -self.cfg.max_jump, self.cfg.max_jump) + self.cfg.max_jump
        return np.bincount(width[position > 0], minlength=self.n_buckets).astype(np.float64)

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
        weights = np.ones(self.n_buckets)
        jumps = np.zeros(self.n_buckets)
        denom = np.zeros(self.n_buckets)
        model = "ibm1"

        def ibm1_pass() -> float:
            nonlocal vals
            counts[:] = 0.0
            ll = self.ibm1_estep(order, vals, counts)
            vals = self._params(cfg.infer, counts)
            return ll

        def hmm_pass() -> float:
            nonlocal vals, weights
            counts[:] = 0.0
            jumps[:] = 0.0
            denom[:] = 0.0
            ll = self.hmm_estep(order, vals, weights, counts, jumps, denom)
            vals = self._params(cfg.infer, counts)
            weights = jump_weights(cfg.infer, jumps, denom, self.jump_alpha, weights)
            return ll

        def current() -> DirectionParams:
            return self._result(cfg.infer, counts, weights, model)

        self._stage("ibm1", cfg.n_iter if cfg.model == "ibm1" else cfg.n_iter_ibm1, ibm1_pass, current)
        if cfg.model == "hmm":
            model = "hmm"
            self._stage("hmm", cfg.n_iter, hmm_pass, current)
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
        jumps = np.zeros(self.n_buckets)
        model = "ibm1"

        def current() -> DirectionParams:
            return self._result("cvi", counts, jumps + self.jump_alpha, model)

        def ibm1_pass() -> float:
            return sum(K.ibm1_cvi_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row,
                                       counts, totals, q, self.alpha, self.outcomes)
                       for chunk in self._chunks(self._order(shuffle=True)))

        self._stage("ibm1", cfg.n_iter if cfg.model == "ibm1" else cfg.n_iter_ibm1, ibm1_pass, current)
        if cfg.model == "hmm" and cfg.hmm_cvi == "cvi2":
            model = "hmm"
            sent_jumps = np.zeros((b.n_pairs, self.n_buckets))

            def cvi2_pass() -> float:
                return sum(K.hmm_cvi2_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row,
                                           counts, totals, q, jumps, sent_jumps, self.alpha, self.outcomes,
                                           self.jump_alpha, cfg.null_prob, cfg.max_jump)
                           for chunk in self._chunks(self._order(shuffle=True)))

            self._stage("hmm-cvi2", cfg.n_iter, cvi2_pass, current)
        elif cfg.model == "hmm":
            model = "hmm"
            state_off, qs = K.cvi1_states_from_cells(b.src_off, b.tgt_off, self.cell_off, q)
            del q
            counts[:] = 0.0
            totals[:] = 0.0
            K.hmm_cvi1_counts(b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row, state_off, qs,
                              counts, totals, jumps)

            def cvi1_pass() -> float:
                return sum(K.hmm_cvi1_pass(chunk, b.src_off, b.tgt_off, self.cell_off, self.cells, t.entry_row,
                                           state_off, qs, counts, totals, jumps, self.alpha, self.outcomes,
                                           self.jump_alpha, cfg.null_prob)
                           for chunk in self._chunks(self._order(shuffle=True)))

            self._stage("hmm-cvi1", cfg.n_iter, cvi1_pass, current)
        return self._result("cvi", counts, jumps + self.jump_alpha, cfg.model)


def n_passes(config: TrainConfig, n_pairs: int) -> int:
    """Corpus passes one direction makes at most (for progress totals)."""
    if config.model == "fertility" and config.infer == "cvi":
        return config.n_iter_ibm1 + 2 * config.n_iter
    if config.infer == "gibbs":
        from .gibbs import gibbs_schedule

        return config.samplers * (sum(n for _, n in gibbs_schedule(config.model, n_pairs, config.gibbs_passes))
                                  + config.n_samples)
    if config.model == "ibm1":
        return config.n_iter
    return config.n_iter_ibm1 + config.n_iter


def train_direction(bitext: Bitext, n_src_vocab: int, n_tgt_vocab: int, config: TrainConfig,
                    rng: np.random.Generator, progress: Callable[[int], None] = lambda n: None,
                    trainer: type = _Trainer) -> DirectionParams:
    """Train one direction with the schedule of ``config.infer``; ``stages`` of the result says how each stage ended
    (``trainer``: a :class:`_Trainer` subclass, e.g. one with its E-steps on a dask cluster)."""
    if config.infer == "gibbs" or config.model == "fertility":
        from .gibbs import CollapsedCVITrainer, GibbsTrainer

        collapsed = GibbsTrainer if config.infer == "gibbs" else CollapsedCVITrainer
        return collapsed(bitext, n_src_vocab, n_tgt_vocab, config, rng, progress).train()
    trainer = trainer(bitext, n_src_vocab, n_tgt_vocab, config, rng, progress)
    return trainer.train_cvi() if config.infer == "cvi" else trainer.train_batch()

"""Collapsed Gibbs training of one alignment direction, eflomal's recipe (Östling & Tiedemann 2016).

``samplers`` independent chains, each started from random links
(:func:`~induce.kernels.align_gibbs.gibbs_random_links`) and run through the
stages IBM-1 -> HMM -> fertility (as far as ``model`` goes) for the passes of
:func:`gibbs_schedule`; then each chain makes ``n_samples`` more sweeps of the
final model whose conditionals are averaged into per-cell link marginals
(Rao-Blackwellised, as eflomal's final pass; the average over chains and
sweeps).  The links of the training pairs are decoded from these marginals
(:meth:`DirectionParams.marginals`); for other pairs the direction keeps the
posterior-mean translation table and jump weights of the chains' final counts
(averaged over chains) for the HMM decoder, without the fertilities.
"""

from __future__ import annotations

import copy
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import ConfigError
from ..kernels import align_gibbs as G
from .direction import CHUNK, DirectionParams, _Trainer
from .table import jump_weights

#: eflomal's priors (src/eflomal.c: JUMP_ALPHA, FERT_ALPHA) and fertility buckets (FERT_ARRAY_LEN)
FERT_ALPHA = 0.5
N_FERT = 8
#: stage names and levels of the kernel
LEVELS = {"ibm1": 1, "hmm": 2, "fertility": 3}


def gibbs_schedule(model: str, n_pairs: int, passes: tuple | None = None) -> list[tuple[str, int]]:
    """``(stage, passes)`` per stage: eflomal's rule (python/eflomal/eflomal.pyx), ``n = max(2, round(5000 /
    sqrt(P)))`` passes of the final model and ``max(2, n // 4)`` of each earlier one, unless ``passes`` gives them
    (one number per stage up to ``model``)."""
    stages = list(LEVELS)[:LEVELS[model]]
    if passes is None:
        n = max(2, int(round(5000 / math.sqrt(max(n_pairs, 1)))))
        passes = [max(2, n // 4)] * (len(stages) - 1) + [n]
    if len(passes) != len(stages):
        raise ConfigError(f"model {model!r} has {len(stages)} Gibbs stages; got {len(passes)} pass counts")
    return list(zip(stages, (int(p) for p in passes)))


class _CollapsedTrainer(_Trainer):
    """The count bookkeeping shared by the sampler and collapsed variational inference: the lexical, jump and
    fertility counts of :mod:`induce.kernels.align_gibbs` (links or their expectations), and the direction they
    leave: the posterior-mean translation table and jump weights for the HMM decoder, the fertilities."""

    def _count_arrays(self, dtype) -> tuple:
        """Zeroed ``lex`` (per table entry), ``lex_tot`` (per row), ``jumps``, ``fert`` (``N_FERT`` per word)."""
        t = self.table
        return (np.zeros(t.nnz, dtype=dtype), np.zeros(t.n_rows, dtype=dtype),
                np.zeros(2 * self.cfg.max_jump + 1, dtype=np.int64 if dtype == np.int32 else dtype),
                np.zeros(max(t.n_rows - 1, 1) * N_FERT, dtype=dtype))

    def _posterior_mean(self, lex, jumps, fert, marginals) -> DirectionParams:
        """The direction of final counts (in the table's order): ``(C + a) / (C. + K a)``, jump weights
        ``C_d + b``, fertilities ``(F_e(phi) + g) / (F_e(.) + 8 g)``; ``marginals`` decode the training pairs."""
        model = self.cfg.model
        params = self._result("cvi", lex, jump_weights("cvi", jumps, None, self.jump_alpha, None),
                              "ibm1" if model == "ibm1" else "hmm")
        params.marginals = marginals
        if model == "fertility":
            fert = fert.reshape(-1, N_FERT) + FERT_ALPHA
            params.fertility = fert / fert.sum(axis=1, keepdims=True)
        return params


class GibbsTrainer(_CollapsedTrainer):
    """The chains of one direction over the arrays of :class:`~induce.align.direction._Trainer`; with
    ``cfg.workers > 1`` the chains run in that many threads (the kernels release the GIL), with the links and
    marginals of the serial run: each chain's seeds are drawn up front in the serial order, each chain sums its
    own marginals, and these are added in chain order."""

    #: the table's entries numbered by target word, then source row, for the sampler: the cells of one target
    #: token (its word against each source word of the pair) then count in one block of ``lex`` instead of one
    #: row each: fewer cache misses (docs/experiments/alignment.md, "Throughput").  ``self.rank[k]`` is the number
    #: of table entry ``k``, ``self.entry_row`` the rows in the new order (:meth:`_by_target_word`).
    cells_by_column = True
    #: and the 2^18 entries of the most cells first (1 MiB of int32 counts, one core's L2 cache here): 85% of the
    #: cells read these 8% of the entries at 251k pairs (docs/experiments/alignment.md, "Throughput, fourth round")
    hot_entries = 2 ** 18

    def train(self) -> DirectionParams:
        cfg, b = self.cfg, self.b
        schedule = gibbs_schedule(cfg.model, b.n_pairs, cfg.gibbs_passes)
        n_chunks = -(-b.n_pairs // CHUNK)
        n_seeds = 1 + n_chunks * (sum(n for _, n in schedule) + cfg.n_samples)
        seeds = [[self._seed() for _ in range(n_seeds)] for _ in range(cfg.samplers)]
        marginals = np.zeros(len(self.cells), dtype=np.float32)
        self._by_target_word()
        totals = None
        workers = min(cfg.workers, cfg.samplers)
        pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        try:
            runs = (pool.map if pool else map)(lambda chain: self._chain(schedule, iter(seeds[chain]), chain),
                                               range(cfg.samplers))
            for counts, chain_marginals, history, stages in runs:  # (in chain order)
                marginals += chain_marginals
                del chain_marginals
                self.history += history
                self.stages += stages
                totals = counts if totals is None else [a + c for a, c in zip(totals, counts)]
        finally:
            if pool:
                pool.shutdown(cancel_futures=True)
        marginals *= np.float32(1.0 / (cfg.samplers * cfg.n_samples))
        return self._posterior_mean(*(x / cfg.samplers for x in totals), marginals)

    def _by_target_word(self) -> None:
        t = self.table
        self.rank = t.column_rank
        self.entry_row = np.empty_like(t.entry_row)
        self.entry_row[self.rank] = t.entry_row

    def _chain(self, schedule, seeds, chain):
        """One chain through the stages, then its ``n_samples`` sweeps whose conditionals are summed into its own
        marginals; returns its final lexical (in the table's order), jump and fertility counts (float64), those
        marginals, and its history and stages (``_stage``'s records, kept apart from the other chains')."""
        cfg, b = self.cfg, self.b
        own = copy.copy(self)  # (shares the arrays; its own history and stages)
        own.history, own.stages = [], []
        links = np.empty(len(b.tgt_tok), dtype=np.int32)
        G.gibbs_random_links(b.src_off, b.tgt_off, cfg.null_prob, next(seeds), links)
        lex, lex_tot, jumps, fert = self._count_arrays(np.int32)
        marginals = np.zeros(len(self.cells), dtype=np.float32)
        G.gibbs_counts(b.src_off, b.tgt_off, b.src_tok, self.cell_off, self.cells, self.entry_row, links, N_FERT,
                       lex, lex_tot, jumps, fert)
        order = self._order(shuffle=False)

        def sweep(level: int, acc_weight: float) -> float:
            return sum(G.gibbs_sweep(chunk, b.src_off, b.tgt_off, b.src_tok, self.cell_off, self.cells, self.entry_row,
                                     links, lex, lex_tot, cfg.alpha, self.outcomes, jumps, self.jump_alpha, fert,
                                     N_FERT, FERT_ALPHA, cfg.null_prob, level, next(seeds), marginals, acc_weight)
                       for chunk in self._chunks(order))

        for stage, n in schedule:
            own._stage(f"{stage}-gibbs{chain}", n, lambda: sweep(LEVELS[stage], 0.0), lambda: None)
        level = LEVELS[schedule[-1][0]]
        own._stage(f"average-gibbs{chain}", cfg.n_samples, lambda: sweep(level, 1.0), lambda: None)
        return [x.astype(np.float64) for x in (lex[self.rank], jumps, fert)], marginals, own.history, own.stages

    def _seed(self) -> int:
        return int(self.rng.integers(2 ** 31))


class CollapsedCVITrainer(_CollapsedTrainer):
    """Collapsed variational inference of the sampler's model (``infer="cvi"`` with ``model="fertility"``):
    mean-field link marginals ``q(a_j)`` from uniform, the same counts as expectations under ``q``
    (:func:`~induce.kernels.align_gibbs.cvi_sweep`), the stages IBM-1 -> HMM -> fertility each run until the
    stopping rule (``n_iter_ibm1``, then ``n_iter`` passes at most, ``tol``); ``q`` decodes the training pairs."""

    def train(self) -> DirectionParams:
        cfg, b = self.cfg, self.b
        q = self.initial_posteriors()
        lex, lex_tot, jumps, fert = self._count_arrays(np.float64)
        for stage in LEVELS:
            level = LEVELS[stage]
            # the counts of the new level: the jumps and fertilities enter as expectations of the current q
            G.cvi_counts(b.src_off, b.tgt_off, b.src_tok, self.cell_off, self.cells, self.table.entry_row, q, N_FERT,
                         level, lex, lex_tot, jumps, fert)

            def one_pass() -> float:
                return sum(G.cvi_sweep(chunk, b.src_off, b.tgt_off, b.src_tok, self.cell_off, self.cells,
                                       self.table.entry_row, q, lex, lex_tot, cfg.alpha, self.outcomes, jumps,
                                       self.jump_alpha, fert, N_FERT, FERT_ALPHA, cfg.null_prob, level)
                           for chunk in self._chunks(self._order(shuffle=True)))

            self._stage(f"{stage}-cvi", cfg.n_iter_ibm1 if stage == "ibm1" else cfg.n_iter, one_pass, lambda: None)
            if stage == cfg.model:
                break
        return self._posterior_mean(lex, jumps, fert, q)

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

import math

import numpy as np

from ..errors import ConfigError
from ..kernels import align_gibbs as G
from .direction import DirectionParams, _Trainer
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


class GibbsTrainer(_Trainer):
    """The chains of one direction over the arrays of :class:`~induce.align.direction._Trainer`."""

    def train(self) -> DirectionParams:
        cfg, b = self.cfg, self.b
        schedule = gibbs_schedule(cfg.model, b.n_pairs, cfg.gibbs_passes)
        marginals = np.zeros(len(self.cells), dtype=np.float32)
        totals = None
        for chain in range(cfg.samplers):
            counts = self._chain(schedule, marginals, 1.0 / (cfg.samplers * cfg.n_samples), chain)
            totals = counts if totals is None else [a + c for a, c in zip(totals, counts)]
        lex, jumps, fert = (x / cfg.samplers for x in totals)
        params = self._result("cvi", lex, jump_weights("cvi", jumps, None, self.jump_alpha, None),
                              "ibm1" if cfg.model == "ibm1" else "hmm")
        params.marginals = marginals
        if cfg.model == "fertility":
            fert = fert.reshape(-1, N_FERT) + FERT_ALPHA
            params.fertility = fert / fert.sum(axis=1, keepdims=True)
        return params

    def _chain(self, schedule, marginals, weight, chain):
        """One chain through the stages, then its averaged sweeps; returns its final lexical, jump and fertility
        counts (float64)."""
        cfg, b, t = self.cfg, self.b, self.table
        links = np.empty(len(b.tgt_tok), dtype=np.int32)
        G.gibbs_random_links(b.src_off, b.tgt_off, cfg.null_prob, self._seed(), links)
        lex = np.zeros(t.nnz, dtype=np.int32)
        lex_tot = np.zeros(t.n_rows, dtype=np.int32)
        jumps = np.zeros(2 * cfg.max_jump + 1, dtype=np.int64)
        fert = np.zeros(max(t.n_rows - 1, 1) * N_FERT, dtype=np.int32)
        G.gibbs_counts(b.src_off, b.tgt_off, b.src_tok, self.cell_off, self.cells, t.entry_row, links, N_FERT,
                       lex, lex_tot, jumps, fert)
        order = self._order(shuffle=False)

        def sweep(level: int, acc_weight: float) -> float:
            return sum(G.gibbs_sweep(chunk, b.src_off, b.tgt_off, b.src_tok, self.cell_off, self.cells, t.entry_row,
                                     links, lex, lex_tot, cfg.alpha, self.outcomes, jumps, self.jump_alpha, fert,
                                     N_FERT, FERT_ALPHA, cfg.null_prob, level, self._seed(), marginals, acc_weight)
                       for chunk in self._chunks(order))

        for stage, n in schedule:
            self._stage(f"{stage}-gibbs{chain}", n, lambda: sweep(LEVELS[stage], 0.0), lambda: None)
        level = LEVELS[schedule[-1][0]]
        self._stage(f"average-gibbs{chain}", cfg.n_samples, lambda: sweep(level, weight), lambda: None)
        return [x.astype(np.float64) for x in (lex, jumps, fert)]

    def _seed(self) -> int:
        return int(self.rng.integers(2 ** 31))

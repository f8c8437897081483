"""HDP-HMM tagger: the number of states is learned (thesis ch. 5).

Model (thesis eq. 5.4-5.9): top-level stick ``pi ~ GEM(gamma)``, transition
rows (row 0 = start) ``theta_j ~ DP(sigma, pi)``, emissions ``phi_k ~ Dir(beta)`` or,
with ``emission_prior="asymmetric"`` (thesis 5.5.3, ``cvi`` and ``scvi``), ``phi_k ~ Dir(beta tau)``
with the concentration and the top-level word distribution ``tau`` learned,
with the direct-assignment truncation at ``K`` states (thesis 5.3; Teh et al.
2008): ``q(z) = 0`` whenever a state exceeds ``K``.  Inference (``infer=``):

* ``cvi``: batch collapsed VI (thesis 5.3): per-sentence ``q(z^i)`` under the
  surrogate transitions ``(E[C^{\\i}_jk] + sigma G[pi_k]) / (E[C^{\\i}_j.] + sigma)``
  (eq. 5.37-5.39), then the sticks (5.25-5.26), ``gamma`` (5.17) and
  ``sigma`` (5.20) from the expected table counts (5.35-5.36), the last
  two once the symmetric start has broken (``hyper_burn_in``); then split-merge moves
  accepted by the collapsed bound of eq. 5.13 (``merge_moves``);
* ``scvi``: stochastic CVI (thesis 5.3 "Stochastic CVI"; Wang & Blunsom,
  paper 004): global counts blended per minibatch (eq. 3.103),
  ``gamma``, ``sigma`` and the sticks by gradient steps (eq. 5.40 with
  5.16, 5.19, 5.23-5.24; natural gradient for the sticks as in paper
  004 eq. 14, scaled steps for ``gamma`` and ``sigma``); each
  minibatch's ``q(C^m = 0)`` is kept and replaced when it comes round again; cvi's split-merge
  moves on the memoized local statistics (``merge_moves``, ``scvi_memory``);
  ``Dir(beta tau)`` by :meth:`induce.infer.hdp.EmissionPrior.stochastic_step`;
* ``svi``: stochastic mean-field VI with a point estimate of the top-level
  stick (Johnson & Willsky 2014, section 4);
* ``beam``: the beam sampler (Van Gael et al. 2008).

``q(C > 0)`` (needed by the table counts) by ``qc=`` ``heuristic`` (eq. 5.67,
default), ``exact`` (5.53-5.56), ``meanfield`` (5.60-5.64) or ``sampling``
(5.65 with ``qc_samples`` paths per sentence).  Every iteration's trace record
holds the effective number of states: the fewest states covering 99% of the
tokens (thesis 5.5.1).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..corpus.corpus import Corpus, as_corpus
from ..corpus.vocab import Vocabulary
from ..base import SCHEDULE, AnyOf, Boolean, Integer, Options, Real
from ..errors import ConfigError
from ..resources import check_memory, corpus_source, hmm_bytes, sentence_label
from .. import modelfile
from ..infer import hdp
from ..infer import hmm_passes as passes
from ..infer.convergence import ConvergenceMonitor
from ..infer.hdp_passes import (emission_log_q0, hdp_cvi_pass, hdp_minibatch_pass,
                                hdp_minibatch_pass_emission_q0)
from ..infer.hdp_merge import instant_merges, merge_locals, move_round
from ..infer.schedules import blend, exponential_init, minibatches, step_size
from ..kernels.hdp_qc import QC_METHODS
from ..modelfile import Field
from ..names import HDP_ALGORITHMS, HDP_HYPERPARAMETERS, TABLE_ESTIMATES
from .hmm import _NO_MASK, ONE_SENTENCE, STOCHASTIC_PATIENCE, HMMTagger, _Data

HYPERPARAMETERS = HDP_HYPERPARAMETERS  # the names ``fix_hyper`` accepts
DEFAULT_BETA = 0.01  # the symmetric emission prior's default (see ``beta``)
#: ``n_iter=None``: the cap on cvi's passes and scvi's / svi's epochs, which stop earlier on convergence (``tol``),
#: and the sweeps the beam sampler runs (a sampler has no stop).  cvi 1,000 and scvi 300, the lengths of the
#: recorded recovery runs (whose split-merge schedule, laid out over the cap, the stopped runs keep); beam 3,000,
#: the sweeps its recovery needs (thesis 5.5.1: > 2,500; RESULTS "HDP-HMM").  docs/experiments/hdp_defaults.md,
#: "Stopping on convergence".
MAX_ITER = {"cvi": 1000, "scvi": 300, "svi": 300, "beam": 3000}
ASYMMETRIC_BURN_IN = {"cvi": 50, "scvi": 5}  # hyper_burn_in=None with Dir(beta tau) (docs/experiments/hdp.md)
DEFAULT_EMISSION_CONCENTRATION = 10.0  # beta's start for Dir(beta tau) (docs/experiments/hdp.md)
SYMMETRY_BREAK_GAIN = 0.01  # hyper_burn_in=None with Dir(beta), cvi: objective gain over pass 1 that ends the burn-in
# split-merge moves (cvi, Dir(beta); see merge_moves): rounds from MERGE_EVERY (at most n_iter / 10) passes after the
# burn-in; each trial runs MERGE_TRIAL_PASSES passes from the changed and from the unchanged fit; states with fewer
# expected tokens than MERGE_MIN_USAGE are left alone; at most MERGE_MAX_TRIALS trials a round, and all rounds'
# trial passes (2 x 3 a trial, a generous count of the baselines) within n_iter / MOVE_BUDGET_SHARE = n_iter / 4
# (docs/experiments/hdp_defaults.md, "Split-merge moves").  scvi (the rounds on its sentence memory) runs fewer epochs
# (300 on the recovery data) and needs about as many trials: 2 passes a trial within n_iter / 3, which reach the
# true states there as 3 within n_iter / 2 do (hdp_defaults.md, "scvi: memoized split-merge moves")
MERGE_EVERY = 100
MERGE_TRIAL_PASSES = {"cvi": 3, "scvi": 2}
MERGE_MIN_USAGE = 1.0
MERGE_MAX_TRIALS = 20
MOVE_BUDGET_SHARE = {"cvi": 4, "scvi": 3}


@dataclass
class _CVIState:
    """Everything one batch-CVI pass reads and writes: local statistics, their totals, the HDP globals,
    each sentence's ``H(q(z^i))``, the ``q(C = 0)`` accumulators and the emission prior (copied whole
    by the merge moves)."""

    sent_trans: np.ndarray
    gamma: np.ndarray
    trans: np.ndarray
    emit: np.ndarray
    glob: hdp.HDPGlobals
    entropy: np.ndarray
    logq0: np.ndarray
    logq0_row: np.ndarray
    sampled: np.ndarray
    stats: dict
    emission: hdp.EmissionPrior


class HDPHMMTagger(HMMTagger):
    """Unsupervised HDP-HMM tagger, scikit-learn style (same contract as :class:`HMMTagger`).

    Parameters
    ----------
    truncation : the truncation level ``K`` (for ``beam``: the initial number of states).
    infer : ``cvi`` (default), ``scvi``, ``svi`` or ``beam``.
    n_iter : the most passes over the corpus (``scvi``/``svi``: epochs); ``beam``: the sweeps it runs.
        ``None`` (default): :data:`MAX_ITER` (cvi 1,000, scvi and svi 300, beam 3,000).  The split-merge
        schedule below is laid out over this cap.  The passes run are ``n_iter_``.
    tol : the stopping rule (:class:`induce.infer.convergence.ConvergenceMonitor`), once the burn-in has ended
        (before, the symmetric start is a plateau) and, with split-merge rounds, the schedule's first round has
        run: ``cvi`` stops when its objective's change per pass stays below ``tol`` of its progress since then
        (or since the last round that changed the fit) for 3 passes (``None``: 1e-5, as
        :class:`HMMTagger`'s batch algorithms); ``scvi``/``svi`` when an epoch's summed minibatch
        log-likelihood (every sentence is visited once an epoch) gains no more than ``tol`` of its best for 3
        epochs (``None``: 1e-4).  With split-merge moves a converged fit first gets a round of moves (if the
        budget allows a trial): if it changes the fit, the rule starts again.  ``0``: run all ``n_iter``.
        ``beam`` runs all its sweeps.  ``converged_`` says whether the rule stopped the run; hitting the cap
        is a ``ConvergenceWarning``.
    gamma, sigma : initial top-level and transition concentrations.
    beta : symmetric Dirichlet prior on the emissions (per word).  Default :data:`DEFAULT_BETA` = 0.01, the
        best of 0.003 / 0.01 / 0.03 / 0.1 by M-1 on held-out WSJ (wsjdev, 3 seeds, the other defaults): at the
        former 0.1 the labels use 7-8 of the 40 effective states (M-1 32.7 against 50.9;
        docs/experiments/hdp_defaults.md, "The emission prior for tagging").  The recovery data of the thesis
        (8 symbols) take ``beta=1``, as the thesis does.
    emission_prior : ``symmetric`` (default) or ``asymmetric``: ``Dir(beta tau)``
        (thesis 5.5.3; ``cvi`` and ``scvi``) starting from ``tau`` uniform and
        the concentration ``emission_concentration``, then both learned from
        the expected emission table counts (:class:`induce.infer.hdp.EmissionPrior`)
        after ``hyper_burn_in``, unless ``fix_hyper``.
    emission_concentration : the starting ``beta`` of ``Dir(beta tau)`` (asymmetric
        prior only; ``tau`` starts uniform).  ``None`` (default):
        :data:`DEFAULT_EMISSION_CONCENTRATION` = 10, the smallest start the
        thesis explored (5.5.3 starts at 100 and reports 10, 100 and 1,000
        alike); ``"symmetric"``: ``W beta``, so the start is the symmetric
        model.  Where the learned ``beta`` ends depends on the start: the
        fixed point 5.20 for ``beta`` is self-consistent at more than one
        value (a small start makes sharp states, which need few tables, which
        keep ``beta`` small).  On WSJ (closed vocabulary, 1k / 5k / all) a
        start of 10 predicts 0.11 / 0.16 / 0.12 nats/token better than
        ``W beta`` = 0.1 W, and 0.05 / 0.01 / 0.01 better than 100; the
        training objective ranks the starts the same way.  See
        docs/experiments/hdp.md, "Starting emission concentration".
    new_word_mass : the share of ``tau`` left to the unseen words, ``gamma_e`` of
        ``tau ~ DP(gamma_e, H)`` over an open vocabulary (``tau_unseen =
        gamma_e / (E[s..] + gamma_e)``): ``"learned"`` (ML-II, the fixed point
        of :func:`induce.infer.hdp.new_word_concentration`, learned with ``beta``
        and ``tau``, i.e. after ``hyper_burn_in``) or a positive number held fixed.
        Used by the asymmetric emission prior only.
    fix_hyper : ``True`` keeps ``gamma`` and ``sigma`` (and the asymmetric emission
        prior) fixed instead of learning them (eq. 5.17, 5.20); a sequence of
        names from ``("gamma", "sigma", "emission")`` fixes only those (e.g.
        ``("sigma",)``: learn ``gamma`` and the emission prior, hold ``sigma``).
        While the random initial posteriors are still symmetric the ``sigma``
        fixed point drifts upwards (see ``hyper_burn_in`` and
        docs/experiments/hdp.md, "sigma drift").
    hyper_burn_in : passes (``scvi``: epochs) during which the hyperparameters stay at
        their initial values (the sticks are still updated).  From a symmetric start
        the fixed points 5.20 (``sigma``) and 5.20 applied to the emissions
        (``beta`` of ``Dir(beta tau)``) grow while all states still look alike,
        which delays or (asymmetric prior) prevents the symmetry breaking; see
        docs/experiments/hdp.md, "Dir(beta tau) and the burn-in".  ``None`` (default): with the symmetric
        prior, ``cvi`` holds them until the symmetric start has broken, i.e.
        from the first pass whose collapsed objective beats the first pass's by
        :data:`SYMMETRY_BREAK_GAIN` (1%) of its magnitude (never, if it never
        does; ``hyper_burn_in_`` records the passes held).  While the local
        posteriors are still near-uniform the expected transition counts are
        proportional to their row and column totals, so the evidence of eq. 5.10
        increases with ``sigma`` without bound and the ML-II update 5.20 drives
        ``sigma`` to hundreds, which keeps the rows alike: on the thesis Fig. 5.7
        data all 10 states then stay in use (docs/experiments/hdp_defaults.md).
        ``scvi`` (random exponential global counts, not a symmetric start) learns
        from the first epoch.  With the asymmetric prior, which degenerates when
        learned from the first pass on every WSJ size tried (beta and sigma run
        away to thousands), the measured settings of :data:`ASYMMETRIC_BURN_IN`
        (50 cvi passes, 5 scvi epochs), at most half of ``n_iter``.
    qc : ``q(C > 0)`` method: ``heuristic``, ``exact``, ``meanfield``, ``sampling``.
    qc_samples : paths per sentence for ``qc="sampling"``.
    table_estimate : how ``cvi`` gets the expected table counts ``E[s_jk]`` behind
        the sticks, ``gamma`` and ``sigma``: ``first-order`` (default; eq. 5.35-5.36
        with ``q(C > 0)`` by ``qc``) or ``sampled``: ``table_samples`` draws of the
        transition counts from ``q(z)`` per pass, each turned into exact expected
        tables (:func:`induce.infer.hdp.sampled_tables`): a check on the
        first-order approximation (on WSJ 1k and 5k the two agree to within
        10% in the learned ``sigma``; docs/experiments/hdp.md, "Sampled table counts").
    table_samples : draws per pass for ``table_estimate="sampled"``.
    batch_size, tau, kappa : minibatch size and Robbins-Monro step ``(tau + m)^-kappa``
        of ``scvi``/``svi``; ``batch_size=None`` (default): 100, on a cluster
        the largest that keeps 500 minibatches in the run, as
        :class:`induce.HMMTagger`'s (``batch_size_``).
    coverage : token share that defines the effective number of states (0.99).
    n_init : ``cvi`` only: fit from this many random starts and keep the one with
        the highest final collapsed objective (the trace's
        ``predictive_log_likelihood``).  Start 0 uses ``random_state`` itself,
        so ``n_init=1`` (default) is the single run of the thesis; the final
        objectives of all starts are in ``init_objectives_``.  Merged states
        are local optima that score far lower (on the theta_pos recovery data
        ~2,000 nats), so a few starts remove them; see docs/experiments/hdp.md,
        "Best of 3 starts".
    merge_moves : ``cvi`` with ``Dir(beta)``: split-merge moves (:mod:`induce.infer.hdp_merge`) after
        the burn-in.  A round tries to split each used state in two (2-means over the sentences that use
        it) and to merge pairs of states (most alike emissions first); each trial runs 3 passes from the
        changed and from the unchanged fit and is kept if the collapsed bound (thesis eq. 5.13,
        :func:`induce.infer.hdp.collapsed_bound`) is higher.  The first round comes ``min(100, n_iter/10)``
        passes after the burn-in, the next as far again after a round that changed the fit and twice as
        far after one that did not; all trials together take at most ``n_iter / 4`` extra passes.  On the
        thesis Fig. 5.7 data coordinate ascent alone keeps split or merged states (the predictive
        log-likelihood ties or prefers them, the bound does not); see docs/experiments/hdp_defaults.md,
        "Split-merge moves".  The accepted moves of a round are in the trace (``splits``, ``merges``).
        ``scvi`` (``Dir(beta)``) with the sentence memory (``scvi_memory``): the same rounds, on the same
        schedule, run on the memory as a batch-CVI state (memoized VI, Hughes & Sudderth 2013), with trials of
        2 passes within ``n_iter / 3`` passes; when the split of a state alone is rejected, the sentences it would
        move also take a free state for every state they share with the others (a joint split, which the
        Beal grammar's two cycles need); a kept move sets the global counts to the memory's totals.  On the
        recovery data this reaches the true states where scvi alone keeps split and merged ones, at 1.3
        times the time (docs/experiments/hdp_defaults.md, "scvi: memoized split-merge moves").  Without the
        memory (``scvi_memory=False``, or on a cluster): instant merges of the global counts every
        ``min(10, n_iter/10)`` epochs of the second half (:func:`induce.infer.hdp_merge.instant_merges`:
        eq. 5.10 and the integrated emissions against an estimate of the entropy the merge takes); no split.
    scvi_memory : ``scvi``: keep each sentence's expected counts of its last visit and leave them out of
        the global counts its surrogate is formed from (``N - c^i``, as cvi's ``C^{\\i}``).  Costs the
        memory of cvi's local statistics (``N x K`` marginals, ``I x (K+1) x K`` transitions).  ``None``
        (default): on when the memoized split-merge rounds run (``merge_moves`` with ``Dir(beta)``, no
        ``client``), off otherwise.  Leaving the own counts out does not by itself change which states scvi
        ends with (docs/experiments/hdp_defaults.md, "scvi"); the moves need the stored statistics.
    decode, order, random_state, verbose, eval_column, eval_every, callback : as
        in :class:`HMMTagger`.
    client : a ``dask.distributed.Client``: ``scvi`` and ``svi`` run each minibatch's
        local step on its workers (:mod:`induce.distributed.hdp`); ``None``: in this process.
        The workers read their shards of a corpus given as a path (or read from one);
        data given in memory is shipped to them, once.

    Fitted attributes: ``transitions_`` (K+1, K; posterior-mean rows, which
    leave the mass of the states beyond the truncation unassigned),
    ``emissions_`` (W+1, K), ``transition_counts_``, ``emission_counts_``,
    ``gamma_``, ``sigma_``, ``emission_concentration_`` and ``emission_base_``
    (``tau`` over the ``W`` words plus the unseen ones; uniform ``1/W`` for the
    symmetric prior), ``emission_new_mass_`` (``gamma_e``, learned or fixed), ``stick_u_``/``stick_v_`` and ``stick_order_``
    (stick position -> state), ``state_prior_`` (``sigma G[pi_k]``),
    ``qc_positive_`` (last ``q(C > 0)``, K+1 x K), ``effective_states_``,
    ``labels_``, ``trace_`` (of the start kept), ``init_objectives_``, ``bound_`` (``cvi``: the final
    collapsed bound), ``vocab_``, ``n_states_``, ``n_iter_``,
    ``hyper_burn_in_`` (passes the burn-in held the hyperparameters).
    """

    _parameter_constraints = {
        "truncation": Integer(1), "infer": Options(*HDP_ALGORITHMS), "n_iter": AnyOf(Options(None), Integer(1)),
        "tol": AnyOf(Options(None), Real(0.0)),
        "gamma": Real(0.0, min_open=True), "sigma": Real(0.0, min_open=True), "beta": Real(0.0, min_open=True),
        "emission_prior": Options("symmetric", "asymmetric"),
        "emission_concentration": AnyOf(Options(None, "symmetric"), Real(0.0, min_open=True)),
        "new_word_mass": AnyOf(Options("learned"), Real(0.0, min_open=True)),
        "hyper_burn_in": AnyOf(Options(None), Integer(0)), "qc": Options(*QC_METHODS), "qc_samples": Integer(1),
        "table_estimate": Options(*TABLE_ESTIMATES), "table_samples": Integer(1),
        "coverage": Real(0.0, 1.0, min_open=True), "n_init": Integer(1),
        "merge_moves": Boolean(), "scvi_memory": AnyOf(Options(None), Boolean()), **SCHEDULE,
    }

    def __init__(
        self,
        truncation: int = 45,
        infer: str = "cvi",
        n_iter: int | None = None,
        tol: float | None = None,
        gamma: float = 1.0,
        sigma: float = 1.0,
        beta: float = DEFAULT_BETA,
        emission_prior: str = "symmetric",
        emission_concentration: float | str | None = None,
        new_word_mass: float | str = 1.0,
        fix_hyper: bool | tuple[str, ...] = False,
        hyper_burn_in: int | None = None,
        qc: str = "heuristic",
        qc_samples: int = 100,
        table_estimate: str = "first-order",
        table_samples: int = 10,
        batch_size: int | None = None,
        tau: float = 1.0,
        kappa: float = 0.6,
        coverage: float = 0.99,
        n_init: int = 1,
        merge_moves: bool = True,
        scvi_memory: bool | None = None,
        decode: str = "posterior",
        order: str = "sequential",
        random_state: int = 0,
        verbose: bool = False,
        eval_column: str | None = None,
        eval_every: int = 1,
        callback: Callable[[dict], None] | None = None,
        client=None,
    ):
        self.truncation = truncation
        self.infer = infer
        self.n_iter = n_iter
        self.tol = tol
        self.gamma = gamma
        self.sigma = sigma
        self.beta = beta
        self.emission_prior = emission_prior
        self.emission_concentration = emission_concentration
        self.new_word_mass = new_word_mass
        self.fix_hyper = fix_hyper
        self.hyper_burn_in = hyper_burn_in
        self.qc = qc
        self.qc_samples = qc_samples
        self.table_estimate = table_estimate
        self.table_samples = table_samples
        self.batch_size = batch_size
        self.tau = tau
        self.kappa = kappa
        self.coverage = coverage
        self.n_init = n_init
        self.merge_moves = merge_moves
        self.scvi_memory = scvi_memory
        self.decode = decode
        self.order = order
        self.random_state = random_state
        self.verbose = verbose
        self.eval_column = eval_column
        self.eval_every = eval_every
        self.callback = callback
        self.client = client

    # ------------------------------------------------------------------ checks
    def _validate(self, corpus: Corpus) -> None:
        if self.emission_prior == "asymmetric" and self.infer not in ("cvi", "scvi"):
            raise ConfigError("the asymmetric emission prior Dir(beta tau) is implemented for infer='cvi' and "
                              "'scvi' only")
        if self.emission_concentration is not None and self.emission_prior != "asymmetric":
            raise ConfigError("emission_concentration is the starting beta of Dir(beta tau); it needs "
                              "emission_prior='asymmetric' (the symmetric prior is set by beta per word)")
        self._validate_shared(corpus)
        if self.infer == "cvi" and corpus.n_sentences < 2:
            raise ConfigError(ONE_SENTENCE.format(infer="cvi (hdp-hmm)", alternatives="--infer svi or beam"))
        check_memory(hmm_bytes(self.truncation, len(corpus.vocab), corpus.lengths), f"{self.truncation} HDP-HMM states",
                     sentence_label(corpus.lengths, corpus_source(corpus)), "use a lower --truncation")
        self._fixed_hyper()
        if self.table_estimate == "sampled" and self.infer != "cvi":
            raise ConfigError("table_estimate='sampled' is implemented for infer='cvi' only")
        if int(self.n_init) > 1 and self.infer != "cvi":
            raise ConfigError("n_init > 1 (best of several random starts) is implemented for infer='cvi' only")
        if self.client is not None and (self.infer not in ("scvi", "svi") or self.scvi_memory):
            raise ConfigError(f"the HDP-HMM runs scvi (without scvi_memory) and svi on a cluster, not {self.infer}")

    # --------------------------------------------------------------------- fit
    def fit(self, corpus, tag_dict=None) -> "HDPHMMTagger":
        """Learn the HDP-HMM from ``corpus`` (anything :func:`~induce.corpus.corpus.as_corpus` takes); returns
        ``self`` (tag dictionaries are not supported)."""
        if tag_dict is not None:
            raise ConfigError("the HDP-HMM tagger learns its states; a tag dictionary cannot be used with it")
        corpus = as_corpus(corpus)
        self._validate(corpus)
        if int(self.n_init) > 1:
            return self._fit_best_start(corpus)
        K = int(self.truncation)
        self.n_states_ = K
        self.tag_vocab_ = None
        self.allowed_ = _NO_MASK
        freq = np.bincount(corpus.tokens, minlength=len(corpus.vocab))
        used = np.flatnonzero(freq)
        remap = np.full(len(corpus.vocab), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        self.vocab_ = Vocabulary.from_json({"items": [corpus.vocab.itos[i] for i in used],
                                            "counts": freq[used].tolist(), "unk": corpus.vocab.unk})
        data = _Data(remap[corpus.tokens], np.ascontiguousarray(corpus.offsets, dtype=np.int64), len(used),
                     corpus.source)
        self._start_run()
        gold = corpus.tags[self.eval_column] if self.eval_column else None
        rng = np.random.default_rng(self.random_state)
        seeds = rng.integers(0, 2**31 - 1, size=self._max_iter() + 1)
        self.gamma_, self.sigma_ = float(self.gamma), float(self.sigma)
        self._learn_from = None  # the adaptive burn-in's first learning pass (see _symmetry_broken)
        learned = self.new_word_mass == "learned"
        # gamma_e starts at 1 (the unit mass of Teh et al. 2008's top-level update) when learned
        self._emission = hdp.EmissionPrior(data.W, self._starting_emission_concentration(data.W),
                                           1.0 if learned else float(self.new_word_mass), learned)
        if self.infer == "cvi":
            self._fit_cvi(data, gold, seeds)
        elif self.infer == "scvi":
            self._fit_scvi(data, gold, seeds)
        elif self.infer == "svi":
            from ..infer.hdp_svi import fit_svi

            fit_svi(self, data, gold, seeds)
        else:
            from ..infer.beam import fit_beam

            fit_beam(self, data, gold, seeds)
        self.init_objectives_ = [self.trace_[-1][self._OBJECTIVE]] if self.infer == "cvi" and self.trace_ else []
        return self

    def _starting_emission_concentration(self, W: int) -> float:
        """beta's start for :class:`induce.infer.hdp.EmissionPrior` (``W beta``: ``Dir(beta)``, the symmetric start)."""
        if self.emission_prior != "asymmetric" or self.emission_concentration == "symmetric":
            return float(self.beta) * W
        return float(DEFAULT_EMISSION_CONCENTRATION if self.emission_concentration is None
                     else self.emission_concentration)

    _OBJECTIVE = "predictive_log_likelihood"  # what cvi's trace records and n_init compares

    def _fit_best_start(self, corpus: Corpus) -> "HDPHMMTagger":
        """``n_init`` single-start fits (start 0: ``random_state``); keep the highest final objective."""
        params = {k: getattr(self, k) for k in self._PARAMS} | {
            "n_init": 1, "verbose": self.verbose, "eval_column": self.eval_column,
            "eval_every": self.eval_every, "callback": self.callback}
        best, objectives = None, []
        for start in range(int(self.n_init)):
            seed = self.random_state if start == 0 else int(
                np.random.default_rng([int(self.random_state), start]).integers(0, 2**31 - 1))
            model = type(self)(**(params | {"random_state": seed}))
            model._progress_label = f" start {start + 1}/{self.n_init}"
            model.fit(corpus)
            objectives.append(model.init_objectives_[0])
            if best is None or objectives[-1] > best.init_objectives_[0]:
                best = model
        vars(self).update({k: v for k, v in vars(best).items() if k.endswith("_")})  # the fitted attributes
        self.init_objectives_ = objectives
        return self

    def _fixed_hyper(self) -> frozenset:
        """The hyperparameters ``fix_hyper`` holds: all of :data:`HYPERPARAMETERS`, none, or the named ones."""
        if isinstance(self.fix_hyper, (bool, np.bool_)):
            return frozenset(HYPERPARAMETERS if self.fix_hyper else ())
        names = [self.fix_hyper] if isinstance(self.fix_hyper, str) else list(self.fix_hyper)
        unknown = [n for n in names if n not in HYPERPARAMETERS]
        if unknown:
            raise ConfigError(f"fix_hyper: unknown hyperparameter(s) {', '.join(map(repr, unknown))}; expected True, "
                              f"False or names from {', '.join(HYPERPARAMETERS)}")
        return frozenset(names)

    def _learns(self, name: str, it: int) -> bool:
        """Whether pass ``it`` updates hyperparameter ``name``: not fixed, and past the burn-in.

        With the adaptive burn-in (``_burn_in() is None``) the burn-in ends at the
        pass :meth:`_symmetry_broken` first holds (``self._learn_from``).
        """
        if name in self._fixed_hyper():
            return False
        burn_in = self._burn_in()
        if burn_in is None:
            return self._learn_from is not None and it >= self._learn_from
        return it > burn_in

    def _burn_in(self) -> int | None:
        """``hyper_burn_in``, with ``None`` resolved as documented there (``None``: adaptive, cvi with Dir(beta))."""
        if self.hyper_burn_in is not None:
            return int(self.hyper_burn_in)
        if self.emission_prior != "asymmetric":
            return None if self.infer == "cvi" else 0
        return min(ASYMMETRIC_BURN_IN.get(self.infer, 0), self._max_iter() // 2)

    def _past_burn_in(self, it: int) -> bool:
        """Whether pass ``it`` comes after the burn-in (:meth:`_burn_in`; adaptive: the symmetric start has broken)."""
        burn_in = self._burn_in()
        return self._learn_from is not None and it >= self._learn_from if burn_in is None else it > burn_in

    def _held_passes(self) -> int:
        """Passes during which the burn-in held the hyperparameters (all passes run if it never ended)."""
        run = int(self._last_iteration)
        if self._fixed_hyper() >= frozenset(HYPERPARAMETERS):
            return run
        burn_in = self._burn_in()
        if burn_in is not None:
            return min(burn_in, run)
        return run if self._learn_from is None else self._learn_from - 1

    def _max_iter(self) -> int:
        """``n_iter``, or where it is ``None`` the algorithm's default (:data:`MAX_ITER`)."""
        return int(self.n_iter) if self.n_iter is not None else MAX_ITER[self.infer]

    def _monitor(self) -> ConvergenceMonitor:
        """The stopping rule of ``infer`` (see ``tol``): cvi's as :class:`HMMTagger`'s batch algorithms, scvi's and
        svi's on the epoch's summed minibatch log-likelihood against its best; none for the beam sampler."""
        if self.infer == "beam":
            return ConvergenceMonitor(0.0)
        if self.infer == "cvi":
            return ConvergenceMonitor(self._tol(), reference="progress")
        return ConvergenceMonitor(self._tol(), STOCHASTIC_PATIENCE, reference="best")

    def _converging(self, it: int, objective: float) -> bool:
        """Feed pass ``it``'s objective to the stopping rule; True when it says stop (or the objective is not
        finite).  Until the burn-in has ended the rule starts afresh every pass (the symmetric start is a
        plateau), so its progress counts from the burn-in's end; where split-merge rounds run
        (:meth:`_runs_rounds`) its verdict waits for the first round of their schedule (:meth:`_merge_due`).
        (A cvi fit stopped at its first plateau and given its rounds then, before the schedule's first, kept 4
        merged states on 4 of 10 grammar datasets where the schedule's rounds find the 7;
        docs/experiments/hdp_defaults.md, "Stopping on convergence".)"""
        if not self._past_burn_in(it):
            self._convergence = self._monitor()
        calm = self._convergence.update(objective)
        return self._convergence.diverged or (calm and not (self._runs_rounds() and not self._rounds_run))

    def _max_epochs(self) -> int:
        """scvi's / svi's epoch cap is ``n_iter``'s (:meth:`_max_iter`; :meth:`_planned_epochs` plans with it)."""
        return self._max_iter()

    @staticmethod
    def _close(bar) -> None:
        """Close the progress bar of a run the stopping rule ended early."""
        if hasattr(bar, "close"):
            bar.close()

    def _unless_moved(self, stop: bool, moves: dict) -> bool:
        """After a split-merge round: a fit the round changed has not converged (its calm passes count again,
        against the same reference: progress since the burn-in, or the best epoch)."""
        if moves.get("merges") or moves.get("splits"):
            self._convergence.restart_streak()
            return False
        return stop

    def _round_left(self, stop: bool) -> bool:
        """Whether a converged fit (``stop``) first gets a split-merge round: its objective is finite and the
        budget of :meth:`_start_moves` still holds a trial."""
        return (stop and not self._convergence.diverged
                and self._move_budget >= 2 * MERGE_TRIAL_PASSES[self.infer])

    def _symmetry_broken(self, it: int, objective: float) -> None:
        """Adaptive burn-in: learning starts at the first pass whose objective beats the first pass's by
        :data:`SYMMETRY_BREAK_GAIN` of its magnitude (see ``hyper_burn_in``)."""
        if it == 1:
            self._first_objective = objective
        if self._learn_from is None and objective - self._first_objective > SYMMETRY_BREAK_GAIN * abs(
                self._first_objective):
            self._learn_from = it

    def _qc_code(self) -> int:
        return QC_METHODS.index(self.qc)

    def _hdp_record(self, bar, it, objective, name, seconds, data, usage, states, gold, **extra):
        eff = hdp.effective_states(usage, self.coverage)
        self._last_iteration = it
        self._record(bar, it, objective, name, seconds, data.tokens.shape[0], states, gold, data.offsets,
                     effective_states=eff, gamma=self.gamma_, sigma=self.sigma_, **extra)

    def _fit_cvi(self, data, gold, seeds):
        K = self.n_states_
        sample_tables = self.table_estimate == "sampled"
        st = self._cvi_state(data)
        # random initial local posteriors q(z_t | z_{t-1}) ~ U[0, 1] (thesis 5.5.1)
        passes.init_chain_posteriors(data.tokens, data.offsets, K, int(seeds[0]), st.sent_trans, st.gamma)
        learn_emission = self.emission_prior == "asymmetric" and "emission" not in self._fixed_hyper()
        logq0_emit = np.zeros((data.W, K)) if learn_emission else None
        merges = self._runs_rounds()
        self._start_moves()
        bar = self._iterations()
        for it in bar:
            t0 = time.perf_counter()
            ll = self._cvi_step(st, data, seeds[it], it, sample_tables, gate=True)
            stop = self._converging(it, ll)
            extra = {}
            if merges and (self._merge_due(it) or self._round_left(stop)):
                st, extra = self._move_round(st, data, seeds[it], it)
                stop = self._unless_moved(stop, extra)
            self._emission = em = st.emission
            self.gamma_, self.sigma_ = st.glob.gamma, st.glob.sigma
            # thesis 5.5.3: Dir(beta tau) from the emission table counts, once per pass
            if learn_emission and self._learns("emission", it):
                emission_log_q0(data.tokens, st.gamma, logq0_emit)
                extra |= {"emission_tables": em.update(st.emit, logq0_emit), "beta": em.concentration,
                          "new_word_mass": em.new_mass}
            self._hdp_record(bar, it, ll, self._OBJECTIVE, time.perf_counter() - t0, data, st.emit.sum(axis=0),
                             st.gamma.argmax(axis=1) if gold is not None else None, gold,
                             tables=st.stats["tables"], **extra)
            if stop:
                break
        self._close(bar)
        self.bound_ = self._bound(st)
        self._end_moves()
        self.qc_positive_ = st.stats["qpos"]
        self._set_sticks(st.glob.u, st.glob.v, st.glob.order)
        self._local_labels = st.gamma.argmax(axis=1)
        self._finish(st.trans, st.emit, data)

    def _cvi_state(self, data, local: tuple[np.ndarray, np.ndarray] | None = None) -> _CVIState:
        """A batch-CVI state for ``data`` (``n_states_`` states, the starting hyperparameters), with zero local
        statistics or the given ``local`` ``(sent_trans, gamma)`` (not copied)."""
        K = self.n_states_
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        S = int(self.table_samples) if self.table_estimate == "sampled" else 0
        sent_trans, gamma = (np.zeros((I, K + 1, K)), np.zeros((N, K))) if local is None else local
        return _CVIState(sent_trans=sent_trans, gamma=gamma, trans=np.zeros((K + 1, K)),
                         emit=np.zeros((data.W, K)), glob=hdp.HDPGlobals(K, self.gamma, self.sigma),
                         entropy=np.zeros(I), logq0=np.zeros((K + 1, K)), logq0_row=np.zeros(K + 1),
                         sampled=np.zeros((S, K + 1, K)), stats={"qpos": np.ones((K + 1, K))},
                         emission=self._emission)

    def _cvi_step(self, st, data, seed, it, sample_tables, gate=False):
        """One batch CVI pass on the state ``st`` (eq. 5.37-5.39), then the sticks and the learned
        ``gamma`` / ``sigma`` (5.25-5.26, 5.17, 5.20); returns the predictive log-likelihood.  ``gate``:
        the pass of the main loop, whose objective may end the adaptive burn-in (before the update)."""
        passes.totals_from_local(data.tokens, data.offsets, st.sent_trans, st.gamma, data.W, st.trans, st.emit)
        em, glob = st.emission, st.glob
        ll = hdp_cvi_pass(st.trans, st.emit, st.sent_trans, st.gamma, data.tokens, data.offsets,
                          self._order(data, seed), glob.prior(), glob.sigma, em.pseudo_counts(), em.concentration,
                          self._qc_code(), int(self.qc_samples), int(seed), st.logq0, st.logq0_row, st.sampled,
                          st.entropy)
        if gate:
            self._symmetry_broken(it, ll)
        st.stats = glob.update(st.trans, st.emit.sum(axis=0), st.logq0, st.logq0_row, self._learns("gamma", it),
                               self._learns("sigma", it), st.sampled if sample_tables else None)
        return ll

    def _bound(self, st) -> float:
        """:func:`induce.infer.hdp.collapsed_bound` of the state ``st`` (eq. 5.13, zeroth order)."""
        em = st.emission
        return hdp.collapsed_bound(st.trans, st.emit, st.glob, em.pseudo_counts(), em.concentration,
                                   st.entropy.sum())

    def _runs_rounds(self) -> bool:
        """Whether this fit runs split-merge rounds (:meth:`_move_round`): cvi, or scvi with its sentence memory,
        with :meth:`_merges`."""
        return self._merges() and (self.infer == "cvi" or self.infer == "scvi" and self._scvi_keeps_memory())

    def _merges(self) -> bool:
        """Whether this fit tries merge moves (``merge_moves`` with the symmetric emission prior; scvi runs them on
        its sentence memory, or instant merges without one)."""
        return bool(self.merge_moves) and self.emission_prior == "symmetric"

    def _start_moves(self) -> None:
        """Reset the split-merge schedule (:meth:`_merge_due`) and the trial-pass budget: ``n_iter / 4`` passes
        for all rounds (``scvi``: ``n_iter / 3``, :data:`MOVE_BUDGET_SHARE`; a trial and its baseline count
        ``2 x`` :data:`MERGE_TRIAL_PASSES`)."""
        self._next_move = self._move_gap = None
        self._rounds_run = 0
        self._move_budget = self._max_iter() // MOVE_BUDGET_SHARE[self.infer]

    def _end_moves(self) -> None:
        """Drop the split-merge schedule and budget of :meth:`_start_moves` (not fitted attributes)."""
        del self._next_move, self._move_gap, self._move_budget, self._rounds_run

    def _move_round(self, st: _CVIState, data, seed, it: int, joint: bool = False) -> tuple[_CVIState, dict]:
        """One split-merge round (:func:`induce.infer.hdp_merge.move_round`) from the batch-CVI state ``st``, its
        trials run by :meth:`_cvi_step` and accepted by :meth:`_bound`, within the budget of :meth:`_start_moves`;
        schedules the next round (:meth:`_moved`).  Returns the state to go on from (``st`` itself, unchanged,
        if nothing was accepted) and the trace entries (accepted ``merges`` and ``splits``, ``move_trials``)."""
        passes = MERGE_TRIAL_PASSES[self.infer]
        trials = min(MERGE_MAX_TRIALS, self._move_budget // (2 * passes))
        sample_tables = self.table_estimate == "sampled"
        st, records = move_round(st, lambda s: self._cvi_step(s, data, seed, it, sample_tables), self._bound,
                                 passes, MERGE_MIN_USAGE, trials, data, int(seed), joint)
        self._move_budget -= 2 * passes * len(records)
        self._rounds_run += 1
        extra = {"merges": [r["merge"] for r in records if r["accepted"] and "merge" in r],
                 "splits": [r["split"] for r in records if r["accepted"] and "split" in r],
                 "move_trials": len(records)}
        self._moved(it, bool(extra["merges"] or extra["splits"]))
        return st, extra

    def _merge_due(self, it: int) -> bool:
        """Whether pass ``it`` ends with a split-merge round: the first ``every = min(MERGE_EVERY, n_iter // 10)``
        passes after the burn-in (the hyperparameters learn), then ``every`` passes after a round that changed
        the fit and twice the last gap after one that did not; never in the last ``every`` passes."""
        every = max(1, min(MERGE_EVERY, self._max_iter() // 10))
        if self._next_move is None:
            start = self._learn_from if self._burn_in() is None else self._burn_in() + 1
            if start is None:
                return False
            self._next_move, self._move_gap = start + every - 1, every
        return it == self._next_move and it <= self._max_iter() - every

    def _moved(self, it: int, changed: bool) -> None:
        """Schedule the next split-merge round after the one at pass ``it`` (see :meth:`_merge_due`)."""
        every = max(1, min(MERGE_EVERY, self._max_iter() // 10))
        self._move_gap = every if changed else 2 * self._move_gap
        self._next_move = it + self._move_gap

    def _fit_scvi(self, data, gold, seeds):
        """Stochastic CVI: counts as SCVI for HMMs, HDP hyperparameters and sticks by eq. 5.40."""
        K, W = self.n_states_, data.W
        I, N = data.offsets.shape[0] - 1, data.tokens.shape[0]
        rng = np.random.default_rng(int(seeds[0]))
        # global counts from exponential distributions (thesis eq. 3.106-3.107)
        N_trans = exponential_init(rng, (K + 1, K), N / K**2)
        N_emit = exponential_init(rng, (W, K), N / (K * W))
        # the minibatches are fixed so that each one's q(C^m = 0) can be replaced (thesis 5.3)
        batches = [b.astype(np.int64) for b in minibatches(
            I, self._resolve_batch_size(100, I, epochs=self._planned_epochs()), rng, 1)]
        logq0_b = np.zeros((len(batches), K + 1, K))
        logq0_row_b = np.zeros((len(batches), K + 1))
        # each sentence's expected counts of its last visit, left out of the counts its surrogate uses
        memory = (np.zeros((I, K + 1, K)), np.zeros((N, K))) if self._scvi_keeps_memory() else (
            np.zeros((0, K + 1, K)), np.zeros((0, K)))
        memoized = self._runs_rounds()  # split-merge rounds on the memory, else instant merges
        if self._merges() and self.client is not None and self.scvi_memory is None:
            self._warn("on a cluster scvi keeps no sentence memory: instant merges replace the memoized split-merge "
                       "moves of the single-process default (docs/experiments/hdp_defaults.md)")
        self._start_moves()
        u, v = np.ones(K), np.full(K, self.gamma_)  # by state; prior Beta(1, gamma)
        G_state = np.full(K, 1.0 / K)
        trans_b = np.zeros((K + 1, K))
        emit_b = np.zeros((W, K))
        qcode = self._qc_code()
        em = self._emission
        learn_emission = self.emission_prior == "asymmetric" and "emission" not in self._fixed_hyper()
        if learn_emission:
            # global estimate of log q(C_wk = 0) = sum_t log(1 - q(z_t = k)), blended like the counts; it starts
            # at -N_emit (log(1 - p) ~ -p for the many small token probabilities behind the initial counts)
            logq0_emit = -N_emit
            logq0_emit_b = np.zeros((W, K))
        cluster = None
        if self.client is not None:  # each minibatch's local step on the workers (induce.distributed.hdp)
            from ..distributed import ClusterHDPMinibatch

            cluster = ClusterHDPMinibatch(self._worker_corpus(data))
            self.cluster_meter_ = cluster.meter
        m = 0
        bar = self._iterations()
        for it in bar:
            t0 = time.perf_counter()
            ll = 0.0
            learn_gamma, learn_sigma = self._learns("gamma", it), self._learns("sigma", it)
            extra = {}
            for b in rng.permutation(len(batches)):
                items = batches[b]
                prior = self.sigma_ * G_state
                args = (N_trans, N_emit, data.tokens, data.offsets, items, prior, self.sigma_, em.pseudo_counts(),
                        em.concentration, qcode, int(self.qc_samples), int(rng.integers(2**31 - 1)),
                        trans_b, emit_b, logq0_b[b], logq0_row_b[b], *memory)
                if cluster is not None:
                    ll += cluster(learn_emission, *args, *((logq0_emit_b,) if learn_emission else ()))
                else:
                    ll += (hdp_minibatch_pass_emission_q0(*args, logq0_emit_b) if learn_emission
                           else hdp_minibatch_pass(*args))
                rho = step_size(m, self.tau, self.kappa)
                scale = I / len(items)
                blend(N_trans, trans_b, rho, scale)  # thesis eq. 3.103
                blend(N_emit, emit_b, rho, scale)    # thesis eq. 3.104
                # q(C > 0) = 1 - prod_m q(C^m = 0) (thesis 5.3, eq. 5.46 over minibatches)
                qpos = hdp.q_positive(logq0_b.sum(axis=0))
                qpos_row = hdp.q_positive(logq0_row_b.sum(axis=0))
                tables = hdp.expected_tables(N_trans, qpos, prior)
                order = hdp.usage_order(N_emit.sum(axis=0))
                col = tables.sum(axis=0)[order]
                # eq. 5.40 with the gradients 5.16, 5.19, 5.23-5.24, preconditioned (see induce.infer.hdp)
                if learn_gamma:
                    self.gamma_ = hdp.scaled_gamma_step(u, v, self.gamma_, rho)
                if learn_sigma:
                    self.sigma_ = hdp.scaled_sigma_step(tables.sum(), N_trans.sum(axis=1), qpos_row, self.sigma_, rho)
                u[order], v[order] = hdp.natural_stick_step(u[order], v[order], col, self.gamma_, rho)
                G_state = hdp.prior_by_state(hdp.geometric_pi(u[order], v[order]), order, 1.0)
                if learn_emission:
                    blend(logq0_emit, logq0_emit_b, rho, scale)
                    if self._learns("emission", it):  # thesis 5.5.3 with the steps of 5.40
                        extra = {"emission_tables": em.stochastic_step(N_emit, logq0_emit, rho),
                                 "beta": em.concentration, "new_word_mass": em.new_mass}
                m += 1
            stop = self._converging(it, ll)
            if memoized and (self._merge_due(it) or self._round_left(stop)):
                G_state, moves = self._scvi_move_round(data, seeds[it], it, memory, N_trans, N_emit, u, v, batches,
                                                       logq0_b, logq0_row_b, G_state)
                extra |= moves
                stop = self._unless_moved(stop, moves)
            elif not memoized and (self._scvi_merges(it) or self._merges() and stop
                                   and not self._convergence.diverged):
                pi = G_state.copy()
                merged = instant_merges(N_trans, N_emit, pi, self.sigma_, em.pseudo_counts(), em.concentration,
                                        MERGE_MIN_USAGE, MERGE_MAX_TRIALS)
                for k, l in merged:  # the minibatches' log q(C = 0) (summed: independent) and the memory follow
                    merge_locals(logq0_b, np.zeros((0, K)), k, l)
                    logq0_row_b[:, k + 1] += logq0_row_b[:, l + 1]
                    logq0_row_b[:, l + 1] = 0.0
                    if memory[0].shape[0]:
                        merge_locals(memory[0], memory[1], k, l)
                extra["merges"] = [list(p) for p in merged]
                stop = self._unless_moved(stop, extra)
            self._hdp_record(bar, it, ll, "minibatch_log_likelihood", time.perf_counter() - t0, data,
                             N_emit.sum(axis=0), None, None, step=rho, **extra)
            if stop:
                break
        self._close(bar)
        self._end_moves()
        order = hdp.usage_order(N_emit.sum(axis=0))
        self.qc_positive_ = hdp.q_positive(logq0_b.sum(axis=0))
        self._set_sticks(u[order], v[order], order)
        self._local_labels = None
        self._finish(N_trans, N_emit, data)
        self._warn_cluster_overhead()

    def _scvi_keeps_memory(self) -> bool:
        """``scvi_memory`` with ``None`` resolved: on when the memoized split-merge rounds run (``merge_moves``,
        ``Dir(beta)``, in this process), which need the sentences' local statistics."""
        if self.scvi_memory is not None:
            return bool(self.scvi_memory)
        return self._merges() and self.client is None

    def _scvi_move_round(self, data, seed, it, memory, N_trans, N_emit, u, v, batches, logq0_b, logq0_row_b,
                         G_state) -> tuple[np.ndarray, dict]:
        """Memoized split-merge round of ``scvi`` (memoized online VI with merge and birth moves, Hughes & Sudderth
        2013; docs/experiments/hdp_defaults.md, "scvi: memoized split-merge moves").

        The sentence memory (each sentence's expected counts of its last visit) is a batch-CVI state whose
        totals are exact, with ``gamma``, ``sigma`` and the sticks of the stochastic fit; :meth:`_move_round`
        runs cvi's moves on it (trial passes, the collapsed bound of eq. 5.13).  If a move is kept, the global
        counts become the totals of the new memory (``N = sum_i c^i``, as memoized VI keeps them), the
        hyperparameters and sticks those of the trial passes, and one cvi sweep over the minibatches, one at a
        time, gives each minibatch's ``q(C^m = 0)`` for the new states.  ``N_trans``, ``N_emit``, ``u``, ``v``
        (by state), the memory and the minibatches' ``log q(C^m = 0)`` are changed in place; returns
        ``G[pi]`` by state and the trace entries.
        """
        st = self._cvi_state(data, memory)
        passes.totals_from_local(data.tokens, data.offsets, st.sent_trans, st.gamma, data.W, st.trans, st.emit)
        glob = st.glob
        glob.gamma, glob.sigma = self.gamma_, self.sigma_
        glob.order = hdp.usage_order(N_emit.sum(axis=0))
        glob.u, glob.v = u[glob.order], v[glob.order]
        glob.G_sorted = hdp.geometric_pi(glob.u, glob.v)
        new, extra = self._move_round(st, data, seed, it, joint=True)
        if new is st:
            return G_state, extra
        memory[0][:], memory[1][:] = new.sent_trans, new.gamma
        N_trans[:], N_emit[:] = new.trans, new.emit
        glob = new.glob
        self.gamma_, self.sigma_ = glob.gamma, glob.sigma
        u[glob.order], v[glob.order] = glob.u, glob.v
        em = new.emission
        for b, items in enumerate(batches):
            hdp_cvi_pass(N_trans, N_emit, memory[0], memory[1], data.tokens, data.offsets, items, glob.prior(),
                         glob.sigma, em.pseudo_counts(), em.concentration, self._qc_code(), int(self.qc_samples),
                         int(seed) + b, logq0_b[b], logq0_row_b[b], new.sampled, new.entropy)
        return hdp.prior_by_state(glob.G_sorted, glob.order, 1.0), extra

    def _scvi_merges(self, it: int) -> bool:
        """``scvi`` with ``merge_moves``: instant merges (:func:`induce.infer.hdp_merge.instant_merges`) after
        every ``min(10, n_iter // 10)`` epochs of the second half of the cap but the last (earlier, states that
        differ only in their context, as the Beal grammar's, can still look alike and be merged), and once the
        stopping rule holds (:meth:`_fit_scvi`)."""
        cap = self._max_iter()
        every = max(1, min(MERGE_EVERY // 10, cap // 10))
        return self._merges() and it % every == 0 and cap <= 2 * it < 2 * cap

    def _set_sticks(self, u_sorted, v_sorted, order):
        self.stick_u_ = np.asarray(u_sorted, dtype=np.float64)
        self.stick_v_ = np.asarray(v_sorted, dtype=np.float64)
        self.stick_order_ = np.asarray(order, dtype=np.int64)
        self.state_prior_ = hdp.prior_by_state(hdp.geometric_pi(self.stick_u_, self.stick_v_), self.stick_order_,
                                               self.sigma_)

    def _finish(self, trans, emit, data):
        """Store counts and point parameters; labels from the local posteriors or by decoding."""
        em = self.__dict__.pop("_emission")
        self.emission_concentration_ = em.concentration
        self.emission_base_ = em.tau
        self.emission_new_mass_ = em.new_mass
        self.transition_counts_ = np.asarray(trans, dtype=np.float64)
        self.emission_counts_ = np.asarray(emit, dtype=np.float64)
        self._set_parameters()
        self._end_iterations(self._convergence, f"hdp-hmm {self.infer}", self._last_iteration, self._max_iter())
        self.hyper_burn_in_ = self._held_passes()
        if self._burn_in() is None and self._learn_from is None:
            self._warn(f"hdp-hmm {self.infer}: the symmetric start never broke (no pass's objective rose "
                       f"{SYMMETRY_BREAK_GAIN:.0%} above the first's), so the hyperparameters were held and no "
                       "split-merge round ran; try another --seed or more --iterations")
        self.__dict__.pop("_learn_from")
        self.__dict__.pop("_first_objective", None)
        self.effective_states_ = hdp.effective_states(self.emission_counts_.sum(axis=0), self.coverage)
        local = self.__dict__.pop("_local_labels", None)
        if local is None or self.decode == "viterbi":
            self.labels_ = self._decode(data.tokens, data.offsets)
        else:
            self.labels_ = local
        self._check_collapse(self.labels_, self.n_states_, count_used=False)

    def _set_parameters(self):
        """Posterior means: ``(C_jk + sigma G[pi_k]) / (C_j. + sigma)`` and ``(C_kw + b tau_w) / (C_.k + b)``.

        ``b tau_w = beta`` and ``b = W beta`` for the symmetric prior; the last
        emission row (unseen words) gets ``b tau_unseen / (C_.k + b)``.
        """
        trans, emit = self.transition_counts_, self.emission_counts_
        A = (trans + self.state_prior_[None, :]) / (trans.sum(axis=1, keepdims=True) + self.sigma_)
        pseudo = self.emission_concentration_ * self.emission_base_
        col = emit.sum(axis=0) + self.emission_concentration_
        B = (emit + pseudo[:-1, None]) / col
        self.transitions_ = np.ascontiguousarray(A)
        self.emissions_ = np.ascontiguousarray(np.vstack([B, (pseudo[-1] / col)[None, :]]))

    def _check_fitted(self):
        if not hasattr(self, "transitions_"):
            raise ConfigError("this HDPHMMTagger is not fitted yet; call fit() or load() first")

    # ------------------------------------------------------------- save/load
    _PARAMS = ("truncation", "infer", "n_iter", "tol", "gamma", "sigma", "beta", "emission_prior", "emission_concentration",
               "new_word_mass",
               "fix_hyper", "hyper_burn_in", "qc", "qc_samples", "table_estimate", "table_samples",
               "batch_size", "tau", "kappa", "coverage", "n_init", "merge_moves",
               "scvi_memory", "decode", "order", "random_state")
    _ARRAYS = ("transitions_", "emissions_", "transition_counts_", "emission_counts_", "stick_u_", "stick_v_",
               "stick_order_", "state_prior_", "qc_positive_", "emission_base_")
    _FITTED = ("gamma_", "sigma_", "effective_states_", "emission_concentration_", "emission_new_mass_", "n_iter_",
               "converged_")

    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """Arrays of a saved model: ``K`` states (as many as the transitions have), ``W`` words.

        Transitions ``(K+1, K)`` keep the stick remainder (rows sum below 1),
        emissions ``(W+1, K)`` end with the unseen-word row; ``stick_order``
        is a permutation of the states; ``emission_base`` (``tau``, W+1
        entries) is missing in files saved before the asymmetric prior.
        ``svi`` (a point estimate of the top-level weights) and ``beam`` (sampled
        weights) keep no sticks, and ``svi`` no ``q(C > 0)``: those arrays are empty.
        """
        infer = header["params"].get("infer")
        sticks = ("K",) if infer in ("cvi", "scvi") else (0,)
        return modelfile.Schema((
            Field("transitions", "f8", ("K+1", "K"), nonnegative=True),
            Field("emissions", "f8", ("W+1", "K"), nonnegative=True),
            Field("transition_counts", "f8", ("K+1", "K"), nonnegative=True),
            Field("emission_counts", "f8", ("W", "K"), nonnegative=True),
            Field("stick_u", "f8", sticks, nonnegative=True),
            Field("stick_v", "f8", sticks, nonnegative=True),
            Field("stick_order", "i8", ("K",), bound="K"),
            Field("state_prior", "f8", ("K",), nonnegative=True),
            Field("qc_positive", "f8", (0 if infer == "svi" else "K+1", "K"), nonnegative=True),
            Field("emission_base", "f8", ("W+1",), nonnegative=True, optional=True),
        ), {"W": len(header["vocab"]["items"])})

    def save(self, path: str | Path) -> None:
        """Write the model as one ``.npz`` (arrays + a JSON header), atomically, without pickle."""
        self._check_fitted()
        meta = {
            "params": {k: getattr(self, k) for k in self._PARAMS},
            "fitted": {k: getattr(self, k) for k in self._FITTED},
            "vocab": self.vocab_.to_json(),
            "trace": json.loads(json.dumps(self.trace_, default=float)),
            "init_objectives": [float(x) for x in getattr(self, "init_objectives_", [])],
        }
        modelfile.save(path, "HDPHMMTagger", meta, {k.rstrip("_"): getattr(self, k) for k in self._ARRAYS})

    @classmethod
    def load(cls, path: str | Path) -> "HDPHMMTagger":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        meta, arrays = modelfile.load(path, "HDPHMMTagger", cls._schema)
        with modelfile.reading(path, "header"):
            # files saved before new_word_mass existed used the fixed unit mass of Teh et al. (2008), and
            # files saved before emission_concentration existed started Dir(beta tau) at W beta
            asymmetric = meta["params"].get("emission_prior") == "asymmetric"
            legacy = {"new_word_mass": 1.0, "emission_concentration": "symmetric" if asymmetric else None}
            model = cls(**(legacy | meta["params"]))
            model.emission_new_mass_ = 1.0
            for k, val in meta["fitted"].items():
                setattr(model, k, val)
            if "emission_base" not in arrays:  # saved before the asymmetric prior existed: symmetric Dir(beta)
                W = arrays["emission_counts"].shape[0]
                arrays["emission_base"] = np.full(W + 1, 1.0 / W)
                model.emission_concentration_ = model.beta * W
            for k in cls._ARRAYS:
                setattr(model, k, arrays[k.rstrip("_")])
            model.init_objectives_ = meta.get("init_objectives", [])
            model.vocab_ = Vocabulary.from_json(meta["vocab"])
            model.trace_ = meta["trace"]
        model.tag_vocab_ = None
        model.allowed_ = _NO_MASK
        model.n_states_ = model.transitions_.shape[1]
        if "n_iter_" not in meta["fitted"]:  # saved before the stopping rule: all n_iter passes ran
            model.n_iter_, model.converged_ = len(model.trace_), False
        return model

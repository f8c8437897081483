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

from typing import Callable

import numpy as np

from ..corpus.corpus import Corpus, as_corpus
from ..corpus.vocab import Vocabulary
from ..base import SCHEDULE, AnyOf, Boolean, Integer, Options, Real
from ..errors import ConfigError
from ..resources import check_memory, corpus_source, hmm_bytes, sentence_label
from ..algorithms import HDP_ALGORITHMS, Fitted, HDPCore
from ..algorithms.hdp_cvi import OBJECTIVE
from ..infer import hdp
from ..kernels.hdp_qc import QC_METHODS
from ..names import HDP_ALGORITHMS as HDP_INFER, TABLE_ESTIMATES
from .hdp_file import HDPHMMFile
from .hdp_schedule import (ASYMMETRIC_BURN_IN, HYPERPARAMETERS, MAX_ITER,  # noqa: F401
                           SYMMETRY_BREAK_GAIN, HDPSchedule)
from .hmm import _NO_MASK, ONE_SENTENCE, HMMTagger, _Data
from .hmm_settings import check_y

DEFAULT_BETA = 0.01  # the symmetric emission prior's default (see ``beta``)
DEFAULT_EMISSION_CONCENTRATION = 10.0  # beta's start for Dir(beta tau) (docs/experiments/hdp.md)


class HDPHMMTagger(HDPHMMFile, HDPSchedule, HMMTagger):
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
    merge_moves : ``cvi`` with ``Dir(beta)``: split-merge moves (:mod:`induce.algorithms.hdp_moves`) after
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
        ``min(10, n_iter/10)`` epochs of the second half (:func:`induce.algorithms.hdp_moves.instant_merges`:
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
        "truncation": Integer(1), "infer": Options(*HDP_INFER), "n_iter": AnyOf(Options(None), Integer(1)),
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
        self._keep_arguments(locals())

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
    def fit(self, corpus, y=None, tag_dict=None) -> "HDPHMMTagger":
        """Learn the HDP-HMM from ``corpus`` (anything :func:`~induce.corpus.corpus.as_corpus` takes); returns
        ``self`` (``y`` is ignored, scikit-learn's convention; tag dictionaries are not supported)."""
        check_y(y)
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
        learned = self.new_word_mass == "learned"
        # gamma_e starts at 1 (the unit mass of Teh et al. 2008's top-level update) when learned
        em = hdp.EmissionPrior(data.W, self._starting_emission_concentration(data.W),
                               1.0 if learned else float(self.new_word_mass), learned)
        core = HDPCore(K, self.gamma_, self.sigma_, float(self.beta), self._fixed_hyper(), em)
        loop = self._iterations(data, gold, seeds)
        fitted = HDP_ALGORITHMS.create(self.infer).fit(core, data, loop, self._hdp_settings())
        self._store_fitted(fitted, data, loop, em)
        self.init_objectives_ = [self.trace_[-1][OBJECTIVE]] if self.infer == "cvi" and self.trace_ else []
        return self

    def _starting_emission_concentration(self, W: int) -> float:
        """beta's start for :class:`induce.infer.hdp.EmissionPrior` (``W beta``: ``Dir(beta)``, the symmetric start)."""
        if self.emission_prior != "asymmetric" or self.emission_concentration == "symmetric":
            return float(self.beta) * W
        return float(DEFAULT_EMISSION_CONCENTRATION if self.emission_concentration is None
                     else self.emission_concentration)

    def _finish(self, fitted: Fitted, data):
        """Store the counts, the point parameters, the passes run, and the labels (the algorithm's, or decoded)."""
        self.transition_counts_ = np.asarray(fitted.trans, dtype=np.float64)
        self.emission_counts_ = np.asarray(fitted.emit, dtype=np.float64)
        self._set_parameters()
        self._end_iterations(fitted.monitor, f"hdp-hmm {self.infer}", fitted.n_iter, fitted.cap)
        self.effective_states_ = hdp.effective_states(self.emission_counts_.sum(axis=0), self.coverage)
        if fitted.labels is None or self.decode == "viterbi":
            self.labels_ = self._decode(data.tokens, data.offsets)
        else:
            self.labels_ = fitted.labels

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

"""Bayesian HMM part-of-speech tagger with EM, VI, CVI (algorithms 1, 2, 3), collapsed Gibbs and stochastic VI/CVI.

Model (thesis section 3.1): ``K`` hidden states, transition rows (row 0 = the
start state) ``theta_j ~ Dir(alpha)``, emissions ``phi_k ~ Dir(beta)`` over the
vocabulary.  Inference algorithms (``infer=``):

* ``em``: Baum-Welch, MAP under the priors (default; ``map_estimate=False``: maximum likelihood);
* ``vi``: mean-field VB with the inverted expected natural parameters (eq. 3.21-3.22);
* ``cvi1``: CVI algorithm 1, fully factorised ``q(z_t)`` (eq. 3.33, 3.37-3.39);
* ``cvi2``: CVI algorithm 2, one ``q(z^i)`` per sentence (eq. 3.44-3.50);
* ``cgs``: collapsed Gibbs sampling (eq. 3.25) with simulated annealing;
* ``cvi3``: CVI algorithm 3: the corpus as one long sequence cut into
  subsequences of ``subseq_length``, with guarded boundaries (eq. 3.56-3.82);
* ``svi``, ``scvi``: stochastic VI / CVI over minibatches of sentences (eq. 3.98-3.104);
* ``scvi3``, ``scvi3-vanilla``, ``svi-buffered``, ``svi-vanilla``: stochastic
  single-sequence algorithms (paper 001; thesis 3.8.4), see
  :mod:`induce.infer.stochastic_hmm`.

All deterministic algorithms start from the same random local posteriors given
``random_state`` (thesis footnote 5).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from numba import njit, prange
from scipy import sparse


from .. import modelfile
from ..base import SCHEDULE, AnyOf, Boolean, InduceEstimator, Integer, Items, Options, Real, Seed
from ..infer.convergence import ConvergenceMonitor
from ..corpus.corpus import Corpus, as_corpus, gather_sentences
from ..corpus.vocab import Vocabulary
from ..errors import ConfigError
from ..resources import check_memory, corpus_source, hmm_bytes, sentence_label
from ..infer import hmm_passes as passes
from ..infer.hmm_batched import Layout, cvi2_block_pass, lockstep_pass
from ..infer import stochastic_hmm as stochastic
from ..infer.cvi3 import cvi3_pass, cvi3_totals, init_from_parameters, subsequence_offsets
from ..infer.schedules import exponential_init, minibatches
from ..infer.estimators import cvi_params, dirichlet_kl, em_params, map_params, vi_params
from ..infer.hyper import fit_row_dirichlets, fit_symmetric_dirichlet, fit_symmetric_dirichlet_vb
from ..kernels.hmm import forward_backward, gather_emissions, viterbi
from ..modelfile import Field
from ..names import HMM_ALGORITHMS, HMM_DECODERS
from .tag_dict import TagDictionary

#: cvi2 (and HDP cvi) update q(z^i) against the counts of the *other* sentences (eq. 3.44): with one sentence
#: those are empty, q stays at the symmetric prior and every token gets state 0.
ONE_SENTENCE = ("--infer {infer} updates each sentence against the counts of the other sentences (thesis eq. 3.44); "
                "the input has one sentence, so it cannot learn anything: split the text into sentences, or use "
                "{alternatives}")
ALGORITHMS = HMM_ALGORITHMS
#: algorithms with a minibatch schedule (no per-sentence statistics kept)
STOCHASTIC_ALGORITHMS = stochastic.STOCHASTIC + stochastic.SINGLE_SEQUENCE
DECODERS = HMM_DECODERS
#: algorithms whose E-steps run on a dask cluster with ``client=`` (:mod:`induce.distributed`)
CLUSTER_ALGORITHMS = ("em", "vi", "cvi2") + stochastic.STOCHASTIC
_NO_MASK = np.zeros((0, 0), dtype=np.uint8)
#: where a learned Dirichlet concentration starts (and its value when it is neither given nor learned)
#: The priors (alpha, beta) an algorithm uses when none is given: the best point by cross-validated M-1 of
#: the thesis' 6 x 6 grid on held-out WSJ (benchmarks/results/hmm_tune_wsjdev_*.json; docs/experiments/
#: tagging.md) for the batch algorithms (cgs and cvi3 share cvi2's model and take its point; em is MAP over the
#: grid shifted by 1, i.e. pseudo-counts alpha - 1, beta - 1, its point (2, 1.003) the best of that grid on wsjdev
#: at 3 seeds and 10 seeds there (37.8 M-1, 4.2 above the one-seed grid's (1.03, 1.03); oracle_wsjdev.json), the
#: oracle on wsj1k and ptb-sample too).  The minibatch algorithms, under their default epoch cap and held-out
#: stop: the same grid on wsjdev at 3 seeds (benchmarks/results/stoch_dev_wsjdev.json, stoch_dev_seq_wsjdev.json;
#: docs/experiments/defaults.md, "The minibatch algorithms") puts svi and svi-buffered at (1, 0.003), scvi at
#: (1, 0.01) by 0.2 M-1 over 0.003, which 10 seeds reverse (+0.7), scvi3 at (0.1, 0.01) by 0.1 over (1, 0.003):
#: the cvi-based ones take cvi2's point as stochastic forms of its model, and the vanilla variants their
#: estimator's.  Every one is 10-18 M-1 above alpha = beta = 0.1, the setting of the thesis' stochastic
#: experiments and induce's default for them before 2026-11-25.  Learned priors start here.
DEFAULT_PRIORS = {"em": (2.0, 1.003), "vi": (1.0, 0.01), "cvi1": (0.03, 0.01), "cvi2": (1.0, 0.003),
                  "cgs": (1.0, 0.003), "cvi3": (1.0, 0.003), "svi": (1.0, 0.003), "scvi": (1.0, 0.003),
                  "scvi3": (1.0, 0.003), "scvi3-vanilla": (1.0, 0.003), "svi-buffered": (1.0, 0.003),
                  "svi-vanilla": (1.0, 0.003)}
#: The pass cap when ``n_iter`` is ``None`` (the default): 500, and 2,000 for em, whose MAP point converges slowly:
#: on EWT in 676-1,111 passes, 1.1 M-1 above the same runs stopped at 500 (4 seeds; docs/experiments/defaults.md,
#: "em's cap"); the other batch algorithms converge within 500 passes on ptb-sample, EWT and Brown-12.
MAX_ITER = 500
DEFAULT_MAX_ITER = {"em": 2000}
#: The minibatch algorithms (``n_epochs=None``): at most MAX_EPOCHS passes over the data, stopped once the held-out
#: log-likelihood, computed at the end of each epoch on a seeded HELDOUT_FRACTION of the sentences (at most
#: HELDOUT_MAX_TOKENS tokens; the single-sequence algorithms: the end of the sequence), has gained no more than
#: STOCHASTIC_TOL of its best for STOCHASTIC_PATIENCE epochs (docs/experiments/defaults.md, "The minibatch
#: algorithms").
MAX_EPOCHS = 50
HELDOUT_FRACTION = 0.05
HELDOUT_MAX_TOKENS = 100_000
STOCHASTIC_TOL = 1e-4
STOCHASTIC_PATIENCE = 3
#: On a cluster the minibatch size is planned to keep 500 minibatches in the run (``planned_batch_size``); a run
#: that stops on held-out data is planned for at most PLANNED_EPOCHS epochs, about the fewest the default runs
#: took before the stop (9-14 on wsjdev, wsj1k, ptb-sample and EWT), so that a stopped run still has its 500.
PLANNED_EPOCHS = 10
#: tol=None: the batch algorithms' relative tolerance (against the progress since the first pass)
TOL = 1e-5
#: What ``learn_hyper=None`` (the default) learns per algorithm: ``(mode, priors held at DEFAULT_PRIORS)``.
#: cvi2 learns an emission concentration per state, capped at the pooled estimate, with alpha held at 1 (the
#: uniform prior on each transition row): within 1 M-1 point of the grid's best point on wsj1k (+1.3, 10
#: seeds), ptb-sample (-0.4), all of EWT (+2.2 against its oracle grid; EWT train -1.1 against the old default
#: point), Brown-12 (+1.0 against its oracle grid, -0.6 against the old default point),
#: above it on 8 UD treebanks (+1.2 to +3.0, 3 seeds),
#: where one symmetric learned beta lost 1-10 points and learning alpha too costs 1-2.5
#: (docs/experiments/defaults.md, "Per-state emission concentrations").  svi learns alpha and beta at every
#: epoch's end by the ELBO's own update, from the grid's point: on the dev set wsjdev +1.3 M-1 / +1.2 V-M over
#: the priors held (10 seeds), wsj1k +1.5, ptb-sample +0.1 (10 seeds), EWT 0.0, Brown-12 -0.1 (3 seeds)
#: (docs/experiments/defaults.md, "svi learns its priors by default").  The other algorithms hold the grid's
#: priors: empirical Bayes of a symmetric beta merges states on small corpora, and scvi's evidence of its
#: expected counts collapses the 45-tag sets.
DEFAULT_LEARNING = {"cvi2": ("per-state", ("alpha",)), "svi": (True, ())}
#: the trace keys that hold an algorithm's per-iteration objective (the stopping rule watches it)
OBJECTIVES = ("log_likelihood", "elbo", "log_posterior", "predictive_log_likelihood", "mean_abs_change",
              "changed_states")
#: algorithms that stop on convergence; cgs follows its annealing schedule for all n_iter sweeps, and cvi1
#: (which traces the mean change of q rather than an objective) runs all n_iter passes
STOPPABLE = ("em", "vi", "cvi2", "cvi3")
# sentences per lockstep block of the EM / VI E-step (small blocks keep a block's
# messages in cache; 64-256 measured equally fast on CoNLL-2000, K=45)
LOCKSTEP_BLOCK = 128


def default_priors(infer: str) -> tuple[float, float]:
    """``(alpha, beta)`` used by ``infer`` when the user gives none (see :data:`DEFAULT_PRIORS`)."""
    return DEFAULT_PRIORS[infer]


def _log_support(P: np.ndarray) -> float:
    """``sum log P`` over the positive entries of ``P`` (the support of a clipped MAP estimate)."""
    return float(np.log(P[P > 0]).sum())


@dataclass
class _Data:
    tokens: np.ndarray
    offsets: np.ndarray
    W: int
    source: tuple[str, str, bool] | None = None  # the file it was read from (Corpus.source)


class HMMTagger(InduceEstimator):
    """Unsupervised (or tag-dictionary constrained) HMM tagger, scikit-learn style.

    Parameters
    ----------
    n_states : number of hidden states ``K`` (ignored with a tag dictionary,
        whose tags are the states).
    infer : one of :data:`ALGORITHMS`.
    n_iter : maximum passes over the corpus (batch algorithms); em, vi, cvi2
        and cvi3 stop earlier on convergence (``tol``); cgs and cvi1 run all.
        ``None`` (default): 500, for em 2,000 (:data:`DEFAULT_MAX_ITER`).
    tol : batch algorithms: a pass whose objective changes by less than ``tol``
        times the progress since the first pass, three passes running, ends
        training; minibatch algorithms: ``STOCHASTIC_PATIENCE`` epochs whose
        held-out log-likelihood gains no more than ``tol`` of its best end it
        (:class:`induce.infer.convergence.ConvergenceMonitor`); 0 runs every pass
        or epoch of the cap.  ``None`` (default): ``1e-5`` (:data:`TOL`), for the
        minibatch algorithms ``1e-4`` (:data:`STOCHASTIC_TOL`).
    alpha, beta : symmetric Dirichlet priors on transitions and emissions;
        ``None`` (default): the algorithm's evidence-chosen value
        (:data:`DEFAULT_PRIORS`), or learned with ``learn_hyper``.
    learn_hyper : learn the priors left at ``None`` by empirical Bayes
        (:mod:`induce.infer.hyper`, on the decoded assignment) after
        ``hyper_burn_in`` passes; the learned values are ``alpha_``, ``beta_``
        (batch algorithms; docs/experiments/defaults.md).  The minibatch
        algorithms: at every epoch's end from the global counts (svi and the other
        mean-field ones: the ELBO's update; scvi, scvi3: the evidence of the
        expected counts; :meth:`_stochastic_hyper`), traced in the epochs' records.  ``"per-state"``
        (cvi2): as ``True``, with emission row ``k`` ~ ``Dir(beta_k)``, ``beta_``
        the (K,) array of per-state concentrations.  ``None`` (default): the
        algorithm's choice (:data:`DEFAULT_LEARNING`: cvi2 learns ``beta_k``
        per state with alpha held, svi both priors; the others hold their
        priors); ``False`` holds every prior.
    decode : ``posterior`` (max-marginal, default as in thesis 3.8.1) or ``viterbi``.
    map_estimate : with ``infer="em"``, MAP estimates under the priors (default; priors of at least 1, i.e.
        expected counts plus ``alpha - 1``, ``beta - 1``); ``False``: maximum likelihood (priors unused).
    temperature : ``(start, end)`` of the geometric annealing schedule of ``cgs``
        (Goldwater & Griffiths 2007: 2.0 down to 0.08).
    cgs_keep : with ``cgs``, decode by the per-token mode over the last
        ``cgs_keep`` samples (0: the last sample).
    order : ``sequential`` (corpus order) or ``shuffle`` (a seeded random order
        each pass) for the incremental algorithms.
    cvi2_block : with ``cvi2``, 0 (default) for the exact sequential algorithm,
        or ``B`` > 0 to update ``B`` consecutive sentences in parallel against
        the counts frozen at the start of their block (minus their own);
        ``B = 1`` is again the exact algorithm.
    random_state : seed of every random choice.
    verbose : show a tqdm progress bar.
    eval_column : gold tag column to score against every ``eval_every`` iterations.
    callback : called with each iteration's trace record.
    batch_size : stochastic algorithms: sentences (``svi``, ``scvi``) or
        subsequences (single-sequence algorithms) per minibatch ``M``.  ``None``
        (default): 100 in one process; on a cluster (``client``) the largest
        size that keeps 500 minibatches in the run (of at most 10 epochs, :data:`PLANNED_EPOCHS`), at least 100
        (:func:`induce.distributed.cluster.planned_batch_size`: the step
        overhead shrinks as minibatches grow).  The size used is ``batch_size_``.
    tau, kappa : step size ``rho_m = (tau + m + 1)^-kappa`` for minibatch ``m = 0, 1, ...``;
        the default ``tau = 1`` is the thesis' ``(1 + m)^-kappa`` with ``m`` from 1
        (so the first step keeps half the exponential initialisation at kappa = 1).
    n_epochs : stochastic algorithms: at most this many passes over the data,
        fewer when the held-out log-likelihood stops gaining (``tol``); ``None``
        (default): 50 (:data:`MAX_EPOCHS`).  The epochs run are ``n_iter_``.
    heldout_fraction, heldout_max_tokens : stochastic algorithms fitted without
        a ``heldout`` set: the seeded share of the sentences (at most
        ``heldout_max_tokens`` tokens) left out of training to stop on (the
        single-sequence algorithms: the end of the sequence); they are still
        decoded (``labels_``).  0: none, and every epoch of ``n_epochs`` runs.
        The size taken is ``heldout_tokens_``.
    max_batches : stop after this many minibatches (``None``: all epochs).
    subseq_length : ``cvi3`` and the single-sequence algorithms: subsequence length ``T``.
    buffer : ``svi-buffered``: observations padded on each side (Foti et al. 2014).
    heldout_every : stochastic algorithms: held-out log-likelihood every N minibatches (and each epoch's end).
    checkpoint, checkpoint_every, checkpoint_minutes, resume : stochastic
        algorithms: checkpoint file, written every N minibatches / M minutes,
        and whether to resume from it (see :func:`induce.infer.stochastic_hmm.run`).
    client : a ``dask.distributed.Client``: ``em``, ``vi``, ``svi``, ``scvi`` and
        ``cvi2`` (block-parallel, one block per worker: :mod:`induce.distributed.cvi2`)
        run their E-steps on its workers (:mod:`induce.distributed`); ``None``
        (default): in this process, and dask is not imported.  The workers read
        their shards of the corpus themselves when ``fit`` is given a path (or a
        corpus read from one, ``Corpus.source``) or with :meth:`fit_stream`; data
        given in memory (token lists) can only be shipped to them, once.

    Fitted attributes: ``transitions_`` (K+1, K), ``emissions_`` (W+1, K) by word
    (last row: unseen words), ``vocab_``, ``labels_`` (training-corpus states),
    ``trace_`` (per-iteration records), ``n_iter_``, ``converged_``,
    ``alpha_`` / ``beta_`` (the priors used, learned or not), ``learned_hyper_``,
    ``warnings_``.
    """

    _parameter_constraints = {
        "n_states": Integer(1), "infer": Options(*ALGORITHMS), "n_iter": AnyOf(Options(None), Integer(1)),
        "tol": AnyOf(Options(None), Real(0.0)),
        "alpha": AnyOf(Options(None), Real(0.0)), "beta": AnyOf(Options(None), Real(0.0)),
        "learn_hyper": AnyOf(Boolean(), Options("per-state", None)), "hyper_burn_in": Integer(0), "decode": Options(*DECODERS),
        "map_estimate": Boolean(), "temperature": Items(Real(0.0, min_open=True), 2), "cgs_keep": Integer(0),
        "order": Options("sequential", "shuffle"), "cvi2_block": Integer(0), "random_state": Seed(),
        "verbose": Boolean(), "eval_every": Integer(1), "n_epochs": AnyOf(Options(None), Integer(1)),
        "heldout_fraction": Real(0.0, 1.0, max_open=True), "heldout_max_tokens": Integer(1),
        "max_batches": AnyOf(Options(None), Integer(0)), "subseq_length": Integer(1), "buffer": Integer(0),
        "heldout_every": Integer(0), "checkpoint_every": Integer(0), "checkpoint_minutes": Real(0.0),
        "resume": Boolean(), **SCHEDULE,
    }

    def __init__(
        self,
        n_states: int = 45,
        infer: str = "cvi2",
        n_iter: int | None = None,
        tol: float | None = None,
        alpha: float | None = None,
        beta: float | None = None,
        learn_hyper: bool | str | None = None,
        hyper_burn_in: int = 50,
        decode: str = "posterior",
        map_estimate: bool = True,
        temperature: tuple[float, float] = (2.0, 0.08),
        cgs_keep: int = 0,
        order: str = "sequential",
        cvi2_block: int = 0,
        random_state: int = 0,
        verbose: bool = False,
        eval_column: str | None = None,
        eval_every: int = 1,
        callback: Callable[[dict], None] | None = None,
        batch_size: int | None = None,
        tau: float = 1.0,
        kappa: float = 0.5,
        n_epochs: int | None = None,
        heldout_fraction: float = HELDOUT_FRACTION,
        heldout_max_tokens: int = HELDOUT_MAX_TOKENS,
        max_batches: int | None = None,
        subseq_length: int = 10,
        buffer: int = 10,
        heldout_every: int = 0,
        checkpoint: str | None = None,
        checkpoint_every: int = 0,
        checkpoint_minutes: float = 0.0,
        resume: bool = False,
        client=None,
    ):
        self.n_states = n_states
        self.infer = infer
        self.n_iter = n_iter
        self.tol = tol
        self.alpha = alpha
        self.beta = beta
        self.learn_hyper = learn_hyper
        self.hyper_burn_in = hyper_burn_in
        self.decode = decode
        self.map_estimate = map_estimate
        self.temperature = temperature
        self.cgs_keep = cgs_keep
        self.order = order
        self.cvi2_block = cvi2_block
        self.random_state = random_state
        self.verbose = verbose
        self.eval_column = eval_column
        self.eval_every = eval_every
        self.callback = callback
        self.batch_size = batch_size
        self.tau = tau
        self.kappa = kappa
        self.n_epochs = n_epochs
        self.heldout_fraction = heldout_fraction
        self.heldout_max_tokens = heldout_max_tokens
        self.max_batches = max_batches
        self.subseq_length = subseq_length
        self.buffer = buffer
        self.heldout_every = heldout_every
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.checkpoint_minutes = checkpoint_minutes
        self.resume = resume
        self.client = client

    # ------------------------------------------------------------------ checks
    def _validate_shared(self, corpus: Corpus) -> None:
        """Checks common to every HMM-family tagger: a non-empty corpus, the gold column."""
        if corpus.n_tokens == 0:
            raise ConfigError("cannot fit a tagger on an empty corpus")
        if self.eval_column is not None and self.eval_column not in corpus.tags:
            raise ConfigError(
                f"corpus has no gold column {self.eval_column!r}; it has {sorted(corpus.tags) or 'no gold tags'}"
            )

    def _validate(self, corpus: Corpus) -> None:
        self._validate_shared(corpus)
        self._check_priors(allow_zero=self.infer == "em" and not self.map_estimate)
        if self.infer == "cvi2" and corpus.n_sentences < 2:
            raise ConfigError(ONE_SENTENCE.format(infer="cvi2", alternatives="cvi1, vi, em or cvi3 (one long sequence)"))
        check_memory(hmm_bytes(self.n_states, len(corpus.vocab), corpus.lengths), f"{self.n_states} HMM states",
                     sentence_label(corpus.lengths, corpus_source(corpus)), "use fewer states (--states)")
        if self.client is not None and self.infer not in CLUSTER_ALGORITHMS:
            raise ConfigError(f"{self.infer} does not run on a cluster yet; with a client use one of "
                              f"{', '.join(CLUSTER_ALGORITHMS)}")

    # --------------------------------------------------------------------- fit
    def fit(self, corpus: Corpus, tag_dict: TagDictionary | None = None,
            heldout: Corpus | None = None) -> "HMMTagger":
        """Learn the HMM from ``corpus`` (its ``tokens``/``offsets``); returns ``self``.

        ``heldout`` (stochastic algorithms): sentences whose per-token predictive
        log-likelihood (thesis eq. 3.108) is traced every ``heldout_every``
        minibatches; for the single-sequence algorithms they are concatenated
        into one held-out sequence.
        """
        corpus = as_corpus(corpus)
        self._validate(corpus)
        if tag_dict is not None and self.infer in ("cvi3",) + stochastic.SINGLE_SEQUENCE:
            raise ConfigError(f"{self.infer} treats the corpus as one long sequence; it takes no tag dictionary")
        if tag_dict is not None and tag_dict.words is not corpus.vocab and len(tag_dict.words) != len(corpus.vocab):
            raise ConfigError("the tag dictionary was built for a different vocabulary than the corpus")
        K = len(tag_dict.tags) if tag_dict is not None else int(self.n_states)
        self.n_states_ = K
        self.tag_vocab_ = tag_dict.tags if tag_dict is not None else None
        # the model's vocabulary is the word types that occur in this corpus: a
        # subset sharing a larger vocabulary must not inflate W (and W * beta)
        freq = np.bincount(corpus.tokens, minlength=len(corpus.vocab))
        used = np.flatnonzero(freq)
        remap = np.full(len(corpus.vocab), -1, dtype=np.int32)
        remap[used] = np.arange(len(used), dtype=np.int32)
        self.vocab_ = Vocabulary.from_json({"items": [corpus.vocab.itos[i] for i in used],
                                            "counts": freq[used].tolist(), "unk": corpus.vocab.unk})
        self.allowed_ = np.ascontiguousarray(tag_dict.allowed[used]) if tag_dict is not None else _NO_MASK
        data = _Data(remap[corpus.tokens], np.ascontiguousarray(corpus.offsets, dtype=np.int64), len(used),
                     corpus.source)
        self._start_run()
        self._init_hyper()
        gold = corpus.tags[self.eval_column] if self.eval_column else None
        if self.infer in STOCHASTIC_ALGORITHMS:
            self._fit_stochastic(data, gold, self._encode_heldout(heldout, corpus, remap))
            return self
        rng = np.random.default_rng(self.random_state)
        seeds = rng.integers(0, 2**31 - 1, size=self._max_iter() + 1)
        if self.infer == "cvi3":
            self._fit_cvi3(data, gold, seeds)
            return self

        # shared starting point: random local posteriors (thesis footnote 5); cvi2 on a cluster draws it on the workers
        sent_trans = gamma = None
        if self.infer != "cvi2" or self.client is None:
            sent_trans, gamma = passes.random_start(data.tokens, data.offsets, K, seeds[0], self.allowed_,
                                                    np.float32 if self.infer == "cvi2" else np.float64)
        if self.infer in ("em", "vi"):
            self._fit_batch(data, sent_trans, gamma, gold)
        else:
            getattr(self, f"_fit_{self.infer}")(data, sent_trans, gamma, gold, seeds)
        return self

    def _max_iter(self) -> int:
        """``n_iter``, or where it is ``None`` the algorithm's default cap (:data:`DEFAULT_MAX_ITER`)."""
        return int(self.n_iter) if self.n_iter is not None else DEFAULT_MAX_ITER.get(self.infer, MAX_ITER)

    def _planned_epochs(self) -> int:
        """The epochs a cluster run plans its minibatch size for: at most :data:`PLANNED_EPOCHS` of the cap, since
        the stopping rule ends runs earlier."""
        return min(self._max_epochs(), PLANNED_EPOCHS)

    def _max_epochs(self) -> int:
        """``n_epochs``, or where it is ``None`` the minibatch algorithms' default cap (:data:`MAX_EPOCHS`)."""
        return int(self.n_epochs) if self.n_epochs is not None else MAX_EPOCHS

    def _tol(self) -> float:
        """``tol``, or where it is ``None`` the default of the algorithm's stopping rule."""
        tol = getattr(self, "tol", 0.0)  # (subclasses without tol run their cap)
        if tol is not None:
            return float(tol)
        return STOCHASTIC_TOL if self.infer in STOCHASTIC_ALGORITHMS else TOL

    _progress_label = ""  # appended to the progress bar's name (HDPHMMTagger n_init: " start i/N")

    def _monitor(self) -> ConvergenceMonitor:
        """The batch algorithms' stopping rule: the change per pass against the progress since the first pass
        (EM's and VI's objective must not fall, unless a prior is learned or MAP moves it)."""
        learning = bool(getattr(self, "learned_hyper_", ()))  # (subclasses without learned priors or tol)
        monotone = self.infer in ("em", "vi") and not self.map_estimate and not learning
        return ConvergenceMonitor(self._tol(), monotone=monotone, reference="progress")

    def _iterations(self):
        """The iteration numbers 1..n_iter (a tqdm bar with ``verbose``); also starts the stopping rule."""
        self._convergence = self._monitor()
        it = range(1, self._max_iter() + 1)
        if self.verbose:
            from tqdm import tqdm

            return tqdm(it, desc=f"{self.infer}{self._progress_label}", unit="it", dynamic_ncols=True)
        return it

    def _record(self, bar, iteration, objective, name, seconds, n_tokens, states, gold, offsets, **extra):
        rec = {"iteration": iteration, name: float(objective), "seconds": seconds,
               "tokens_per_s": n_tokens / seconds if seconds > 0 else float("inf")}
        rec.update(extra)
        if gold is not None and (iteration % self.eval_every == 0 or iteration == self._max_iter()):
            from ..eval.tagging import tagging_report

            rec.update(tagging_report(states, gold, offsets))
        self.trace_.append(rec)
        if hasattr(bar, "set_postfix"):
            shown = {name: f"{objective:.4g}", "tok/s": f"{rec['tokens_per_s']:.3g}"}
            if "m1" in rec:
                shown["M-1"] = f"{rec['m1']:.3f}"
            if getattr(self, "client", None) is not None and hasattr(self, "cluster_meter_"):
                shown.update(self.cluster_meter_.postfix())
            bar.set_postfix(shown)
        if self.callback is not None:
            self.callback(rec)

    # -------------------------------------------------------- hyperparameters
    def _check_priors(self, allow_zero: bool) -> None:
        """``alpha`` / ``beta``: ``None`` (learned) or a finite number, positive unless ``allow_zero``."""
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if value is None:
                continue
            if not (value >= 0 if allow_zero else value > 0):
                raise ConfigError(f"{name} must be a finite {'non-negative' if allow_zero else 'positive'} number "
                                  f"or None (learned) for {self.infer}; got {value}")
            if self._map_floor() and value < 1:
                raise ConfigError(f"MAP estimates (em with map_estimate / --map) need {name} >= 1: below 1 the "
                                  f"Dirichlet's mode lies on the boundary and gives observed words probability 0; "
                                  f"got {name} = {value}; use infer='vi' or 'cvi2' for sparse priors, or map_estimate=False "
                                  f"(--no-map) for maximum likelihood")

    def _map_floor(self) -> bool:
        """MAP estimation keeps every prior at 1 or above (the Dirichlet mode exists in the interior)."""
        return self.infer == "em" and bool(self.map_estimate)

    def _init_hyper(self) -> None:
        """Starting ``alpha_`` / ``beta_`` and which of them are learned (``_learned``).

        A prior given as a number is held; ``None`` starts at :data:`DEFAULT_PRIORS`
        and, with ``learn_hyper``, is re-estimated by empirical Bayes after every
        pass past ``hyper_burn_in`` (:mod:`induce.infer.hyper`; the minibatch
        algorithms: :meth:`_stochastic_hyper`).  Plain EM has no prior to learn
        (``map_estimate`` gives it one; a ``learn_hyper`` given for it is reported
        in a warning, not ignored silently).
        """
        if self.learn_hyper == "per-state" and self.infer != "cvi2":
            raise ConfigError(f"learn_hyper='per-state' (an emission concentration per state) needs infer='cvi2', "
                              f"not {self.infer!r}")
        mode, held = ((self.learn_hyper, ()) if self.learn_hyper is not None
                      else DEFAULT_LEARNING.get(self.infer, (False, ())))
        floor = 1.0 if self._map_floor() else 0.0
        start = default_priors(self.infer)
        self.alpha_ = max(floor, start[0]) if self.alpha is None else float(self.alpha)
        self.beta_ = max(floor, start[1]) if self.beta is None else float(self.beta)
        learns = bool(mode) and (self.infer != "em" or self.map_estimate)
        if self.learn_hyper and not learns:  # asked for, and nothing to learn: say so rather than ignore it
            self._warn(f"hmm {self.infer}: learn_hyper ignored: maximum-likelihood em has no prior "
                       "(map_estimate=True gives it one)")
        self.learned_hyper_ = tuple(name for name in ("alpha", "beta")
                                    if learns and getattr(self, name) is None and name not in held)
        if mode == "per-state" and "beta" in self.learned_hyper_:
            self.beta_ = passes.per_state(self.beta_, self.n_states_)

    def _update_hyper(self, iteration: int, data: "_Data", labels: np.ndarray) -> None:
        """Empirical Bayes step: the symmetric Dirichlet concentrations maximising the evidence.

        The evidence (:func:`induce.infer.hyper.log_evidence`) is that of the
        counts of the decoded assignment ``labels`` (each token's most probable
        state): transitions (K+1 rows, start row included) and emissions (K rows
        over the W words).  The Dirichlet-multinomial evidence is defined for
        the counts of one assignment; plugging in *expected* counts instead
        averages many assignments into rows that look smoother than any one of
        them and drives the emission concentration up (on ptb-sample, K=45,
        after 100 cvi2 passes at alpha 1, beta 0.01: beta 0.084 from the
        expected counts, 0.015 from the decoded ones), which on this task
        collapses the states (docs/experiments/defaults.md).  Sampled
        assignments (``cgs``) are used as they are, as in Goldwater & Griffiths
        (2007).  Nothing is learned before pass ``hyper_burn_in``.

        With ``learn_hyper="per-state"`` each emission row has its own
        concentration, the maximiser of its own row's evidence
        (:func:`induce.infer.hyper.fit_row_dirichlets`), capped at the pooled
        (symmetric) estimate: closed-class states learn a smaller beta_k than the
        pooled one, the open-class ones keep it.
        """
        if iteration <= self.hyper_burn_in:
            return
        K, W = self.n_states_, data.W
        trans = np.zeros((K + 1, K), dtype=np.int64)
        emit = np.zeros((W, K), dtype=np.int64)
        passes.hard_counts(data.tokens, data.offsets, np.ascontiguousarray(labels, dtype=np.int32), W, K, trans, emit)
        floor = 1.0 if self._map_floor() else 0.0
        if "alpha" in self.learned_hyper_:
            self.alpha_ = max(floor, fit_symmetric_dirichlet(trans, self.alpha_))
        if "beta" not in self.learned_hyper_:
            return
        rows = sparse.csr_matrix(emit.T)  # states by words, positive entries only
        if np.ndim(self.beta_):
            # learn_hyper="per-state": row k ~ Dir(beta_k), each at most the pooled (symmetric) estimate: a small
            # state of words seen once each wants beta_k -> inf, flattens, loses its tokens and dies
            # (docs/experiments/defaults.md, "Per-state emission concentrations")
            pooled = fit_symmetric_dirichlet(rows, float(self.beta_.max()))
            self.beta_ = fit_row_dirichlets(rows, self.beta_, cap=pooled)
        else:
            self.beta_ = max(floor, fit_symmetric_dirichlet(rows, self.beta_))

    def _stochastic_hyper(self, counts: "stochastic.GlobalCounts", alpha: float, beta: float) -> tuple[float, float]:
        """The minibatch algorithms with ``learn_hyper``: the empirical Bayes step at an epoch's end, from the
        global counts (every epoch, from the first: ``hyper_burn_in`` counts batch passes).  Mean-field VI (svi,
        svi-buffered, svi-vanilla): the ELBO's own hyperparameter update with ``q`` held
        (:func:`induce.infer.hyper.fit_symmetric_dirichlet_vb`); the collapsed ones (scvi, scvi3,
        scvi3-vanilla), whose objective is the Dirichlet-multinomial evidence of the expected counts: Minka's
        maximiser of that evidence (:func:`induce.infer.hyper.fit_symmetric_dirichlet`).  Transitions: the
        ``K+1`` rows (start row included) over ``K`` states; emissions: the ``K`` state rows over the ``W``
        words."""
        if stochastic.ESTIMATOR[self.infer] == "vi":
            def fit(n, a):
                return fit_symmetric_dirichlet_vb(n, a, a)
        else:
            fit = fit_symmetric_dirichlet
        if "alpha" in self.learned_hyper_:
            alpha = fit(counts.trans, alpha)
        if "beta" in self.learned_hyper_:
            beta = fit(counts.emissions().T, beta)
        return alpha, beta

    def _step(self, bar, iteration: int, data: "_Data", labels) -> bool:
        """End of an iteration: learn the hyperparameters, check the objective; ``True`` stops the loop.

        ``labels`` is a callable giving each token's decoded state (called only
        when a hyperparameter is learned).
        """
        record = self.trace_[-1]
        if self.learned_hyper_:
            self._update_hyper(iteration, data, labels())
            record["alpha"], record["beta"] = self.alpha_, np.asarray(self.beta_).tolist()
        objective = next(v for k, v in record.items() if k in OBJECTIVES)
        self._convergence.update(objective)
        if self._convergence.diverged:
            raise ConfigError(f"{self.infer} diverged at iteration {iteration}: the objective is {objective}; "
                              "check the priors (alpha, beta) and the input")
        # no stop while learned hyperparameters still wait for the end of their burn-in
        done = (self._convergence.converged and self.infer in STOPPABLE
                and (not self.learned_hyper_ or iteration > self.hyper_burn_in + self._convergence.patience))
        if (done or iteration == self._max_iter()) and hasattr(bar, "close"):
            bar.close()
        self._last_iteration = iteration
        return done

    def _batch_estimator(self, counts, prior):
        if self.infer == "vi":
            return vi_params(counts, prior)
        if self.map_estimate:
            return map_params(counts, prior)
        return em_params(counts)

    def _fit_batch(self, data, sent_trans, gamma, gold):
        """EM / VI: M-step from the current counts, then a parallel E-step."""
        K = self.n_states_
        trans = sent_trans.sum(axis=0)
        emit = np.zeros((data.W, K))
        np.add.at(emit, data.tokens, gamma)
        del sent_trans
        want_gamma = gold is not None or bool(self.learned_hyper_)
        g = np.empty((data.tokens.shape[0] if want_gamma else 0, K))
        if self.client is not None:
            from ..distributed import ClusterEStep

            estep = ClusterEStep(self.client, self._worker_corpus(data), self.allowed_, LOCKSTEP_BLOCK)
            self.cluster_meter_ = estep.meter
        else:
            lay = Layout(data.tokens, data.offsets, LOCKSTEP_BLOCK)
            estep = lambda A, B, t, e, g: lockstep_pass(A, B, self.allowed_, lay.lay_tokens, lay.lay_flat,  # noqa: E731
                                                        lay.pos_start, lay.block_pos, t, e, g, passes.n_threads())
        bar = self._iterations()
        for it in bar:
            t0 = time.perf_counter()
            prev_t, prev_e = trans.copy(), emit.T.copy()
            A = self._batch_estimator(prev_t, self.alpha_)
            B = np.ascontiguousarray(self._batch_estimator(prev_e, self.beta_).T)
            ll = estep(A, B, trans, emit, g)
            if self.infer == "vi":
                # ELBO = sum_i log Z_i(theta~) - KL(q(theta) || p(theta)), q(theta) = Dir(C + prior)
                objective = (ll - dirichlet_kl(prev_t + self.alpha_, self.alpha_)
                             - dirichlet_kl(prev_e + self.beta_, self.beta_))
                name = "elbo"
            elif self.map_estimate:
                # log posterior up to a constant; the log prior is taken over the support
                # (entries the clipped MAP of ``map_params`` keeps positive): with a prior
                # below 1 the density is unbounded at the zeros it creates
                objective = ll + (self.alpha_ - 1) * _log_support(A) + (self.beta_ - 1) * _log_support(B)
                name = "log_posterior"
            else:
                objective, name = ll, "log_likelihood"
            states = g.argmax(axis=1) if want_gamma else None
            self._record(bar, it, objective, name, time.perf_counter() - t0, data.tokens.shape[0], states, gold, data.offsets)
            if self._step(bar, it, data, lambda: g.argmax(axis=1)):
                break
        self._finish(trans, emit, data)

    def _fit_cvi2(self, data, sent_trans, gamma, gold, seeds):
        K = self.n_states_
        trans = np.zeros((K + 1, K))
        emit = np.zeros((data.W, K))
        labels = lambda: gamma.argmax(axis=1)  # noqa: E731
        if self.client is not None:  # q(z^i) on the workers, one block per worker (induce.distributed.cvi2)
            from ..distributed import ClusterCVI2

            sweep = ClusterCVI2(self._worker_corpus(data), K, seeds[0], data.W, self.allowed_, self.cvi2_block)
            self.cluster_meter_, labels = sweep.meter, sweep.labels
        bar = self._iterations()
        for it in bar:
            t0 = time.perf_counter()
            order = self._order(data, seeds[it])
            if self.client is not None:
                ll = sweep(order, self.alpha_, self.beta_, trans, emit)
            else:
                # recompute the totals exactly from the stored statistics (no drift)
                passes.totals_from_local(data.tokens, data.offsets, sent_trans, gamma, data.W, trans, emit)
                if self.cvi2_block > 0:
                    ll = cvi2_block_pass(trans, emit, sent_trans, gamma, data.tokens, data.offsets, order,
                                         self.alpha_, self.beta_, self.allowed_, int(self.cvi2_block),
                                         passes.n_threads())
                else:
                    ll = passes.cvi2_pass(trans, emit, sent_trans, gamma, data.tokens, data.offsets, order,
                                          self.alpha_, self.beta_, self.allowed_)
            self._record(bar, it, ll, "predictive_log_likelihood", time.perf_counter() - t0,
                         data.tokens.shape[0], labels() if gold is not None else None, gold, data.offsets)
            if self._step(bar, it, data, labels):
                break
        self._local_labels = labels()
        self._finish(trans, emit, data)

    def _worker_corpus(self, data):
        """The training corpus on the workers of ``client`` (:meth:`induce.distributed.WorkerCorpus.of`): read by
        them from its file when it was read from one (``fit`` given a path, or a corpus of
        :func:`~induce.corpus.formats.load_corpus` as the command line reads it), else shipped once (in-memory
        data: the only way)."""
        from ..distributed import WorkerCorpus

        return WorkerCorpus.of(self.client, data.tokens, data.offsets, data.source, self.vocab_)

    def _fit_cvi1(self, data, sent_trans, gamma, gold, seeds):
        K = self.n_states_
        q = np.ascontiguousarray(gamma, dtype=np.float64)
        G = np.zeros((K + 1, K))
        emit = np.zeros((data.W, K))
        passes.factorised_counts(data.tokens, data.offsets, q, data.W, G, emit)
        bar = self._iterations()
        for it in bar:
            t0 = time.perf_counter()
            order = self._order(data, seeds[it])
            change = passes.cvi1_pass(G, emit, q, data.tokens, data.offsets, order, self.alpha_, self.beta_,
                                      self.allowed_)
            passes.factorised_counts(data.tokens, data.offsets, q, data.W, G, emit)
            self._record(bar, it, change, "mean_abs_change", time.perf_counter() - t0,
                         data.tokens.shape[0], q.argmax(axis=1) if gold is not None else None, gold, data.offsets)
            if self._step(bar, it, data, lambda: q.argmax(axis=1)):
                break
        self._local_labels = q.argmax(axis=1)
        self._finish(G, emit, data)

    def _fit_cgs(self, data, sent_trans, gamma, gold, seeds):
        K = self.n_states_
        rng = np.random.default_rng(int(seeds[0]))
        # z_t ~ the same random initial local posteriors
        cum = np.cumsum(gamma, axis=1)
        z = (rng.random(len(cum))[:, None] * cum[:, -1:] > cum).sum(axis=1).astype(np.int32)
        z = np.minimum(z, K - 1)
        Ct = np.zeros((K + 1, K), dtype=np.int64)
        Ce = np.zeros((data.W, K), dtype=np.int64)
        passes.hard_counts(data.tokens, data.offsets, z, data.W, K, Ct, Ce)
        t_start, t_end = self.temperature
        n = max(1, self._max_iter() - 1)
        votes_empty = np.zeros((0, K), dtype=np.int32)
        votes = np.zeros((data.tokens.shape[0], K), dtype=np.int32) if self.cgs_keep > 0 else votes_empty
        bar = self._iterations()
        for it in bar:
            t0 = time.perf_counter()
            temp = t_start * (t_end / t_start) ** ((it - 1) / n)
            keep = self.cgs_keep > 0 and it > self._max_iter() - self.cgs_keep
            changed = passes.cgs_pass(Ct, Ce, z, data.tokens, data.offsets, self.alpha_, self.beta_, temp,
                                      int(seeds[it]), self.allowed_, votes if keep else votes_empty)
            self._record(bar, it, changed, "changed_states", time.perf_counter() - t0,
                         data.tokens.shape[0], z if gold is not None else None, gold, data.offsets, temperature=temp)
            self._step(bar, it, data, lambda: z)
        self._local_labels = votes.argmax(axis=1) if self.cgs_keep > 0 else z.copy()
        self._finish(Ct.astype(np.float64), Ce.astype(np.float64), data)

    def fit_stream(self, path, format: str = "auto", *, lowercase: bool = False, buffer_sentences: int = 10_000
                   ) -> "HMMTagger":
        """``svi`` / ``scvi`` on a corpus streamed from disk (:mod:`induce.corpus.stream`).

        Memory is ``O(K^2 + K W)`` plus one shuffle buffer of ``buffer_sentences``
        and the held-out sample the run stops on (a seeded ``heldout_fraction`` of the sentences,
        at most ``heldout_max_tokens`` tokens).  The vocabulary is every word of
        the input; ``labels_`` is not set (the corpus is never in memory; use
        :meth:`predict`).  With ``client`` the workers read the file(s) themselves, each keeping its shard in
        memory (:class:`induce.distributed.WorkerCorpus`); the client sends sentence indices, never tokens.
        """
        from ..corpus import stream

        if self.infer not in stochastic.STOCHASTIC:
            raise ConfigError(f"streaming supports {', '.join(stochastic.STOCHASTIC)}, not {self.infer!r}")
        self._check_priors(allow_zero=False)
        self._init_hyper()
        init_seq, batch_seq, held_seq = np.random.SeedSequence(self.random_state).spawn(3)
        info = stream.scan(path, format, lowercase=lowercase, heldout_fraction=self.heldout_fraction,
                           heldout_max_tokens=self.heldout_max_tokens, seed=int(held_seq.generate_state(1)[0]))
        self._start_run()
        K, W = int(self.n_states), len(info.vocab)
        self.n_states_, self.tag_vocab_, self.vocab_, self.allowed_ = K, None, info.vocab, _NO_MASK
        # info counts the training sentences and tokens only (not the held-out sample)
        counts = stochastic.GlobalCounts.exponential(np.random.default_rng(init_seq), K, W, info.n_tokens)
        schedule = self._schedule(info.n_sentences, batch_seq, buffer_sentences=buffer_sentences)
        if self.client is not None:  # the workers read and keep their shards (induce.distributed.shards)
            from ..distributed import WorkerCorpus, WorkerSentenceUpdater

            shards = WorkerCorpus.read(self.client, path, format, info.vocab, lowercase=lowercase,
                                       skip=info.heldout_ids)
            updater = WorkerSentenceUpdater(shards, self.infer, self.alpha_, self.beta_)
            self.cluster_meter_ = updater.meter
            batches = updater.batches(stream.sharded_batches(shards.sentence_bounds, **schedule))
        else:
            updater = self._sentence_updater(info.n_sentences)
            batches = stream.shuffled_minibatches(path, format, info.vocab, lowercase=lowercase,
                                                  skip=info.heldout_ids, **schedule)
        heldout = (info.heldout_tokens, info.heldout_offsets) if len(info.heldout_tokens) else None
        settings = {"infer": self.infer, "n_states": K, "n_words": W, "n_tokens": info.n_tokens, "alpha": self.alpha_,
                    "beta": self.beta_, "batch_size": self.batch_size_, "tau": self.tau, "kappa": self.kappa,
                    "random_state": self.random_state, "buffer_sentences": buffer_sentences, "stream": str(path)}
        self._run_stochastic(counts, updater, batches, heldout, settings, info.n_sentences, info.n_tokens)
        self.stream_sentences_, self.stream_tokens_ = info.n_sentences, info.n_tokens
        self.transition_counts_ = counts.trans.copy()
        self.emission_counts_ = counts.emissions()
        self._set_parameters()
        return self

    def _encode_heldout(self, heldout, corpus, remap):
        """Held-out token ids in the model's vocabulary (``W`` = unseen), or ``None``."""
        if heldout is None:
            return None
        W = len(self.vocab_)
        if heldout.vocab is corpus.vocab:
            ids = remap[heldout.tokens]
        else:
            ids = np.array([self.vocab_.stoi.get(w, W) for w in heldout.vocab.itos], dtype=np.int32)[heldout.tokens]
        ids = np.where(ids < 0, W, ids).astype(np.int32)
        offsets = np.ascontiguousarray(heldout.offsets, dtype=np.int64)
        if self.infer in stochastic.SINGLE_SEQUENCE:
            offsets = np.array([0, len(ids)], dtype=np.int64)
        return ids, offsets

    def _fit_stochastic(self, data, gold, heldout):
        """``svi``/``scvi`` and the single-sequence algorithms via :mod:`induce.infer.stochastic_hmm`; without a
        ``heldout`` set they hold out part of ``data`` to stop on (:meth:`_heldout_tail`,
        :meth:`_heldout_sentences`), and decode all of it."""
        K = self.n_states_
        init_seq, batch_seq, held_seq = np.random.SeedSequence(self.random_state).spawn(3)
        if self.infer in stochastic.SINGLE_SEQUENCE:
            N = int(data.tokens.shape[0])
            n_held = self._heldout_tail(N) if heldout is None else 0
            if n_held:
                heldout = (data.tokens[N - n_held:], np.array([0, n_held], dtype=np.int64))
            n_tokens = N - n_held
        else:
            held = self._heldout_sentences(data, held_seq) if heldout is None else np.zeros(0, dtype=np.int64)
            if len(held):
                heldout = gather_sentences(data.tokens, data.offsets, held)
            train_ids = np.setdiff1d(np.arange(data.offsets.shape[0] - 1, dtype=np.int64), held)
            n_tokens = int(np.diff(data.offsets)[train_ids].sum())
            I = len(train_ids)
        counts = stochastic.GlobalCounts.exponential(np.random.default_rng(init_seq), K, data.W, n_tokens)
        if self.infer in stochastic.STOCHASTIC and self.client is not None:  # minibatches as sentence indices
            from ..distributed import WorkerSentenceUpdater

            updater = WorkerSentenceUpdater(self._worker_corpus(data), self.infer, self.alpha_, self.beta_,
                                            self.allowed_, n_sentences=I)
            self.cluster_meter_ = updater.meter
            s = self._schedule(I, batch_seq)
            batches = updater.batches(np.sort(train_ids[idx])
                                      for idx in minibatches(I, s["batch_size"], s["rng"], s["n_epochs"]))
        elif self.infer in stochastic.STOCHASTIC:
            updater = self._sentence_updater(I)
            s = self._schedule(I, batch_seq)
            tokens, offsets = (gather_sentences(data.tokens, data.offsets, train_ids) if len(held)
                               else (data.tokens, data.offsets))
            batches = stochastic.sentence_batches(tokens, offsets, s["batch_size"], s["n_epochs"], s["rng"])
        else:
            updater = stochastic.SubchainUpdater(self.infer, self.alpha_, self.beta_, data.tokens[:n_tokens],
                                                 self.subseq_length, self.buffer, K)
            s = self._schedule(updater.n_sub, batch_seq)
            batches = minibatches(updater.n_sub, s["batch_size"], s["rng"], s["n_epochs"])
        settings = {"infer": self.infer, "n_states": K, "n_words": int(data.W), "n_tokens": n_tokens,
                    "alpha": self.alpha_, "beta": self.beta_, "batch_size": self.batch_size_, "tau": self.tau,
                    "kappa": self.kappa, "random_state": self.random_state, "subseq_length": self.subseq_length,
                    "buffer": self.buffer}
        self._run_stochastic(counts, updater, batches, heldout, settings,
                             I if self.infer in stochastic.STOCHASTIC else updater.n_sub, n_tokens)
        self._finish(counts.trans, counts.emissions(), data)

    def _heldout_sentences(self, data, held_seq) -> np.ndarray:
        """Sorted ids of the sentences held out to stop on: a seeded ``heldout_fraction`` of them, at most
        ``heldout_max_tokens`` tokens (:func:`~induce.infer.stochastic_hmm.heldout_sentences`)."""
        return stochastic.heldout_sentences(np.diff(data.offsets), self.heldout_fraction, self.heldout_max_tokens,
                                            np.random.default_rng(held_seq))

    def _heldout_tail(self, n_tokens: int) -> int:
        """Tokens at the end of one long sequence held out to stop on: ``heldout_fraction`` of them, at most
        ``heldout_max_tokens``."""
        n = min(int(round(self.heldout_fraction * n_tokens)), int(self.heldout_max_tokens))
        if n and n >= n_tokens:
            raise ConfigError(f"a held-out fraction of {self.heldout_fraction:g} of a {n_tokens}-token sequence "
                              "leaves none to train on")
        return n

    def _schedule(self, n_items: int, batch_seq, **extra) -> dict:
        """The minibatch schedule: ``batch_size`` (:meth:`_resolve_batch_size`: default 100, the best of
        sizes 20, 100 and 500 on Figure 3.15's WSJ data for scvi, benchmarks/RESULTS.md; on a cluster the
        largest that keeps 500 minibatches in the run, at most :data:`PLANNED_EPOCHS` of them; a resumed run keeps
        its checkpoint's), the epoch cap
        ``n_epochs`` and the seeded ``rng``, with ``extra``."""
        saved = stochastic.saved_settings(self.checkpoint).get("batch_size") if self.resume else None
        size = self._resolve_batch_size(100, n_items, saved, self._planned_epochs())
        return dict(batch_size=size, n_epochs=self._max_epochs(), rng=np.random.default_rng(batch_seq), **extra)

    def _sentence_updater(self, n_sentences: int):
        """The svi / scvi minibatch step in this process."""
        return stochastic.SentenceUpdater(self.infer, self.alpha_, self.beta_, n_sentences, self.allowed_)

    def _run_stochastic(self, counts, updater, batches, heldout, settings, n_items: int, epoch_tokens: int):
        """Drive :func:`induce.infer.stochastic_hmm.run` with this model's schedule, stopping rule and
        checkpoint options; ``n_items`` sentences (or subsequences) of ``epoch_tokens`` tokens make one epoch."""
        monitor = ConvergenceMonitor(self._tol(), STOCHASTIC_PATIENCE, reference="best")
        settings = {**settings, "heldout_tokens": len(heldout[0]) if heldout is not None else 0}
        result = stochastic.run(counts, updater, batches, tau=self.tau, kappa=self.kappa, heldout=heldout,
                                heldout_every=self.heldout_every, alpha=self.alpha_, beta=self.beta_,
                                max_batches=self.max_batches, checkpoint=self.checkpoint,
                                checkpoint_every=self.checkpoint_every, checkpoint_minutes=self.checkpoint_minutes,
                                resume=self.resume, meta=settings, callback=self.callback, progress=self.verbose,
                                total_batches=-(-int(n_items) // self.batch_size_) * self._max_epochs(),
                                epoch_tokens=epoch_tokens, monitor=monitor,
                                hyper=self._stochastic_hyper if self.learned_hyper_ else None)
        self.alpha_, self.beta_ = result.alpha, result.beta
        self.trace_ = result.trace
        self.interrupted_ = result.interrupted
        self.n_batches_ = result.batches
        self.heldout_tokens_ = settings["heldout_tokens"]
        epochs = result.tokens_seen // max(1, epoch_tokens)
        if heldout is not None and not result.interrupted:
            self._end_iterations(monitor, f"hmm {self.infer}", epochs, self._max_epochs())
        else:  # no held-out set: no stopping rule, every epoch of the cap (or max_batches) runs
            self.n_iter_ = int(epochs)
        self._warn_cluster_overhead()

    def _fit_cvi3(self, data, gold, seeds):
        """CVI algorithm 3 (thesis 3.56-3.82): the corpus as one long sequence of subsequences."""
        K, N = self.n_states_, int(data.tokens.shape[0])
        so = subsequence_offsets(N, self.subseq_length)
        I = so.shape[0] - 1
        # Start: the local posteriors under parameters drawn as scvi3 draws its
        # global counts (exponential, means N/K^2 and N/(K W), thesis eq.
        # 3.106-3.107).  Random local posteriors (footnote 5, the cvi2 start) are
        # nearly uniform after a chain's first token, and on one long sequence
        # nothing else breaks the symmetry: cvi3 then idles for ~150 passes
        # (docs/experiments/stochastic.md, "Batch cvi3: starting point").
        rng = np.random.default_rng(int(seeds[0]))
        A = cvi_params(exponential_init(rng, (K + 1, K), N / K**2), self.alpha_)
        phi = cvi_params(exponential_init(rng, (K, data.W), N / (K * data.W)), self.beta_).T.copy()
        pair = np.zeros((I, K, K))
        gamma = np.zeros((N, K))
        init_from_parameters(A, phi, data.tokens, so, pair, gamma)
        trans = np.zeros((K + 1, K))
        emit = np.zeros((data.W, K))
        seq = _Data(data.tokens, so, data.W)
        bar = self._iterations()
        for it in bar:
            t0 = time.perf_counter()
            cvi3_totals(data.tokens, so, pair, gamma, trans, emit)
            ll = cvi3_pass(trans, emit, pair, gamma, data.tokens, so, self._order(seq, seeds[it]), self.alpha_,
                           self.beta_)
            self._record(bar, it, ll, "predictive_log_likelihood", time.perf_counter() - t0,
                         data.tokens.shape[0], gamma.argmax(axis=1) if gold is not None else None, gold, data.offsets)
            if self._step(bar, it, data, lambda: gamma.argmax(axis=1)):
                break
        self._local_labels = gamma.argmax(axis=1)
        self._finish(trans, emit, data)

    def _order(self, data, seed):
        I = data.offsets.shape[0] - 1
        if self.order == "shuffle":
            return np.random.default_rng(int(seed)).permutation(I).astype(np.int64)
        return np.arange(I, dtype=np.int64)

    def _finish(self, trans, emit, data):
        """Store counts and point parameters; decode the training corpus."""
        self.transition_counts_ = np.asarray(trans, dtype=np.float64)
        self.emission_counts_ = np.asarray(emit, dtype=np.float64)
        self._set_parameters()
        if self.infer in ("em", "vi") + STOCHASTIC_ALGORITHMS or self.decode == "viterbi":
            self.labels_ = self._decode(data.tokens, data.offsets)
        else:
            self.labels_ = self._local_labels
        self.__dict__.pop("_local_labels", None)
        if self.infer not in STOCHASTIC_ALGORITHMS:
            if self.infer in STOPPABLE:
                self._end_iterations(self._convergence, f"hmm {self.infer}", self._last_iteration, self._max_iter())
            else:
                self.n_iter_ = self._last_iteration
        self._check_collapse(self.labels_, self.n_states_)

    def _check_collapse(self, labels: np.ndarray, K: int, count_used: bool = True) -> None:
        """Warn when the states collapsed: fewer than a quarter of the K states used (unless not ``count_used``:
        the HDP-HMM learns how many it uses), or one holding most tokens."""
        if len(labels) == 0:
            return
        sizes = np.bincount(labels, minlength=K)
        used, share = int((sizes > 0).sum()), sizes.max() / len(labels)
        if K >= 4 and ((count_used and used < K / 4) or share > 0.5):
            self._warn(f"the states collapsed: {used} of {K} states used, the largest holds {share:.0%} of the "
                       f"tokens; try another --seed or fewer --{'states' if count_used else 'truncation'}")

    def _set_parameters(self):
        """Point parameters: EM's theta*, VI's theta~, else the posterior mean (C + a) / (C. + K a)."""
        trans, emit = self.transition_counts_, self.emission_counts_
        if self.infer in ("em", "vi"):
            A = self._batch_estimator(trans, self.alpha_)
            B = self._batch_estimator(emit.T, self.beta_).T
        else:
            A = cvi_params(trans, self.alpha_)
            B = cvi_params(emit.T, np.reshape(self.beta_, (-1, 1))).T  # (K, 1) per-state or (1, 1)
        K = A.shape[1]
        if np.all(np.asarray(self.beta_) > 0):
            unseen = self.beta_ / (emit.sum(axis=0) + (emit.shape[0] * np.asarray(self.beta_)))
        else:
            unseen = np.full(K, 1.0 / max(1, emit.shape[0]))
        self.transitions_ = np.ascontiguousarray(A)
        self.emissions_ = np.ascontiguousarray(np.vstack([B, unseen[None, :]]))

    # ----------------------------------------------------------------- decode
    def _encode(self, corpus) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of ``corpus`` (anything :func:`induce.corpus.corpus.as_corpus` takes) in the training
        vocabulary; unseen words -> W."""
        self._check_fitted()
        corpus = as_corpus(corpus)
        W = len(self.vocab_)
        mapping = np.array([self.vocab_.stoi.get(w, W) for w in corpus.vocab.itos], dtype=np.int32)
        return mapping[corpus.tokens] if len(mapping) else corpus.tokens.astype(np.int32), corpus.offsets

    def _decode(self, tokens, offsets):
        return _decode_kernel(self.transitions_, self.emissions_, self.allowed_, tokens, offsets,
                              self.decode == "viterbi")

    def predict(self, corpus) -> list[np.ndarray]:
        """Per sentence, the predicted state id of each token (int32 arrays, one per sentence of
        ``as_corpus(corpus)``); :meth:`predict_flat` gives them as one array, :meth:`predict_tags` as tag strings."""
        corpus = as_corpus(corpus)
        return corpus.split(self.predict_flat(corpus))

    def predict_flat(self, corpus) -> np.ndarray:
        """Predicted state ids as one int32 array aligned with ``as_corpus(corpus).tokens``."""
        tokens, offsets = self._encode(corpus)
        return self._decode(tokens, np.ascontiguousarray(offsets, dtype=np.int64))

    def predict_tags(self, corpus) -> list[list[str]]:
        """Per sentence, the predicted tag of each token: the tag dictionary's tags, else ``S0 .. S{K-1}``."""
        names = np.asarray(self.tag_vocab_.itos if self.tag_vocab_ is not None
                           else [f"S{k}" for k in range(self.n_states_)], dtype=object)
        return [names[states].tolist() for states in self.predict(corpus)]

    def fit_predict(self, corpus, tag_dict: TagDictionary | None = None) -> list[np.ndarray]:
        """``fit`` then the training corpus's state ids per sentence (``labels_`` split at the sentence ends)."""
        corpus = as_corpus(corpus)
        return corpus.split(self.fit(corpus, tag_dict).labels_)

    def score(self, corpus: Corpus) -> float:
        """Per-token log-likelihood of ``corpus`` under the point parameters (nats)."""
        tokens, offsets = self._encode(corpus)
        A = self.transitions_
        B = self.emissions_ / self.emissions_.sum(axis=0, keepdims=True) if self.infer == "vi" else self.emissions_
        A = A / A.sum(axis=1, keepdims=True)
        K = A.shape[1]
        trans = np.zeros((K + 1, K))
        emit = np.zeros((B.shape[0], K))
        ll = passes.batch_pass(A, np.ascontiguousarray(B), self.allowed_, tokens,
                               np.ascontiguousarray(offsets, dtype=np.int64), trans, emit, np.empty((0, K)),
                               passes.n_threads())
        return ll / max(1, len(tokens))

    def predictive_log_likelihood(self, corpus: Corpus, one_sequence: bool = False) -> float:
        """Per-token predictive log-likelihood of held-out text from the fitted counts (thesis eq. 3.108-3.109).

        ``theta = (N + alpha) / (N. + K alpha)``, ``phi = (N + beta) / (N. + W beta)``
        for every algorithm (so that batch and stochastic runs are compared on
        the same footing); ``one_sequence`` scores the corpus as one long sequence.
        """
        tokens, offsets = self._encode(corpus)
        if one_sequence:
            offsets = np.array([0, len(tokens)], dtype=np.int64)
        counts = stochastic.GlobalCounts(self.transition_counts_, self.emission_counts_)
        return stochastic.heldout_loglik(counts, self.alpha_, self.beta_, np.ascontiguousarray(tokens, dtype=np.int32),
                                         np.ascontiguousarray(offsets, dtype=np.int64))

    def _check_fitted(self):
        if not hasattr(self, "transitions_"):
            raise ConfigError("this HMMTagger is not fitted yet; call fit() or load() first")

    # ------------------------------------------------------------- save/load
    _PARAMS = ("n_states", "infer", "n_iter", "tol", "alpha", "beta", "learn_hyper", "hyper_burn_in", "decode", "map_estimate", "cgs_keep", "order",
               "cvi2_block", "random_state", "batch_size", "tau", "kappa", "n_epochs", "heldout_fraction",
               "heldout_max_tokens", "max_batches", "subseq_length", "buffer")

    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """Arrays of a saved model: ``K`` states (the tag dictionary's tags if it had one), ``W`` words.

        Transitions ``(K+1, K)`` (row 0 = start) are rows of probabilities
        except under ``vi`` (sub-normalised, thesis eq. 3.21); emissions
        ``(W+1, K)`` end with the unseen-word row; ``allowed`` is the
        ``(W, K)`` tag-dictionary mask or empty.
        """
        tags = header["tags"]
        K = len(tags["items"]) if tags is not None else int(header["params"]["n_states"])
        stochastic = None if header["params"]["infer"] == "vi" else 1
        return modelfile.Schema((
            Field("transitions", "f8", ("K+1", "K"), nonnegative=True, stochastic_axis=stochastic),
            Field("emissions", "f8", ("W+1", "K"), nonnegative=True),
            Field("transition_counts", "f8", ("K+1", "K"), nonnegative=True),
            Field("emission_counts", "f8", ("W", "K"), nonnegative=True),
            Field("allowed", "u1", ("W", "K") if tags is not None else (0, 0)),
        ), {"K": K, "W": len(header["vocab"]["items"])})

    def save(self, path: str | Path) -> None:
        """Write the model as one ``.npz`` (arrays + a JSON header), atomically, without pickle."""
        self._check_fitted()
        header = {
            "params": {k: getattr(self, k) for k in self._PARAMS} | {"temperature": list(self.temperature)},
            "vocab": self.vocab_.to_json(),
            "tags": self.tag_vocab_.to_json() if self.tag_vocab_ is not None else None,
            "trace": self.trace_,
            "learned": {"alpha_": self.alpha_, "beta_": np.asarray(self.beta_).tolist(), "n_iter_": self.n_iter_,
                        "converged_": self.converged_, "warnings_": self.warnings_},
        }
        modelfile.save(path, "HMMTagger", header, {
            "transitions": self.transitions_,
            "emissions": self.emissions_,
            "transition_counts": self.transition_counts_,
            "emission_counts": self.emission_counts_,
            "allowed": self.allowed_,
        })

    @classmethod
    def load(cls, path: str | Path) -> "HMMTagger":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        header, arrays = modelfile.load(path, "HMMTagger", cls._schema)
        with modelfile.reading(path, "header"):
            params = dict(header["params"])
            params["temperature"] = tuple(params["temperature"])
            model = cls(**params)
            model.vocab_ = Vocabulary.from_json(header["vocab"])
            model.tag_vocab_ = Vocabulary.from_json(header["tags"]) if header["tags"] else None
            model.trace_ = header["trace"]
            learned = header.get("learned") or {}
            start = default_priors(model.infer)
            model.alpha_ = float(learned.get("alpha_", params.get("alpha") or start[0]))
            beta = learned.get("beta_", params.get("beta") or start[1])  # a list: per-state (learn_hyper)
            model.beta_ = np.asarray(beta, dtype=np.float64) if isinstance(beta, list) else float(beta)
        model.transitions_ = arrays["transitions"]
        model.emissions_ = arrays["emissions"]
        model.transition_counts_ = arrays["transition_counts"]
        model.emission_counts_ = arrays["emission_counts"]
        model.allowed_ = arrays["allowed"]
        model.n_states_ = model.transitions_.shape[1]
        model.n_iter_ = int(learned.get("n_iter_", model._max_iter()))
        model.converged_ = bool(learned.get("converged_", False))
        model.warnings_ = list(learned.get("warnings_", []))
        return model


@njit(cache=True, parallel=True)
def _decode_kernel(A, emit, allowed, tokens, offsets, use_viterbi):
    """Posterior (max-marginal) or Viterbi states for every sentence, in parallel."""
    K = A.shape[1]
    I = offsets.shape[0] - 1
    out = np.zeros(tokens.shape[0], dtype=np.int32)
    for i in prange(I):
        s = offsets[i]
        T = offsets[i + 1] - s
        if T == 0:
            continue
        x = tokens[s : s + T]
        E = np.empty((T, K))
        gather_emissions(emit, x, allowed, E)
        path = np.empty(T, dtype=np.int32)
        if use_viterbi:
            viterbi(A, E, T, path)
        else:
            fwd = np.empty((T, K))
            bwd = np.empty((T, K))
            scale = np.empty(T)
            xi = np.empty((K, K))
            forward_backward(A, E, T, fwd, bwd, scale, xi)
            for t in range(T):
                best = 0
                for k in range(1, K):
                    if fwd[t, k] * bwd[t, k] > fwd[t, best] * bwd[t, best]:
                        best = k
                path[t] = best
        for t in range(T):
            out[s + t] = path[t]
    return out

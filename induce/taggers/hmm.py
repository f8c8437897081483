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
``random_state`` (thesis footnote 5).  Each algorithm is one module of :mod:`induce.algorithms`; the
estimator validates, encodes, picks the algorithm, calls it once and turns its counts into parameters
(docs/architecture.md).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..algorithms import ALGORITHMS as REGISTERED, Core, Loop, Sequences as _Data
from ..algorithms import stochastic as minibatch
from ..algorithms.em_vi import point_estimate
from ..base import SCHEDULE, AnyOf, Boolean, InduceEstimator, Integer, Items, Options, Real, Seed
from ..corpus.corpus import Corpus, as_corpus
from ..corpus.vocab import Vocabulary
from ..errors import ConfigError
from ..resources import check_memory, corpus_source, hmm_bytes, sentence_label
from ..infer import stochastic_hmm as stochastic
from ..infer.estimators import cvi_params
from ..names import HMM_ALGORITHMS, HMM_DECODERS
from .hmm_decode import HMMDecoding
from .hmm_features import EMISSIONS, FEATURE_FITS, EmissionChoice, FeatureSpec
from .hmm_file import HMMFile
from .hmm_vectors import VECTOR_CONSTRAINTS, VectorEmission
from .hmm_settings import STOCHASTIC_ALGORITHMS, HMMSettings, check_y
from .hmm_defaults import (DEFAULT_LEARNING, DEFAULT_MAX_ITER, DEFAULT_PRIORS, HELDOUT_FRACTION,  # noqa: F401
                           HELDOUT_MAX_TOKENS, MAX_EPOCHS, MAX_ITER, PLANNED_EPOCHS, STOCHASTIC_PATIENCE,
                           STOCHASTIC_TOL, TOL, default_priors, start_priors)
from .tag_dict import TagDictionary

#: cvi2 (and HDP cvi) update q(z^i) against the counts of the *other* sentences (eq. 3.44): with one sentence
#: those are empty, q stays at the symmetric prior and every token gets state 0.
ONE_SENTENCE = ("--infer {infer} updates each sentence against the counts of the other sentences (thesis eq. 3.44); "
                "the input has one sentence, so it cannot learn anything: split the text into sentences, or use "
                "{alternatives}")
ALGORITHMS = HMM_ALGORITHMS
DECODERS = HMM_DECODERS
#: algorithms whose E-steps run on a dask cluster with ``client=`` (:mod:`induce.distributed`)
CLUSTER_ALGORITHMS = tuple(name for name in ALGORITHMS if REGISTERED[name].cluster)
_NO_MASK = np.zeros((0, 0), dtype=np.uint8)


class HMMTagger(VectorEmission, HMMFile, HMMDecoding, HMMSettings, EmissionChoice, InduceEstimator):
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
        expected counts; :meth:`induce.algorithms.Priors.epoch_update`), traced in the epochs' records.
        ``"per-state"``
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
        and whether to resume from it (see :func:`induce.algorithms.minibatch.run`).
    emission : the emission family: ``categorical`` (default; one Dirichlet-multinomial per state), ``features``
        (Berg-Kirkpatrick et al. 2010: ``p(w | k) ~ exp(lambda_k . f(w))`` over the vocabulary,
        :mod:`induce.emissions.features`; trained with ``infer="em"``) or ``embeddings`` (every token is its
        word's vector and the emissions are Gaussian, :mod:`induce.taggers.hmm_vectors`; ``infer`` one of em, vi,
        cvi2, svi, scvi; ``n_iter`` None: 100, ``tol`` None: 1e-4, ``alpha`` None: 1).
    features : with ``emission="features"``: ``None`` (the default templates
        :data:`induce.emissions.features.DEFAULT_TEMPLATES`), a feature file (one template a line), a list of
        templates, or a callable ``word -> iterable of feature names``.
    feature_l2 : the L2 strength ``kappa`` of the penalty ``kappa ||lambda||^2`` (``None``: 1.0; 3 was worse on
        EWT and 7 of 9 UD treebanks, docs/experiments/features.md).
    feature_fit : ``direct`` (default; the paper's Algorithm 2: L-BFGS on the marginal log-likelihood, the
        transitions log-linear too) or ``em`` (Algorithm 1: EM with a warm-started L-BFGS M-step);
        :mod:`induce.algorithms.features`.
    embeddings : with ``emission="embeddings"``, a vectors file (word2vec/fastText text, ``.gz``, or ``.npy``
        with ``embeddings_vocab``, default the ``.vocab`` file beside it; :func:`induce.corpus.vectors.read_vectors`)
        or a mapping word -> vector.
    covariance : ``diag`` (default) or ``full`` Gaussian emissions over the vectors.
    vector_norm : ``unit`` (default: every vector scaled to length 1), ``standardize`` or ``none``
        (:func:`induce.embeddings.table.normalize`; docs/experiments/embeddings.md).
    unknown_vectors : the vector of a word without one: ``suffix`` (default) or ``mean``
        (:class:`induce.embeddings.VectorTable`).
    client : a ``dask.distributed.Client``: ``em``, ``vi``, ``svi``, ``scvi`` and
        ``cvi2`` (block-parallel, one block per worker: :mod:`induce.distributed.cvi2`)
        run their E-steps on its workers (:mod:`induce.distributed`); ``None``
        (default): in this process, and dask is not imported.  The workers read
        their shards of the corpus themselves when ``fit`` is given a path (or a
        corpus read from one, ``Corpus.source``) or with :meth:`fit_stream`; data
        given in memory (token lists) can only be shipped to them, once.
    sync_every : ``svi`` / ``scvi`` with ``client``: each worker runs rounds of ``R`` minibatches (default
        64, chosen by measurement: docs/experiments/distributed.md, "Fourth session, quiet re-run"; the first
        rounds grow 1, 2, 4, ...) on its shard against its own copy of the
        counts, which stays on the worker between rounds, merged by adding count deltas exchanged among the
        workers (:mod:`induce.distributed.rounds`); what the run optimises is the
        same collapsed objective with the other workers' statistics up to ``R - 1`` minibatches stale (one worker
        is the single-process run bit for bit); 1 ships every minibatch's emission rows to the workers and its
        statistics back (the exact single-process step on the whole minibatch).
    staleness : with ``sync_every`` above 1 on several workers: 0 (default) a round starts from every worker's
        previous round; 1, rounds that never wait: a worker's round starts from the sums of the round before
        its previous one plus its own previous round's change, the others' changes arriving a round late,
        decayed by it (:func:`induce.distributed.rounds.stale_start`; the same counts once every change is in);
        beyond two workers it costs held-out quality (0.2-0.5 nats/token after an epoch at 4-32 workers), and a
        fit says so in a warning.

    Fitted attributes: ``transitions_`` (K+1, K), ``emissions_`` (W+1, K) by word
    (last row: unseen words), ``vocab_``, ``labels_`` (training-corpus states),
    ``trace_`` (per-iteration records), ``n_iter_``, ``converged_``,
    ``alpha_`` / ``beta_`` (the priors used, learned or not), ``learned_hyper_``,
    ``warnings_``; with ``emission="features"`` also ``feature_weights_`` (K, D), ``feature_names_`` (D) and
    ``feature_spec_`` (what the features were), and :meth:`top_features`.
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
        "resume": Boolean(), "sync_every": Integer(1), "staleness": Integer(0, 1), "emission": Options(*EMISSIONS),
        "features": FeatureSpec(),
        "feature_l2": AnyOf(Options(None), Real(0.0)), "feature_fit": Options(*FEATURE_FITS), **VECTOR_CONSTRAINTS,
        **SCHEDULE,
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
        sync_every: int = 64,
        staleness: int = 0,
        emission: str = "categorical",
        features=None,
        feature_l2: float | None = None,
        feature_fit: str = "direct",
        embeddings=None,
        embeddings_vocab: str | None = None,
        covariance: str = "diag",
        vector_norm: str = "unit",
        unknown_vectors: str = "suffix",
    ):
        self._keep_arguments(locals())

    # ------------------------------------------------------------------ checks

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
    def fit(self, corpus: Corpus, y=None, tag_dict: TagDictionary | None = None,
            heldout: Corpus | None = None) -> "HMMTagger":
        """Learn the HMM from ``corpus`` (its ``tokens``/``offsets``); returns ``self``.  ``y`` is ignored
        (scikit-learn's convention); the tag dictionary is the keyword ``tag_dict``.

        ``heldout`` (stochastic algorithms): sentences whose per-token predictive
        log-likelihood (thesis eq. 3.108) is traced every ``heldout_every``
        minibatches; for the single-sequence algorithms they are concatenated
        into one held-out sequence.
        """
        corpus = as_corpus(corpus)
        check_y(y)
        if self._on_vectors:
            return self._fit_embeddings(corpus, tag_dict, heldout)
        self._validate(corpus)
        self._check_emission(tag_dict)
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
                     corpus.source, self._encode_heldout(heldout, corpus, remap)
                     if self.infer in STOCHASTIC_ALGORITHMS else None)
        self._start_run()
        core = Core(K, self.allowed_, self._init_hyper())
        gold = corpus.tags[self.eval_column] if self.eval_column else None
        loop = None
        if self.infer not in STOCHASTIC_ALGORITHMS:
            seeds = np.random.default_rng(self.random_state).integers(0, 2**31 - 1, size=self._max_iter() + 1)
            loop = Loop(self.infer, self._max_iter(), self._monitor(), data, gold, seeds, order=self.order,
                        eval_every=self.eval_every, callback=self.callback, verbose=self.verbose,
                        label=self._progress_label, trace=self.trace_)
        fitted = (self._emission_algorithm() or self._algorithm()).fit(core, data, loop, self._settings())
        self._store(fitted, core, data)
        return self

    def _store(self, fitted, core: Core, data=None) -> None:
        """Keep what the algorithm returned: priors, trace, counts and point parameters, the passes run;
        with ``data`` (not a stream) the training corpus's labels (the local posteriors', or decoded)."""
        self.alpha_, self.beta_ = core.priors.alpha, core.priors.beta
        self.trace_ = fitted.trace
        vars(self).update(fitted.extra)
        if fitted.meter is not None:
            self.cluster_meter_ = fitted.meter
        self.transition_counts_ = np.asarray(fitted.trans, dtype=np.float64)
        self.emission_counts_ = np.asarray(fitted.emit, dtype=np.float64)
        self._set_parameters()
        if data is not None:
            self.labels_ = (self._decode(data.tokens, data.offsets)
                            if fitted.labels is None or self.decode == "viterbi" else fitted.labels)
        if fitted.monitor is not None:
            self._end_iterations(fitted.monitor, f"hmm {self.infer}", fitted.n_iter, fitted.cap)
        else:
            self.n_iter_ = int(fitted.n_iter)
        if self.infer in STOCHASTIC_ALGORITHMS:
            self._warn_cluster_overhead()
            self._warn_staleness()
        if data is not None:
            self._check_collapse(self.labels_, self.n_states_)

    def _warn_staleness(self) -> None:
        """After rounds with ``staleness=1`` on more than two workers: what they cost.  A worker's round then
        starts without the other workers' last changes, a larger share of the round as workers are added: one
        epoch of scvi on a 10M-token stream ended 0.20-0.27, 0.31-0.36 and 0.49 nats/token of held-out
        log-likelihood below the single process at 4, 8 and 32 workers (staleness 0 at 8: 0.01-0.03;
        docs/experiments/distributed.md, "Eighth session")."""
        if self.client is None or self.staleness != 1 or self.sync_every <= 1:
            return
        from ..distributed import cluster

        workers = cluster.n_workers(self.client)
        if workers > 2:
            self._warn(f"staleness=1 on {workers} workers: rounds that never wait miss the other workers' last "
                       f"changes; at 4-32 workers one epoch ended 0.2-0.5 nats/token of held-out log-likelihood "
                       f"below the single process; use staleness=0 (the default) beyond two workers")

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

        self._check_emission(None)
        if self.infer not in stochastic.STOCHASTIC or self._on_vectors:
            raise ConfigError(f"streaming supports {', '.join(stochastic.STOCHASTIC)} with categorical emissions, "
                              f"not {self.infer!r}" + (" with word vectors" if self._on_vectors else ""))
        self._check_priors(allow_zero=False)
        self.n_states_ = int(self.n_states)
        priors = self._init_hyper()
        held_seq = np.random.SeedSequence(self.random_state).spawn(3)[2]
        how = {"lowercase": lowercase, "heldout_fraction": self.heldout_fraction,
               "heldout_max_tokens": self.heldout_max_tokens, "seed": int(held_seq.generate_state(1)[0])}
        if self.client is None:
            info, shards = stream.scan(path, format, **how), None
        else:  # the workers read the corpus once: vocabulary, held-out sample and their shards
            from ..distributed.shards import scan_read

            info, shards = scan_read(self.client, path, format, **how)
        self._start_run()
        self.tag_vocab_, self.vocab_, self.allowed_ = None, info.vocab, _NO_MASK
        # info counts the training sentences and tokens only (not the held-out sample)
        core = Core(self.n_states_, self.allowed_, priors)
        self._store(minibatch.fit_stream(self.infer, core, info, path, format, lowercase, buffer_sentences,
                                         self._settings(), shards), core)
        self.stream_sentences_, self.stream_tokens_ = info.n_sentences, info.n_tokens
        return self

    def _set_parameters(self):
        """Point parameters: EM's theta*, VI's theta~, else the posterior mean (C + a) / (C. + K a)."""
        if self._set_family_parameters():
            return
        trans, emit = self.transition_counts_, self.emission_counts_
        if self.infer in ("em", "vi"):
            A = point_estimate(self.infer, self.map_estimate, trans, self.alpha_)
            B = point_estimate(self.infer, self.map_estimate, emit.T, self.beta_).T
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

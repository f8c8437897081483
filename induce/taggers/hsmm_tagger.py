"""``HSMMTagger``: semi-Markov part-of-speech induction, the explicit-duration HSMM of the series models over
sentences of word ids (``induce tag --model hsmm``).

A state emits a segment of ``d`` consecutive tokens, ``d ~ p(d | theta_k)`` in ``1..max_duration``
(:mod:`induce.durations`), each token from the state's categorical distribution over the vocabulary with a
symmetric Dirichlet prior (:class:`induce.emissions.Categorical`, thesis eq. 3.7); segments follow one another
without self-transitions (paper 002 section 2.4) and every sentence ends with a segment.  The fit is the series
HSMM engine (:class:`induce.algorithms.hsmm_sentences.SentenceHSMMFit`: ``em``, ``vi``, ``cvi2``, ``svi`` or
``scvi``); it starts from
the text HMM's labels (:class:`induce.taggers.HMMTagger` with its defaults, the geometric-duration special case,
as :func:`induce.series.hsmm.hmm_start` does for the series).  From random responsibilities instead, every state's
durations collapse to one token (the runs of random labels are short, and random emissions tell the states apart
too little to lengthen them: the three-class text of tests/hsmm/test_tagger_hsmm.py, seeds 0-2, em and vi, and
``HSMMSegmenter`` with the categorical family alike).
"""

from __future__ import annotations

import numpy as np

from ..algorithms.hsmm_sentences import SENTENCE_ALGORITHMS, SentenceHSMMFit
from ..base import AnyOf, InduceEstimator, Integer, NotFittedError, Options, Real, Seed
from ..corpus.corpus import as_corpus
from ..emissions import Categorical
from ..infer.series import emission_rows
from ..infer.series_hsmm import duration_rows, hsmm_path, hsmm_posterior, hsmm_transitions
from ..names import DURATION_FAMILIES
from .hmm_defaults import DEFAULT_PRIORS
from .hsmm_file import HSMMFile

#: the objective each algorithm's trace records (the others: the log-likelihood, em's at its point and svi's /
#: scvi's the epoch's sum of log Z under the minibatches' parameters); cvi2's is the sum of the sentences' log Z
#: under the collapsed predictive of the others
TRACE_KEYS = {"vi": "elbo", "cvi2": "predictive_log_likelihood"}

class HSMMTagger(HSMMFile, InduceEstimator):
    """Hidden semi-Markov tagger (module docstring).

    Parameters: ``n_states`` K (at least 2: no self-transitions); ``infer`` ``em``, ``vi`` (default), ``cvi2``,
    ``svi`` or ``scvi`` (the series HSMM's, :mod:`induce.infer.series_hsmm`);
    ``durations`` ``negbin`` (default: ``r`` learned over ``1..max_r``, geometric or more regular state by state),
    ``poisson`` or ``geometric``; ``max_duration`` D, the longest segment (messages cost O(T K D + T K^2); default
    8, longer than the runs of one gold tag in the WSJ); ``alpha`` the Dirichlet prior of the start row and of
    each row's off-diagonal transitions; ``beta`` the emissions' (``None``: the HMM's default for ``infer``,
    :data:`induce.taggers.hmm_defaults.DEFAULT_PRIORS`); ``n_iter`` / ``tol`` the stopping rule (passes, or epochs of
    svi / scvi); ``batch_size`` (sentences), ``tau``, ``kappa`` svi's and scvi's minibatches and steps ``rho_m =
    (tau + m + 1)^-kappa`` (thesis eq. 3.104); ``decode``
    ``viterbi`` (default: the best segmentation) or ``posterior`` (per-token argmax); ``random_state``.

    Fitted attributes: ``n_states_``, ``words_`` (the training vocabulary; another word is one shared unseen
    symbol), ``family_``, ``durations_``, ``trans_counts_`` (K+1, K), ``stats_`` (K, W+1), ``dur_stats_``,
    ``labels_`` (the training tokens' states), ``trace_``, ``n_iter_``, ``converged_``, ``warnings_``.
    """

    _parameter_constraints = {
        "n_states": Integer(2), "infer": Options(*SENTENCE_ALGORITHMS), "durations": Options(*DURATION_FAMILIES),
        "max_duration": Integer(1), "max_r": Integer(1), "alpha": Real(0.0, min_open=True),
        "beta": AnyOf(Options(None), Real(0.0, min_open=True)), "n_iter": Integer(1), "tol": Real(0.0),
        "batch_size": Integer(1), "tau": Real(0.0), "kappa": Real(0.5, 1.0),
        "decode": Options("viterbi", "posterior"), "random_state": Seed(),
    }

    def __init__(self, n_states: int = 45, infer: str = "vi", durations: str = "negbin", max_duration: int = 8,
                 max_r: int = 3, alpha: float = 1.0, beta: float | None = None, n_iter: int = 100,
                 tol: float = 1e-4, batch_size: int = 100, tau: float = 1.0, kappa: float = 0.5,
                 decode: str = "viterbi", random_state: int = 0):
        self.n_states = n_states
        self.infer = infer
        self.durations = durations
        self.max_duration = max_duration
        self.max_r = max_r
        self.alpha = alpha
        self.beta = beta
        self.n_iter = n_iter
        self.tol = tol
        self.batch_size = batch_size
        self.tau = tau
        self.kappa = kappa
        self.decode = decode
        self.random_state = random_state

    def fit(self, corpus, y=None) -> "HSMMTagger":
        """Learn the HSMM from ``corpus`` (a :class:`~induce.corpus.Corpus`, a path or token lists); ``y`` is
        ignored."""
        corpus = as_corpus(corpus)
        self._start_run()
        self.n_states_ = K = int(self.n_states)
        used = np.flatnonzero(np.bincount(corpus.tokens, minlength=len(corpus.vocab)))
        self.words_ = [corpus.vocab.itos[i] for i in used]
        remap = np.full(len(corpus.vocab), len(used), dtype=np.int64)
        remap[used] = np.arange(len(used))
        seqs = self._sequences(remap[corpus.tokens], corpus.offsets)
        self.family_ = Categorical(beta=self._beta(), n_symbols=len(used) + 1)  # the last: words unseen in training
        self.durations_ = self._durations(self.get_params())
        rng = np.random.default_rng(self.random_state)
        fit = SentenceHSMMFit(self.family_, self.durations_, K, infer=self.infer, alpha=float(self.alpha),
                              n_iter=int(self.n_iter), tol=float(self.tol), batch_size=int(self.batch_size),
                              tau=float(self.tau), kappa=float(self.kappa), rng=rng,
                              init_gamma=self._start_gamma(corpus, K))
        result = fit.run(seqs)
        self.trans_counts_, self.stats_, self.dur_stats_ = result.trans, result.stats, result.dur_stats
        key = TRACE_KEYS.get(self.infer, "log_likelihood")
        self.trace_ = [{"iteration": i + 1, key: float(v)} for i, v in enumerate(result.trace)]
        self.n_iter_, self.converged_ = result.n_iter, result.converged
        self.warnings_ += [w for w in result.warnings if w not in self.warnings_]
        self.labels_ = np.concatenate(self._paths(seqs))
        return self

    def _beta(self) -> float:
        """The emissions' Dirichlet concentration: ``beta``, or the HMM's default for ``infer``."""
        return DEFAULT_PRIORS[self.infer][1] if self.beta is None else float(self.beta)

    @staticmethod
    def _sequences(codes: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
        """One ``(T, 1)`` float column of word codes per sentence (the emission family's data)."""
        column = codes.astype(np.float64)[:, None]
        return [column[s:e] for s, e in zip(offsets[:-1], offsets[1:]) if e > s]

    def _start_gamma(self, corpus, K: int) -> np.ndarray:
        """The initial responsibilities: 0.9 on the labels of the default :class:`HMMTagger` with ``K`` states
        and this seed."""
        from .hmm import HMMTagger

        labels = HMMTagger(n_states=K, random_state=self.random_state).fit(corpus).labels_
        gamma = np.full((len(labels), K), 0.1 / K)
        gamma[np.arange(len(labels)), labels] += 0.9
        return gamma

    def mean_durations(self) -> np.ndarray:
        """Mean segment length of every state at the durations' posterior mode (untruncated)."""
        return self.durations_.mean(self.durations_.point_estimate(self.dur_stats_))

    # ------------------------------------------------------------- decoding
    def _potentials(self):
        """``(log pi, log A, log D)`` of decoding and their emission rule: the MAP point (em) or the posterior
        means and predictives of the fitted statistics (vi, as the series HSMM's ``cvi2`` rule)."""
        if not hasattr(self, "stats_"):
            raise NotFittedError.of(self)
        rule = "em" if self.infer == "em" else "cvi2"
        logpi, logA = hsmm_transitions(rule, self.trans_counts_, float(self.alpha))
        return rule, logpi, logA, duration_rows(rule, self.durations_, self.dur_stats_)

    def _each(self, seqs):
        rule, logpi, logA, logD = self._potentials()
        for x in seqs:
            yield logpi, logA, emission_rows(rule, self.family_, x, self.stats_), logD

    def _paths(self, seqs) -> list[np.ndarray]:
        if self.decode == "posterior":
            return [hsmm_posterior(*p)[1].argmax(axis=1) for p in self._each(seqs)]
        return [hsmm_path(*p) for p in self._each(seqs)]

    def _encode(self, corpus) -> list[np.ndarray]:
        """``corpus``'s sentences in the training vocabulary's codes (unseen words: the shared last symbol)."""
        corpus = as_corpus(corpus)
        index = {w: i for i, w in enumerate(self.words_)}
        codes = np.array([index.get(w, len(self.words_)) for w in corpus.vocab.itos], dtype=np.int64)
        return self._sequences(codes[corpus.tokens], corpus.offsets)

    def predict(self, corpus) -> list[np.ndarray]:
        """The state of every token, one array per sentence (``decode``)."""
        return self._paths(self._encode(corpus))

    def predict_flat(self, corpus) -> np.ndarray:
        """The state of every token of ``corpus`` in one array (``induce tag --load``)."""
        paths = self.predict(corpus)
        return np.concatenate(paths) if paths else np.zeros(0, dtype=np.int64)

    def score(self, corpus, y=None) -> float:
        """Mean log-likelihood per token of ``corpus`` under the decoding potentials (HSMM forward messages)."""
        seqs = self._encode(corpus)
        return float(sum(hsmm_posterior(*p)[0] for p in self._each(seqs)) / max(1, sum(len(x) for x in seqs)))

"""``HSMMSegmenter``: an explicit-duration hidden semi-Markov model over numeric sequences.

Fitting runs :class:`induce.infer.series_hsmm.HSMMFit` (``em`` or ``vi``) with any emission family of
:mod:`induce.emissions` and any duration family of :mod:`induce.durations`.  Decoding and scoring use
the potentials of the fitting algorithm: ``em`` the MAP point estimates, so that :meth:`score` is the
log-likelihood; ``vi`` the ``exp E_q log`` potentials (paper 002 ``A~, L~, D~``), so that its score is
the local normaliser of the mean-field step, a lower bound on the predictive.
"""

from __future__ import annotations

import copy

import numpy as np

from .. import modelfile
from ..base import InduceEstimator, Integer, Options, Real, Seed
from ..durations import get_duration
from ..emissions import get_family
from ..errors import ConfigError
from ..infer.series import emission_rows
from ..infer.series_hsmm import (HSMM_ALGORITHMS, HSMMFit, duration_rows, hsmm_path, hsmm_posterior,
                                 hsmm_transitions, runs)
from .segmenter import HMMSegmenter, as_sequences, load_series_model, save_series_model



class HSMMSegmenter(InduceEstimator):
    """Hidden semi-Markov segmentation of numeric time series (paper 002 section 2.4).

    Parameters: ``n_states`` K (at least 2: no self-transitions); ``emission`` a family name or
    instance; ``durations`` ``poisson``, ``negbin`` or ``geometric``; ``max_duration`` D (messages cost
    O(T K D + T K^2)); ``r`` the negative binomial's fixed ``r``; ``infer`` ``em`` or ``vi``; ``alpha``
    the Dirichlet prior of transition rows; ``n_iter``/``tol`` the stopping rule
    (:class:`~induce.infer.convergence.ConvergenceMonitor`).

    Fitted attributes: ``family_``, ``durations_``, ``trans_counts_`` (K+1, K), ``stats_`` (K, n_stats),
    ``dur_stats_`` (K, 2), ``trace_``, ``n_iter_``, ``converged_``, ``warnings_``.
    """

    _parameter_constraints = {
        "n_states": Integer(2), "max_duration": Integer(1), "r": Real(0.0, min_open=True),
        "infer": Options(*HSMM_ALGORITHMS), "n_iter": Integer(1), "tol": Real(0.0), "alpha": Real(0.0, min_open=True),
        "random_state": Seed(),
    }  # n_states >= 2: an HSMM has no self-transitions

    def __init__(self, n_states: int = 3, emission="gaussian", durations: str = "poisson", max_duration: int = 50,
                 r: float = 2.0, infer: str = "em", n_iter: int = 100, tol: float = 1e-4, alpha: float = 1.0,
                 random_state: int = 0):
        self.n_states = n_states
        self.emission = emission
        self.durations = durations
        self.max_duration = max_duration
        self.r = r
        self.infer = infer
        self.n_iter = n_iter
        self.tol = tol
        self.alpha = alpha
        self.random_state = random_state

    def _duration_family(self):
        kw = {"r": float(self.r)} if self.durations == "negbin" else {}
        return get_duration(self.durations, int(self.max_duration), **kw)

    def fit(self, X, y=None):
        """Fit to one ``(T, d)`` array or a list of them."""
        seqs = as_sequences(X)
        family = copy.deepcopy(get_family(self.emission))
        seqs = [family.check_data(x) for x in seqs]
        family.default_prior(np.vstack(seqs))
        durations = self._duration_family()
        fit = HSMMFit(family, durations, int(self.n_states), infer=self.infer, alpha=float(self.alpha),
                      n_iter=int(self.n_iter), tol=float(self.tol), rng=np.random.default_rng(self.random_state))
        result = fit.run(seqs)
        self.family_, self.durations_ = family, durations
        self.trans_counts_, self.stats_, self.dur_stats_ = result.trans, result.stats, result.dur_stats
        self.trace_, self.n_iter_, self.converged_ = result.trace, result.n_iter, result.converged
        self.warnings_ = list(result.warnings)
        return self

    # ------------------------------------------------------------- decoding
    _check_fitted = HMMSegmenter._check_fitted

    def duration_params(self) -> dict:
        """Point duration parameters (the posterior mode)."""
        self._check_fitted()
        return self.durations_.point_estimate(self.dur_stats_)

    def mean_durations(self) -> np.ndarray:
        """Mean duration of every state under :meth:`duration_params` (untruncated)."""
        return self.durations_.mean(self.duration_params())

    def _each(self, X):
        self._check_fitted()
        logpi, logA = hsmm_transitions(self.infer, self.trans_counts_, float(self.alpha))
        logD = duration_rows(self.infer, self.durations_, self.dur_stats_)
        for x in as_sequences(X):
            yield logpi, logA, emission_rows(self.infer, self.family_, self.family_.check_data(x), self.stats_), logD

    def predict(self, X, decode: str = "viterbi") -> list[np.ndarray]:
        """State path of each sequence: the Viterbi segmentation, or (``decode="posterior"``)
        ``argmax_k q(x_t = k)``."""
        if decode not in ("viterbi", "posterior"):
            raise ConfigError(f"decode must be 'viterbi' or 'posterior', got {decode!r}")
        if decode == "posterior":
            return [hsmm_posterior(*p)[1].argmax(axis=1) for p in self._each(X)]
        return [hsmm_path(*p) for p in self._each(X)]

    def segments(self, X) -> list[list[tuple[int, int, int]]]:
        """``(start, end, state)`` rows (end exclusive) of each sequence's Viterbi segmentation."""
        return [runs(path) for path in self.predict(X)]

    def predict_proba(self, X) -> list[np.ndarray]:
        """Posterior state marginals ``q(x_t)`` of each sequence, ``(T, K)``."""
        return [hsmm_posterior(*p)[1] for p in self._each(X)]

    def log_likelihood(self, X) -> float:
        """Total ``log p(X)`` over the sequences (HSMM forward messages)."""
        return float(sum(hsmm_posterior(*p)[0] for p in self._each(X)))

    #: mean log-likelihood per step, or with ``context`` that of the continuation (as the HMM's)
    score = HMMSegmenter.score

    # ------------------------------------------------------------- model files
    #: this model's own arrays: the duration statistics (K, 2)
    _MODEL_ARRAYS = (modelfile.Field("dur_stats", "f8", ("K", 2), nonnegative=True),)
    save = save_series_model
    load = classmethod(load_series_model)

    def _restored(self) -> None:
        """After loading: the checked parameters and the duration family they name."""
        self._validate_params()
        self.durations_ = self._duration_family()

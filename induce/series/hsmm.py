"""``HSMMSegmenter``: an explicit-duration hidden semi-Markov model over numeric sequences.

Fitting runs :class:`induce.infer.series_hsmm.HSMMFit` (``em``, ``vi``, ``svi``, ``cvi2``, ``scvi``) with
any emission family of :mod:`induce.emissions` and any duration family of :mod:`induce.durations`;
:class:`~induce.series.hdp_hsmm.HDPHSMMSegmenter` the HDP-HSMM.  Decoding and scoring:
``em`` uses the MAP point estimates, so that :meth:`score` is the log-likelihood; the Bayesian algorithms
use the posterior means of the transitions, the collapsed emission predictive (thesis eq. 3.96) and the
collapsed duration predictive given all training statistics (the ``cvi2`` potentials, as the HMM's
:class:`~induce.series.HMMSegmenter`), so that :meth:`score` is the log-likelihood of that plug-in
predictive model, comparable across the Bayesian algorithms.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings

import numpy as np

from .. import modelfile
from ..base import AnyOf, Boolean, InduceEstimator, Integer, Options, Seed
from ..durations import NegBinLearnedR, get_duration
from ..emissions import get_family
from ..errors import ConfigError
from ..infer.convergence import FitWarning
from ..infer.series import emission_rows
from ..infer.hsmm_embed import NBEmbedFit, embed_path, embed_posterior, nb_chain, uses_embedding
from ..infer.series_hsmm import (HSMM_ALGORITHMS, HSMMFit, duration_rows, hsmm_path, hsmm_posterior,
                                 hsmm_transitions, log_survival, runs)
from .hmmlearn_api import SequenceInput
from .segmenter import HMMSegmenter, as_sequences, load_series_model, save_series_model

#: default largest learned ``r`` of the negative binomial durations; the default ``max_duration`` is the longest
#: sequence while the messages cost at most ``MESSAGE_BUDGET`` terms a pass (about a second), else
#: ``DURATION_MARGIN`` times the longest segment of the HMM's Viterbi path (docs/experiments/hsmm_defaults.md)
MAX_R = 3
MESSAGE_BUDGET = 3e7
DURATION_MARGIN = 4
#: the advice of the warnings about a short ``max_duration``
_RAISE_D = ("refit with a larger max_duration (--max-duration), or fixed-r negbin durations (--negbin-r R), which "
            "have no maximum")


def hmm_start(seqs: list[np.ndarray], emission, n_states: int, seed, infer: str = "vi") -> tuple[np.ndarray, int]:
    """The HMM fit an HSMM starts from: ``(gamma (sum T, K), longest)``, the HMM's posterior state marginals
    of the stacked sequences and the longest run of its Viterbi paths.

    An HSMM started from k-means labels takes its initial durations from their runs, which on a noisy series
    are a few steps long; a concentrated family (Poisson) then never leaves short segments (Nile: 20 segments
    from k-means, 2 from the HMM's start, docs/experiments/hsmm_defaults.md).  The HMM's segmentation is the
    geometric-duration special case of the HSMM, a start that flexible durations then refine."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # the start's own convergence is not the fit's
        hmm = HMMSegmenter(n_states, copy.deepcopy(emission), infer=infer, random_state=seed).fit(seqs)
    longest = max(e - s for path in hmm.predict(seqs) for s, e, _ in runs(path))
    return np.vstack(hmm.predict_proba(seqs)), longest


class HSMMSegmenter(SequenceInput, InduceEstimator):
    """Hidden semi-Markov segmentation of numeric time series (paper 002 section 2.4).

    Parameters: ``n_states`` K (at least 2: no self-transitions); ``emission`` a family name or
    instance; ``durations`` ``negbin`` (the default), ``poisson`` or ``geometric``; ``r`` the negative
    binomial's fixed ``r`` (an integer ``r`` runs on the HMM embedding for em/vi, :mod:`induce.infer.hsmm_embed`,
    with no maximum duration) or ``None`` (the default): ``r`` learned over ``1..max_r`` with ``q(r) q(p | r)``
    (paper 002 section 5.2), so each state's durations are geometric (``r = 1``, the HMM's) or more regular as
    the variational bound decides, by the exact update (``negbin_samples=0``: explicit-duration messages
    truncated at ``max_duration``) or the sampled update with ``negbin_samples`` models per pass or svi
    minibatch (vi or svi, on the embedding); ``max_duration`` D (messages cost O(T K D + T K^2)), ``None``
    (default): from the data, the longest sequence (no segment cut) unless that costs over
    :data:`MESSAGE_BUDGET` terms a pass, then :data:`DURATION_MARGIN` times the longest segment of the HMM's
    Viterbi path; ``infer`` ``em``, ``vi``, ``svi``, ``cvi2`` or ``scvi``; ``alpha`` the Dirichlet
    prior of transition rows; ``n_iter``/``tol`` the stopping rule
    (:class:`~induce.infer.convergence.ConvergenceMonitor`); ``batch_size``, ``tau``, ``kappa`` the svi/scvi
    schedule and ``subsequence_length`` the item length of svi/cvi2/scvi (as the HMM's); ``hmm_start`` (default
    ``True``): the fit starts from the posterior of the HMM with the same ``K`` (:func:`hmm_start`), else from
    the fit's own start (k-means; the HDP-HSMM: a random segmentation).  The defaults (learned ``r`` up to 3,
    the data's ``D``) come from docs/experiments/hsmm_defaults.md.

    Fitted attributes: ``family_``, ``durations_``, ``trans_counts_`` (K+1, K), ``stats_`` (K, n_stats),
    ``dur_stats_`` (K, 2; K, 2 + max_r with learned ``r``), ``max_duration_`` and ``max_duration_rule_`` (the
    ``D`` used and why), ``trace_``, ``n_iter_``, ``converged_``, ``warnings_`` (also: a decoded segment that
    reaches ``D``).
    """

    #: the checks of n_states, infer (per subclass), n_iter, tol, alpha, subsequence_length stay in _validate
    _parameter_constraints = {"max_duration": AnyOf(Options(None), Integer(1)), "max_r": Integer(1),
                              "random_state": Seed(), "hmm_start": Boolean()}

    def __init__(self, n_states: int = 3, emission="gaussian", durations: str = "negbin",
                 max_duration: int | None = None, r: float | None = None, infer: str = "em", n_iter: int = 100,
                 tol: float = 1e-4, alpha: float = 1.0, batch_size: int = 10, tau: float = 1.0, kappa: float = 0.6,
                 subsequence_length: int | None = None, random_state: int = 0, max_r: int = MAX_R,
                 negbin_samples: int = 0, hmm_start: bool = True):
        self.n_states = n_states
        self.emission = emission
        self.durations = durations
        self.max_duration = max_duration
        self.r = r
        self.infer = infer
        self.n_iter = n_iter
        self.tol = tol
        self.alpha = alpha
        self.batch_size = batch_size
        self.tau = tau
        self.kappa = kappa
        self.subsequence_length = subsequence_length
        self.random_state = random_state
        self.max_r = max_r
        self.negbin_samples = negbin_samples
        self.hmm_start = hmm_start

    def _duration_family(self, max_duration: int):
        kw = {"r": None if self.r is None else float(self.r), "max_r": self.max_r} if self.durations == "negbin" else {}
        return get_duration(self.durations, int(max_duration), **kw)

    def _validate(self):
        if int(self.n_states) < 2:
            raise ConfigError(f"an HSMM needs n_states >= 2 (no self-transitions), got {self.n_states}")
        if self.infer not in self._algorithms:
            raise ConfigError(f"{self._kind} infer must be one of {self._algorithms}, got {self.infer!r}")
        if int(self.n_iter) < 1 or not self.tol >= 0 or not self.alpha > 0:
            raise ConfigError("n_iter must be >= 1, tol >= 0 and alpha > 0")
        if self.subsequence_length is not None and int(self.subsequence_length) < 2:
            raise ConfigError(f"subsequence_length must be at least 2, got {self.subsequence_length}")
        if int(self.negbin_samples) < 0:
            raise ConfigError(f"negbin_samples must be >= 0, got {self.negbin_samples}")

    _algorithms, _kind = HSMM_ALGORITHMS, "HSMM"
    _start_infer = "vi"  # the HMM the fit starts from (:func:`hmm_start`)

    def _fit_object(self, family, durations, **common):
        if (uses_embedding(durations) and self.infer in ("em", "vi")) or (
                self.durations == "negbin" and int(self.negbin_samples) > 0):
            return NBEmbedFit(family, durations, int(self.n_states), alpha=float(self.alpha),
                              n_samples=int(self.negbin_samples), **common)
        return HSMMFit(family, durations, int(self.n_states), alpha=float(self.alpha), **common)

    def _keep(self, fit) -> None:
        """What the model keeps from its fit object beyond the statistics (nothing for the HSMM)."""

    def _run(self, fit, seqs):
        """``(fit object, result)`` of the fit (the HDP-HSMM's merge moves may replace the object)."""
        return fit, fit.run(seqs)

    def fit(self, X, y=None, lengths=None):
        """Fit to one ``(T, d)`` array, a list of them, or a stacked array with ``lengths`` (hmmlearn's form),
        starting from the HMM's fit (:func:`hmm_start`)."""
        self._validate()
        self._start_run()
        seqs = as_sequences(self._fit_sequences(X, y, lengths))
        family = copy.deepcopy(get_family(self.emission))
        seqs = [family.check_data(x) for x in seqs]
        family.default_prior(np.vstack(seqs))
        gamma0, longest = hmm_start(seqs, self.emission, int(self.n_states), self.random_state, self._start_infer)
        self.max_duration_, self.max_duration_rule_ = self._max_duration(seqs, longest)
        if longest > self.max_duration_ and not uses_embedding(self._duration_family(self.max_duration_)):
            self._warn_short_d(f"max_duration = {self.max_duration_} is shorter than the longest segment of the "
                               f"HMM's Viterbi path ({longest} steps), so such segments are cut into several")
        durations = self._duration_family(self.max_duration_)
        fit = self._fit_object(family, durations, infer=self.infer, n_iter=int(self.n_iter), tol=float(self.tol),
                               batch_size=int(self.batch_size), tau=float(self.tau), kappa=float(self.kappa),
                               subsequence_length=self.subsequence_length,
                               rng=np.random.default_rng(self.random_state),
                               init_gamma=gamma0 if self.hmm_start else None)
        fit, result = self._run(fit, seqs)
        self._keep(fit)
        self.family_, self.durations_ = family, durations
        self.trans_counts_, self.stats_, self.dur_stats_ = result.trans, result.stats, result.dur_stats
        self.trace_, self.n_iter_, self.converged_ = result.trace, result.n_iter, result.converged
        self.warnings_ += [w for w in result.warnings if w not in self.warnings_]
        self._check_labels(seqs)
        return self

    def _check_labels(self, seqs) -> None:
        """Checks of the fitted model's segmentation of its training series (none for the HSMM)."""

    def _max_duration(self, seqs, longest: int) -> tuple[int, str]:
        """``(D, why)``: ``max_duration`` when given; else the longest sequence ``T``, which cuts no segment,
        when the messages then cost at most :data:`MESSAGE_BUDGET` terms a pass (``K D`` a step); else
        :data:`DURATION_MARGIN` times the longest segment of the HMM's Viterbi path, at most ``T`` (at least 2).
        (The HMM's longest segment alone misleads when the HMM fragments a long segment: Nile at K = 4,
        docs/experiments/hsmm_defaults.md.)"""
        if self.max_duration is not None:
            return int(self.max_duration), "given"
        T = max(x.shape[0] for x in seqs)
        steps, K = sum(x.shape[0] for x in seqs), int(self.n_states)
        if steps * K * T <= MESSAGE_BUDGET:
            return T, f"the longest sequence: no segment is cut ({steps * K * T:.2g} message terms a pass)"
        D = max(2, min(T, DURATION_MARGIN * longest))
        return D, (f"{DURATION_MARGIN} x the HMM's longest Viterbi segment ({longest}): D = T = {T} would cost "
                   f"{steps * K * T:.2g} message terms a pass, over {MESSAGE_BUDGET:.0e}")

    # ------------------------------------------------------------- decoding
    _check_fitted = HMMSegmenter._check_fitted
    n_features_in_ = HMMSegmenter.n_features_in_
    _sequences = HMMSegmenter._sequences

    def duration_params(self) -> dict:
        """Point duration parameters (the posterior mode)."""
        self._check_fitted()
        return self.durations_.point_estimate(self.dur_stats_)

    def mean_durations(self) -> np.ndarray:
        """Mean duration of every state under :meth:`duration_params` (untruncated)."""
        return self.durations_.mean(self.duration_params())

    def duration_summary(self) -> dict:
        """The duration choices for a run's summary: the family, ``max_duration`` and why (``None`` on the
        embedding), the messages' cost, the mean durations and, for the negative binomial, each state's ``r``
        and why (fixed, or the mode of the learned ``q(r)`` with its probability)."""
        self._check_fitted()
        fam, K = self.durations_, int(self.n_states)
        out = {"durations": fam.name, "max_duration": None,
               "max_duration_rule": "none: fixed-r negbin durations run on the HMM embedding"}
        if not uses_embedding(fam):
            D = fam.max_duration
            out.update(max_duration=D, max_duration_rule=self.max_duration_rule_,
                       message_cost=f"O(T K D): {K * D} terms a step per pass (the HMM's: K^2 = {K * K})")
        out["mean_durations"] = [round(float(v), 3) for v in self.mean_durations()]
        if fam.name != "negbin":
            out["duration_choice"] = f"{fam.name}, as asked"
            return out
        if isinstance(fam, NegBinLearnedR):
            qr = np.exp(fam.log_qr(self.dur_stats_))
            r, prob = fam.rs[qr.argmax(axis=1)], qr.max(axis=1)
            used = np.flatnonzero(self.dur_stats_[:, 1] >= 0.5)  # states with a segment (the rest keep the prior)
            out["duration_choice"] = (f"negbin with r learned over 1..{fam.max_r} by the variational bound (r = 1: "
                                      f"geometric, the HMM's durations); the mode of q(r) of each state in use: "
                                      + ", ".join(f"{k}: r={int(r[k])} (q={prob[k]:.2f})" for k in used))
        else:
            r = np.full(K, fam.r)
            out["duration_choice"] = f"negbin with r = {fam.r:g} fixed, as asked"
        out["negbin_r"] = [float(v) for v in r]
        return out

    def _decode_rule(self) -> str:
        return "em" if self.infer == "em" else "cvi2"

    def _transitions(self, rule: str):
        return hsmm_transitions(rule, self.trans_counts_, float(self.alpha))

    def _each(self, seqs):
        """Per sequence ``(log pi, log A, emission rows, *durations)`` for :meth:`_decoders`: the chain of the
        embedding, or the duration rows and the last segment's.  Decoding and scoring treat the last segment
        as right-censored (it may go on past the end, as the HMM's does), so that ``score`` with ``context``
        is ``log p(X | context)`` of a process that goes on rather than one that must switch at the cut."""
        self._check_fitted()
        rule = self._decode_rule()
        logpi, logA = self._transitions(rule)
        if uses_embedding(self.durations_):  # fixed r: the embedding, no maximum duration
            dur = (dataclasses.replace(nb_chain(rule, self.durations_, self.dur_stats_), censored=True),)
        else:
            logD = duration_rows(rule, self.durations_, self.dur_stats_)
            dur = (logD, log_survival(logD))
        for x in seqs:
            yield (logpi, logA, emission_rows(rule, self.family_, self.family_.check_data(x), self.stats_), *dur)

    def _decoders(self):
        """``(posterior, path)`` functions of the duration family: the embedding's or the explicit HSMM's."""
        if uses_embedding(self.durations_):
            return embed_posterior, embed_path
        return hsmm_posterior, hsmm_path

    def _paths(self, seqs, decode: str) -> list[np.ndarray]:
        """The Viterbi segmentation of each sequence, or (``decode="posterior"``) ``argmax_k q(x_t = k)``
        (``predict``, :class:`~induce.series.hmmlearn_api.SequenceInput`)."""
        if decode == "posterior":
            paths = [self._decoders()[0](*p)[1].argmax(axis=1) for p in self._each(seqs)]
        else:
            paths = [self._decoders()[1](*p) for p in self._each(seqs)]
        self._warn_reached(paths)
        return paths

    def _warn_reached(self, paths) -> None:
        """One warning when a decoded segment is ``max_duration`` steps or longer in a sequence longer than that:
        the truncated messages cannot hold a longer one, so a longer segment was cut (the embedding has no
        maximum)."""
        if uses_embedding(self.durations_):
            return
        D = self.durations_.max_duration
        if any(e - s >= D for path in paths if len(path) > D for s, e, _ in runs(path)):  # else none was cut
            self._warn_short_d(f"a decoded segment reaches max_duration = {D} steps, so longer segments were cut")

    def _warn_short_d(self, why: str) -> None:
        """One warning per model that ``max_duration`` is too short (at fit or at decoding), with the fix."""
        if not any(w.endswith(_RAISE_D) for w in self.warnings_):
            self._warn(f"{why}; {_RAISE_D}")

    def segments(self, X, lengths=None) -> list[list[tuple[int, int, int]]]:
        """``(start, end, state)`` rows (end exclusive) of each sequence's Viterbi segmentation."""
        return [runs(path) for path in self._paths(self._sequences(self._split(X, lengths)[0]), "viterbi")]

    def _posteriors(self, seqs) -> list[np.ndarray]:
        """Posterior state marginals ``q(x_t)`` of each sequence, ``(T, K)``."""
        return [self._decoders()[0](*p)[1] for p in self._each(seqs)]

    def _log_likelihoods(self, seqs) -> list[float]:
        """``log p(x)`` of each sequence (HSMM forward messages)."""
        return [float(self._decoders()[0](*p)[0]) for p in self._each(seqs)]

    # ------------------------------------------------------------- hmmlearn's decode, aic, bic (SequenceInput)
    _emission_point = HMMSegmenter._emission_point

    def _n_parameters(self) -> int:
        """Free parameters of the point model: start K-1, transitions K(K-2) (no self-transitions), the
        emissions' and the durations' (per state: ``p`` or ``lam``, and ``r`` when it is learned).  The
        HDP-HSMM counts every state of its truncation."""
        K = int(self.n_states)
        durations = sum(np.size(v) for v in self.duration_params().values())  # a fixed r is no entry
        return (K - 1) + K * (K - 2) + self._emission_parameters() + durations

    def _path_log_probs(self, seqs, paths) -> list[float]:
        """``log p(x, z)`` of each sequence and its state path ``z`` under the decoding potentials.  Without
        self-transitions a state path is one segmentation: start, segment transitions, each segment's duration
        (the last one right-censored, as in decoding) and emissions.  On the embedding (fixed r), the forward
        pass of the embedded chain over the pseudo-states of ``z``'s states (the stages summed out)."""
        out = []
        for z, (logpi, logA, rows, *dur) in zip(paths, self._each(seqs)):
            if uses_embedding(self.durations_):
                own = np.arange(rows.shape[1]) == z[:, None]
                out.append(float(embed_posterior(logpi, logA, np.where(own, rows, -np.inf), *dur)[0]))
                continue
            logD, logLast = dur
            start, end, state = np.asarray(runs(z)).T
            d = end - start
            if d.max() > logD.shape[1]:  # a segment longer than max_duration has no potential
                out.append(-np.inf)
                continue
            log_d = logD[state, d - 1]
            log_d[-1] = logLast[state[-1], d[-1] - 1]
            out.append(float(logpi[state[0]] + logA[state[:-1], state[1:]].sum() + log_d.sum()
                             + rows[np.arange(len(z)), z].sum()))
        return out

    # ------------------------------------------------------------- model files
    #: this model's own arrays: the duration statistics (K, n_stats of the duration family)
    _MODEL_ARRAYS = (modelfile.Field("dur_stats", "f8", ("K", None), nonnegative=True),
                     modelfile.Field("max_duration", "f8", (), positive=True, optional=True))
    save = save_series_model
    load = classmethod(load_series_model)

    def _restored(self, arrays) -> None:
        """After loading: the checked parameters, the duration family they name and its statistics' width."""
        self._validate()
        arrays.setdefault("max_duration", np.float64(self.max_duration))  # files from before the data's default
        self.durations_ = self._duration_family(int(arrays["max_duration"]))
        self.max_duration_rule_, self.warnings_ = "saved model", []
        if arrays["dur_stats"].shape[1] != self.durations_.n_stats:
            raise ConfigError(f"dur_stats has {arrays['dur_stats'].shape[1]} columns; the duration family has "
                              f"{self.durations_.n_stats}")

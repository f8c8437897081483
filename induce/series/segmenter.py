"""``HMMSegmenter``: a scikit-learn style HMM over numeric sequences with any conjugate emission family.

Fitting runs :class:`induce.infer.series.SeriesFit`.  Decoding and scoring use the fitted statistics
through one rule per algorithm: ``em`` the MAP point estimates (transitions and ``log p(x | eta*)``);
the Bayesian algorithms (``vi``, ``cvi2``, ``svi``, ``scvi``) the posterior-mean transitions
``(C + a)/(C. + K a)`` and the collapsed posterior predictive of each step given all training
statistics (thesis eq. 3.96; Student-t, negative binomial, Dirichlet-categorical).
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.utils.validation import check_array

from .. import modelfile
from ..base import SCHEDULE, AnyOf, InduceEstimator, Integer, NotFittedError, Options, Real, Seed
from ..emissions import get_family
from ..errors import ConfigError, ModelFormatError
from ..infer.series import (ALGORITHMS, SeriesFit, chain_posterior, emission_rows, surrogate_transitions,
                            transition_params, viterbi_path)
from ..infer.series_hdp import HDPSeriesFit, HDPSVIFit
from ..names import SERIES_COLLAPSED, SERIES_HDP_ALGORITHMS
from .hmmlearn_api import SequenceInput

#: every ``infer`` value: the finite-HMM algorithms (the token-level collapsed ones last), batch and stochastic
#: CVI for the HDP-HMM
INFER = ALGORITHMS + SERIES_COLLAPSED + SERIES_HDP_ALGORITHMS
#: algorithms whose minibatch local steps run on a dask cluster with ``client=`` (:mod:`induce.distributed.series`)
CLUSTER_ALGORITHMS = ("svi", "scvi")


class SeriesInputError(ConfigError, ValueError, TypeError):
    """Series input refused at the boundary: an induce error for the CLI, and the ``ValueError`` (bad values,
    shapes) or ``TypeError`` (sparse, non-numeric) that scikit-learn's ``check_array`` would raise."""


def as_sequences(X, n_features: int | None = None, name: str = "the model") -> list[np.ndarray]:
    """One ``(T, d)`` array or a list of them, as a list of 2-D float arrays.

    Every array passes :func:`sklearn.utils.validation.check_array` (dense, real, finite, 2-D: one column
    is ``x.reshape(-1, 1)``, at least one row), all with the same ``d``; with ``n_features`` (what ``fit``
    saw) ``d`` must equal it.  Anything else raises :class:`SeriesInputError`."""
    if hasattr(X, "shape") and (getattr(X, "dtype", None) != object or len(X.shape) == 2):  # one array
        X = [X]
    try:
        seqs = [check_array(x, dtype=np.float64, ensure_all_finite=False) for x in X]
    except (TypeError, ValueError) as exc:
        raise SeriesInputError(str(exc)) from exc
    for i, x in enumerate(seqs):
        finite = np.isfinite(x).all(axis=1)
        if not finite.all():
            step = int(np.argmin(finite))
            raise SeriesInputError(f"array {i}, step {step}: expected finite values (no NaN or inf), "
                                   f"got {x[step].tolist()}")
    if not seqs:
        raise SeriesInputError("expected one or more non-empty (T, d) arrays")
    widths = sorted({x.shape[1] for x in seqs})
    if len(widths) > 1:
        raise SeriesInputError(f"every sequence needs the same columns, got {widths}")
    if n_features is not None and widths[0] != n_features:
        raise SeriesInputError(f"X has {widths[0]} features, but {name} is expecting {n_features} features as input")
    return seqs



# ----------------------------------------------------------------- model files of the series estimators
def _family_from_header(header: dict):
    """The emission family a header describes (its prior arrays come from the file's arrays)."""
    head = dict(header["family"])
    name = head.pop("name")
    head.pop("dim", None)
    return name, get_family(name, **head)


def _series_schema(fields_of_model):
    """The schema of a series model file: transition counts ``(K+1, K)``, emission statistics ``(K, n_stats)``
    (the family's width is checked once its prior is restored), the trace, the family's prior arrays
    (``prior_*``, shapes in the header) and the model's own ``fields_of_model``."""
    def schema(header: dict) -> modelfile.Schema:
        F = modelfile.Field
        fields = [F("trans_counts", "f8", ("K+1", "K"), nonnegative=True), F("stats", "f8", ("K", None)),
                  F("trace", "f8", (None,)), *fields_of_model]
        fields += [F(f"prior_{k}", "f8", tuple(int(n) for n in shape)) for k, shape in header["prior_shapes"].items()]
        return modelfile.Schema(fields, {"K": int(header["params"]["n_states"])})
    return schema


def save_series_model(self, path) -> None:
    """npz arrays + JSON header (no pickle), written atomically (:mod:`induce.modelfile`); the file's kind is
    the class name, its own arrays those of ``_MODEL_ARRAYS``."""
    self._check_fitted()
    arrays = {"trans_counts": self.trans_counts_, "stats": self.stats_, "trace": np.asarray(self.trace_, float)}
    arrays.update({f.name: np.asarray(getattr(self, f.name + "_"), dtype=np.float64) for f in self._MODEL_ARRAYS})
    arrays.update({f"prior_{k}": np.asarray(v, dtype=np.float64) for k, v in self.family_.prior_arrays().items()})
    header = {"params": {k: v for k, v in self.get_params().items() if k not in ("emission", "client")},
              "family": self.family_.header(), "n_iter_": self.n_iter_, "converged_": bool(self.converged_),
              "prior_shapes": {k[len("prior_"):]: list(v.shape) for k, v in arrays.items() if k.startswith("prior_")}}
    modelfile.save(path, type(self).__name__, header, arrays)


def load_series_model(cls, path):
    """Read a model written by :func:`save_series_model`; ``ModelFormatError`` unless it passes the schema.
    ``model._restored(arrays)`` (when defined) rebuilds what the model derives from its parameters."""
    try:
        with modelfile.reading(path, "header"):
            header, arrays = modelfile.load(path, cls.__name__, _series_schema(cls._MODEL_ARRAYS))
            name, family = _family_from_header(header)
            family.set_prior_arrays({k[len("prior_"):]: v for k, v in arrays.items() if k.startswith("prior_")})
            model = cls(emission=name, **header["params"])
            model.n_iter_ = int(header.get("n_iter_", 0))
            model.converged_ = bool(header.get("converged_", False))
            if arrays["stats"].shape[1] != family.n_stats:
                raise ValueError(f"stats has {arrays['stats'].shape[1]} columns; the {name} family has "
                                 f"{family.n_stats}")
            counts = family.counts(arrays["stats"])
            if np.any(counts < -1e-8 * max(1.0, float(np.abs(counts).sum()))):
                raise ValueError(f"stats holds negative state counts {counts.round(6).tolist()!r:.80}")
            if hasattr(model, "_restored"):
                model._restored(arrays)
    except ConfigError as exc:  # an unknown family or a bad hyperparameter in the header
        raise ModelFormatError(f"{path}: header: {exc}") from exc
    model.trans_counts_, model.stats_, model.family_ = arrays["trans_counts"], arrays["stats"], family
    for field in cls._MODEL_ARRAYS:
        value = arrays[field.name]
        setattr(model, field.name + "_", float(value) if value.ndim == 0 else value)
    model.trace_ = list(arrays["trace"])
    return model


class HMMSegmenter(SequenceInput, InduceEstimator):
    """Hidden Markov model segmentation of numeric time series.

    Parameters: ``n_states`` K; ``emission`` a family name (``gaussian``, ``diag-gaussian``,
    ``poisson``, ``categorical``) or an :class:`~induce.emissions.EmissionFamily` (hyperparameters
    left unset are data-scaled at fit); ``infer`` one of ``em, vi, cvi2, svi, scvi``, the token-level collapsed
    ``cvi1`` and ``cgs`` (:mod:`induce.algorithms.series_collapsed`; families with a compiled predictive), ``hdp-cvi``,
    ``hdp-scvi`` or ``hdp-svi`` (HDP-HMM truncated at ``n_states``, :mod:`induce.infer.series_hdp`, with
    the top-level concentration ``gamma`` and transition concentration ``sigma``: initial values that
    CVI/SCVI learn, fixed for SVI); ``alpha`` the
    symmetric Dirichlet prior of transition rows (finite HMM); ``n_iter``/``tol`` the iteration cap and the
    relative-change tolerance (:class:`~induce.infer.convergence.ConvergenceMonitor`, 3 calm passes); ``batch_size``, ``tau``, ``kappa`` the stochastic
    schedule (items per minibatch, ``None``: 10, on a cluster the largest that keeps 500 minibatches an epoch;
    ``rho_m = (tau + m + 1)^-kappa``); ``subsequence_length`` the
    item length for cvi2/svi/scvi (``None``: automatic, see :func:`~induce.infer.series.auto_subsequence_length`);
    ``client`` a ``dask.distributed.Client``: ``svi`` and ``scvi`` run each minibatch's local step on its workers,
    the items shipped to them once (:mod:`induce.distributed.series`; with one worker the fit equals the
    single-process fit), ``None`` (default): in this process, and dask is not imported.  Not saved with the model.

    ``infer`` defaults to ``vi``: on the real series of ``timeseries/`` its held-out
    log-likelihood is within 0.016 per step of em's on the Gaussian series and
    4 nats per step better on lynx, while cvi2, which must cut a single series
    into subsequences to leave it other counts, loses 0.03-0.07 on Nile and EuStock
    and splits Nile's single change point (docs/experiments/timeseries.md).

    Fitted attributes: ``family_`` (prior resolved), ``trans_counts_`` (K+1, K), ``stats_``
    (K, n_stats), ``trans_prior_`` (K,) and ``trans_prior_total_`` (the transition prior counts used
    for decoding: ``alpha``, or ``sigma G[pi_k]`` for the HDP-HMM), ``trace_``, ``n_iter_``, ``converged_``.
    """

    _parameter_constraints = {
        "n_states": Integer(1), "infer": Options(*INFER), "n_iter": Integer(1), "tol": Real(0.0),
        "alpha": Real(0.0, min_open=True), "subsequence_length": AnyOf(Options(None), Integer(2)),
        "gamma": Real(0.0, min_open=True), "sigma": Real(0.0, min_open=True), "random_state": Seed(), **SCHEDULE,
    }

    def __init__(self, n_states: int = 3, emission="gaussian", infer: str = "vi", n_iter: int = 100,
                 tol: float = 1e-4, alpha: float = 1.0, batch_size: int | None = None, tau: float = 1.0, kappa: float = 0.6,
                 subsequence_length: int | None = None, gamma: float = 1.0, sigma: float = 1.0,
                 random_state: int = 0, client=None):
        self.n_states = n_states
        self.emission = emission
        self.infer = infer
        self.n_iter = n_iter
        self.tol = tol
        self.alpha = alpha
        self.batch_size = batch_size
        self.tau = tau
        self.kappa = kappa
        self.subsequence_length = subsequence_length
        self.gamma = gamma
        self.sigma = sigma
        self.random_state = random_state
        self.client = client

    def fit(self, X, y=None, lengths=None):
        """Fit to one ``(T, d)`` array, a list of them, or hmmlearn's stacked array with ``lengths``
        (:mod:`induce.series.hmmlearn_api`; ``y`` is ignored)."""
        if self.client is not None and self.infer not in CLUSTER_ALGORITHMS:
            raise ConfigError(f"{self.infer} does not run on a cluster; with a client use one of "
                              f"{', '.join(CLUSTER_ALGORITHMS)}")
        seqs = as_sequences(self._fit_sequences(X, y, lengths))
        family = copy.deepcopy(get_family(self.emission))
        seqs = [family.check_data(x) for x in seqs]
        family.default_prior(np.vstack(seqs))
        self._start_run()
        # items per minibatch: 10 by default; on a cluster resolved once the items are cut (ClusterSeriesFit)
        common = dict(alpha=float(self.alpha), n_iter=int(self.n_iter), tol=float(self.tol),
                      batch_size=None if self.client is not None else self._resolve_batch_size(10, 0),
                      tau=float(self.tau), kappa=float(self.kappa),
                      subsequence_length=self.subsequence_length, rng=np.random.default_rng(self.random_state))
        if self.infer == "hdp-svi":
            fit = HDPSVIFit(family, int(self.n_states), gamma=float(self.gamma), sigma=float(self.sigma), **common)
        elif self.infer in ("hdp-cvi", "hdp-scvi"):
            fit = HDPSeriesFit(family, int(self.n_states), gamma=float(self.gamma), sigma=float(self.sigma),
                               stochastic=self.infer == "hdp-scvi", **common)
        elif self.infer in SERIES_COLLAPSED:
            from ..algorithms.series_collapsed import COLLAPSED

            fit = COLLAPSED[self.infer](family, int(self.n_states), alpha=float(self.alpha), n_iter=int(self.n_iter),
                                        tol=float(self.tol), rng=common["rng"])
        elif self.client is not None:
            from ..distributed.series import ClusterSeriesFit

            fit = ClusterSeriesFit(family, int(self.n_states), infer=self.infer, client=self.client,
                                   resolve_batch_size=lambda n: self._resolve_batch_size(10, n), **common)
        else:
            fit = SeriesFit(family, int(self.n_states), infer=self.infer, **common)
        result = fit.run(seqs)
        if self.client is not None:  # step overhead, per-worker steps per second and peak memory
            self.cluster_meter_ = fit.meter
        self.family_ = family
        self.trans_counts_ = result.trans
        self.stats_ = result.stats
        self.trans_prior_ = result.trans_prior
        self.trans_prior_total_ = float(result.trans_prior_total)
        self.trace_ = result.trace
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.warnings_ += [w for w in result.warnings if w not in self.warnings_]
        self._warn_cluster_overhead()
        return self

    # ------------------------------------------------------------- decoding
    def _check_fitted(self):
        """:class:`NotFittedError` unless fitted or loaded (shared by the series estimators)."""
        if not hasattr(self, "stats_"):
            raise NotFittedError.of(self)

    @property
    def n_features_in_(self) -> int:
        """Columns of the series seen by ``fit`` (scikit-learn's attribute; absent before fit)."""
        self._check_fitted()
        return int(self.family_.dim)

    def _sequences(self, X) -> list[np.ndarray]:
        """``X`` checked against the fitted model (:func:`as_sequences` with ``n_features_in_``)."""
        return as_sequences(X, self.n_features_in_, type(self).__name__)

    def _decode_rule(self) -> str:
        return "em" if self.infer == "em" else "cvi2"

    def _decoding_transitions(self) -> np.ndarray:
        """Transition parameters used for decoding, ``(K+1, K)`` with the start row first."""
        self._check_fitted()
        if self.infer == "em":
            return transition_params("em", self.trans_counts_, float(self.alpha))
        return surrogate_transitions(self.trans_counts_, self.trans_prior_, self.trans_prior_total_)

    def log_rows(self, X: np.ndarray) -> np.ndarray:
        """Per-step, per-state emission log-rows used for decoding and scoring."""
        self._check_fitted()
        return emission_rows(self._decode_rule(), self.family_, self.family_.check_data(X), self.stats_)

    def _each(self, seqs):
        A = self._decoding_transitions()
        return A, [self.log_rows(x) for x in seqs]

    def _paths(self, seqs, decode: str) -> list[np.ndarray]:
        A, rows = self._each(seqs)
        if decode == "posterior":
            return [chain_posterior(A, r)[1].argmax(axis=1) for r in rows]
        return [viterbi_path(A, r) for r in rows]

    def _posteriors(self, seqs) -> list[np.ndarray]:
        A, rows = self._each(seqs)
        return [chain_posterior(A, r)[1] for r in rows]

    def _log_likelihoods(self, seqs) -> list[float]:
        A, rows = self._each(seqs)
        return [float(chain_posterior(A, r)[0]) for r in rows]

    # ------------------------------------------------------------- hmmlearn's attributes (docs/hmmlearn.md)
    @property
    def startprob_(self) -> np.ndarray:
        """Start distribution ``(K,)`` of the decoding parameters, normalised."""
        A = self._decoding_transitions()
        return A[0] / A[0].sum()

    @property
    def transmat_(self) -> np.ndarray:
        """Transition matrix ``(K, K)`` of the decoding parameters, rows normalised (hmmlearn's layout)."""
        A = self._decoding_transitions()[1:]
        return A / A.sum(axis=1, keepdims=True)

    def _emission_point(self) -> dict[str, np.ndarray]:
        self._check_fitted()
        return self.family_.point_estimate(self.stats_, map=True)

    @property
    def means_(self) -> np.ndarray:
        """State means ``(K, d)`` (Gaussian emissions: the posterior mode)."""
        point = self._emission_point()
        if "means" not in point:
            raise AttributeError(f"{self.family_.name} emissions have no means_ (their parameters: {', '.join(point)})")
        return point["means"]

    @property
    def covars_(self) -> np.ndarray:
        """State covariance matrices ``(K, d, d)`` (full, as hmmlearn's ``covars_`` returns them for every
        covariance type; diagonal Gaussian emissions give diagonal matrices)."""
        point = self._emission_point()
        if "covars" in point:
            return point["covars"]
        if "vars" in point:
            return np.stack([np.diag(v) for v in point["vars"]])
        raise AttributeError(f"{self.family_.name} emissions have no covars_ (their parameters: {', '.join(point)})")

    def _n_parameters(self) -> int:
        """Free parameters of the point model: start K-1, transitions K(K-1), the emissions' (hmmlearn's count)."""
        K = int(self.n_states)
        return (K - 1) + K * (K - 1) + self._emission_parameters()

    def _path_log_probs(self, seqs, paths) -> list[float]:
        """``log p(x, z)`` of each sequence and its state path ``z``: start, transitions and emissions."""
        A, rows = self._each(seqs)
        logA = np.log(np.maximum(A, 1e-300))
        return [float(logA[0, z[0]] + logA[1 + z[:-1], z[1:]].sum() + r[np.arange(len(z)), z].sum())
                for z, r in zip(paths, rows)]

    def sample(self, n_samples: int = 1, random_state=None):
        """``(X, Z)``: ``n_samples`` steps drawn from the fitted point model (start, transitions, the
        emission family's point parameters), as hmmlearn's ``sample``; seeded by ``random_state`` (default:
        the model's)."""
        from ..errors import check_int, check_seed

        n = check_int("n_samples", n_samples, 1)
        rng = np.random.default_rng(check_seed("random_state", self.random_state if random_state is None
                                               else random_state))
        start, trans, point = self.startprob_, self.transmat_, self._emission_point()
        Z = np.empty(n, dtype=np.int64)
        Z[0] = rng.choice(len(start), p=start)
        for t in range(1, n):
            Z[t] = rng.choice(len(start), p=trans[Z[t - 1]])
        X = np.array([np.atleast_1d(self.family_.sample(point, int(z), rng)) for z in Z], dtype=np.float64)
        return X, Z

    # ------------------------------------------------------------- model files
    #: this model's own arrays (saved from and restored to the attribute of the same name plus ``_``)
    _MODEL_ARRAYS = (modelfile.Field("trans_prior", "f8", ("K",), positive=True),
                     modelfile.Field("trans_prior_total", "f8", (), positive=True))
    save = save_series_model
    load = classmethod(load_series_model)

"""Token-level collapsed algorithms for the series HMM, written once for every family with a compiled
predictive (:meth:`induce.emissions.base.EmissionFamily.predictive_kernel`: Gaussian, diagonal Gaussian,
Poisson): ``HMMSegmenter(infer="cgs" | "cvi1")``.

* ``cgs`` -- collapsed Gibbs sampling of the state sequence (thesis eq. 3.25): ``n_iter`` sweeps, every one
  run (a sampler has no stopping rule); the fit keeps the counts and statistics of the last sample;
* ``cvi1`` -- CVI algorithm 1 (thesis eq. 3.33, 3.37-3.39): a factorised ``q(z_t)`` per step updated against
  the expected counts of the others; it stops once the mean absolute change of ``q`` per step falls below
  ``tol`` (its trace), or after ``n_iter`` passes.

The transition rows (Dirichlet ``alpha``) and the emission parameters (the family's conjugate prior) are
integrated out; both start from the family's k-means responsibilities (:meth:`EmissionFamily.init_gamma`), as
the other series algorithms do, and sweep whole sequences (no subsequences: the counts left out are one step's).
The sweeps are :mod:`induce.kernels.series_collapsed`; the result is the
:class:`induce.infer.series.FitResult` the other series algorithms return, decoded by ``HMMSegmenter`` with the
posterior-mean transitions and the predictive rows (as cvi2).
"""

from __future__ import annotations

import numpy as np

from ..emissions.base import EmissionFamily
from ..errors import ConfigError
from ..infer.convergence import ConvergenceMonitor
from ..infer.series import FitResult
from ..kernels.series_collapsed import cgs_series_pass, cvi1_series_pass, hard_statistics, soft_statistics
from ..plugins import Registry
from .loop import SeriesLoop

#: the series HMM's collapsed algorithms by name (``HMMSegmenter(infer=...)``, ``induce segment --infer``)
COLLAPSED = Registry("collapsed series algorithm")


class CollapsedSeriesFit:
    """One fit of a collapsed algorithm: the family (prior resolved), ``n_states``, the transition prior
    ``alpha``, the pass cap ``n_iter``, the tolerance ``tol`` (cvi1), and the ``rng`` that seeds it.  A subclass
    (one per algorithm) defines ``_sweeps(X, F, bounds, gamma, result)``: the passes from the initial
    responsibilities ``gamma``, filling ``result``'s counts, statistics, trace and pass count."""

    def __init__(self, family: EmissionFamily, n_states: int, alpha: float = 1.0, n_iter: int = 100,
                 tol: float = 1e-4, rng: np.random.Generator | None = None):
        kernel = family.predictive_kernel()
        if kernel is None:
            raise ConfigError(f"--infer {self.name} needs a compiled posterior predictive; the {family.name} "
                              "family has none (use gaussian, diag-gaussian or poisson emissions)")
        self.family, self.K, self.alpha, self.n_iter, self.tol = family, int(n_states), float(alpha), n_iter, tol
        self.code, self.hyper = kernel
        self.rng = rng if rng is not None else np.random.default_rng(0)

    def run(self, sequences: list[np.ndarray]) -> FitResult:
        """Sweep the sequences from the k-means start; the counts and statistics without the prior."""
        X = np.ascontiguousarray(np.vstack(sequences), dtype=np.float64)
        ends = np.cumsum([x.shape[0] for x in sequences])
        bounds = np.stack([ends - [x.shape[0] for x in sequences], ends], axis=1).astype(np.int64)
        F = np.ascontiguousarray(self.family.features(X), dtype=np.float64)
        gamma = self.family.init_gamma(X, self.K, self.rng)
        result = FitResult(trans=None, stats=None, trans_prior=np.full(self.K, self.alpha),
                           trans_prior_total=self.K * self.alpha)
        self._sweeps(X, F, bounds, gamma, result)
        return result


@COLLAPSED.register("cgs")
class SeriesCGS(CollapsedSeriesFit):
    """Collapsed Gibbs sampling (:func:`induce.kernels.series_collapsed.cgs_series_pass`); the trace is the
    share of steps whose state changed in each sweep."""

    def _sweeps(self, X, F, bounds, gamma, result):
        cum = np.cumsum(gamma, axis=1)  # z_t ~ the initial responsibilities
        z = np.minimum((self.rng.random(len(X))[:, None] * cum[:, -1:] > cum).sum(axis=1), self.K - 1)
        C = np.zeros((self.K + 1, self.K), dtype=np.int64)
        S = np.zeros((self.K, F.shape[1]))

        def one_pass(it):
            hard_statistics(F, bounds, z, C, S)  # exact statistics each sweep (no drift of the float sums)
            return cgs_series_pass(X, F, bounds, z, C, S, self.alpha, self.code, self.hyper,
                                   int(self.rng.integers(2**31))) / len(X)

        loop = SeriesLoop("segment cgs", self.n_iter, ConvergenceMonitor(0.0), result.trace)  # every sweep runs
        loop.run("changed_states", one_pass)
        loop.finish(result)
        hard_statistics(F, bounds, z, C, S)
        result.trans, result.stats = C.astype(np.float64), S


@COLLAPSED.register("cvi1")
class SeriesCVI1(CollapsedSeriesFit):
    """CVI algorithm 1 (:func:`induce.kernels.series_collapsed.cvi1_series_pass`); the trace is the mean
    absolute change of ``q`` per step, and the fit converges once it is below ``tol``."""

    def _sweeps(self, X, F, bounds, q, result):
        q = np.ascontiguousarray(q / q.sum(axis=1, keepdims=True))
        G = np.zeros((self.K + 1, self.K))
        S = np.zeros((self.K, F.shape[1]))
        loop = SeriesLoop("segment cvi1", self.n_iter, ConvergenceMonitor(
            self.tol, reference="below", measure="mean change of q per step"), result.trace)
        loop.run("mean_abs_change", lambda it: cvi1_series_pass(X, F, bounds, q, G, S, self.alpha, self.code,
                                                               self.hyper))
        loop.finish(result)
        soft_statistics(F, bounds, q, G, S)
        result.trans, result.stats = G, S

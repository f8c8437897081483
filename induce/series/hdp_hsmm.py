"""``HDPHSMMSegmenter``: the HDP-HSMM (paper 002 section 4), :class:`~induce.series.hsmm.HSMMSegmenter` with the
HDP prior on the transitions (:mod:`induce.infer.series_hdp_hsmm`) and the merge, split and delete moves of
:mod:`induce.infer.hsmm_merge`."""

from __future__ import annotations

import numpy as np

from .. import modelfile
from ..base import Boolean
from ..errors import ConfigError
from ..infer.hdp import effective_states, labels_collapsed
from ..infer.hsmm_merge import delete_moves, merge_moves, posterior
from ..infer.series_hdp_hsmm import HDP_HSMM_ALGORITHMS, HDPHSMMFit, hdp_hsmm_transitions
from ..names import HDP_HSMM_N_ITER
from .hsmm import MAX_R, HSMMSegmenter


class HDPHSMMSegmenter(HSMMSegmenter):
    """The HDP-HSMM (paper 002 section 4) truncated at ``n_states``: :class:`HSMMSegmenter`'s parameters
    (``alpha`` unused) plus ``gamma`` (top-level concentration) and ``sigma`` (transition concentration,
    J&W's ``alpha``), their starting values, learned by empirical Bayes on the bound once the objective has
    first gained (batch; svi and scvi after the first epoch) unless ``learn_hyper=False``
    (:class:`~induce.infer.series_hdp_hsmm.HDPHSMMFit`; docs/experiments/hsmm.md); ``infer`` ``vi``, ``svi``,
    ``cvi2`` or ``scvi``; ``n_iter`` defaults to ``induce.names.HDP_HSMM_N_ITER`` (200: the learned ``sigma`` creeps
    to its fixed point on short series).
    Extra fitted attributes: ``stick_`` (K+1,) the point-estimated top-level weights ``b*`` (the last entry the
    rest), ``gamma_`` and ``sigma_`` (the concentrations the fit ended with), ``merges_`` and ``splits_`` (the
    moves kept), ``deletes_`` (the states the delete moves emptied after cvi2/scvi,
    :func:`induce.infer.hsmm_merge.delete_moves`); :meth:`effective_states` the number of states in use."""

    def __init__(self, n_states: int = 10, emission="gaussian", durations: str = "negbin",
                 max_duration: int | None = None, r: float | None = None, infer: str = "vi",
                 n_iter: int = HDP_HSMM_N_ITER,
                 tol: float = 1e-4, alpha: float = 1.0, batch_size: int = 10, tau: float = 1.0, kappa: float = 0.6,
                 subsequence_length: int | None = None, gamma: float = 1.0, sigma: float = 1.0,
                 random_state: int = 0, max_r: int = MAX_R, hmm_start: bool = True, learn_hyper: bool = True,
                 merge: bool = True):
        super().__init__(n_states, emission, durations, max_duration, r, infer, n_iter, tol, alpha, batch_size, tau,
                         kappa, subsequence_length, random_state, max_r, hmm_start=hmm_start)
        self.gamma = gamma
        self.sigma = sigma
        self.learn_hyper = learn_hyper
        self.merge = merge

    _algorithms, _kind = HDP_HSMM_ALGORITHMS, "HDP-HSMM"
    _parameter_constraints = HSMMSegmenter._parameter_constraints | {"learn_hyper": Boolean(), "merge": Boolean()}

    def _validate(self):
        super()._validate()
        if not (self.gamma > 0 and self.sigma > 0):
            raise ConfigError(f"gamma and sigma must be positive, got {self.gamma}, {self.sigma}")

    def _fit_object(self, family, durations, **common):
        return HDPHSMMFit(family, durations, int(self.n_states), gamma=float(self.gamma), sigma=float(self.sigma),
                          learn_hyper=bool(self.learn_hyper), **common)

    def _keep(self, fit) -> None:
        self.stick_, self.gamma_, self.sigma_ = fit.b, fit.gamma, fit.sigma

    def _run(self, fit, seqs):
        """With ``merge``: batch vi with merge and split moves (:func:`induce.infer.hsmm_merge.merge_moves`) from
        the start; vi keeps that fit, the other algorithms start from it, and cvi2/scvi end with delete moves
        (:func:`induce.infer.hsmm_merge.delete_moves`).  ``merges_``, ``splits_``: the ``(k, l)`` moves kept;
        ``deletes_``: the states deleted."""
        self.deletes_ = []
        if not self.merge:
            self.merges_, self.splits_ = [], []
            return fit, fit.run(seqs)
        vi_fit, result, moves = merge_moves(fit, seqs)
        self.merges_, self.splits_ = ([(k, l) for kind, k, l in moves if kind == which]
                                      for which in ("merge", "split"))
        if fit.infer == "vi":
            return vi_fit, result
        # the whole merged vi fit is the start: its posterior, stick and concentrations (from a uniform stick
        # the states the moves emptied are as likely a priori as the used ones, and cvi2 refills them)
        fit.init_gamma, fit.init_stick = posterior(vi_fit, result, seqs), vi_fit.b
        fit.gamma, fit.sigma = vi_fit.gamma, vi_fit.sigma
        result = fit.run(seqs)
        if fit.infer in ("cvi2", "scvi"):
            self.deletes_ = delete_moves(fit, result, seqs)
        return fit, result

    def _restored(self, arrays) -> None:
        """As the HSMM's; files from before the learned concentrations hold the given ones."""
        super()._restored(arrays)
        arrays.setdefault("gamma", np.float64(self.gamma))
        arrays.setdefault("sigma", np.float64(self.sigma))

    def _transitions(self, rule: str):
        return hdp_hsmm_transitions(rule, self.trans_counts_, self.stick_, float(self.sigma_))

    def _check_labels(self, seqs) -> None:
        """One warning when the Viterbi segments of the training series use far fewer states than the fit holds
        (:func:`induce.infer.hdp.labels_collapsed`)."""
        message = labels_collapsed(np.concatenate(self._paths(seqs, "viterbi")), self.effective_states())
        if message is not None:
            self._warn(f"{message}; compare --decode posterior")

    def effective_states(self, coverage: float = 0.99) -> int:
        """Fewest states covering ``coverage`` of the expected steps (thesis 5.5.1)."""
        self._check_fitted()
        return effective_states(self.family_.counts(self.stats_), coverage)

    _MODEL_ARRAYS = HSMMSegmenter._MODEL_ARRAYS + (modelfile.Field("stick", "f8", ("K+1",), positive=True),
                                                   modelfile.Field("gamma", "f8", (), positive=True, optional=True),
                                                   modelfile.Field("sigma", "f8", (), positive=True, optional=True))

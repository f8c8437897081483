"""What :class:`induce.taggers.HMMTagger`'s hyperparameters resolve to for a fit: the checks every HMM-family
tagger shares, the pass and epoch caps, the tolerance and stopping rule, the starting priors (checked), the
algorithm ``infer`` names and the read-only settings the algorithm gets (a mixin of the estimator;
docs/architecture.md)."""

from __future__ import annotations

from types import SimpleNamespace

from ..algorithms import Priors, get_algorithm
from ..corpus.corpus import Corpus
from ..errors import ConfigError
from ..infer import stochastic_hmm as stochastic
from ..infer.convergence import ConvergenceMonitor
from .tag_dict import TagDictionary
from .hmm_defaults import (DEFAULT_MAX_ITER, FAMILY_MAX_ITER, MAX_EPOCHS, MAX_ITER, PLANNED_EPOCHS, STOCHASTIC_PATIENCE,
                           STOCHASTIC_TOL, TOL, start_priors)

#: algorithms with a minibatch schedule (no per-sentence statistics kept)
STOCHASTIC_ALGORITHMS = stochastic.STOCHASTIC + stochastic.SINGLE_SEQUENCE


class HMMSettings:
    """The shared checks and the resolved caps, tolerance, stopping rule, priors and algorithm of an HMM
    tagger's fit."""

    def _validate_shared(self, corpus: Corpus) -> None:
        """Checks common to every HMM-family tagger: a non-empty corpus, the gold column."""
        if corpus.n_tokens == 0:
            raise ConfigError("cannot fit a tagger on an empty corpus")
        if self.eval_column is not None and self.eval_column not in corpus.tags:
            raise ConfigError(
                f"corpus has no gold column {self.eval_column!r}; it has {sorted(corpus.tags) or 'no gold tags'}"
            )

    def _max_iter(self) -> int:
        """``n_iter``, or where it is ``None`` the algorithm's default cap (:data:`DEFAULT_MAX_ITER`; a
        non-categorical emission family's own, :data:`FAMILY_MAX_ITER`)."""
        if self.n_iter is not None:
            return int(self.n_iter)
        family = getattr(self, "emission", "categorical")  # (subclasses without emission families)
        return FAMILY_MAX_ITER.get(family) or DEFAULT_MAX_ITER.get(self.infer, MAX_ITER)

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

    def _init_hyper(self) -> Priors:
        """The priors this fit starts from (:func:`~induce.taggers.hmm_defaults.start_priors`), stored as
        ``alpha_`` / ``beta_`` and ``learned_hyper_`` (the names of those it learns)."""
        if self.learn_hyper == "per-state" and self.infer != "cvi2":
            raise ConfigError(f"learn_hyper='per-state' (an emission concentration per state) needs infer='cvi2', "
                              f"not {self.infer!r}")
        priors, warning = start_priors(self.infer, self.alpha, self.beta, self.learn_hyper, self.map_estimate,
                                       self.n_states_, self.hyper_burn_in)
        if warning:
            self._warn(warning)
        self.alpha_, self.beta_, self.learned_hyper_ = priors.alpha, priors.beta, priors.learned
        return priors

    def _algorithm(self):
        """The inference algorithm ``infer`` names (:mod:`induce.algorithms`)."""
        return get_algorithm(self.infer)

    def _settings(self) -> SimpleNamespace:
        """What the algorithms read of this estimator: its hyperparameters, with the caps and the tolerance
        resolved (``None``: the algorithm's default), the stopping rule's patience and the fitted vocabulary
        (for dask workers)."""
        return SimpleNamespace(**(self.get_params(deep=False) | dict(
            max_iter=self._max_iter(), max_epochs=self._max_epochs(), planned_epochs=self._planned_epochs(),
            tol=self._tol(), patience=STOCHASTIC_PATIENCE, vocab=self.vocab_)))


def check_y(y) -> None:
    """``fit``'s ``y`` is scikit-learn's ignored target; a tag dictionary there (the old second argument) must be
    passed as ``tag_dict=`` instead of being ignored."""
    if isinstance(y, TagDictionary):
        raise ConfigError("pass the tag dictionary by keyword: fit(corpus, tag_dict=...); the second argument "
                          "is scikit-learn's y, which is ignored")

"""The emission families of :class:`induce.taggers.HMMTagger` other than the categorical one (a mixin of the
estimator): ``emission="features"``, the log-linear emissions of Berg-Kirkpatrick et al. (NAACL 2010;
:mod:`induce.emissions.features`, trained by :mod:`induce.algorithms.features`).  ``emission="embeddings"`` (Gaussian
emissions over word vectors) takes its own route through the series engine: :mod:`induce.taggers.hmm_vectors`.

A new family is a name in :data:`EMISSIONS` and one branch in :meth:`EmissionChoice._emission_algorithm` and
:meth:`EmissionChoice._set_family_parameters`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..algorithms.features import FeatureHMM
from ..base import Constraint
from ..emissions.features import FeatureSet, LogLinear
from ..errors import ConfigError
from ..names import FEATURE_FITS, TEXT_EMISSIONS

#: the emission families of the text HMM (``emission=``, ``induce tag --emission``)
EMISSIONS = TEXT_EMISSIONS
#: the L2 strength ``kappa`` when ``feature_l2`` is ``None`` (docs/experiments/features.md: kappa 1 against 3
#: on ptb-sample, EWT and the nine UD treebanks)
DEFAULT_FEATURE_L2 = 1.0
#: the algorithms the feature family trains with (``feature_fit`` picks Algorithm 1 or 2 of the paper)
FEATURE_INFER = ("em",)


class FeatureSpec(Constraint):
    """``features=``: ``None`` (the default templates), a feature file's path, a sequence of template names, or a
    callable ``word -> iterable of feature names``."""

    expected = "None, a feature file's path, a list of feature templates or a callable word -> feature names"

    def accepts(self, value) -> bool:
        return (value is None or callable(value) or isinstance(value, (str, Path))
                or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)))


class EmissionChoice:
    """Which emission family a text HMM uses and what it needs beyond the categorical path."""

    def _check_emission(self, tag_dict) -> None:
        """Refuse what the chosen family does not support."""
        if self.emission != "features":
            return
        if self.infer not in FEATURE_INFER:
            raise ConfigError(f"emission='features' trains with infer='em' (feature_fit='em': EM with an L-BFGS "
                              f"M-step; 'direct': L-BFGS on the marginal likelihood), not infer={self.infer!r}")
        if tag_dict is not None:
            raise ConfigError("emission='features' takes no tag dictionary yet")
        if self.client is not None:
            raise ConfigError("emission='features' trains in this process (no client); the cluster runs the "
                              "categorical emissions")

    def _emission_algorithm(self):
        """The training algorithm of a non-categorical family, built for the fitted vocabulary ``vocab_``;
        ``None`` for the categorical family (its algorithm is the one ``infer`` names)."""
        if self.emission != "features":
            return None
        feats = FeatureSet(self.features)
        F, self.feature_names_ = feats.matrix(self.vocab_.itos, self.vocab_.counts)
        self.feature_spec_ = feats.spec()
        self._loglin = LogLinear(F, self._feature_l2())
        return FeatureHMM(self._loglin, self.feature_fit)

    def _feature_l2(self) -> float:
        return DEFAULT_FEATURE_L2 if self.feature_l2 is None else float(self.feature_l2)

    def _set_family_parameters(self) -> bool:
        """Point parameters of a non-categorical family (``False``: categorical, the caller sets them).

        Features: the algorithm's final transitions and ``p(w | k)`` of the weights; the unseen-word row is
        each state's mean probability of the words seen once (a new word is most like a rare one)."""
        if self.emission != "features":
            return False
        B = self._loglin.probs(np.ascontiguousarray(self.feature_weights_.T))
        hapax = self.vocab_.counts == 1
        unseen = B[hapax].mean(axis=0) if hapax.any() else B.min(axis=0)
        self.transitions_ = np.ascontiguousarray(self.feature_transitions)
        self.emissions_ = np.ascontiguousarray(np.vstack([B, unseen[None, :]]))
        del self.feature_transitions
        return True

    def _unseen_rows(self, words: list[str]) -> np.ndarray | None:
        """``p(w | k)`` (``len(words) x K``) of words unseen in training, from their features (paper eq. 2, under
        the training vocabulary's normaliser ``Z_k = sum_w exp(lambda_k . f(w))``; features the training never
        saw, such as the new word's identity, weigh nothing).  ``None`` when the features were a callable that
        a loaded model does not have (such words share the fitted unseen-word row)."""
        if self.feature_spec_["kind"] == "callable" and not callable(self.features):
            return None
        index = {name: d for d, name in enumerate(self.feature_names_)}
        counts = np.concatenate([self.vocab_.counts, np.zeros(len(words), dtype=np.int64)])
        F, names = FeatureSet(self.features).matrix(list(self.vocab_.itos) + list(words), counts)
        keep = np.array([index.get(name, -1) for name in names], dtype=np.int64)
        F = F[:, np.flatnonzero(keep >= 0)]
        scores = np.asarray(F @ self.feature_weights_.T[keep[keep >= 0]])
        W = len(self.vocab_)
        top = scores[:W].max(axis=0)
        log_z = top + np.log(np.exp(scores[:W] - top).sum(axis=0))
        return np.exp(scores[W:] - log_z)

    def top_features(self, n: int = 5) -> list[list[str]]:
        """Per state, the ``n`` features of largest weight (``emission="features"``)."""
        self._check_fitted()
        if self.emission != "features":
            raise ConfigError(f"top_features needs emission='features'; this model's emission is {self.emission!r}")
        order = np.argsort(-self.feature_weights_, axis=1)[:, :n]
        return [[self.feature_names_[d] for d in row] for row in order]


__all__ = ["EMISSIONS", "FEATURE_FITS", "DEFAULT_FEATURE_L2", "EmissionChoice", "FeatureSpec"]

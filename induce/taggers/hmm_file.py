"""The model file of :class:`induce.taggers.HMMTagger`: one ``.npz`` of arrays and a JSON header
(:mod:`induce.modelfile`), checked against :meth:`HMMFile._schema` when read."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import modelfile
from ..corpus.vocab import Vocabulary
from ..modelfile import Field
from .hmm_defaults import default_priors


class HMMFile:
    """``save`` / ``load`` of a fitted HMM tagger (a mixin of :class:`~induce.taggers.HMMTagger`): the
    hyperparameters ``_PARAMS``, the vocabularies, the trace, the learned priors and the arrays."""

    _PARAMS = ("n_states", "infer", "n_iter", "tol", "alpha", "beta", "learn_hyper", "hyper_burn_in", "decode", "map_estimate", "cgs_keep", "order",
               "cvi2_block", "random_state", "batch_size", "tau", "kappa", "n_epochs", "heldout_fraction",
               "heldout_max_tokens", "max_batches", "subseq_length", "buffer", "emission", "feature_l2",
               "feature_fit")

    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """Arrays of a saved model: ``K`` states (the tag dictionary's tags if it had one), ``W`` words.

        Transitions ``(K+1, K)`` (row 0 = start) are rows of probabilities
        except under ``vi`` (sub-normalised, thesis eq. 3.21); emissions
        ``(W+1, K)`` end with the unseen-word row; ``allowed`` is the
        ``(W, K)`` tag-dictionary mask or empty; ``feature_weights`` (``emission="features"``) the ``(K, D)``
        weights of the ``D`` features the header's ``features.names`` lists (categorical models: absent).
        """
        tags = header["tags"]
        K = len(tags["items"]) if tags is not None else int(header["params"]["n_states"])
        stochastic = None if header["params"]["infer"] == "vi" else 1
        features = header.get("features")
        return modelfile.Schema((
            Field("transitions", "f8", ("K+1", "K"), nonnegative=True, stochastic_axis=stochastic),
            Field("emissions", "f8", ("W+1", "K"), nonnegative=True),
            Field("transition_counts", "f8", ("K+1", "K"), nonnegative=True),
            Field("emission_counts", "f8", ("W", "K"), nonnegative=True),
            Field("allowed", "u1", ("W", "K") if tags is not None else (0, 0)),
        ) + ((Field("feature_weights", "f8", ("K", "D")),) if features else ()),
            {"K": K, "W": len(header["vocab"]["items"]), "D": len(features["names"]) if features else 0})

    def save(self, path: str | Path) -> None:
        """Write the model as one ``.npz`` (arrays + a JSON header), atomically, without pickle."""
        self._check_fitted()
        header = {
            "params": {k: getattr(self, k) for k in self._PARAMS} | {"temperature": list(self.temperature)},
            "vocab": self.vocab_.to_json(),
            "tags": self.tag_vocab_.to_json() if self.tag_vocab_ is not None else None,
            "features": ({"spec": self.feature_spec_, "names": self.feature_names_}
                         if self.emission == "features" else None),
            "trace": self.trace_,
            "learned": {"alpha_": self.alpha_, "beta_": np.asarray(self.beta_).tolist(), "n_iter_": self.n_iter_,
                        "converged_": self.converged_, "warnings_": self.warnings_},
        }
        features = {"feature_weights": self.feature_weights_} if self.emission == "features" else {}
        modelfile.save(path, "HMMTagger", header, {
            "transitions": self.transitions_,
            "emissions": self.emissions_,
            "transition_counts": self.transition_counts_,
            "emission_counts": self.emission_counts_,
            "allowed": self.allowed_,
        } | features)

    @classmethod
    def load(cls, path: str | Path) -> "HMMTagger":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        header, arrays = modelfile.load(path, "HMMTagger", cls._schema)
        with modelfile.reading(path, "header"):
            params = dict(header["params"])
            params["temperature"] = tuple(params["temperature"])
            features = header.get("features")
            if features is not None:
                spec = features["spec"]
                params["features"] = list(spec["templates"]) if spec["kind"] == "templates" else None
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
        if features is not None:
            model.feature_weights_ = arrays["feature_weights"]
            model.feature_names_, model.feature_spec_ = list(features["names"]), features["spec"]
        model.n_states_ = model.transitions_.shape[1]
        model.n_iter_ = int(learned.get("n_iter_", model._max_iter()))
        model.converged_ = bool(learned.get("converged_", False))
        model.warnings_ = list(learned.get("warnings_", []))
        return model

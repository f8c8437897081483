"""The model file of :class:`induce.taggers.HDPHMMTagger`: one ``.npz`` of arrays and a JSON header
(:mod:`induce.modelfile`), checked against :meth:`HDPHMMFile._schema` when read; files of older versions load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import modelfile
from ..corpus.vocab import Vocabulary
from ..modelfile import Field
from .hmm import _NO_MASK

if TYPE_CHECKING:
    from .hdp_hmm import HDPHMMTagger


class HDPHMMFile:
    """``save`` / ``load`` of a fitted HDP-HMM tagger (a mixin of :class:`~induce.taggers.HDPHMMTagger`): the
    hyperparameters ``_PARAMS``, the fitted scalars ``_FITTED``, the vocabulary, the trace and the arrays."""

    _PARAMS = ("truncation", "infer", "n_iter", "tol", "gamma", "sigma", "beta", "emission_prior", "emission_concentration",
               "new_word_mass",
               "fix_hyper", "hyper_burn_in", "qc", "qc_samples", "table_estimate", "table_samples",
               "batch_size", "tau", "kappa", "coverage", "n_init", "merge_moves",
               "scvi_memory", "decode", "order", "random_state")
    _ARRAYS = ("transitions_", "emissions_", "transition_counts_", "emission_counts_", "stick_u_", "stick_v_",
               "stick_order_", "state_prior_", "qc_positive_", "emission_base_")
    _FITTED = ("gamma_", "sigma_", "effective_states_", "emission_concentration_", "emission_new_mass_", "n_iter_",
               "converged_")

    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """Arrays of a saved model: ``K`` states (as many as the transitions have), ``W`` words.

        Transitions ``(K+1, K)`` keep the stick remainder (rows sum below 1),
        emissions ``(W+1, K)`` end with the unseen-word row; ``stick_order``
        is a permutation of the states; ``emission_base`` (``tau``, W+1
        entries) is missing in files saved before the asymmetric prior.
        ``svi`` (a point estimate of the top-level weights) and ``beam`` (sampled
        weights) keep no sticks, and ``svi`` no ``q(C > 0)``: those arrays are empty.
        """
        infer = header["params"].get("infer")
        sticks = ("K",) if infer in ("cvi", "scvi") else (0,)
        return modelfile.Schema((
            Field("transitions", "f8", ("K+1", "K"), nonnegative=True),
            Field("emissions", "f8", ("W+1", "K"), nonnegative=True),
            Field("transition_counts", "f8", ("K+1", "K"), nonnegative=True),
            Field("emission_counts", "f8", ("W", "K"), nonnegative=True),
            Field("stick_u", "f8", sticks, nonnegative=True),
            Field("stick_v", "f8", sticks, nonnegative=True),
            Field("stick_order", "i8", ("K",), bound="K"),
            Field("state_prior", "f8", ("K",), nonnegative=True),
            Field("qc_positive", "f8", (0 if infer == "svi" else "K+1", "K"), nonnegative=True),
            Field("emission_base", "f8", ("W+1",), nonnegative=True, optional=True),
        ), {"W": len(header["vocab"]["items"])})

    def save(self, path: str | Path) -> None:
        """Write the model as one ``.npz`` (arrays + a JSON header), atomically, without pickle."""
        self._check_fitted()
        meta = {
            "params": {k: getattr(self, k) for k in self._PARAMS},
            "fitted": {k: getattr(self, k) for k in self._FITTED},
            "vocab": self.vocab_.to_json(),
            "trace": json.loads(json.dumps(self.trace_, default=float)),
            "init_objectives": [float(x) for x in getattr(self, "init_objectives_", [])],
        }
        modelfile.save(path, "HDPHMMTagger", meta, {k.rstrip("_"): getattr(self, k) for k in self._ARRAYS})

    @classmethod
    def load(cls, path: str | Path) -> "HDPHMMTagger":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        meta, arrays = modelfile.load(path, "HDPHMMTagger", cls._schema)
        with modelfile.reading(path, "header"):
            # files saved before new_word_mass existed used the fixed unit mass of Teh et al. (2008), and
            # files saved before emission_concentration existed started Dir(beta tau) at W beta
            asymmetric = meta["params"].get("emission_prior") == "asymmetric"
            legacy = {"new_word_mass": 1.0, "emission_concentration": "symmetric" if asymmetric else None}
            model = cls(**(legacy | meta["params"]))
            model.emission_new_mass_ = 1.0
            for k, val in meta["fitted"].items():
                setattr(model, k, val)
            if "emission_base" not in arrays:  # saved before the asymmetric prior existed: symmetric Dir(beta)
                W = arrays["emission_counts"].shape[0]
                arrays["emission_base"] = np.full(W + 1, 1.0 / W)
                model.emission_concentration_ = model.beta * W
            for k in cls._ARRAYS:
                setattr(model, k, arrays[k.rstrip("_")])
            model.init_objectives_ = meta.get("init_objectives", [])
            model.vocab_ = Vocabulary.from_json(meta["vocab"])
            model.trace_ = meta["trace"]
        model.tag_vocab_ = None
        model.allowed_ = _NO_MASK
        model.n_states_ = model.transitions_.shape[1]
        if "n_iter_" not in meta["fitted"]:  # saved before the stopping rule: all n_iter passes ran
            model.n_iter_, model.converged_ = len(model.trace_), False
        return model

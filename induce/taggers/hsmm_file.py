"""The model file of :class:`induce.taggers.hsmm_tagger.HSMMTagger`: one ``.npz`` of arrays and a JSON header
(:mod:`induce.modelfile`, kind ``HSMMTagger``), checked against :meth:`HSMMFile._schema` when read."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import modelfile
from ..durations import get_duration
from ..emissions import Categorical
from ..modelfile import Field

KIND = "HSMMTagger"


class HSMMFile:
    """``save`` / ``load`` of a fitted HSMM tagger (a mixin of ``HSMMTagger``): the hyperparameters, the training
    vocabulary, the trace (in the header) and the fitted statistics (transition counts, the categorical family's ``K x (W + 1)``
    statistics with the unseen-word column last, the duration statistics), from which decoding rebuilds its
    potentials (``HSMMTagger._potentials``)."""

    @staticmethod
    def _durations(params: dict):
        """The duration family the hyperparameters name (``negbin`` with ``r`` learned over ``1..max_r``)."""
        kw = {"r": None, "max_r": int(params["max_r"])} if params["durations"] == "negbin" else {}
        return get_duration(params["durations"], int(params["max_duration"]), **kw)

    @classmethod
    def _schema(cls, header: dict) -> modelfile.Schema:
        """Arrays of a saved model: ``K`` states, ``W`` training words, ``Q`` duration statistics per state; counts
        are non-negative (cvi2's subtractions leave rounding residues below zero, which ``save`` clips)."""
        words, params = header["words"], header["params"]
        if not all(isinstance(w, str) for w in words):
            raise TypeError("words must be strings")
        return modelfile.Schema((
            Field("trans_counts", "f8", ("K+1", "K"), nonnegative=True),
            Field("stats", "f8", ("K", "W+1"), nonnegative=True),
            Field("dur_stats", "f8", ("K", "Q"), nonnegative=True),
        ), {"K": int(params["n_states"]), "W": len(words), "Q": cls._durations(params).n_stats})

    def save(self, path: str | Path) -> None:
        """Write the model as one ``.npz`` (arrays + a JSON header), atomically, without pickle."""
        self._potentials()  # NotFittedError before any file is written
        header = {"params": self.get_params(), "words": self.words_, "trace": self.trace_,
                  "n_iter_": int(self.n_iter_), "converged_": bool(self.converged_)}
        arrays = {"trans_counts": np.maximum(self.trans_counts_, 0.0), "stats": np.maximum(self.stats_, 0.0),
                  "dur_stats": np.maximum(self.dur_stats_, 0.0)}
        modelfile.save(path, KIND, header, arrays)

    @classmethod
    def load(cls, path: str | Path):
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema` and its
        hyperparameters are valid."""
        header, arrays = modelfile.load(path, KIND, cls._schema)
        with modelfile.reading(path, "header"):
            model = cls(**header["params"])
            model._validate_params()
            model._start_run()
            model.n_states_, model.words_ = int(model.n_states), list(header["words"])
            model.n_iter_, model.converged_ = int(header["n_iter_"]), bool(header["converged_"])
            model.trace_ = [{"iteration": int(r["iteration"]), **{str(k): float(v) for k, v in r.items()
                                                                  if k != "iteration"}} for r in header["trace"]]
        model.family_ = Categorical(beta=model._beta(), n_symbols=len(model.words_) + 1)
        model.durations_ = cls._durations(header["params"])
        model.trans_counts_, model.stats_ = arrays["trans_counts"], arrays["stats"]
        model.dur_stats_ = arrays["dur_stats"]
        return model

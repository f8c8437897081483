"""Word-vector emissions of :class:`induce.taggers.HMMTagger` (``emission="embeddings"``).

Every token becomes its word's vector (:class:`induce.embeddings.VectorTable`: the file's vector, normalised, or
the unknown-word back-off), every sentence a sequence, and the Gaussian HMM of the series engine
(:class:`induce.series.HMMSegmenter`, :mod:`induce.infer.series`) is fitted to them: diagonal covariance
(Normal-Gamma prior, ``covariance="diag"``) or full (Normal-Wishart, ``"full"``), by ``em``, ``vi``, ``cvi2``,
``svi`` or ``scvi`` (Lin, Ammar, Dyer & Levin, NAACL 2015: a Gaussian HMM over word embeddings).  New text is
tagged with the vectors stored in the model: the training vocabulary's and the back-off built from them.
"""

from __future__ import annotations

import os

import numpy as np

from .. import modelfile
from ..base import Options
from ..corpus.corpus import as_corpus
from ..corpus.vectors import WordVectors, read_vectors
from ..corpus.vocab import Vocabulary
from ..embeddings import NORMALIZATIONS, UNKNOWN_POLICIES, VectorTable
from ..errors import ConfigError, ModelFormatError
from ..names import SERIES_ALGORITHMS
from ..series.segmenter import HMMSegmenter, _family_from_header, _series_schema

#: ``covariance`` -> the emission family (:mod:`induce.emissions`)
COVARIANCES = {"diag": "diag-gaussian", "full": "gaussian"}
#: the algorithms of the series engine, all of which take word vectors
VECTOR_ALGORITHMS = SERIES_ALGORITHMS
#: iteration cap when ``n_iter`` is None (docs/experiments/embeddings.md: EM's M-1 settles within it)
VECTOR_MAX_ITER = 100
#: the model file's kind
VECTOR_KIND = "HMMTagger.embeddings"
#: the hyperparameters of word-vector emissions (merged into HMMTagger's constraints)
VECTOR_CONSTRAINTS = {"covariance": Options(*COVARIANCES), "vector_norm": Options(*NORMALIZATIONS),
                      "unknown_vectors": Options(*UNKNOWN_POLICIES)}
#: the HMMTagger hyperparameters a saved word-vector model keeps
_SAVED = ("n_states", "infer", "n_iter", "tol", "alpha", "decode", "random_state", "batch_size", "tau", "kappa",
          "covariance", "vector_norm", "unknown_vectors")


class VectorEmission:
    """The ``emission="embeddings"`` route of :class:`~induce.taggers.HMMTagger` (a mixin before its file and
    decoding mixins): fit, predict, score, save and load over word vectors."""

    @property
    def _on_vectors(self) -> bool:
        """Whether the emissions are word vectors (a subclass without ``emission``, the HDP-HMM, never is)."""
        return getattr(self, "emission", "categorical") == "embeddings"

    def _vector_table(self, words: list[str]) -> VectorTable:
        """The table of ``words`` from ``embeddings`` (a path, or a mapping word -> vector)."""
        source = self.embeddings
        if source is None:
            raise ConfigError("emission='embeddings' needs word vectors: embeddings=PATH (a .vec/.txt[.gz] or .npy "
                              "file) or a mapping word -> vector (see induce embed)")
        if isinstance(source, (str, os.PathLike)):
            found = read_vectors(source, keep=set(words), vocab_path=self.embeddings_vocab)
        else:
            kept = [w for w in words if w in source]
            rows = [np.asarray(source[w], dtype=np.float64).ravel() for w in kept]
            if rows and (len({r.shape for r in rows}) > 1 or not all(np.isfinite(r).all() for r in rows)):
                raise ConfigError("embeddings: every vector must have the same length and finite values")
            found = WordVectors(kept, np.vstack(rows) if rows else np.zeros((0, 1)), rows[0].size if rows else 1)
        return VectorTable.from_vectors(found, self.vector_norm, self.unknown_vectors)

    def _check_vector_fit(self, tag_dict, heldout) -> None:
        if self.infer not in VECTOR_ALGORITHMS:
            raise ConfigError(f"--infer {self.infer} does not run with word-vector emissions; use one of "
                              f"{', '.join(VECTOR_ALGORITHMS)}")
        if tag_dict is not None or heldout is not None:
            raise ConfigError("word-vector emissions take no tag dictionary and no held-out corpus")
        if self.client is not None:
            raise ConfigError("word-vector emissions run in this process (no client)")

    def _fit_embeddings(self, corpus, tag_dict=None, heldout=None):
        """``fit`` with word-vector emissions: the Gaussian HMM over the tokens' vectors, sentences as sequences."""
        self._validate_shared(corpus)
        self._check_vector_fit(tag_dict, heldout)
        self._start_run()
        freq = np.bincount(corpus.tokens, minlength=len(corpus.vocab))
        used = np.flatnonzero(freq)
        remap = np.full(len(corpus.vocab), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        words = [corpus.vocab.itos[i] for i in used]
        self.vectors_ = self._vector_table(words)
        X, known = self.vectors_.lookup(words)
        ids = remap[corpus.tokens]
        self.unknown_types_, self.unknown_tokens_ = int((~known).sum()), int(freq[used][~known].sum())
        self.vocab_ = Vocabulary.from_json({"items": words, "counts": freq[used].tolist(), "unk": corpus.vocab.unk})
        self.segmenter_ = HMMSegmenter(
            n_states=int(self.n_states), emission=COVARIANCES[self.covariance], infer=self.infer,
            n_iter=int(self.n_iter or VECTOR_MAX_ITER), tol=1e-4 if self.tol is None else float(self.tol),
            alpha=1.0 if self.alpha is None else float(self.alpha), batch_size=self.batch_size, tau=self.tau,
            kappa=self.kappa, random_state=self.random_state)
        lengths = np.diff(corpus.offsets)
        self.segmenter_.fit(X[ids], lengths=lengths[lengths > 0])
        self.warnings_ += [w for w in self.segmenter_.warnings_ if w not in self.warnings_]  # warned there
        self._after_vector_fit()
        self.labels_ = self._decode_vectors(X[ids], corpus.offsets)
        self._check_collapse(self.labels_, self.n_states_)
        return self

    def _after_vector_fit(self) -> None:
        """The tagger's fitted attributes from the segmenter's (trace records, passes, priors, warnings)."""
        seg = self.segmenter_
        key = "log_likelihood" if self.infer == "em" else "elbo" if self.infer == "vi" else "log_evidence"
        self.trace_ = [{"iteration": i + 1, key: float(v)} for i, v in enumerate(seg.trace_)]
        self.n_iter_, self.converged_ = int(seg.n_iter_), bool(seg.converged_)
        self.n_states_, self.tag_vocab_, self.allowed_ = int(self.n_states), None, np.zeros((0, 0), dtype=np.uint8)
        self.alpha_, self.beta_, self.learned_hyper_ = float(seg.alpha), None, ()
        self.transitions_ = seg._decoding_transitions()

    def _decode_vectors(self, X: np.ndarray, offsets) -> np.ndarray:
        """States of the rows of ``X`` (sentences cut at ``offsets``; empty sentences have none)."""
        lengths = np.diff(np.asarray(offsets, dtype=np.int64))
        if X.shape[0] == 0:
            return np.zeros(0, dtype=np.int32)
        return self.segmenter_.predict(X, lengths=lengths[lengths > 0], decode=self.decode).astype(np.int32)

    def _token_vectors(self, corpus) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``corpus``'s tokens (stored vectors or back-off) and its sentence offsets."""
        corpus = as_corpus(corpus)
        table, _ = self.vectors_.lookup(list(corpus.vocab.itos))
        return table[corpus.tokens] if len(table) else np.zeros((0, self.vectors_.vectors.shape[1])), corpus.offsets

    # ------------------------------------------------------------------ the estimator's methods, by emission
    def predict_flat(self, corpus) -> np.ndarray:
        """Predicted state ids as one int32 array aligned with ``as_corpus(corpus).tokens``."""
        if not self._on_vectors:
            return super().predict_flat(corpus)
        self._check_fitted()
        return self._decode_vectors(*self._token_vectors(corpus))

    def _score_embeddings(self, corpus) -> float:
        """Per-token log density of ``corpus``'s vectors under the fitted Gaussian HMM (nats per token)."""
        self._check_fitted()
        X, offsets = self._token_vectors(corpus)
        lengths = np.diff(np.asarray(offsets, dtype=np.int64))
        return self.segmenter_.log_likelihood(X, lengths=lengths[lengths > 0]) / max(1, X.shape[0])

    def predictive_log_likelihood(self, corpus, one_sequence: bool = False) -> float:
        """Categorical emissions only (thesis eq. 3.108); word-vector models: :meth:`score`."""
        if self._on_vectors:
            raise ConfigError("the predictive log-likelihood of words needs categorical emissions; a word-vector "
                              "model scores vectors (score)")
        return super().predictive_log_likelihood(corpus, one_sequence)

    def embedding_summary(self) -> dict:
        """What the run's summary reports about the vectors: dimension, normalisation, unknown words."""
        source = self.embeddings
        return {"embeddings": str(source) if isinstance(source, (str, os.PathLike)) else "mapping",
                "vector_dim": int(self.vectors_.vectors.shape[1]), "covariance": self.covariance,
                "vector_norm": self.vector_norm, "unknown_vectors": self.unknown_vectors,
                "unknown_types": self.unknown_types_, "unknown_tokens": self.unknown_tokens_}

    # ------------------------------------------------------------------ model file
    def save(self, path) -> None:
        """Write the model (``.npz`` + JSON header, atomically, no pickle); word-vector models keep the
        Gaussian HMM's statistics and priors and the training vocabulary's vectors."""
        if not self._on_vectors:
            return super().save(path)
        self._check_fitted()
        seg = self.segmenter_
        arrays = {"trans_counts": seg.trans_counts_, "stats": seg.stats_, "trace": np.asarray(seg.trace_, float),
                  "trans_prior": seg.trans_prior_, "trans_prior_total": np.asarray(seg.trans_prior_total_),
                  "vectors": self.vectors_.vectors}
        arrays.update({f"prior_{k}": np.asarray(v, dtype=np.float64) for k, v in seg.family_.prior_arrays().items()})
        header = {"params": {k: getattr(self, k) for k in _SAVED}, "family": seg.family_.header(),
                  "prior_shapes": {k[len("prior_"):]: list(v.shape) for k, v in arrays.items()
                                   if k.startswith("prior_")},
                  "words": self.vectors_.words, "vocab": self.vocab_.to_json(),
                  "learned": {"n_iter_": self.n_iter_, "converged_": self.converged_, "warnings_": self.warnings_,
                              "unknown_types_": self.unknown_types_, "unknown_tokens_": self.unknown_tokens_}}
        modelfile.save(path, VECTOR_KIND, header, arrays)

    @classmethod
    def load(cls, path):
        """Read a model written by :meth:`save` (either emission); ``ModelFormatError`` unless it passes its schema."""
        if modelfile.kind_of(path) != VECTOR_KIND:
            return super().load(path)
        return _load_vector_model(cls, path)


def _vector_schema(header: dict) -> modelfile.Schema:
    """The series model's arrays (:func:`induce.series.segmenter._series_schema`) plus the vectors ``(V, D)``."""
    F = modelfile.Field
    own = (F("trans_prior", "f8", ("K",), positive=True), F("trans_prior_total", "f8", (), positive=True),
           F("vectors", "f8", (len(header["words"]), int(header["family"]["dim"]))))
    return _series_schema(own)(header)


def _load_vector_model(cls, path):
    header, arrays = modelfile.load(path, VECTOR_KIND, _vector_schema)
    try:
        with modelfile.reading(path, "header"):
            params = dict(header["params"])
            name, family = _family_from_header(header)
            family.set_prior_arrays({k[len("prior_"):]: v for k, v in arrays.items() if k.startswith("prior_")})
            if name != COVARIANCES.get(params["covariance"]) or arrays["stats"].shape[1] != family.n_stats:
                raise ValueError(f"the {name} family with {arrays['stats'].shape[1]} statistics does not match "
                                 f"covariance {params['covariance']!r}")
            model = cls(emission="embeddings", **params)
            model.vectors_ = VectorTable(list(header["words"]), arrays["vectors"], params["unknown_vectors"])
            model.vocab_ = Vocabulary.from_json(header["vocab"])
            learned = header["learned"]
            seg = HMMSegmenter(n_states=params["n_states"], emission=name, infer=params["infer"],
                               alpha=1.0 if params["alpha"] is None else params["alpha"])
    except ConfigError as exc:
        raise ModelFormatError(f"{path}: header: {exc}") from exc
    seg.family_, seg.trans_counts_, seg.stats_ = family, arrays["trans_counts"], arrays["stats"]
    seg.trans_prior_, seg.trans_prior_total_ = arrays["trans_prior"], float(arrays["trans_prior_total"])
    seg.trace_, seg.n_iter_, seg.converged_ = list(arrays["trace"]), int(learned["n_iter_"]), learned["converged_"]
    model.segmenter_ = seg
    model.warnings_ = list(learned["warnings_"])
    model.unknown_types_, model.unknown_tokens_ = int(learned["unknown_types_"]), int(learned["unknown_tokens_"])
    model._after_vector_fit()
    return model

"""Text in and states out for :class:`induce.taggers.HMMTagger` (and the HDP-HMM tagger): token ids in the
model's vocabulary (unseen words: ``W``), held-out text for the stochastic algorithms, decoding (``predict``,
``fit_predict``), tag names, ``score``, the predictive log-likelihood of held-out text and the collapsed-states
warning (a mixin of the estimator)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..base import NotFittedError
from ..corpus.corpus import Corpus, as_corpus
from ..infer import hmm_passes as passes
from ..infer import stochastic_hmm as stochastic
from ..infer.hdp import labels_collapsed
from ..kernels.hmm import decode_sentences

if TYPE_CHECKING:
    from .tag_dict import TagDictionary


class HMMDecoding:
    """Encoding of text into the fitted vocabulary and decoding of states (needs ``vocab_``, the parameters)."""

    def _encode_heldout(self, heldout, corpus, remap):
        """Held-out token ids in the model's vocabulary (``W`` = unseen), or ``None``."""
        if heldout is None:
            return None
        W = len(self.vocab_)
        if heldout.vocab is corpus.vocab:
            ids = remap[heldout.tokens]
        else:
            ids = np.array([self.vocab_.stoi.get(w, W) for w in heldout.vocab.itos], dtype=np.int32)[heldout.tokens]
        ids = np.where(ids < 0, W, ids).astype(np.int32)
        offsets = np.ascontiguousarray(heldout.offsets, dtype=np.int64)
        if self.infer in stochastic.SINGLE_SEQUENCE:
            offsets = np.array([0, len(ids)], dtype=np.int64)
        return ids, offsets

    def _check_collapse(self, labels: np.ndarray, K: int, count_used: bool = True, effective: int | None = None
                        ) -> None:
        """Warn when the states collapsed: fewer than a quarter of the K states used (unless not ``count_used``:
        the HDP-HMM learns how many it uses), or one holding most tokens; with ``effective`` (the HDP-HMM's
        effective states), when the labels use far fewer (:func:`induce.infer.hdp.labels_collapsed`)."""
        if len(labels) == 0:
            return
        partial = None if effective is None else labels_collapsed(labels, effective)
        if partial is not None:
            self._warn(f"{partial}; try a smaller emission prior (--beta)")
        sizes = np.bincount(labels, minlength=K)
        used, share = int((sizes > 0).sum()), sizes.max() / len(labels)
        if K >= 4 and ((count_used and used < K / 4) or share > 0.5):
            self._warn(f"the states collapsed: {used} of {K} states used, the largest holds {share:.0%} of the "
                       f"tokens; try another --seed or fewer --{'states' if count_used else 'truncation'}")

    def _encode(self, corpus) -> tuple[np.ndarray, np.ndarray]:
        """Token ids of ``corpus`` (anything :func:`induce.corpus.corpus.as_corpus` takes) in the training
        vocabulary; unseen words -> W."""
        self._check_fitted()
        corpus = as_corpus(corpus)
        W = len(self.vocab_)
        mapping = np.array([self.vocab_.stoi.get(w, W) for w in corpus.vocab.itos], dtype=np.int32)
        return mapping[corpus.tokens] if len(mapping) else corpus.tokens.astype(np.int32), corpus.offsets

    def _encode_emissions(self, corpus) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(tokens, offsets, B)``: the token ids of ``corpus`` and the emission rows ``B`` they index.  Words
        unseen in training share the fitted unseen-word row ``W`` (:meth:`_encode`), except under feature
        emissions, where each gets a row of its own from its features (:meth:`_unseen_rows`)."""
        tokens, offsets = self._encode(corpus)
        if getattr(self, "emission", "categorical") != "features":
            return tokens, offsets, self.emissions_
        corpus = as_corpus(corpus)
        W = len(self.vocab_)
        seen = np.zeros(len(corpus.vocab), dtype=bool)
        seen[corpus.tokens] = True
        new = [i for i in np.flatnonzero(seen) if corpus.vocab.itos[i] not in self.vocab_.stoi]
        rows = self._unseen_rows([corpus.vocab.itos[i] for i in new]) if new else None
        if rows is None:
            return tokens, offsets, self.emissions_
        ids = np.full(len(corpus.vocab), W, dtype=np.int32)
        ids[new] = W + 1 + np.arange(len(new), dtype=np.int32)
        tokens = np.where(tokens == W, ids[corpus.tokens], tokens).astype(np.int32)
        return tokens, offsets, np.ascontiguousarray(np.vstack([self.emissions_, rows]))

    def _decode(self, tokens, offsets, emissions=None):
        """States of ``tokens`` under the fitted parameters (``emissions``: rows replacing ``emissions_``)."""
        B = self.emissions_ if emissions is None else emissions
        return decode_sentences(self.transitions_, B, self.allowed_, tokens, offsets, self.decode == "viterbi")

    def predict_flat(self, corpus) -> np.ndarray:
        """Predicted state ids as one int32 array aligned with ``as_corpus(corpus).tokens``."""
        tokens, offsets, B = self._encode_emissions(corpus)
        return self._decode(tokens, np.ascontiguousarray(offsets, dtype=np.int64), B)

    def predict_tags(self, corpus) -> list[list[str]]:
        """Per sentence, the predicted tag of each token: the tag dictionary's tags, else ``S0 .. S{K-1}``."""
        names = np.asarray(self.tag_vocab_.itos if self.tag_vocab_ is not None
                           else [f"S{k}" for k in range(self.n_states_)], dtype=object)
        return [names[states].tolist() for states in self.predict(corpus)]

    def predictive_log_likelihood(self, corpus: Corpus, one_sequence: bool = False) -> float:
        """Per-token predictive log-likelihood of held-out text from the fitted counts (thesis eq. 3.108-3.109).

        ``theta = (N + alpha) / (N. + K alpha)``, ``phi = (N + beta) / (N. + W beta)``
        for every algorithm (so that batch and stochastic runs are compared on
        the same footing); ``one_sequence`` scores the corpus as one long sequence.  The categorical family only
        (its Dirichlet counts); :meth:`score` gives any family's log-likelihood under the point parameters.
        """
        if getattr(self, "emission", "categorical") != "categorical":
            from ..errors import ConfigError

            raise ConfigError(f"the predictive log-likelihood integrates Dirichlet emissions; emission="
                              f"{self.emission!r} has none: use score()")
        tokens, offsets = self._encode(corpus)
        if one_sequence:
            offsets = np.array([0, len(tokens)], dtype=np.int64)
        counts = stochastic.GlobalCounts(self.transition_counts_, self.emission_counts_)
        return stochastic.heldout_loglik(counts, self.alpha_, self.beta_, np.ascontiguousarray(tokens, dtype=np.int32),
                                         np.ascontiguousarray(offsets, dtype=np.int64))

    def predict(self, corpus) -> list[np.ndarray]:
        """Per sentence, the predicted state id of each token (int32 arrays, one per sentence of
        ``as_corpus(corpus)``); :meth:`predict_flat` gives them as one array, :meth:`predict_tags` as tag strings."""
        corpus = as_corpus(corpus)
        return corpus.split(self.predict_flat(corpus))

    def fit_predict(self, corpus, y=None, tag_dict: TagDictionary | None = None) -> list[np.ndarray]:
        """``fit`` then the training corpus's state ids per sentence (``labels_`` split at the sentence ends)."""
        corpus = as_corpus(corpus)
        return corpus.split(self.fit(corpus, y, tag_dict=tag_dict).labels_)

    def score(self, corpus: Corpus, y=None) -> float:
        """Per-token log-likelihood of ``corpus`` under the point parameters (nats; word-vector emissions: the log
        density of the vectors)."""
        if self._on_vectors:
            return self._score_embeddings(corpus)
        tokens, offsets, B = self._encode_emissions(corpus)
        A = self.transitions_
        B = B / B.sum(axis=0, keepdims=True) if self.infer == "vi" else B
        A = A / A.sum(axis=1, keepdims=True)
        K = A.shape[1]
        trans = np.zeros((K + 1, K))
        emit = np.zeros((B.shape[0], K))
        ll = passes.batch_pass(A, np.ascontiguousarray(B), self.allowed_, tokens,
                               np.ascontiguousarray(offsets, dtype=np.int64), trans, emit, np.empty((0, K)),
                               passes.n_threads())
        return ll / max(1, len(tokens))

    def _check_fitted(self):
        if not hasattr(self, "transitions_"):
            raise NotFittedError.of(self)

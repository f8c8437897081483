"""NLTK citizens: a ``TaggerI`` over a fitted induce tagger, and ``DependencyGraph`` outputs.

``NLTKTagger(model)`` wraps a fitted :class:`~induce.taggers.HMMTagger` or
:class:`~induce.taggers.HDPHMMTagger` as an :class:`nltk.tag.api.TaggerI`:
``tag(tokens)`` gives ``[(word, tag), ...]`` and ``tag_sents(sentences)`` one such
list per sentence, so NLTK's helpers (``accuracy``, ``evaluate``, ``confusion``)
apply.  Tags are the tag dictionary's tags when the model was fitted with one,
otherwise state names ``S0 .. S{K-1}`` (the names ``induce tag`` writes).  State names never equal gold
tags, so ``accuracy`` of an induced tagger raises unless it carries a many-to-one mapping learned from
gold (:meth:`NLTKTagger.many_to_one`: each state tagged as the gold tag it co-occurs with most, the M-1
of thesis section 3.8.2).

The parsers already return ``nltk.Tree`` (:meth:`PCFGInducer.parse`,
:meth:`LatentPCFGParser.parse`); :func:`to_dependency_graph` and
:func:`dependency_graphs` turn DMV heads into :class:`nltk.parse.DependencyGraph`.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from nltk.parse import DependencyGraph
from nltk.tag.api import TaggerI

from .corpus.corpus import Corpus
from .corpus.sentence import Sentence
from .errors import ConfigError


class NLTKTagger(TaggerI):
    """``nltk.tag.api.TaggerI`` over a fitted induce tagger.

    ``lowercase``: lowercase the tokens before tagging (for a model fitted on a
    lowercased corpus); the returned pairs keep the original tokens.
    """

    def __init__(self, tagger, lowercase: bool = False, mapping: dict[str, str] | None = None):
        if getattr(tagger, "transitions_", None) is None:
            raise ConfigError("NLTKTagger needs a fitted tagger; call fit() first")
        self.tagger = tagger
        self.lowercase = lowercase
        tag_vocab = getattr(tagger, "tag_vocab_", None)
        #: whether the states are gold-comparable tags: a tag dictionary's, or mapped by ``mapping``
        self.comparable = tag_vocab is not None or mapping is not None
        self.states = list(tag_vocab.itos) if tag_vocab is not None else [f"S{k}" for k in range(tagger.n_states_)]
        self.mapping = dict(mapping or {})
        self.tags = [self.mapping.get(name, name) for name in self.states]

    def many_to_one(self, gold: Iterable[Sequence[tuple[str, str]]]) -> "NLTKTagger":
        """A tagger naming each state by the gold tag it is most often given to in ``gold`` (tagged sentences,
        ``[(word, tag), ...]``, as NLTK's corpora give them); states absent from ``gold`` keep their names."""
        from .eval.tagging import _majority_map

        gold = [list(sent) for sent in gold]
        if not any(gold):
            return NLTKTagger(self.tagger, self.lowercase, {})
        pred = np.concatenate(self._states([w for w, _ in sent] for sent in gold))
        states, tags = _majority_map(pred, np.array([tag for sent in gold for _, tag in sent]))  # M-1's mapping
        return NLTKTagger(self.tagger, self.lowercase, {self.states[k]: str(t) for k, t in zip(states, tags)})

    def accuracy(self, gold):
        """NLTK's token accuracy against ``gold``; an induced tagger needs :meth:`many_to_one` first (its state
        names never equal gold tags, so the plain accuracy would be a meaningless 0)."""
        if not self.comparable:
            raise ConfigError("the tagger's states are induced (S0, S1, ...), never equal to gold tags: map them "
                              "first, NLTKTagger(model).many_to_one(gold_sents).accuracy(test_sents)")
        return super().accuracy(gold)

    def tag(self, tokens: Sequence[str]) -> list[tuple[str, str]]:
        """``[(token, tag), ...]`` for one sentence."""
        return self.tag_sents([tokens])[0]

    def tag_sents(self, sentences: Iterable[Sequence[str]]) -> list[list[tuple[str, str]]]:
        """One ``[(token, tag), ...]`` list per sentence, decoded in one batch."""
        sentences = [list(s) for s in sentences]
        if not sentences:
            return []
        return [list(zip(s, (self.tags[k] for k in states))) for s, states in zip(sentences, self._states(sentences))]

    def _states(self, sentences: Iterable[Sequence[str]]) -> list[np.ndarray]:
        """The tagger's state ids of each sentence (words lowercased with ``lowercase``), decoded in one batch."""
        fold = str.lower if self.lowercase else (lambda w: w)
        corpus = Corpus.from_sentences([Sentence([fold(w) for w in s]) for s in sentences], keep_sentences=False)
        return self.tagger.predict(corpus)


def to_dependency_graph(words: Sequence[str], heads: Sequence[int], tags: Sequence[str] | None = None,
                        deprels: Sequence[str] | None = None) -> DependencyGraph:
    """A :class:`nltk.parse.DependencyGraph` of one sentence: ``heads`` 1-based, 0 = root
    (as :meth:`DMVParser.parse` returns them); relations default to ``dep`` (``ROOT`` for the root's child)."""
    if len(heads) != len(words) or (tags is not None and len(tags) != len(words)) or (
            deprels is not None and len(deprels) != len(words)):
        raise ConfigError(f"a dependency graph needs one head (and tag, relation) per word; got {len(words)} "
                          f"words and {len(heads)} heads")
    if any(not 0 <= int(h) <= len(words) for h in heads):
        raise ConfigError(f"heads must be in 0..{len(words)} (1-based, 0 = root); got {list(heads)}")
    rows = []
    for i, (word, head) in enumerate(zip(words, heads)):
        tag = tags[i] if tags is not None else "_"
        rel = deprels[i] if deprels is not None else ("ROOT" if int(head) == 0 else "dep")
        rows.append(f"{i + 1}\t{word}\t_\t{tag}\t{tag}\t_\t{int(head)}\t{rel}\t_\t_")
    return DependencyGraph("\n".join(rows), top_relation_label="ROOT", cell_separator="\t")


def dependency_graphs(parser, corpus: Corpus, tag_column: str | None = None) -> list[DependencyGraph]:
    """The DMV parses of every sentence of ``corpus`` as ``DependencyGraph``s (tags from ``tag_column``)."""
    heads = parser.parse(corpus)
    return [to_dependency_graph(corpus.words(i), h, corpus.tag_strings(tag_column, i) if tag_column else None)
            for i, h in enumerate(heads)]

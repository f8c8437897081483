"""Sentence transforms applied between reading and encoding.

Every transform takes a :class:`Sentence` and returns a new one (inputs are
never modified).  Word transforms (lowercasing, digit normalisation, rare-word
replacement) keep ``record``, so writers still reproduce the original text;
:func:`strip_punctuation` removes tokens, re-attaches dependents and prunes the
tree, and drops ``record`` (which no longer lines up with the words).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Callable, Container, Iterable, Iterator

import numpy as np
from nltk import Tree
from numba import njit

from ..errors import ConfigError, CorpusFormatError
from ..names import PUNCT_TAGSET_NAMES
from .read_lines import iter_lines
from .sentence import Sentence

UNK = "<unk>"
UNK_MODES = ("unk", "shape")

#: PTB punctuation tags (the WSJ10 convention of Klein & Manning).
PTB_PUNCT = frozenset({"''", "``", ",", ".", ":", "-LRB-", "-RRB-", "#", "$", "-NONE-"})
#: UPOS punctuation and symbols.
UPOS_PUNCT = frozenset({"PUNCT", "SYM"})
#: Punctuation in the 12-tag universal tagset of Petrov, Das & McDonald.
UNIVERSAL_PUNCT = frozenset({"."})
#: Sentence length cutoff of WSJ10 (words, punctuation removed).
WSJ10_WORDS = 10
#: Coarse (CPOS) punctuation tags of the CoNLL 2007 data: Basque ``PUNT``, Spanish ``F``.
CONLL2007_PUNCT = frozenset({"PUNT", "F"})
#: Punctuation tag sets by name.
PUNCT_TAGSETS = dict(zip(PUNCT_TAGSET_NAMES, (UPOS_PUNCT, UNIVERSAL_PUNCT, CONLL2007_PUNCT, PTB_PUNCT), strict=True))
#: ``(column, tagset)`` pairs tried in order to find a sentence's punctuation: the one
#: convention shared by training (``strip_punct``, ``wsj10``) and scoring (``eval deps``).
PUNCT_COLUMNS = (("upos", "upos"), ("universal", "universal"), ("cpos", "conll2007"), ("xpos", "ptb"), ("pos", "ptb"))
#: What marks punctuation when a sentence has none of those columns.
UNICODE_PUNCT = "Unicode punctuation/symbol words"

# Suffixes of the English unknown-word signatures of the Berkeley parser
# (Petrov et al. 2006, the preprocessing the thesis adopts for WSJ, sec. 4.7).
SUFFIXES = ("ing", "ed", "ion", "er", "est", "ly", "ity", "al", "ive", "ous", "able", "ment", "ness", "ies", "s", "y")
_DIGIT = re.compile(r"\d")
_REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------- words
def lowercase(sent: Sentence) -> Sentence:
    return replace(sent, words=[w.lower() for w in sent.words])


def normalize_digits(sent: Sentence) -> Sentence:
    """Every decimal digit (any script) replaced by ``0``: ``1,234.5`` -> ``0,000.0``."""
    return replace(sent, words=[_DIGIT.sub("0", w) for w in sent.words])


def word_shape(word: str) -> str:
    """Unknown-word class of ``word`` in the style of Petrov et al. (2006).

    ``<unk`` + capitalisation (``-caps`` all upper, ``-initc`` initial upper,
    ``-lc`` has lower case) + ``-num`` (has a digit) + ``-dash`` (has a hyphen)
    + ``-<suffix>`` (first matching common English suffix of a word of length
    > 3 with a lower-case letter) + ``>``; e.g. ``Running`` -> ``<unk-initc-ing>``.
    """
    parts = ["<unk"]
    letters = [c for c in word if c.isalpha()]
    has_lower = any(c.islower() for c in letters)
    if letters and not has_lower:
        parts.append("caps")
    elif letters and letters[0].isupper() and word[0].isupper():
        parts.append("initc")
    elif has_lower:
        parts.append("lc")
    if any(c.isdigit() for c in word):
        parts.append("num")
    if "-" in word:
        parts.append("dash")
    if has_lower and len(word) > 3:
        lower = word.lower()
        suffix = next((s for s in SUFFIXES if lower.endswith(s)), None)
        if suffix is not None:
            parts.append(suffix)
    return "-".join(parts) + ">"


def count_words(sentences: Iterable[Sentence]) -> Counter:
    counts: Counter = Counter()
    for sent in sentences:
        counts.update(sent.words)
    return counts


def unknown_class(word: str, mode: str) -> str:
    """The replacement of an unknown word: ``"<unk>"`` (mode ``unk``) or its :func:`word_shape`."""
    if mode not in UNK_MODES:
        raise ConfigError(f"unk_mode must be one of {UNK_MODES}, got {mode!r}")
    return UNK if mode == "unk" else word_shape(word)


def replace_unknown(sent: Sentence, known: Container[str], mode: str = "unk") -> Sentence:
    """Words not in ``known`` replaced by their :func:`unknown_class`."""
    return replace(sent, words=[w if w in known else unknown_class(w, mode) for w in sent.words])


def frequent_words(counts: Counter, threshold: int) -> set[str]:
    """Words seen at least ``threshold`` times (a word with count < threshold is rare)."""
    return {w for w, c in counts.items() if c >= threshold}


# -------------------------------------------------------------- punctuation
def punctuation_column(sent: Sentence, tagset: str = "auto") -> tuple[str, str] | None:
    """``(column, tagset)`` marking punctuation in ``sent``: the first of :data:`PUNCT_COLUMNS`
    present (``upos``, ``universal``, ``cpos``, ``xpos``, ``pos``), restricted to ``tagset``
    unless ``"auto"``; None when the sentence has none of them."""
    if tagset != "auto" and tagset not in PUNCT_TAGSETS:
        raise ConfigError(f"unknown punctuation tagset {tagset!r}; expected auto or one of {', '.join(PUNCT_TAGSETS)}")
    for column, name in PUNCT_COLUMNS:
        if column in sent.tags and tagset in ("auto", name):
            return column, name
    return None


def describe_punctuation(found: tuple[str, str] | None) -> str:
    """One phrase for the punctuation convention :func:`punctuation_column` found."""
    return UNICODE_PUNCT if found is None else f"{found[1]} tags of column {found[0]}"


def punctuation_mask(sent: Sentence, tagset: str = "auto") -> np.ndarray:
    """Boolean mask of punctuation tokens.

    Decided by :func:`punctuation_column` (``upos``: PUNCT, SYM; ``universal``:
    ``.``; ``cpos``: the CoNLL 2007 PUNT, F; ``xpos``/``pos``: the PTB tags
    {'' `` , . : -LRB- -RRB- # $ -NONE-}); a sentence without those columns uses
    the Unicode categories of its words (every character punctuation or symbol)
    when ``tagset`` is ``"auto"`` and has no punctuation otherwise.
    """
    found = punctuation_column(sent, tagset)
    if found is not None:
        punct = PUNCT_TAGSETS[found[1]]
        return np.fromiter((t in punct for t in sent.tags[found[0]]), dtype=bool, count=len(sent))
    if tagset != "auto":
        return np.zeros(len(sent), dtype=bool)
    return np.fromiter(
        (all(unicodedata.category(c)[0] in "PS" for c in w) for w in sent.words), dtype=bool, count=len(sent)
    )


def n_words_without_punctuation(sent: Sentence) -> int:
    return int(len(sent) - punctuation_mask(sent).sum())


def is_wsj10(sent: Sentence, max_words: int = WSJ10_WORDS) -> bool:
    """The WSJ10 condition: at most ``max_words`` words once punctuation is removed."""
    return n_words_without_punctuation(sent) <= max_words


@njit(cache=True)
def reattach_heads(heads, keep):
    """Heads after deleting the tokens with ``keep[i] == False``.

    ``heads`` are 1-based (0 = root).  A kept token whose head is deleted is
    attached to its nearest kept ancestor (or the root); the result is
    renumbered to the kept tokens, 1-based.
    """
    n = heads.shape[0]
    new_index = np.zeros(n + 1, np.int64)
    count = 0
    for i in range(n):
        if keep[i]:
            count += 1
            new_index[i + 1] = count
    out = np.empty(count, np.int64)
    k = 0
    for i in range(n):
        if keep[i]:
            h = heads[i]
            steps = 0
            while h != 0 and not keep[h - 1] and steps < n:
                h = heads[h - 1]
                steps += 1
            out[k] = new_index[h]
            k += 1
    return out


def prune_tree(tree: Tree, keep: list[bool]) -> Tree | None:
    """``tree`` without the leaves at positions where ``keep`` is False; emptied constituents removed."""
    position = iter(range(len(keep)))

    def walk(node):
        if isinstance(node, str):
            return node if keep[next(position)] else None
        children = [c for c in (walk(child) for child in node) if c is not None]
        return Tree(node.label(), children) if children else None

    return walk(tree)


def remove_tokens(sent: Sentence, keep: np.ndarray) -> Sentence:
    """``sent`` restricted to the tokens where ``keep`` is True (heads re-attached, tree pruned).

    ``record`` is dropped: it describes the original tokens.
    """
    keep = np.asarray(keep, dtype=bool)
    idx = np.flatnonzero(keep)

    def pick(values):
        return [values[i] for i in idx]

    heads = None
    if sent.heads is not None:
        heads = reattach_heads(np.asarray(sent.heads, dtype=np.int64), keep).tolist()
    return replace(
        sent,
        words=pick(sent.words),
        tags={k: pick(v) for k, v in sent.tags.items()},
        heads=heads,
        deprels=None if sent.deprels is None else pick(sent.deprels),
        tree=None if sent.tree is None else prune_tree(sent.tree, keep.tolist()),
        record=None,
    )


def strip_punctuation(sent: Sentence) -> Sentence:
    """``sent`` without its punctuation tokens (:func:`punctuation_mask`), as in the WSJ10 data."""
    return remove_tokens(sent, ~punctuation_mask(sent))


# --------------------------------------------------------------- universal
def resolve_universal_map(name: str | os.PathLike) -> Path:
    """Path of a universal-tagset map: an existing file, or a shorthand like ``"en-ptb"``.

    Shorthands are looked up as ``<name>.map`` in the ``universal-tagset`` folder
    of ``$INDUCE_CORPORA`` or of ``../shared/corpora`` beside the repository.
    """
    path = Path(name)
    if path.is_file():
        return path
    roots = [Path(os.environ["INDUCE_CORPORA"])] if os.environ.get("INDUCE_CORPORA") else []
    roots.append(_REPO.parent / "shared" / "corpora")
    for root in roots:
        cand = root / "universal-tagset" / f"{path.name.removesuffix('.map')}.map"
        if cand.is_file():
            return cand
    raise ConfigError(f"universal tag map {str(name)!r} not found (a .map file, or a name under universal-tagset/)")


def load_universal_map(name: str | os.PathLike) -> dict[str, str]:
    """The ``fine-tag<TAB>universal-tag`` rows of a map file as a dict."""
    path = resolve_universal_map(name)
    mapping = {}
    for number, text in iter_lines(path):
        if not text.strip():
            continue
        fields = text.split("\t")
        if len(fields) != 2:
            raise CorpusFormatError(str(path), number, text, "fine-tag<TAB>universal-tag")
        mapping[fields[0]] = fields[1]
    return mapping


def map_universal(sent: Sentence, mapping: dict[str, str], source: str | None = None) -> Sentence:
    """Adds the tag column ``"universal"``: ``mapping`` applied to ``source`` (default ``xpos``, else ``pos``).

    Tags missing from the map become ``X``, as in NLTK's ``map_tag``.
    """
    column = source or next((c for c in ("xpos", "pos") if c in sent.tags), None)
    if column is None or column not in sent.tags:
        raise ConfigError(f"cannot map to universal tags: no tag column {source or 'xpos/pos'} in {sent.source}")
    tags = dict(sent.tags)
    tags["universal"] = [mapping.get(t, "X") for t in sent.tags[column]]
    return replace(sent, tags=tags)


# ------------------------------------------------------------- pipelines
def pipeline(
    *,
    lowercase_words: bool = False,
    digits: bool = False,
    universal: dict[str, str] | None = None,
    max_length: int | None = None,
    wsj10: bool = False,
    strip_punct: bool = False,
    skipped: dict[str, int] | None = None,
) -> Callable[[Iterable[Sentence]], Iterator[Sentence]]:
    """A generator transform applying, in order: universal mapping, punctuation
    stripping, WSJ10 filter, max-length filter (on the remaining words),
    lowercasing, digit normalisation.  ``skipped["max_length"]`` (when given)
    counts the sentences the max-length filter drops.

    ``wsj10`` is Klein & Manning's (2004) WSJ10: punctuation removed (it implies
    ``strip_punct``; :func:`punctuation_mask`), then sentences of at most 10
    words kept.  Sentences left without words are dropped.
    """

    def run(sentences: Iterable[Sentence]) -> Iterator[Sentence]:
        for sent in sentences:
            if universal is not None:
                sent = map_universal(sent, universal)
            if strip_punct or wsj10:
                sent = strip_punctuation(sent)
                if not sent.words:
                    continue
            if wsj10 and len(sent) > WSJ10_WORDS:
                continue
            if max_length is not None and len(sent) > max_length:
                if skipped is not None:
                    skipped["max_length"] = skipped.get("max_length", 0) + 1
                continue
            if lowercase_words:
                sent = lowercase(sent)
            if digits:
                sent = normalize_digits(sent)
            yield sent

    return run

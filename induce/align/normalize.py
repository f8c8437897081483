"""Text normalisation for word alignment (the HLT-NAACL 2003 English-French conventions).

The Hansards gold text (``align/en-fr``) was tokenised with the EGYPT
tokenisers, de-capitalised, and had its French contractions expanded
(``du`` -> ``de le``, ``l'`` -> ``le``, ``s'`` -> ``se`` ...), while the
training bitext is raw, cased and has its French accents stripped.  To train on
the raw text and score on the gold text both are brought to one form:

* raw text: :func:`normalize_text` = :func:`tokenize` (punctuation, hyphens and
  clitics split off, abbreviations kept whole), :func:`expand_contractions`
  (French), lowercase and :func:`fold_accents`;
* already tokenised text (the gold sentences, whose positions the links refer
  to): :func:`normalize_tokens` = lowercase and fold each token, never changing
  the number of tokens.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

LANGUAGES = ("en", "fr")

#: words whose trailing period belongs to them (compared lowercased)
ABBREVIATIONS = frozenset(
    "mr mrs ms dr st hon no nos mm mme mmes mlle me messrs jr sr vs etc art p pp vol gen col lt sen rev prof inc ltd co corp".split()
)

#: French contracted articles and elided words (lowercase) -> expanded tokens
FRENCH_CONTRACTIONS = {
    "du": ("de", "le"),
    "des": ("de", "les"),
    "au": ("à", "le"),
    "aux": ("à", "les"),
    "l'": ("le",),
    "d'": ("de",),
    "j'": ("je",),
    "n'": ("ne",),
    "s'": ("se",),
    "c'": ("ce",),
    "m'": ("me",),
    "t'": ("te",),
    "qu'": ("que",),
    "jusqu'": ("jusque",),
    "lorsqu'": ("lorsque",),
    "puisqu'": ("puisque",),
    "quoiqu'": ("quoique",),
}

_APOSTROPHES = re.compile(r"[’‘`´]")
_FR_ELISION = re.compile(r"(\w)'(?=\w)")
_EN_NOT = re.compile(r"(\w)n't\b", re.IGNORECASE)
_EN_CLITIC = re.compile(r"(\w)'(s|re|ve|ll|d|m)\b", re.IGNORECASE)
_TOKEN = re.compile(
    r"\d+(?:[.,]\d+)+"  # numbers with separators: 35,000 6.42
    r"|\w+(?:\.\w+)+\."  # dotted abbreviations: p.m. U.S.
    r"|n't"  # English negation clitic (already split off)
    r"|\w+'"  # French elided word: l' qu' aujourd'
    r"|'\w+"  # English clitic: 's 're
    r"|\w+"
    r"|[^\w\s]"
)


def _check_language(lang: str) -> None:
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {lang!r}")


def fold_accents(text: str) -> str:
    """Strip combining marks after canonical decomposition (``é`` -> ``e``, ``Ç`` -> ``C``)."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str, lang: str) -> list[str]:
    """Split raw text into tokens the way the gold text is tokenised.

    Punctuation and hyphens become tokens (``deep-rooted`` -> ``deep - rooted``),
    numbers keep their separators, known abbreviations and initials keep their
    period (``Mr.``, ``M.``, ``p.m.``); English clitics are split before the
    apostrophe (``minister 's``, ``do n't``), French elisions after it
    (``l' entraide``, ``aujourd' hui``).
    """
    _check_language(lang)
    text = _APOSTROPHES.sub("'", text)
    if lang == "fr":
        text = _FR_ELISION.sub(r"\1' ", text)
    else:
        text = _EN_CLITIC.sub(r"\1 '\2", _EN_NOT.sub(r"\1 n't", text))
    raw = _TOKEN.findall(text)
    tokens: list[str] = []
    for k, tok in enumerate(raw):
        if tok == "." and tokens and k > 0 and _keeps_period(tokens[-1]):
            tokens[-1] += "."
        else:
            tokens.append(tok)
    return tokens


def _keeps_period(word: str) -> bool:
    if not word.isalpha() or word.endswith("."):
        return False
    return word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isupper())


def expand_contractions(tokens: Iterable[str], lang: str) -> list[str]:
    """Expand French contracted articles and elisions (``du`` -> ``de le``); English is unchanged.

    Matching ignores case; expanded words are lowercase.
    """
    _check_language(lang)
    if lang != "fr":
        return list(tokens)
    out: list[str] = []
    for tok in tokens:
        out.extend(FRENCH_CONTRACTIONS.get(tok.lower(), (tok,)))
    return out


def normalize_tokens(tokens: Iterable[str]) -> list[str]:
    """Lowercase and accent-fold already tokenised text, one output token per input token."""
    return [fold_accents(tok.lower()) for tok in tokens]


def normalize_text(text: str, lang: str) -> list[str]:
    """Raw text to normalised tokens: tokenise, expand contractions, lowercase, fold accents."""
    return normalize_tokens(expand_contractions(tokenize(text, lang), lang))

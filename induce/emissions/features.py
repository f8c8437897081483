"""Log-linear ("feature-rich") multinomials: Berg-Kirkpatrick, Bouchard-Cote, DeNero & Klein, "Painless
Unsupervised Learning with Features" (NAACL 2010).

A multinomial over ``Y`` outcomes (the words of the vocabulary, for an HMM's emissions) is a small logistic
regression over features ``f(y)`` of the outcome (paper eq. 2)::

    p(y | k) = exp(lambda_k . f(y)) / sum_y' exp(lambda_k . f(y'))

The features are a sparse CSR matrix ``F`` (``Y x D``); the weights are kept as ``Theta`` (``D x K``, column
``k`` is ``lambda_k``), so the scores of every outcome under every state are one sparse-dense product
``F @ Theta`` (``Y x K``, the layout of the HMM's emission counts and of the matrix the lockstep E-step takes).
With expected counts ``e`` (``Y x K``) the penalised expected log-likelihood and its gradient are (paper eq. 3-4
with the L2 penalty ``kappa ||lambda||^2``)::

    l(Theta) = sum_k sum_y e_yk log p(y | k) - kappa ||Theta||^2
    dl/dlambda_k = sum_y e_yk (f(y) - E_{p(.|k)}[f]) - 2 kappa lambda_k = F' (e_k - e_.k p_k) - 2 kappa lambda_k

(one more sparse product ``F' @ (e - p * e.sum(0))``), and :meth:`LogLinear.m_step` maximises it with L-BFGS
(:func:`induce.infer.lbfgs.lbfgs`) warm-started from the previous weights.

Feature templates (:data:`TEMPLATES`, ``features=`` of :class:`induce.taggers.HMMTagger`, ``--features FILE``):
``identity`` (the lowercased word; ``identity N`` only for words whose lowercased form was seen at least ``N``
times in training, so that rarer words are told apart by their other features alone), ``form`` (the word as
written), ``initial-capital``, ``proper-capital`` (an initial capital that is not merely positional: the word's
all-lowercase spelling is seen in training no more often than its capitalised spellings, so ``Atlanta`` and ``I``
have it and a sentence-initial ``The`` or ``He`` does not), ``all-caps``, ``has-digit``, ``has-hyphen``, ``has-punct`` (a character that is
neither a letter nor a digit), ``suffix N`` / ``prefix N`` (the last / first ``N`` characters of the lowercased
word, for words longer than ``N``), ``length`` (the length bucket 1, 2, 3, 4, 5-6, 7-9, 10+), ``plural`` (an
``-s`` plural or third person of a word the corpus has: the lowercased word has 4+ characters, ends in ``-s`` but
not ``-ss``, and its stem without the ``-s``, or without ``-es``, was seen as a word at least
:data:`PLURAL_STEM_COUNT` times in training, so ``dogs`` and ``boxes`` have it and ``this``, ``news`` or ``class``
do not).  A feature file
lists one template a line (``#`` starts a comment).  A Python callable ``word -> iterable of feature names``
gives users' own features.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, CorpusFormatError
from ..infer.lbfgs import lbfgs

#: templates without an argument (``suffix N`` / ``prefix N`` take the length ``N``)
FLAGS = ("identity", "form", "initial-capital", "proper-capital", "all-caps", "has-digit", "has-hyphen", "has-punct",
         "length", "plural")
#: every template name a feature file may use
TEMPLATES = FLAGS + ("suffix", "prefix")
#: the default feature set (no language resources): see docs/experiments/features.md for the measurements
#: ("The identity threshold": ``identity 3`` against ``identity`` for every word; "The positional capital":
#: ``proper-capital`` against ``initial-capital``, which spent a Brown state on sentence-initial words; "the
#: ``plural`` template": Brown's plural-noun state, M-1 65.9 -> 68.9)
DEFAULT_TEMPLATES = ("identity 3", "proper-capital", "all-caps", "has-digit", "has-hyphen", "has-punct",
                     "suffix 1", "suffix 2", "suffix 3", "length", "plural")
#: how often the stem of a ``plural`` word must have been seen as a word (as ``identity 3``'s threshold)
PLURAL_STEM_COUNT = 3
#: upper ends of the length buckets (the last bucket is open)
LENGTH_BUCKETS = (1, 2, 3, 4, 6, 9)
EXPECTED = ("a feature template: one of " + ", ".join(FLAGS) + ", or 'suffix N' / 'prefix N' / 'identity N' with "
            "N >= 1")


def parse_template(text: str) -> tuple[str, int] | None:
    """``(name, n)`` of one template line (``n`` = 0 for the flags; ``identity N`` is ``("identity", N)``);
    ``None`` for a name it does not know."""
    parts = text.split()
    if len(parts) == 1 and parts[0] in FLAGS:
        return parts[0], 0
    if len(parts) == 2 and parts[0] in ("suffix", "prefix", "identity") and parts[1].isdigit() and int(parts[1]) >= 1:
        return parts[0], int(parts[1])
    return None


def read_feature_file(path: str | Path) -> tuple[str, ...]:
    """The templates of a feature file, one a line (blank lines and ``#`` comments skipped);
    ``CorpusFormatError`` (``file:line: expected a feature template ...``) at the first line it cannot read."""
    templates = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read the feature file {path}: {err}") from None
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if parse_template(text) is None:
            raise CorpusFormatError(str(path), number, line, EXPECTED)
        templates.append(" ".join(text.split()))
    if not templates:
        raise CorpusFormatError(str(path), None, None, "at least one feature template")
    return tuple(templates)


def check_templates(templates: Sequence[str]) -> tuple[str, ...]:
    """``templates`` as a tuple of normalised template strings; ``ConfigError`` naming an unknown one."""
    out = []
    for t in templates:
        if not isinstance(t, str) or parse_template(t) is None:
            raise ConfigError(f"unknown feature template {t!r}: expected {EXPECTED}")
        out.append(" ".join(t.split()))
    if not out:
        raise ConfigError("the feature set is empty: give at least one template")
    return tuple(out)


def _length_bucket(n: int) -> str:
    """The bucket of a word of ``n`` characters: ``1``, ``2``, ``3``, ``4``, ``5-6``, ``7-9`` or ``10+``."""
    low = 1
    for top in LENGTH_BUCKETS:
        if n <= top:
            return str(top) if low == top else f"{low}-{top}"
        low = top + 1
    return f"{low}+"


def is_plural(low: str, seen: dict[str, float]) -> bool:
    """``plural`` of the lowercased word ``low``: 4+ characters, ends in ``-s`` but not ``-ss``, and ``seen`` (how
    often each lowercased form was seen in training) has its stem without ``-s``, or without ``-es``, at least
    :data:`PLURAL_STEM_COUNT` times."""
    if len(low) < 4 or not low.endswith("s") or low.endswith("ss"):
        return False
    return (seen.get(low[:-1], 0) >= PLURAL_STEM_COUNT
            or (low.endswith("es") and seen.get(low[:-2], 0) >= PLURAL_STEM_COUNT))


def template_features(word: str, templates: Sequence[tuple[str, int]], count: float = np.inf,
                      positional: bool = False, plural: bool = False) -> list[str]:
    """The names of the features of ``word`` under the parsed ``templates`` (each a ``(name, n)``); ``count`` is
    how often the lowercased word was seen in training (``identity N`` needs at least ``N``); ``positional``: its
    all-lowercase spelling was seen more often than its capitalised ones (``proper-capital`` does not fire);
    ``plural``: its stem was seen as a word (:func:`is_plural`; ``plural`` fires)."""
    low = word.lower()
    out = []
    for name, n in templates:
        if name == "identity":
            if count >= n:
                out.append("w=" + low)
        elif name == "form":
            out.append("form=" + word)
        elif name == "initial-capital":
            if word[:1].isupper():
                out.append("initial-capital")
        elif name == "proper-capital":
            if word[:1].isupper() and not positional:
                out.append("proper-capital")
        elif name == "all-caps":
            if word.isupper() and sum(c.isalpha() for c in word) > 1:
                out.append("all-caps")
        elif name == "has-digit":
            if any(c.isdigit() for c in word):
                out.append("has-digit")
        elif name == "has-hyphen":
            if "-" in word:
                out.append("has-hyphen")
        elif name == "has-punct":
            if any(not c.isalnum() for c in word):
                out.append("has-punct")
        elif name == "length":
            out.append("len=" + _length_bucket(len(word)))
        elif name == "plural":
            if plural:
                out.append("plural")
        elif len(low) > n:
            out.append(f"{name}{n}=" + (low[-n:] if name == "suffix" else low[:n]))
    return out


class FeatureSet:
    """What the features of a word are: a tuple of templates (the default :data:`DEFAULT_TEMPLATES`), a feature
    file's templates, or a user callable ``word -> iterable of feature names``.

    :meth:`matrix` gives the ``W x D`` binary CSR matrix of a vocabulary and the ``D`` feature names;
    :meth:`spec` what a model file records (the templates, or the callable's name).
    """

    def __init__(self, features: None | str | Path | Sequence[str] | Callable[[str], Iterable[str]] = None):
        self.function = None
        self.source = None
        if features is None:
            self.templates = DEFAULT_TEMPLATES
        elif callable(features):
            self.templates, self.function = (), features
        elif isinstance(features, (str, Path)):
            self.templates, self.source = read_feature_file(features), str(features)
        else:
            self.templates = check_templates(list(features))
        self._parsed = [parse_template(t) for t in self.templates]

    def of(self, word: str, count: float = np.inf, positional: bool = False, plural: bool = False) -> list[str]:
        """The feature names of one word (``count``: how often its lowercased form was seen in training;
        ``positional``, ``plural``: see :func:`template_features`)."""
        if self.function is None:
            return template_features(word, self._parsed, count, positional, plural)
        names = self.function(word)
        names = None if isinstance(names, str) else list(names)
        if names is None or not all(isinstance(n, str) for n in names):
            raise ConfigError(f"the feature function must return an iterable of feature names (str) for each "
                              f"word; for {word!r} it returned {self.function(word)!r}")
        return names

    def matrix(self, words: Sequence[str], counts: Sequence[int] | None = None) -> tuple[sp.csr_matrix, list[str]]:
        """``(F, names)``: ``F[w, d] = 1`` when word ``w`` has feature ``names[d]`` (features in order of first
        appearance).  ``counts[w]``: how often word ``w`` was seen in training (0 for a new word), summed over the
        words of one lowercased form for ``identity N``, and split into the all-lowercase spelling's count and the
        capitalised spellings' for ``proper-capital`` (positional when the first is larger), and looked up at a
        word's stem for ``plural``; ``None`` counts every word as frequent and no capital as positional.
        ``ConfigError`` if a word has no feature at all (its probability could not move).  (One loop over the
        vocabulary's types, never over tokens.)"""
        counted = counts is not None
        total: dict[str, float] = {}  # [form] = how often the lowercased form was seen (inf: counts is None)
        lower: dict[str, float] = {}  # [form] = count of the all-lowercase spelling minus the capitalised ones
        for word, c in zip(words, counts if counted else [np.inf] * len(words)):
            low = word.lower()
            total[low] = total.get(low, 0) + c
            if counted:
                lower[low] = lower.get(low, 0) + (c if word == low else -c if word[:1].isupper() else 0)
        seen = [total[word.lower()] for word in words]
        positional = [lower.get(word.lower(), 0) > 0 for word in words]
        plural = [is_plural(word.lower(), total) for word in words]
        index: dict[str, int] = {}
        cols, indptr = [], [0]
        for w, word in enumerate(words):
            feats = dict.fromkeys(self.of(word, seen[w], positional[w], plural[w]))
            if not feats:
                raise ConfigError(f"the word {word!r} has no feature: add the 'identity' template (or return at "
                                  f"least one name from the feature function)")
            cols.extend(index.setdefault(f, len(index)) for f in feats)
            indptr.append(len(cols))
        F = sp.csr_matrix((np.ones(len(cols)), np.asarray(cols, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
                          shape=(len(words), len(index)))
        return F, list(index)

    def spec(self) -> dict:
        """What a model file records of the feature set."""
        if self.function is not None:
            return {"kind": "callable", "name": getattr(self.function, "__qualname__", repr(self.function))}
        return {"kind": "templates", "templates": list(self.templates), "file": self.source}


class LogLinear:
    """The log-linear multinomials ``p(. | k)``, ``k = 1..K``, over the rows of ``F`` (``Y x D`` CSR), with the
    L2 penalty ``l2 * ||Theta||^2`` (paper eq. 2-4; see the module docstring)."""

    def __init__(self, F: sp.csr_matrix, l2: float):
        self.F = sp.csr_matrix(F, dtype=np.float64)
        self.FT = self.F.T.tocsr()
        self.l2 = float(l2)

    def log_probs(self, theta: np.ndarray) -> np.ndarray:
        """``log p(y | k)`` as a ``Y x K`` array (columns normalised)."""
        S = np.asarray(self.F @ theta)
        S -= S.max(axis=0)
        S -= np.log(np.exp(S).sum(axis=0))
        return S

    def probs(self, theta: np.ndarray) -> np.ndarray:
        """``p(y | k)`` as a C-contiguous ``Y x K`` array (columns sum to 1)."""
        return np.ascontiguousarray(np.exp(self.log_probs(theta)))

    def ascent(self, theta: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """``(l, dl/dTheta, P)`` at ``theta`` for expected counts ``counts`` (``Y x K``): the penalised expected
        log-likelihood, its gradient ``F' (e - P e.) - 2 l2 Theta`` (paper eq. 4) and the probabilities."""
        logp = self.log_probs(theta)
        P = np.exp(logp)
        value = float(np.vdot(counts, logp)) - self.l2 * float(np.vdot(theta, theta))
        grad = np.asarray(self.FT @ (counts - P * counts.sum(axis=0))) - 2.0 * self.l2 * theta
        return value, grad, P

    def m_step(self, theta: np.ndarray, counts: np.ndarray, max_iter: int) -> tuple[np.ndarray, float]:
        """The M-step: at most ``max_iter`` L-BFGS iterations (:func:`induce.infer.lbfgs.lbfgs`) on ``-l`` from
        ``theta`` (warm start); returns the new weights and their ``l``.  Every accepted step increases ``l``,
        so EM with this M-step is a generalised EM whose objective does not decrease."""
        shape = theta.shape

        def fun(x):
            value, grad, _ = self.ascent(x.reshape(shape), counts)
            return -value, -grad.ravel()

        x, f = theta.ravel(), None
        for _, (x, f) in zip(range(max_iter), lbfgs(fun, x)):
            pass
        if f is None:  # no step improved: theta is stationary
            return theta, self.ascent(theta, counts)[0]
        return x.reshape(shape), -f

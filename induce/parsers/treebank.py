"""Treebank preprocessing for PCFG-LA training (after Petrov et al. 2006).

Input trees are the cleaned trees of :func:`induce.corpus.read_ptb.read_ptb`
(``-NONE-`` empty elements and the constituents they leave empty removed,
function tags and indices stripped, the unlabeled wrapper dropped).  The
transform to Chomsky normal form, applied by :func:`binarize`, is:

1. **unary chains** are collapsed into one node whose label joins the chain's
   labels with ``+`` (top first): ``(S (VP ...))`` -> ``(S+VP ...)``, and a
   chain ending in a preterminal becomes a preterminal:
   ``(NP (NNP John))`` -> ``(NP+NNP John)``.  No PTB label contains ``+``;
2. **right binarisation with markovisation**: a node ``A`` with children
   ``X1 ... Xm`` (``m > 2``) becomes ``A -> X1 @A|X1``,
   ``@A|X1 -> X2 @A|X2``, ..., ``@A|Xm-2 -> Xm-1 Xm``.  The intermediate
   symbol ``@A|...`` covering ``Xi ... Xm`` remembers the ``h`` siblings
   generated just before it (their top labels, without ``+`` chains) (horizontal order ``h``, default 1; ``h = 0``
   gives the X-bar symbol ``@A`` of Petrov et al. 2006, ``h = 2`` records
   ``X_{i-2} X_{i-1}`` joined by ``_``).  Vertical order ``v`` (default 1)
   is the node's own label only; ``v = 2`` appends the parent's label as
   ``A^P`` to phrasal (non-preterminal) nodes, as Klein & Manning (2003).
   The latent subtypes learn the rest of the context;
3. the start symbol ``ROOT`` is implicit: the model has a distribution over the
   label of the root node (:class:`induce.parsers.latent_pcfg.LatentPCFGParser`).

:func:`debinarize` inverts the transform exactly: it splices out ``@`` nodes,
drops ``^`` parent annotations and expands ``+`` chains.

**Rare words** (Petrov et al. 2006: words seen fewer than ``min_count`` times
in training) are replaced by an unknown-word signature (:func:`signature`, the
English signature of the Berkeley parser's lexicon: capitalisation, digits,
dashes, and a few suffixes); at test time a word that is not in the training
vocabulary is replaced by its signature as well.
"""

from __future__ import annotations

from nltk import Tree

UNARY_JOIN = "+"
INTERMEDIATE = "@"
PARENT_MARK = "^"

#: Suffixes of the English unknown-word signature (Berkeley parser, unknown level 5), tried in order.
SUFFIXES = ("s", "ed", "ing", "ion", "er", "est", "ly", "ity", "y", "al")


def _is_preterminal(node) -> bool:
    return isinstance(node, Tree) and len(node) == 1 and isinstance(node[0], str)


def collapse_unaries(tree: Tree) -> Tree:
    """Join every unary chain of phrasal nodes into one node labelled ``A+B+...`` (see module doc)."""
    if _is_preterminal(tree):
        return Tree(tree.label(), [tree[0]])
    label = tree.label()
    node = tree
    while len(node) == 1 and isinstance(node[0], Tree):
        node = node[0]
        label += UNARY_JOIN + node.label()
        if _is_preterminal(node):
            return Tree(label, [node[0]])
    return Tree(label, [collapse_unaries(child) for child in node])


def _markov(children: list[str], i: int, horizontal: int) -> str:
    return "_".join(children[max(0, i - horizontal):i])


def _binarize(tree: Tree, parent: str | None, horizontal: int, vertical: int) -> Tree:
    if _is_preterminal(tree):
        return Tree(tree.label(), [tree[0]])
    label = tree.label()
    base = label
    if vertical >= 2 and parent is not None:
        label = f"{label}{PARENT_MARK}{parent}"
    kids = [_binarize(child, base, horizontal, vertical) for child in tree]
    names = [child.label().split(PARENT_MARK, 1)[0].split(UNARY_JOIN, 1)[0] for child in kids]
    # right-factored: the node over X_i..X_m (i >= 1) is @A|<previous h siblings>
    right = kids[-1]
    for i in range(len(kids) - 2, 0, -1):
        mid = f"{INTERMEDIATE}{base}" + (f"|{_markov(names, i, horizontal)}" if horizontal > 0 else "")
        right = Tree(mid, [kids[i], right])
    return Tree(label, [kids[0], right])


def binarize(tree: Tree, horizontal: int = 1, vertical: int = 1) -> Tree:
    """The CNF tree of a cleaned treebank tree (unary chains collapsed, right-binarised, markovised)."""
    return _binarize(collapse_unaries(tree), None, horizontal, vertical)


def debinarize(tree: Tree) -> Tree:
    """Inverse of :func:`binarize`: splice out ``@`` nodes, drop ``^`` annotations, expand ``+`` chains."""

    def walk(node) -> list:
        if isinstance(node, str):
            return [node]
        kids = [k for child in node for k in walk(child)]
        label = node.label()
        if label.startswith(INTERMEDIATE):
            return kids
        chain = label.split(PARENT_MARK, 1)[0].split(UNARY_JOIN)
        out = Tree(chain[-1], kids)
        for name in reversed(chain[:-1]):
            out = Tree(name, [out])
        return [out]

    built = walk(tree)
    return built[0]


def signature(word: str, known_lower: bool = False, sentence_initial: bool = False) -> str:
    """Unknown-word class of ``word`` (Berkeley parser lexicon, English, unknown level 5).

    ``UNK`` followed by

    * capitalisation: ``-INITC`` for a sentence-initial word with one capital
      first letter (plus ``-KNOWNLC`` when its lower-cased form is a known word),
      ``-CAPS`` for other words starting with a capital or with capitals after a
      non-letter first character, ``-LC`` for words with lower-case letters;
    * ``-NUM`` when it has a digit, ``-DASH`` when it has a ``-``;
    * a suffix: ``-s`` for words of at least 3 characters ending in ``s`` but not
      ``ss``/``is``/``us``; otherwise, for words of at least 5 characters without a
      dash (and not both digits and capitals), the first of :data:`SUFFIXES` after
      ``s`` that ends the lower-cased word.
    """
    parts = ["UNK"]
    caps = sum(ch.isalpha() and not ch.islower() for ch in word)
    has_digit = any(ch.isdigit() for ch in word)
    has_dash = "-" in word
    has_lower = any(ch.isalpha() and ch.islower() for ch in word)
    first = word[:1]
    if first.isalpha() and not first.islower():
        if sentence_initial and caps == 1:
            parts.append("-INITC")
            if known_lower:
                parts.append("-KNOWNLC")
        else:
            parts.append("-CAPS")
    elif not first.isalpha() and caps > 0:
        parts.append("-CAPS")
    elif has_lower:
        parts.append("-LC")
    if has_digit:
        parts.append("-NUM")
    if has_dash:
        parts.append("-DASH")
    lower = word.lower()
    if lower.endswith("s") and len(word) >= 3:
        if lower[-2] not in "siu":
            parts.append("-s")
    elif len(word) >= 5 and not has_dash and not (has_digit and caps > 0):
        for suffix in SUFFIXES[1:]:
            if lower.endswith(suffix):
                parts.append("-" + suffix)
                break
    return "".join(parts)


class Lexicon:
    """Word -> terminal mapping with rare words replaced by their :func:`signature`.

    ``known`` are the training words seen at least ``min_count`` times; every other
    word is mapped to its signature (in training and at test time alike).
    """

    def __init__(self, known: set[str]):
        self.known = known
        self.known_lower = {w.lower() for w in known}

    @classmethod
    def from_sentences(cls, sentences: list[list[str]], min_count: int = 2) -> "Lexicon":
        counts: dict[str, int] = {}
        for words in sentences:
            for w in words:
                counts[w] = counts.get(w, 0) + 1
        return cls({w for w, c in counts.items() if c >= min_count})

    def terminals(self, words: list[str]) -> list[str]:
        """The terminal of each word of a sentence: the word when known, else its signature."""
        return [w if w in self.known else signature(w, w.lower() in self.known_lower, i == 0)
                for i, w in enumerate(words)]

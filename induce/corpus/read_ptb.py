"""Penn Treebank bracketed trees (``.mrg``) via ``nltk.Tree``.

A file is a sequence of top-level bracketed expressions, each one sentence,
usually wrapped in an unlabeled bracket ``( (S ...) )``.  The reader splits the
text at the brackets itself (so an unbalanced bracket is reported at its line),
parses each expression with ``nltk.Tree.fromstring`` and then, as the usual
treebank preprocessing does:

* removes ``-NONE-`` empty elements (traces) and the constituents they leave
  empty;
* strips function tags and indices from phrase labels (``NP-SBJ-1`` -> ``NP``,
  ``NP=2`` -> ``NP``) but keeps labels that start and end with ``-``
  (``-LRB-``, ``-RRB-``) and leaves POS tags as they are;
* drops the unlabeled wrapper when it has one child (as NLTK's treebank reader);
* reads induce's tagged output, whose preterminals are all ``GOLD=INDUCED``
  (:func:`induce.corpus.writers.write_tagged`), as the gold tag in the tree and
  ``tags["pos"]`` and the induced one in ``tags["induced"]`` (split at the last
  ``=``; a tree where some preterminal has no ``=`` is read as it is).

``Sentence.tree`` is the cleaned tree, ``words``/``tags["pos"]`` its leaves and
preterminals, and ``record`` the tree exactly as read (wrapper and traces
included).
"""

from __future__ import annotations

import os
import re
from typing import Iterator

from nltk import Tree

from ..errors import CorpusFormatError
from .read_lines import iter_lines
from .sentence import Sentence

EMPTY = "-NONE-"
#: joins the gold and the induced tag of a preterminal in tagged PTB output (``NN=S12``)
INDUCED_MARK = "="
_BRACKET = re.compile(r"[()]")
_FUNCTION_TAG = re.compile(r"[-=]")


def strip_label(label: str) -> str:
    """Phrase label without function tags and indices: ``NP-SBJ-1`` -> ``NP``; ``-LRB-`` kept."""
    if len(label) > 1 and label.startswith("-") and label.endswith("-"):
        return label
    return _FUNCTION_TAG.split(label, maxsplit=1)[0] or label


def is_preterminal(tree) -> bool:
    return isinstance(tree, Tree) and len(tree) == 1 and isinstance(tree[0], str)


def clean_tree(tree: Tree) -> Tree | None:
    """The tree without empty elements and the constituents left empty, labels stripped.

    Returns ``None`` when nothing but empty elements remains.
    """
    if is_preterminal(tree):
        return None if tree.label() == EMPTY else Tree(tree.label(), [tree[0]])
    children = [c for c in (clean_tree(child) for child in tree if isinstance(child, Tree)) if c is not None]
    if not children:
        return None
    return Tree(strip_label(tree.label()), children)


def unwrap(tree: Tree) -> Tree:
    """The single child of an unlabeled wrapper bracket, or the tree itself."""
    return tree[0] if tree.label() == "" and len(tree) == 1 and isinstance(tree[0], Tree) else tree


def iter_bracketed(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """``(first line, text)`` of every top-level bracketed expression of ``path``."""
    name = str(path)
    depth, start, parts = 0, 0, []
    for number, text in iter_lines(path, encoding):
        pos = 0
        for match in _BRACKET.finditer(text):
            if depth == 0:
                outside = text[pos : match.start()].strip()
                if outside:
                    raise CorpusFormatError(name, number, text, f"'(' opening a tree; got text {outside!r}")
                if match.group() == ")":
                    raise CorpusFormatError(name, number, text, "balanced brackets; got ')' with no open '('")
                start, pos, parts = number, match.start(), []
            depth += 1 if match.group() == "(" else -1
            if depth == 0:
                parts.append(text[pos : match.end()])
                yield start, " ".join(parts)
                pos = match.end()
        if depth > 0:
            parts.append(text[pos:])
        elif text[pos:].strip():
            raise CorpusFormatError(name, number, text, f"'(' opening a tree; got text {text[pos:].strip()!r}")
    if depth > 0:
        raise CorpusFormatError(
            name, start, None, f"balanced brackets; the tree starting here lacks {depth} closing ')'"
        )


def read_ptb(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[Sentence]:
    """Sentences of a bracketed treebank file (see the module docstring)."""
    name = str(path)
    for number, text in iter_bracketed(path, encoding):
        try:
            raw = Tree.fromstring(text)
        except ValueError as exc:
            raise CorpusFormatError(name, number, text, f"a bracketed tree ({exc})") from None
        tree = clean_tree(raw)
        if tree is None:
            raise CorpusFormatError(name, number, text, "a tree with at least one word besides -NONE- elements")
        tree = unwrap(tree)
        words, pos = zip(*tree.pos())
        tags = {"pos": list(pos)}
        pairs = [p.rpartition(INDUCED_MARK) for p in pos]
        if all(gold and induced for gold, _, induced in pairs):
            from .writers import relabel_preterminals

            tags = {"pos": [gold for gold, _, _ in pairs], "induced": [induced for _, _, induced in pairs]}
            tree = relabel_preterminals(tree, tags["pos"])
        yield Sentence(words=list(words), tags=tags, tree=tree, source=(name, number), record=raw)

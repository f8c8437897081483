"""Corpus writers; every file is written atomically (:func:`induce.atomic.atomic_write`).

Written from ``Sentence.record`` when the sentence has one, so every input
column survives; otherwise from the sentence's fields (words, tags, heads,
deprels, tree), e.g. for the demo corpus or after :func:`strip_punctuation`.

Where induced tags go (:func:`write_tagged`):

* ``conllu``: the column ``column`` (default ``upos``): ``upos`` or ``xpos``
  replaces that column, any other name becomes a MISC entry ``name=tag``.
* ``conllx``, ``conll2000``, ``malt``: ``column`` naming one of the format's
  tag columns (conllx ``cpos``/``pos``, conll2000 ``pos``/``chunk``, malt
  ``pos``) replaces it; ``column=None`` appends the tags as one extra last
  column (the conlleval convention ``word ... gold predicted``), which the
  readers return as the tag column ``"induced"``.
* ``brown`` and ``plain``: ``word/TAG`` tokens (the gold Brown tag is replaced).
* ``ptb``: every preterminal becomes ``GOLD=INDUCED`` (``(NN=S12 dog)``,
  ``(-LRB-=S3 -LRB-)``), the ``=`` suffix of PTB indices (``NP=2``): tools that
  strip function tags and indices (evalb, NLTK's ``label.split("=")[0]``) see
  the gold tag, and :func:`induce.corpus.read_ptb.read_ptb` returns the gold
  tags as ``pos`` and the induced ones as the column ``"induced"``.
"""

from __future__ import annotations

import os
from typing import Iterable, Sequence

import conllu
from nltk import Tree

from ..atomic import atomic_write
from ..errors import ConfigError
from .read_columns import COLUMN_FORMATS, MISSING, ColumnFormat
from .read_ptb import INDUCED_MARK
from .sentence import Sentence

CONLLU_COLUMNS = ("upos", "xpos")
# Tag columns of a sentence from another format that fill a CoNLL-X/CoNLL-U column, by preference.
_FILL = {
    "cpos": ("cpos", "upos", "universal"),
    "pos": ("pos", "xpos"),
    "chunk": ("chunk",),
    "upos": ("upos", "cpos", "universal"),
    "xpos": ("xpos", "pos"),
}


def _fill(sent: Sentence, column: str) -> list[str]:
    name = next((c for c in _FILL.get(column, (column,)) if c in sent.tags), None)
    return list(sent.tags[name]) if name is not None else [MISSING] * len(sent)


def _check_lengths(sentences: Sequence[Sentence], values: Sequence[Sequence] | None, what: str) -> None:
    if values is None:
        return
    if len(values) != len(sentences):
        raise ValueError(f"{len(values)} {what} sequences for {len(sentences)} sentences")
    for sent, vals in zip(sentences, values):
        if len(vals) != len(sent):
            raise ValueError(f"{len(vals)} {what} for a sentence of {len(sent)} words at {sent.source}")


# ------------------------------------------------------------------- CoNLL-U
def _conllu_tokens(sent: Sentence) -> conllu.TokenList:
    """A copy of the sentence's TokenList, or one built from its fields."""
    if isinstance(sent.record, conllu.TokenList):
        tokens = [conllu.Token({**t, "misc": dict(t["misc"]) if t["misc"] else t["misc"]}) for t in sent.record]
        return conllu.TokenList(tokens, metadata=conllu.Metadata(sent.record.metadata))
    upos, xpos = _fill(sent, "upos"), _fill(sent, "xpos")
    heads = sent.heads if sent.heads is not None else [None] * len(sent)
    deprels = sent.deprels if sent.deprels is not None else [MISSING] * len(sent)
    tokens = [
        conllu.Token(
            id=i + 1, form=w, lemma=MISSING, upos=upos[i], xpos=None if xpos[i] == MISSING else xpos[i],
            feats=None, head=heads[i], deprel=deprels[i], deps=None, misc=None,
        )
        for i, w in enumerate(sent.words)
    ]
    return conllu.TokenList(tokens, metadata=conllu.Metadata({"text": " ".join(sent.words)}))


def write_conllu(
    path: str | os.PathLike, sentences: Sequence[Sentence], values: Sequence[Sequence] | None = None, column: str = "upos"
) -> None:
    """CoNLL-U, with ``values[i][k]`` (tag ids or strings) put into ``column`` of word ``k`` of sentence ``i``.

    ``column`` is ``upos``, ``xpos`` or a MISC key; all other columns (and
    multiword tokens, empty nodes, comments) are kept as read.
    """
    _check_lengths(sentences, values, "tags")
    with atomic_write(path) as out:
        for i, sent in enumerate(sentences):
            tokens = _conllu_tokens(sent)
            if values is not None:
                words = [t for t in tokens if isinstance(t["id"], int)]
                for token, value in zip(words, values[i]):
                    if column in CONLLU_COLUMNS:
                        token[column] = str(value)
                    else:
                        token["misc"] = {**(token["misc"] or {}), column: str(value)}
            out.write(tokens.serialize())


# -------------------------------------------------------------- column rows
def column_rows(sent: Sentence, fmt: ColumnFormat) -> list[list[str]]:
    """The rows of ``sent`` in a column format: copies of the record, or built from the fields."""
    if getattr(sent.record, "format", None) == fmt.name:
        return [list(row) for row in sent.record]
    if isinstance(sent.record, conllu.TokenList) and fmt.name == "conllx":
        return [
            [str(t["id"]), t["form"], t["lemma"] or MISSING, t["upos"] or MISSING, t["xpos"] or MISSING,
             conllu.serializer.serialize_field(t["feats"]), conllu.serializer.serialize_field(t["head"]),
             t["deprel"] or MISSING, MISSING, MISSING]
            for t in sent.record if isinstance(t["id"], int)
        ]
    n = len(sent)
    columns: list[list[str]] = [[MISSING] * n for _ in fmt.columns]
    columns[fmt.word] = list(sent.words)
    if fmt.id_col is not None:
        columns[fmt.id_col] = [str(k + 1) for k in range(n)]
    for tag, index in fmt.tags.items():
        columns[index] = _fill(sent, tag)
    if fmt.head is not None and sent.heads is not None:
        columns[fmt.head] = [str(h) for h in sent.heads]
    if fmt.deprel is not None and sent.deprels is not None:
        columns[fmt.deprel] = list(sent.deprels)
    return [list(row) for row in zip(*columns)]


def _write_rows(path: str | os.PathLike, fmt: ColumnFormat, rows: Iterable[list[list[str]]]) -> None:
    sep = fmt.sep or " "
    with atomic_write(path) as out:
        for sentence_rows in rows:
            out.write("".join(sep.join(row) + "\n" for row in sentence_rows) + "\n")


def _place(rows: list[list[str]], fmt: ColumnFormat, values: Sequence, column: str | None) -> list[list[str]]:
    if column is None:
        width = len(fmt.columns)
        return [row[:width] + [str(v)] for row, v in zip(rows, values)]
    if column not in fmt.tags:
        raise ConfigError(f"{fmt.name} has tag columns {sorted(fmt.tags)}; got column {column!r}")
    index = fmt.tags[column]
    return [row[:index] + [str(v)] + row[index + 1 :] for row, v in zip(rows, values)]


def write_conllx_heads(
    path: str | os.PathLike,
    sentences: Sequence[Sentence],
    heads: Sequence[Sequence[int]],
    deprels: Sequence[Sequence[str]] | None = None,
) -> None:
    """CoNLL-X with predicted ``heads`` (1-based, 0 = root) in HEAD; DEPREL from
    ``deprels`` or ``_`` (gold relations do not belong to predicted arcs); the
    other columns from the input."""
    _check_lengths(sentences, heads, "heads")
    _check_lengths(sentences, deprels, "deprels")
    fmt = COLUMN_FORMATS["conllx"]

    def rows():
        for i, sent in enumerate(sentences):
            out = []
            for k, row in enumerate(column_rows(sent, fmt)):
                head = int(heads[i][k])
                if not 0 <= head <= len(sent):
                    raise ValueError(f"head {head} out of range 0..{len(sent)} at {sent.source}, word {k + 1}")
                row[fmt.head] = str(head)
                row[fmt.deprel] = deprels[i][k] if deprels is not None else MISSING
                out.append(row)
            yield out

    _write_rows(path, fmt, rows())


# ----------------------------------------------------------------- PTB trees
def tree_line(tree: Tree) -> str:
    """One tree on one line in ``.mrg`` style: wrapped in an unlabeled bracket unless it is one."""
    flat = tree.pformat(margin=1 << 30)
    return flat if tree.label() == "" else f"( {flat})"


def write_ptb(path: str | os.PathLike, trees: Iterable[Tree]) -> None:
    """Bracketed trees, one per line (re-read by the PTB reader to the same trees)."""
    with atomic_write(path) as out:
        for tree in trees:
            out.write(tree_line(tree) + "\n")


def relabel_preterminals(tree: Tree, tags: Sequence) -> Tree:
    """A copy of ``tree`` whose preterminals, left to right, are labelled ``tags``."""
    copy = tree.copy(deep=True)
    positions = copy.treepositions("leaves")
    if len(positions) != len(tags):
        raise ValueError(f"{len(tags)} tags for a tree of {len(positions)} leaves")
    for position, tag in zip(positions, tags):
        copy[position[:-1]].set_label(str(tag))
    return copy


# -------------------------------------------------------------- any format
def _surface(sent: Sentence) -> list[str]:
    """The words as written in the input, before word transforms such as lowercasing."""
    fmt = getattr(sent.record, "format", None)
    if fmt is not None:
        word = COLUMN_FORMATS[fmt].word if fmt in COLUMN_FORMATS else 0
        return [row[word] for row in sent.record]
    if isinstance(sent.record, conllu.TokenList):
        return [t["form"] for t in sent.record if isinstance(t["id"], int)]
    return list(sent.words)


def _tagged_line(words: Sequence[str], tags: Sequence) -> str:
    return " ".join(f"{w}/{t}" for w, t in zip(words, tags)) + "\n"


def write_sentences(path: str | os.PathLike, sentences: Sequence[Sentence], format: str) -> None:
    """``sentences`` in ``format`` (one of ``induce.corpus.formats.FORMATS``), all columns kept.

    PTB sentences are written as read (``record``: traces and function tags
    included) when they have their record, else as their ``tree``.
    """
    if format == "conllu":
        write_conllu(path, sentences)
    elif format == "ptb":
        missing = next((i for i, s in enumerate(sentences) if not isinstance(s.record, Tree) and s.tree is None), None)
        if missing is not None:
            raise ConfigError(f"sentence {missing + 1} has no constituency tree; PTB output needs trees (write a "
                              "column format such as conllu or conllx instead)")
        write_ptb(path, (s.record if isinstance(s.record, Tree) else s.tree for s in sentences))
    elif format in COLUMN_FORMATS:
        fmt = COLUMN_FORMATS[format]
        _write_rows(path, fmt, (column_rows(s, fmt) for s in sentences))
    elif format == "brown":
        with atomic_write(path) as out:
            for sent in sentences:
                is_brown = getattr(sent.record, "format", None) == "brown"
                out.write(_tagged_line(_surface(sent), [t for _, t in sent.record] if is_brown else _fill(sent, "pos")))
    elif format == "plain":
        with atomic_write(path) as out:
            for sent in sentences:
                out.write(" ".join(_surface(sent)) + "\n")
    else:
        raise ConfigError(f"unknown corpus format {format!r}")


def write_tagged(
    path: str | os.PathLike, sentences: Sequence[Sentence], tags: Sequence[Sequence], format: str, column: str | None = None
) -> None:
    """``sentences`` in ``format`` with the induced ``tags`` placed as described in the module docstring."""
    _check_lengths(sentences, tags, "tags")
    if format == "conllu":
        write_conllu(path, sentences, tags, column or "upos")
    elif format in COLUMN_FORMATS:
        fmt = COLUMN_FORMATS[format]
        _write_rows(path, fmt, (_place(column_rows(s, fmt), fmt, t, column) for s, t in zip(sentences, tags)))
    elif format in ("brown", "plain"):
        with atomic_write(path) as out:
            for sent, values in zip(sentences, tags):
                out.write(_tagged_line(_surface(sent), values))
    elif format == "ptb":
        write_ptb(path, (relabel_preterminals(s.tree, [f"{gold}{INDUCED_MARK}{tag}" for (_, gold), tag in
                                                       zip(s.tree.pos(), t)]) for s, t in zip(sentences, tags)))
    else:
        raise ConfigError(f"unknown corpus format {format!r}")

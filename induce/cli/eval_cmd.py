"""``induce eval tags|deps|brackets|align PRED GOLD``: score predictions against gold.

Both files are read with the corpus readers (format auto-detected unless given);
their sentences must pair up one to one with the same words, else the command
stops with an error naming the first mismatching sentence (``file:line``).
"""

from __future__ import annotations

import argparse
import itertools
from typing import Iterator

import numpy as np

from ..errors import CorpusFormatError
from ..eval import (
    accuracy,
    alignment_scores,
    attachment_scores,
    bracket_scores,
    punctuation_mask,
    tagging_report,
)
from .common import add_json_flag, corpus_path, emit, positive_int

#: Gold tag columns tried in order when ``--gold-column`` is not given.
GOLD_COLUMNS = ("upos", "pos", "xpos", "cpos")
#: Column the taggers write induced states into; preferred for the prediction.
INDUCED_COLUMN = "induced"


def _where(sentence) -> tuple[str | None, int | None]:
    return sentence.source if sentence.source is not None else (None, None)


def _paired(pred_path: str, gold_path: str, fmt: str) -> Iterator[tuple]:
    """``(pred, gold)`` sentence pairs of two files; raises on a count or word mismatch."""
    from ..corpus.formats import read_sentences

    missing = object()
    pairs = itertools.zip_longest(read_sentences(pred_path, fmt), read_sentences(gold_path, fmt), fillvalue=missing)
    for k, (pred, gold) in enumerate(pairs):
        if pred is missing:
            raise CorpusFormatError(pred_path, None, None, f"as many sentences as {gold_path}; it ends after {k}")
        if gold is missing:
            raise CorpusFormatError(gold_path, None, None, f"as many sentences as {pred_path}; it ends after {k}")
        if pred.words != gold.words:
            gold_file, gold_line = _where(gold)
            raise CorpusFormatError(
                *_where(pred),
                " ".join(pred.words),
                f"sentence {k + 1} to have the words of {gold_file}:{gold_line} ({' '.join(gold.words)!r})",
            )
        yield pred, gold


def _column(sentence, wanted: str | None, preferred: tuple[str, ...], path: str) -> str:
    """The tag column to use: ``wanted`` if given, else the first of ``preferred`` present."""
    candidates = (wanted,) if wanted else preferred
    for name in candidates:
        if name in sentence.tags:
            return name
    file, line = _where(sentence)
    raise CorpusFormatError(
        file or path,
        line,
        None,
        f"a tag column named {' or '.join(candidates)} (available: {', '.join(sentence.tags) or 'none'})",
    )


def _offsets(lengths: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)


def halvable(offsets: np.ndarray) -> bool:
    """Whether both halves of the cross-validated many-to-one split hold a token."""
    n_sent = offsets.size - 1
    return n_sent >= 2 and 0 < offsets[n_sent // 2] < offsets[-1]


def _eval_tags(args: argparse.Namespace) -> int:
    pred_tags: list[str] = []
    gold_tags: list[str] = []
    lengths: list[int] = []
    columns: tuple[str, str] | None = None
    for pred, gold in _paired(args.pred, args.gold, args.format):
        if columns is None:
            gold_col = _column(gold, args.gold_column, GOLD_COLUMNS, args.gold)
            columns = (_column(pred, args.pred_column, (INDUCED_COLUMN, gold_col, *GOLD_COLUMNS), args.pred), gold_col)
        pred_tags.extend(pred.tags[_column(pred, columns[0], (), args.pred)])
        gold_tags.extend(gold.tags[_column(gold, columns[1], (), args.gold)])
        lengths.append(len(gold))
    if not gold_tags:
        raise CorpusFormatError(args.gold, None, None, "at least one word to evaluate")
    # one id space for both sides, so that plain accuracy compares equal strings
    _, ids = np.unique(np.array(pred_tags + gold_tags, dtype=object).astype(str), return_inverse=True)
    pred_ids, gold_ids = ids[: len(pred_tags)], ids[len(pred_tags) :]
    offsets = _offsets(lengths)
    report = tagging_report(pred_ids, gold_ids, offsets if halvable(offsets) else None)
    report["accuracy"] = accuracy(pred_ids, gold_ids)
    result = {"sentences": len(lengths), "pred_column": columns[0], "gold_column": columns[1], **report}
    emit(result, args.json)
    return 0


#: Gold column -> punctuation tagset, tried in order when ``--punct-tagset auto``.
PUNCT_COLUMNS = (("upos", "upos"), ("cpos", "conll2007"), ("xpos", "ptb"), ("pos", "ptb"))


def _punct_tagset(gold, tagset: str) -> tuple[str, str] | None:
    """``(column, tagset)`` that marks punctuation in a gold sentence, if any."""
    for column, default in PUNCT_COLUMNS:
        if column in gold.tags and tagset in ("auto", default):
            return column, default
    return None


def _require_heads(sentence, path: str) -> list[int]:
    if sentence.heads is None:
        file, line = _where(sentence)
        raise CorpusFormatError(file or path, line, " ".join(sentence.words), "a sentence with dependency heads")
    return sentence.heads


def _eval_deps(args: argparse.Namespace) -> int:
    pred_heads: list[int] = []
    gold_heads: list[int] = []
    lengths: list[int] = []
    punct: list[np.ndarray] = []
    convention = None
    for pred, gold in _paired(args.pred, args.gold, args.format):
        pred_heads.extend(_require_heads(pred, args.pred))
        gold_heads.extend(_require_heads(gold, args.gold))
        lengths.append(len(gold))
        if args.punct == "exclude":
            found = _punct_tagset(gold, args.punct_tagset)
            if found is None:
                columns = ", ".join(c for c, t in PUNCT_COLUMNS if args.punct_tagset in ("auto", t))
                raise CorpusFormatError(*_where(gold), None, f"a gold tag column ({columns}) to find punctuation")
            convention = convention or found
            punct.append(punctuation_mask(gold.tags[found[0]], found[1]))
    mask = ~np.concatenate(punct) if args.punct == "exclude" and punct else None
    scores = attachment_scores(np.array(pred_heads), np.array(gold_heads), _offsets(lengths), mask)
    result = {"sentences": len(lengths), **scores}
    if convention is not None:
        result["punctuation_tags"] = f"{convention[1]} tags of column {convention[0]}"
    emit(result, args.json)
    return 0


def _require_tree(sentence, path: str):
    if sentence.tree is None:
        file, line = _where(sentence)
        raise CorpusFormatError(file or path, line, " ".join(sentence.words), "a sentence with a constituency tree")
    return sentence.tree


def _eval_brackets(args: argparse.Namespace) -> int:
    pred_trees, gold_trees = [], []
    for pred, gold in _paired(args.pred, args.gold, args.format):
        pred_trees.append(_require_tree(pred, args.pred))
        gold_trees.append(_require_tree(gold, args.gold))
    scores = bracket_scores(pred_trees, gold_trees, labeled=not args.unlabeled, max_length=args.max_length)
    result = {"labeled": not args.unlabeled, "max_length": args.max_length, **scores}
    emit(result, args.json)
    return 0


def _eval_align(args: argparse.Namespace) -> int:
    from ..corpus.parallel import read_alignments

    sides = []
    for path, fmt, base in ((args.pred, args.pred_format, args.pred_base), (args.gold, args.gold_format, args.gold_base)):
        one_based = None if base is None else base == 1
        sides.append((path, fmt, read_alignments(path, format=fmt, one_based=one_based)))
    n_pairs = max(len(alignments) for _, _, alignments in sides)
    for path, fmt, alignments in sides:
        # a NAACL file lists links only, so its trailing pairs without links are implicit
        if len(alignments) < n_pairs and fmt != "naacl":
            raise CorpusFormatError(path, None, None, f"{n_pairs} sentence pairs, one line each; got {len(alignments)}")

    def links(alignments, kind: str) -> list[set]:
        return [getattr(a, kind) for a in alignments] + [set()] * (n_pairs - len(alignments))

    pred, gold = sides[0][2], sides[1][2]
    # every predicted link counts as A (the predicted file's possible links include its sure ones)
    scores = alignment_scores(links(pred, "possible"), links(gold, "sure"), links(gold, "possible"))
    emit(scores, args.json)
    return 0


def _pair_arguments(parser: argparse.ArgumentParser, corpus_format: bool = True) -> None:
    parser.add_argument("pred", metavar="PRED", type=corpus_path, help="predicted file")
    parser.add_argument("gold", metavar="GOLD", type=corpus_path, help="gold file")
    if corpus_format:
        parser.add_argument("--format", default="auto", help="format of both files (default: auto-detect)")
    add_json_flag(parser)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="score predicted tags, heads, trees or alignments against gold",
        description=__doc__.split("\n\n")[0],
    )
    sub = parser.add_subparsers(dest="eval_what", metavar="WHAT")
    sub.required = True

    tags = sub.add_parser(
        "tags",
        help="M-1, cross-validated M-1, 1-1 (optimal, greedy), VI, V-measure, accuracy",
        description="Unsupervised tagging metrics (thesis 3.8.2).  Plain accuracy compares the tag "
        "strings and is meaningful only when predicted labels are gold tags.",
    )
    _pair_arguments(tags)
    tags.add_argument("--pred-column", help=f"predicted tag column (default: {INDUCED_COLUMN!r} if present, else the gold column)")
    tags.add_argument("--gold-column", help=f"gold tag column (default: first of {', '.join(GOLD_COLUMNS)})")
    tags.set_defaults(handler=_eval_tags)

    deps = sub.add_parser("deps", help="directed and undirected attachment accuracy")
    _pair_arguments(deps)
    deps.add_argument(
        "--punct",
        choices=("include", "exclude"),
        default="exclude",
        help="score punctuation words or not (judged by the gold tags); default exclude",
    )
    deps.add_argument(
        "--punct-tagset",
        choices=("auto", "upos", "conll2007", "ptb"),
        default="auto",
        help="tags that mark punctuation: upos (PUNCT, SYM; column upos), conll2007 (CPOS PUNT, F; column cpos), "
        "ptb ('' `` , . : -LRB- -RRB- # $; column xpos or pos); auto takes the first of these columns present",
    )
    deps.set_defaults(handler=_eval_deps)

    brackets = sub.add_parser("brackets", help="evalb (COLLINS.prm) bracket precision, recall, F1, exact match")
    _pair_arguments(brackets)
    brackets.add_argument("--unlabeled", action="store_true", help="ignore constituent labels")
    brackets.add_argument("--max-length", type=positive_int, metavar="N", help="score only sentences of at most N words (evalb cutoff, e.g. 40)")
    brackets.set_defaults(handler=_eval_brackets)

    align = sub.add_parser("align", help="alignment precision, recall, AER and F1 (sure/possible links)")
    _pair_arguments(align, corpus_format=False)
    align.add_argument("--pred-format", choices=("pharaoh", "naacl"), default="pharaoh", help="default pharaoh")
    align.add_argument("--gold-format", choices=("naacl", "pharaoh"), default="naacl", help="default naacl")
    for side in ("pred", "gold"):
        align.add_argument(
            f"--{side}-base",
            type=int,
            choices=(0, 1),
            help=f"index base of the {side} positions (default: the format's, naacl 1, pharaoh 0; "
            "the shared ro-en / ja-en Pharaoh golds are 1-based, de-en's NAACL file 0-based)",
        )
    align.set_defaults(handler=_eval_align)

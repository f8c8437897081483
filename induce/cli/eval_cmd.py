"""``induce eval tags|deps|brackets|align PRED GOLD``: score predictions against gold.

Both files are read with the corpus readers (format auto-detected unless given);
their sentences must pair up one to one with the same words, else the command
stops with an error naming the first mismatching sentence (``file:line``).

``eval deps`` also accepts predictions made without punctuation (``induce parse
--strip-punct`` or ``--wsj10``): a gold sentence whose words, punctuation removed
(:func:`induce.corpus.transforms.punctuation_mask`), are the predicted ones is
scored with that punctuation removed and its dependents re-attached to the nearest
kept ancestor, exactly the gold that ``parse`` scored against; gold sentences of
punctuation only are then skipped.  ``--wsj10`` keeps the gold sentences of
Klein & Manning's WSJ10 (at most 10 words without punctuation), the sentences
``parse --wsj10`` writes.
"""

from __future__ import annotations

import argparse
from typing import Iterator

import numpy as np

from ..errors import ConfigError, CorpusFormatError
from .common import one_stdin
from .common import (GOLD_TAG_COLUMNS, add_base_option, add_json_flag, corpus_path, emit, gold_tag_column, one_based,
                     positive_int)

#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "score predicted tags, heads, trees or alignments against gold"


#: Column the taggers write induced states into; preferred for the prediction.
INDUCED_COLUMN = "induced"
#: Punctuation conventions of dependency scoring; the first is the default of ``parse`` and ``eval deps``.
PUNCT_CHOICES = ("exclude", "include")


def _where(sentence) -> tuple[str | None, int | None]:
    return sentence.source if sentence.source is not None else (None, None)


def _paired(pred_path: str, gold_path: str, fmt: str, strip: dict | None = None, wsj10: bool = False) -> Iterator[tuple]:
    """``(pred, gold)`` sentence pairs of two files; raises on a count or word mismatch.

    With ``strip`` (a dict), a gold sentence that matches its prediction only without
    punctuation is paired stripped (``strip["aligned"]`` counts them) and gold sentences
    of punctuation only that the prediction lacks are skipped (``strip["skipped"]``).
    ``wsj10`` keeps the gold sentences of at most 10 words without punctuation.
    """
    from ..corpus.formats import read_sentences
    from ..corpus.transforms import is_wsj10, strip_punctuation

    one_stdin(PRED=pred_path, GOLD=gold_path)
    missing = object()
    golds = read_sentences(gold_path, fmt)
    if wsj10:
        golds = (g for g in golds if is_wsj10(g))
    golds = iter(golds)
    k = -1
    for k, pred in enumerate(read_sentences(pred_path, fmt)):
        gold = next(golds, missing)
        while strip is not None and gold is not missing and pred.words != gold.words:
            stripped = strip_punctuation(gold)
            if stripped.words:
                if stripped.words == pred.words:
                    gold = stripped
                    strip["aligned"] += 1
                break
            strip["skipped"] += 1
            gold = next(golds, missing)
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
    for gold in golds:
        if strip is None or strip_punctuation(gold).words:
            raise CorpusFormatError(pred_path, None, None, f"as many sentences as {gold_path}; it ends after {k + 1}")
        strip["skipped"] += 1


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
    from ..eval import accuracy, tagging_report

    one_file = args.gold is None  # the tagger's output keeps the gold tags beside the induced ones
    if one_file:
        args.gold = args.pred
    pairs = list(_paired(args.pred, args.gold, args.format))
    if not pairs:
        raise CorpusFormatError(args.gold, None, None, "at least one word to evaluate")
    seen: dict[str, set] = {}
    for name in set.intersection(*(set(gold.tags) for _, gold in pairs)):
        seen[name] = set().union(*(gold.tags[name] for _, gold in pairs))
    gold_col = gold_tag_column(seen, args.gold_column) or _column(pairs[0][1], None, GOLD_TAG_COLUMNS, args.gold)
    pred_col = _column(pairs[0][0], args.pred_column, (INDUCED_COLUMN, gold_col, *GOLD_TAG_COLUMNS), args.pred)
    if one_file and pred_col == gold_col:
        raise ConfigError(f"{args.pred} has no {INDUCED_COLUMN!r} tag column to score against its gold tags; give "
                          "the GOLD file (or --pred-column)")
    pred_tags = [t for pred, _ in pairs for t in pred.tags[_column(pred, pred_col, (), args.pred)]]
    gold_tags = [t for _, gold in pairs for t in gold.tags[_column(gold, gold_col, (), args.gold)]]
    lengths = [len(gold) for _, gold in pairs]
    if not gold_tags:
        raise CorpusFormatError(args.gold, None, None, "at least one word to evaluate")
    # one id space for both sides, so that plain accuracy compares equal strings
    _, ids = np.unique(np.array(pred_tags + gold_tags, dtype=object).astype(str), return_inverse=True)
    pred_ids, gold_ids = ids[: len(pred_tags)], ids[len(pred_tags) :]
    offsets = _offsets(lengths)
    report = tagging_report(pred_ids, gold_ids, offsets if halvable(offsets) else None)
    report = {"states_used" if k == "states" else k: v for k, v in report.items()}  # as ``induce tag`` names it
    if set(pred_tags) & set(gold_tags):  # plain accuracy only when the predicted labels are gold tags
        report["accuracy"] = accuracy(pred_ids, gold_ids)
    result = {"sentences": len(lengths), "pred_column": pred_col, "gold_column": gold_col, **report}
    emit(result, args.json)
    return 0


def _require_heads(sentence, path: str | None) -> list[int]:
    if sentence.heads is None:
        file, line = _where(sentence)
        raise CorpusFormatError(file or path, line, " ".join(sentence.words), "a sentence with dependency heads")
    return sentence.heads


def score_dependencies(pred_heads, gold: list, punct: str = "exclude", tagset: str = "auto",
                       path: str | None = None) -> dict:
    """Attachment scores (:func:`induce.eval.attachment_scores`) of flat predicted heads
    against the gold sentences, the one scoring convention of ``parse`` and ``eval deps``.

    ``punct="exclude"`` leaves out the gold punctuation words
    (:func:`induce.corpus.transforms.punctuation_mask`, restricted to ``tagset`` unless
    ``"auto"``); ``"punctuation"`` in the result states the convention in one line, and
    ``"baselines"`` holds the left- and right-chain scores on the same words
    (:func:`induce.eval.baselines.dependency_baselines`).
    """
    from ..corpus.transforms import PUNCT_COLUMNS, describe_punctuation, punctuation_column, punctuation_mask
    from ..eval import attachment_scores
    from ..eval.baselines import dependency_baselines

    if punct not in PUNCT_CHOICES:
        raise ConfigError(f"punct must be one of {', '.join(PUNCT_CHOICES)}; got {punct!r}")
    gold_heads: list[int] = []
    keep: list[np.ndarray] = []
    convention = None
    for sent in gold:
        gold_heads.extend(_require_heads(sent, path))
        if punct == "exclude":
            found = punctuation_column(sent, tagset)
            if found is None and tagset != "auto":
                columns = ", ".join(c for c, t in PUNCT_COLUMNS if t == tagset)
                raise CorpusFormatError(*_where(sent), None, f"a gold tag column ({columns}) to find punctuation")
            convention = convention or describe_punctuation(found)
            keep.append(~punctuation_mask(sent, tagset))
    lengths = [len(sent) for sent in gold]
    mask = np.concatenate(keep) if keep else None
    offsets = _offsets(lengths)
    scores = attachment_scores(np.asarray(pred_heads), np.array(gold_heads), offsets, mask)
    scores["punctuation"] = f"excluded ({convention})" if punct == "exclude" else "included"
    scores["baselines"] = dependency_baselines(np.array(gold_heads), offsets, mask)
    return scores


def _eval_deps(args: argparse.Namespace) -> int:
    pred_heads: list[int] = []
    gold: list = []
    strip = {"aligned": 0, "skipped": 0}
    for pred, gold_sentence in _paired(args.pred, args.gold, args.format, strip, args.wsj10):
        pred_heads.extend(_require_heads(pred, args.pred))
        gold.append(gold_sentence)
    scores = score_dependencies(pred_heads, gold, args.punct, args.punct_tagset, args.gold)
    result = {"sentences": len(gold), **scores}
    if strip["aligned"] or strip["skipped"]:
        result["punctuation"] += (f"; {strip['aligned']} gold sentences scored without their punctuation, "
                                  f"{strip['skipped']} of punctuation only skipped")
    emit(result, args.json)
    return 0


def _require_tree(sentence, path: str):
    if sentence.tree is None:
        file, line = _where(sentence)
        raise CorpusFormatError(file or path, line, " ".join(sentence.words), "a sentence with a constituency tree")
    return sentence.tree


def _eval_brackets(args: argparse.Namespace) -> int:
    from ..eval import bracket_scores
    from ..eval.baselines import bracket_baselines

    pred_trees, gold_trees = [], []
    for pred, gold in _paired(args.pred, args.gold, args.format):
        pred_trees.append(_require_tree(pred, args.pred))
        gold_trees.append(_require_tree(gold, args.gold))
    scores = bracket_scores(pred_trees, gold_trees, labeled=not args.unlabeled, max_length=args.max_length)
    result = {"labeled": not args.unlabeled, "max_length": args.max_length, **scores,
              "baselines": bracket_baselines(gold_trees, args.max_length)}
    emit(result, args.json)
    return 0


def _eval_align(args: argparse.Namespace) -> int:
    from ..corpus.parallel import read_alignments
    from ..eval import alignment_scores

    one_stdin(PRED=args.pred, GOLD=args.gold)
    sides = []
    for path, fmt, base in ((args.pred, args.pred_format, args.pred_base), (args.gold, args.gold_format, args.gold_base)):
        sides.append((path, fmt, read_alignments(path, format=fmt, one_based=one_based(base))))
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


def _pair_arguments(parser: argparse.ArgumentParser, corpus_format: bool = True, gold_optional: bool = False) -> None:
    parser.add_argument("pred", metavar="PRED", type=corpus_path, help="predicted file")
    if gold_optional:
        parser.add_argument("gold", metavar="GOLD", type=corpus_path, nargs="?",
                            help="gold file (default: PRED itself, whose gold tags induce's tagged output keeps)")
    else:
        parser.add_argument("gold", metavar="GOLD", type=corpus_path, help="gold file")
    if corpus_format:
        parser.add_argument("--format", default="auto", help="format of both files (default: auto-detect)")
    add_json_flag(parser)


def add_punct_options(parser: argparse.ArgumentParser) -> None:
    """``--punct`` and ``--punct-tagset``, shared by ``eval deps`` and ``parse``."""
    from ..names import PUNCT_TAGSET_NAMES

    parser.add_argument(
        "--punct",
        choices=PUNCT_CHOICES,
        default=PUNCT_CHOICES[0],
        help="score punctuation words or not (judged by the gold tags); default exclude",
    )
    parser.add_argument(
        "--punct-tagset",
        choices=("auto", *PUNCT_TAGSET_NAMES),
        default="auto",
        help="tags that mark punctuation: upos (PUNCT, SYM; column upos), universal ('.'; column universal), "
        "conll2007 (CPOS PUNT, F; column cpos), ptb ('' `` , . : -LRB- -RRB- # $; column xpos or pos); "
        "auto takes the first of these columns present, else words made of Unicode punctuation/symbols",
    )


def register(subparsers) -> None:
    from ..names import ALIGNMENT_FORMATS

    parser = subparsers.add_parser(
        "eval",
        help=HELP,
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
    _pair_arguments(tags, gold_optional=True)
    tags.add_argument("--pred-column", help=f"predicted tag column (default: {INDUCED_COLUMN!r} if present, else the gold column)")
    tags.add_argument("--gold-column", help=f"gold tag column (default: first of {', '.join(GOLD_TAG_COLUMNS)} "
                      "with two or more tags)")
    tags.set_defaults(handler=_eval_tags)

    deps = sub.add_parser("deps", help="directed and undirected attachment accuracy")
    _pair_arguments(deps)
    add_punct_options(deps)
    deps.add_argument("--wsj10", action="store_true",
                      help="score only the gold sentences of at most 10 words without punctuation (parse --wsj10)")
    deps.set_defaults(handler=_eval_deps)

    brackets = sub.add_parser("brackets", help="evalb (COLLINS.prm) bracket precision, recall, F1, exact match")
    _pair_arguments(brackets)
    brackets.add_argument("--unlabeled", action="store_true", help="ignore constituent labels")
    brackets.add_argument("--max-length", type=positive_int, metavar="N", help="score only sentences of at most N words (evalb cutoff, e.g. 40)")
    brackets.set_defaults(handler=_eval_brackets)

    align = sub.add_parser("align", help="alignment precision, recall, AER and F1 (sure/possible links)")
    _pair_arguments(align, corpus_format=False)
    for side in ("pred", "gold"):
        align.add_argument(f"--{side}-format", choices=("auto", *ALIGNMENT_FORMATS), default="auto",
                           help=f"format of the {side} file (default: detected from its first line)")
    for side in ("pred", "gold"):  # (the shared ro-en / ja-en Pharaoh golds are 1-based, de-en's NAACL file 0-based)
        add_base_option(align, f"--{side}-base", f"the {side} positions")
    align.set_defaults(handler=_eval_align)

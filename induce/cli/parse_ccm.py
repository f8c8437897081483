"""``induce parse --model ccm|dmv+ccm``: the constituent-context model (Klein & Manning 2002) and its
product with the DMV (Klein & Manning 2004).

Trains on INPUT's sentences plus those of ``--train`` (both read with the same
``--wsj10`` / ``--strip-punct`` / ``--max-length`` filters; K&M trained on their
test sentences' tags, and more text helps), with ``--infer em`` (default,
K&M's), ``vi`` or ``cvi`` (``dmv+ccm``: EM), then writes INPUT's binary
bracketings as PTB trees; ``dmv+ccm`` also writes the heads of its best trees
to ``OUTPUT.heads.conllu`` (CoNLL-U input) or ``OUTPUT.heads.conll`` (CoNLL-X)
and, when INPUT has gold heads, prints the attachment scores as ``--model dmv``.
When INPUT has gold trees the unlabeled F1 is printed under Klein & Manning's
convention (punctuation removed, spans of one word and the whole sentence not
counted, brackets as sets; :mod:`induce.eval.km_brackets`) and under evalb's
default (:mod:`induce.eval.brackets`), each with the left- and right-branching
baselines on the same sentences.
"""

from __future__ import annotations

import sys
import time

from ..errors import ConfigError
from .common import reported_warnings


def _load(path, args, skipped: dict):
    from ..corpus.formats import load_corpus

    return load_corpus(path, args.format if path == args.input else "auto", encoding=args.encoding,
                       max_length=args.max_length, wsj10=args.wsj10, strip_punct=args.strip_punct, skipped=skipped)


def _bracket_table(trees, gold) -> dict:
    """F1 of ``trees`` and of the branching baselines, K&M's convention and evalb's default."""
    from ..eval.brackets import bracket_scores
    from ..eval.km_brackets import branching_baselines, km_bracket_scores

    keep = ("precision", "recall", "f1")
    systems = {"model": trees, **branching_baselines(gold)}
    return {name: {"km": {k: v for k, v in km_bracket_scores(t, gold).items() if k in keep},
                   "evalb": {k: v for k, v in bracket_scores(t, gold, labeled=False).items() if k in keep}}
            for name, t in systems.items()}


def run_ccm(args) -> int:
    from ..corpus.corpus import Corpus
    from ..corpus.writers import write_ptb
    from .parse_cmd import _finish, _report_skipped, _tag_column

    if args.infer not in (("em",) if args.model == "dmv+ccm" else ("em", "vi", "cvi")):
        raise ConfigError(f"--model {args.model} supports --infer " + ("em" if args.model == "dmv+ccm" else "em, vi and cvi"))
    if args.save_model or args.report:
        raise ConfigError(f"--model {args.model} has no --save-model or --report yet")
    if args.alpha is not None or args.grammar:
        raise ConfigError(f"--model {args.model} takes neither --alpha nor --grammar (the CCM's priors are K&M's "
                          "pseudo-counts)")
    skipped: dict[str, int] = {}
    corpus = _load(args.input, args, skipped)
    _report_skipped(skipped, args)
    if corpus.n_sentences == 0:
        raise ConfigError(f"{args.input}: no sentences left to parse")
    column = _tag_column(corpus, args)
    train = corpus
    if args.train:
        extra = _load(args.train, args, {})
        if column is not None and column not in extra.tags:
            raise ConfigError(f"--train {args.train}: no tag column {column!r}")
        train = Corpus.from_sentences(list(extra.sentences) + list(corpus.sentences))
        print(f"induce parse: training on {train.n_sentences} sentences ({extra.n_sentences} from --train)",
              file=sys.stderr)
    model = _build(args, column)
    result = {"model": args.model, "infer": args.infer, "sentences": corpus.n_sentences, "tokens": corpus.n_tokens,
              "train_sentences": train.n_sentences}
    start = time.perf_counter()
    with reported_warnings(result):
        model.fit(train)
    result.update({"iterations": model.n_iter_, "train_seconds": time.perf_counter() - start,
                   "converged": model.converged_, "objective": model.history_[-1]["objective"]})
    trees = model.parse(corpus)
    write_ptb(args.output, trees)
    if corpus.sentences and all(s.tree is not None for s in corpus.sentences):
        result["unlabeled_brackets"] = _bracket_table(trees, [s.tree for s in corpus.sentences])
    if args.model == "dmv+ccm":
        result.update(_write_heads(model, corpus, args))
    if "warnings" in result:
        result["warnings"] = result.pop("warnings")
    return _finish(model, result, args, corpus)


def _build(args, column):
    if args.model == "dmv+ccm":
        from ..parsers.dmv_ccm import MAX_ITER, TOL, DMVCCMParser

        return DMVCCMParser(order=args.attach_order, n_iter=args.iterations or MAX_ITER, tol=TOL if args.tol is None else args.tol,
                            tag_column=column, verbose=not args.quiet)
    from ..parsers.ccm import MAX_ITER, TOL, CCMParser

    return CCMParser(infer=args.infer, n_iter=args.iterations or MAX_ITER, tol=TOL if args.tol is None else args.tol,
                     tag_column=column, random_state=args.seed, verbose=not args.quiet)


def _write_heads(model, corpus, args) -> dict:
    """The heads of the best product trees, written and scored as ``--model dmv`` does."""
    from argparse import Namespace

    from ..corpus.formats import detect_format
    from .parse_cmd import _output_dmv

    fmt = detect_format(args.input, args.encoding) if args.format == "auto" else args.format
    heads_args = Namespace(**{**vars(args), "output": f"{args.output}.heads.{'conllu' if fmt == 'conllu' else 'conll'}"})
    out = _output_dmv(model, corpus, heads_args, fmt)
    return {**out, "heads_output": heads_args.output}

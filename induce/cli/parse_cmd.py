"""``induce parse``: induce a PCFG or a DMV from raw or tagged sentences and parse them.

Input: any format the corpus readers know (CoNLL-U, CoNLL-X, PTB, Malt ``.dp``,
one sentence per line).  With ``--use-tags`` the models read a tag column
(``--tag-column``, default the first of upos, cpos, pos, xpos present) instead
of the words.  Output: PTB brackets (``--model pcfg``), or dependency heads
(``--model dmv``) as CoNLL-U for CoNLL-U input (HEAD filled, DEPREL ``dep``) and
CoNLL-X otherwise.  When the input has gold trees / heads the bracket F1
(unlabeled, evalb conventions) / attachment accuracy of the output is printed;
punctuation is scored unless ``--strip-punct`` removed it.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import conllu

from ..errors import ConfigError
from .common import add_json_flag, emit

TAG_COLUMNS = ("upos", "cpos", "pos", "xpos")


def register(subparsers) -> None:
    p = subparsers.add_parser("parse", help="grammar induction: PCFG or DMV with em/vi/cvi/mh",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", metavar="INPUT", help="corpus file or directory")
    p.add_argument("-o", "--output", required=True, help="parsed output file")
    p.add_argument("--model", choices=("pcfg", "dmv"), default="dmv")
    p.add_argument("--infer", choices=("em", "vi", "cvi", "mh"), default="em",
                   help="inference algorithm (mh: PCFG only)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--grammar", metavar="FILE", help="PCFG rule file 'LHS -> RHS weight'")
    g.add_argument("--nonterminals", type=int, default=10, metavar="N",
                   help="size of the generated fully connected PCFG (default 10)")
    p.add_argument("--iterations", type=int, default=20, metavar="N")
    p.add_argument("--seed", type=int, default=0, metavar="S")
    p.add_argument("--prior", type=float, default=1.0, help="Dirichlet hyperparameter alpha (default 1)")
    p.add_argument("--init", choices=("harmonic", "random"), default="harmonic", help="DMV initialiser")
    p.add_argument("--use-tags", action="store_true", help="model a tag column instead of the words")
    p.add_argument("--tag-column", help="which tag column with --use-tags")
    p.add_argument("--format", default="auto", help="input format (default: detect)")
    p.add_argument("--encoding", default="utf-8")
    p.add_argument("--max-length", type=int, help="keep sentences of at most this many words")
    p.add_argument("--wsj10", action="store_true", help="keep sentences of <= 10 words without punctuation")
    p.add_argument("--strip-punct", action="store_true", help="remove punctuation tokens before training")
    p.add_argument("--save-model", metavar="PATH", help="also write the fitted model (.npz)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(handler=run)


def _tag_column(corpus, args) -> str | None:
    if not args.use_tags:
        return None
    if args.tag_column:
        if args.tag_column not in corpus.tags:
            raise ConfigError(f"--tag-column {args.tag_column!r} not in the input (has {', '.join(corpus.tags)})")
        return args.tag_column
    for name in TAG_COLUMNS:
        if name in corpus.tags:
            return name
    raise ConfigError("--use-tags: the input has no tag column")


def _build_model(args, column):
    if args.model == "pcfg":
        from ..parsers import PCFGInducer

        return PCFGInducer(n_nonterminals=args.nonterminals, grammar=args.grammar, infer=args.infer,
                           prior=args.prior, n_iter=args.iterations, tag_column=column,
                           random_state=args.seed, verbose=not args.quiet)
    if args.infer == "mh":
        raise ConfigError("--infer mh is the PCFG sampler; the DMV supports em, vi and cvi")
    if args.grammar:
        raise ConfigError("--grammar applies to --model pcfg")
    from ..parsers import DMVParser

    return DMVParser(infer=args.infer, prior=args.prior, n_iter=args.iterations, init=args.init,
                     tag_column=column, random_state=args.seed, verbose=not args.quiet)


def _with_heads(sentence, heads):
    """The sentence with predicted heads (DEPREL ``dep``), keeping its CoNLL-U columns."""
    record = sentence.record
    if isinstance(record, conllu.TokenList):
        tokens, k = [], 0
        for tok in record:
            tok = conllu.Token(tok)
            if isinstance(tok["id"], int):
                tok["head"], tok["deprel"], tok["deps"] = int(heads[k]), "dep", None
                k += 1
            tokens.append(tok)
        record = conllu.TokenList(tokens, metadata=record.metadata)
    return replace(sentence, heads=[int(h) for h in heads], deprels=["dep"] * len(heads), record=record)


def run(args) -> int:
    from ..corpus.formats import detect_format, load_corpus

    corpus = load_corpus(args.input, args.format, encoding=args.encoding, max_length=args.max_length,
                         wsj10=args.wsj10, strip_punct=args.strip_punct)
    if corpus.n_sentences == 0:
        raise ConfigError(f"{args.input}: no sentences left to parse")
    model = _build_model(args, _tag_column(corpus, args))
    start = time.perf_counter()
    model.fit(corpus)
    seconds = time.perf_counter() - start
    result = {"model": args.model, "infer": args.infer, "sentences": corpus.n_sentences,
              "tokens": corpus.n_tokens, "iterations": args.iterations, "train_seconds": seconds}
    history = model.history_[-1]
    if "log_likelihood" in history:
        result["log_likelihood"] = history["log_likelihood"]
    if args.model == "pcfg":
        result.update(_output_pcfg(model, corpus, args))
    else:
        result.update(_output_dmv(model, corpus, args, detect_format(args.input, args.encoding)
                                  if args.format == "auto" else args.format))
    if args.save_model:
        model.save(args.save_model)
        result["model_file"] = args.save_model
    result["output"] = args.output
    emit(result, args.json)
    return 0


def _output_pcfg(model, corpus, args) -> dict:
    from ..corpus.writers import write_ptb
    from ..eval.brackets import bracket_scores

    trees = model.parse(corpus)
    write_ptb(args.output, trees)
    out = {"perplexity": model.perplexity(corpus)}
    if model.acceptance_rate_ is not None:
        out["acceptance_rate"] = model.acceptance_rate_
    if corpus.sentences and all(s.tree is not None for s in corpus.sentences):
        gold = [s.tree for s in corpus.sentences]
        out["unlabeled_brackets"] = {k: v for k, v in bracket_scores(trees, gold, labeled=False).items()
                                     if k in ("precision", "recall", "f1", "exact", "sentences")}
    return out


def _output_dmv(model, corpus, args, fmt: str) -> dict:
    from ..corpus.writers import write_conllu, write_conllx_heads
    from ..eval.dependencies import attachment_scores

    heads = model.predict(corpus)
    offsets = corpus.offsets
    per_sentence = [heads[offsets[i]:offsets[i + 1]] for i in range(corpus.n_sentences)]
    if fmt == "conllu":
        write_conllu(args.output, [_with_heads(s, h) for s, h in zip(corpus.sentences, per_sentence)])
    else:
        write_conllx_heads(args.output, corpus.sentences, per_sentence)
    out = {}
    if corpus.heads is not None:
        scores = attachment_scores(heads, corpus.heads, offsets)
        out["attachment"] = {"directed": scores["directed"], "undirected": scores["undirected"],
                             "punctuation": "stripped" if args.strip_punct else "scored"}
    return out

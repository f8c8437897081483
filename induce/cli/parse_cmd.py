"""``induce parse``: induce a PCFG or a DMV from raw or tagged sentences and parse them,
or train a PCFG with latent annotations on a treebank and parse new sentences with it.

Input: any format the corpus readers know (CoNLL-U, CoNLL-X, PTB, Malt ``.dp``,
one sentence per line).  With ``--use-tags`` the models read a tag column
(``--tag-column``, default the gold column that ``tag`` and ``eval tags`` use:
the first informative of xpos, pos, upos, cpos) instead of the words.  Output:
PTB brackets (``--model pcfg``), or dependency heads (``--model dmv``) as
CoNLL-U for CoNLL-U input (HEAD filled, DEPREL ``dep``) and CoNLL-X otherwise.
When the input has gold trees / heads the bracket F1 (unlabeled, evalb
conventions) / attachment accuracy of the output is printed.

DMV defaults follow Klein & Manning (2004) and thesis section 4.5.2:
``--infer cvi``, harmonic initialisation, and ``--iterations`` as a cap (500)
on passes that stop when the objective's relative change stays below ``--tol``
(1e-6) for 3 passes; the PCFG stops the same way (cap 300, tol 1e-4; ``mh``
runs all ``--iterations`` sweeps, default 20). The DMV's posteriors are guided by universal
head-dependent rules (``--rules auto``, Naseem et al. 2010; :mod:`induce.parsers.dmv_rules`):
at least 85% of the arcs must obey them in expectation.  The scores are printed next to
the left- and right-chain baselines (``attachment.baselines``; bracket scores next to
left- and right-branching).  ``--learn-hyper all`` learns the
Dirichlet priors by empirical Bayes (DMV: one per rule family; vi, cvi, mh)
unless ``--alpha`` fixes them (by default only the PCFG with cvi learns); the
JSON reports the priors used.
``--wsj10`` is their WSJ10: punctuation removed, then sentences of at most 10
words.  Attachment scores leave out gold punctuation
(``--punct exclude``, as ``eval deps`` does) and say so in one line; output
written without punctuation (``--wsj10``, ``--strip-punct``) is scored by
``induce eval deps OUTPUT GOLD [--wsj10]`` against the original gold, whose
punctuation it removes in the same way.

``--model pcfg-la`` (thesis section 4.5.3) trains on the treebank ``--train``
(``--subtypes H``, ``--infer em|vi|cvi``; with ``--dev`` the prior of vi/cvi is
chosen from 1, 0.1, 0.01, 0.001 by dev F1) or reads ``--load MODEL``, then
parses INPUT (tokenized sentences, with gold POS used under ``--use-tags``) to
PTB brackets; when INPUT has gold trees the labeled evalb scores (all lengths
and <= 40 words) are printed.

``--model ccm`` (Klein & Manning 2002) and ``--model dmv+ccm`` (their 2004
product model; also writes heads) bracket INPUT's tag sequences (``--use-tags``),
trained on them plus ``--train``'s (:mod:`induce.cli.parse_ccm`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from ..errors import ConfigError
from .common import add_progress_options, load_model, refuse_given_except, show_progress
from .common import add_learn_hyper_option
from .common import (add_json_flag, corpus_path, emit, encoding, existing_file, finite_nonneg_float,
                     finite_positive_float, gold_tag_column, output_path, positive_int, reported_warnings, seed)
from .eval_cmd import add_punct_options, score_dependencies

#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "grammar induction: PCFG or DMV with em/vi/cvi/mh"


#: Inference algorithm when ``--infer`` is not given: the thesis's CVI for the DMV.
DEFAULT_INFER = {"dmv": "cvi", "pcfg": "em", "pcfg-la": "em", "ccm": "em", "dmv+ccm": "em"}
#: sweeps of the PCFG's mh sampler when --iterations is not given (it has no stopping rule)
MH_SWEEPS = 20


def register(subparsers) -> None:
    from ..names import DMV_INITS, LATENT_PCFG_DECODERS, PCFG_ALGORITHMS

    p = subparsers.add_parser("parse", help=HELP,
                              description=__doc__)
    p.add_argument("input", metavar="INPUT", type=corpus_path, help="corpus file or directory")
    p.add_argument("-o", "--output", required=True, type=output_path, help="parsed output file")
    p.add_argument("--model", choices=("pcfg", "dmv", "pcfg-la", "ccm", "dmv+ccm"), default="dmv")
    p.add_argument("--infer", choices=PCFG_ALGORITHMS,
                   help="inference algorithm (default: cvi for dmv, em for pcfg and pcfg-la; mh: PCFG only)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--grammar", type=existing_file, metavar="FILE", help="PCFG rule file 'LHS -> RHS weight'")
    g.add_argument("--nonterminals", type=positive_int, default=10, metavar="N",
                   help="size of the generated fully connected PCFG (default 10)")
    p.add_argument("--iterations", type=positive_int, metavar="N",
                   help="maximum passes (dmv: default 500; pcfg: 300, mh: exactly N sweeps, default 20; "
                        "pcfg-la: 100)")
    p.add_argument("--tol", type=finite_nonneg_float, default=None, metavar="T",
                   help="dmv, pcfg: stop when the objective's relative change is below T for 3 passes (default "
                        "dmv 1e-6, pcfg 1e-4; 0 runs all --iterations)")
    p.add_argument("--subtypes", type=positive_int, default=2, metavar="H", help="pcfg-la: latent subtypes per symbol")
    p.add_argument("--train", type=corpus_path, metavar="TREEBANK",
                   help="pcfg-la: training treebank (file or directory); ccm, dmv+ccm: more training text")
    p.add_argument("--dev", type=corpus_path, metavar="TREEBANK", help="pcfg-la: dev treebank choosing the prior of vi/cvi")
    p.add_argument("--load", type=existing_file, metavar="MODEL",
                   help="parse with a saved model (--save-model of a dmv, pcfg or pcfg-la run; its kind is read from "
                        "the file) instead of training; only input, output, scoring and --decode options apply")
    p.add_argument("--decode", choices=LATENT_PCFG_DECODERS, default=LATENT_PCFG_DECODERS[0], help="pcfg-la decoder")
    p.add_argument("--seed", type=seed, default=0, metavar="S")
    p.add_argument("--alpha", "--prior", dest="alpha", type=finite_positive_float, default=None,
                   help="symmetric Dirichlet hyperparameter (default 1, or learned with --learn-hyper all; --prior "
                        "is the old name)")
    add_learn_hyper_option(p, default=None,
                           help="dmv, pcfg: all: learn the Dirichlet priors not given by empirical Bayes from the "
                                "Viterbi trees (dmv: root, stop, attach separately; vi, cvi, mh); none: hold them at "
                                "1 (default: learned for the pcfg with cvi, where it gains ~12 F1 points, held "
                                "otherwise: the dmv's learned ~0.1 parses WSJ10 1.9 points worse with cvi)")
    p.add_argument("--attach-order", choices=("right-first", "left-first", "any"), default="right-first",
                   help="dmv+ccm: the head-outward derivations whose bracketings the CCM scores")
    p.add_argument("--init", choices=DMV_INITS, default=DMV_INITS[0], help="DMV initialiser")
    p.add_argument("--rules", choices=("auto", "none"), default="auto",
                   help="dmv: auto (default): guide the posteriors with universal head-dependent rules (Naseem et al. "
                        "2010; content-head rules for UPOS, function-head rules for PTB / universal tags) when the "
                        "input has such a tag column; none: the plain DMV")
    p.add_argument("--use-tags", action="store_true", help="model a tag column instead of the words")
    p.add_argument("--tag-column", help="which tag column with --use-tags (default: first informative of "
                   "xpos, pos, upos, cpos)")
    p.add_argument("--format", default="auto", help="input format (default: detect)")
    p.add_argument("--encoding", type=encoding, default="utf-8")
    p.add_argument("--max-length", type=positive_int, help="keep sentences of at most this many words")
    p.add_argument("--wsj10", action="store_true",
                   help="Klein & Manning's WSJ10: remove punctuation, keep sentences of <= 10 words")
    p.add_argument("--strip-punct", action="store_true", help="remove punctuation tokens before training")
    add_punct_options(p)
    p.add_argument("--save-model", type=output_path, metavar="PATH", help="also write the fitted model (.npz)")
    add_progress_options(p)
    add_json_flag(p)
    p.add_argument("--report", type=output_path, metavar="FILE.html",
                   help="also write a self-contained HTML report (needs matplotlib)")
    p.set_defaults(handler=run)


def _tag_column(corpus, args) -> str | None:
    if not args.use_tags:
        return None
    column = gold_tag_column(corpus.tag_vocabs, args.tag_column, "--tag-column")
    if column is None:
        raise ConfigError("--use-tags: the input has no tag column")
    return column


def _report_skipped(skipped: dict[str, int], args) -> None:
    if skipped.get("max_length"):
        print(f"induce parse: skipped {skipped['max_length']} sentences longer than --max-length {args.max_length}",
              file=sys.stderr)


def _build_model(args, column):
    if args.model == "pcfg":
        from ..parsers import PCFGInducer

        from ..parsers.pcfg import MAX_ITER, TOL

        cap = args.iterations or (MH_SWEEPS if args.infer == "mh" else MAX_ITER)
        return PCFGInducer(n_nonterminals=args.nonterminals, grammar=args.grammar, infer=args.infer,
                           alpha=args.alpha, n_iter=cap, tol=TOL if args.tol is None else args.tol,
                           learn_hyper=None if args.learn_hyper is None else args.learn_hyper == "all",
                           tag_column=column,
                           random_state=args.seed, verbose=show_progress(args))
    if args.infer == "mh":
        raise ConfigError("--infer mh is the PCFG sampler; the DMV supports em, vi and cvi")
    if args.grammar:
        raise ConfigError("--grammar applies to --model pcfg")
    from ..parsers import DMVParser
    from ..parsers.dmv import MAX_ITER, TOL

    return DMVParser(infer=args.infer, alpha=args.alpha, n_iter=MAX_ITER if args.iterations is None else args.iterations,
                     tol=TOL if args.tol is None else args.tol, init=args.init, tag_column=column,
                     random_state=args.seed, verbose=show_progress(args), learn_hyper=args.learn_hyper == "all",
                     rules=args.rules)


def _describe_rules(model) -> str:
    """One line naming the universal rules the DMV used (or why none)."""
    if model.rule_column_ is None:
        return "none" if model.rules == "none" else "none (no upos, universal or PTB tag column)"
    return f"universal rules over column {model.rule_column_} (lambda {model.rule_lambda_:.2f})"


def _with_heads(sentence, heads):
    """The sentence with predicted heads (DEPREL ``dep``), keeping its CoNLL-U columns."""
    import conllu

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


#: what ``--load`` reads besides the model: input, output, scoring, the pcfg-la decoder
LOAD_OPTIONS = ("input", "output", "load", "model", "format", "encoding", "max_length", "wsj10", "strip_punct",
                "use_tags", "tag_column", "decode", "punct", "punct_tagset", "json", "report", "quiet", "progress")
#: the class a ``--load`` file holds -> its --model
LOADED_MODELS = {"DMVParser": "dmv", "PCFGInducer": "pcfg", "LatentPCFGParser": "pcfg-la"}


def _loaded(args):
    """``--load``: the saved model, its kind setting ``--model`` (a different --model given is an error); the
    options that train are refused (one line), not silently ignored."""
    from ..parsers import DMVParser, PCFGInducer
    from ..parsers.latent_pcfg import LatentPCFGParser

    refuse_given_except(args, LOAD_OPTIONS, "with --load (the saved model is applied as it is, not trained)")
    classes = {"DMVParser": DMVParser, "PCFGInducer": PCFGInducer, "LatentPCFGParser": LatentPCFGParser}
    model = load_model(args.load, classes)
    kind = LOADED_MODELS[type(model).__name__]
    if "model" in args._given and args.model != kind:
        raise ConfigError(f"--load {args.load} holds a {kind} model, not --model {args.model}")
    args.model, args.infer = kind, model.infer
    model.verbose = show_progress(args)
    return model


def run(args) -> int:
    from ..corpus.formats import detect_format, load_corpus

    loaded = _loaded(args) if args.load else None
    args.infer = args.infer or DEFAULT_INFER[args.model]
    if args.model == "pcfg-la":
        return _run_latent(args, loaded)
    if args.model in ("ccm", "dmv+ccm"):
        from .parse_ccm import run_ccm

        return run_ccm(args)

    skipped: dict[str, int] = {}
    corpus = load_corpus(args.input, args.format, encoding=args.encoding, max_length=args.max_length,
                         wsj10=args.wsj10, strip_punct=args.strip_punct, skipped=skipped)
    _report_skipped(skipped, args)
    if corpus.n_sentences == 0:
        raise ConfigError(f"{args.input}: no sentences left to parse")
    column = _tag_column(corpus, args) if loaded is None else loaded.tag_column
    model = _build_model(args, column) if loaded is None else loaded
    result = {"model": args.model, "infer": args.infer, "sentences": corpus.n_sentences, "tokens": corpus.n_tokens}
    if column is not None:
        result["tag_column"] = column
    if loaded is None:
        start = time.perf_counter()
        with reported_warnings(result):
            model.fit(corpus)
        result.update({"iterations": getattr(model, "n_iter_", args.iterations),
                       "train_seconds": time.perf_counter() - start})
    else:
        result["model_file"] = args.load
    if hasattr(model, "converged_"):
        result["converged"] = model.converged_
    result.update(alpha=model.alpha_, learned=list(model.learned_hyper_))
    if args.model == "dmv":
        result["rules"] = _describe_rules(model)
    history = model.history_[-1]
    if "log_likelihood" in history:
        result["log_likelihood"] = history["log_likelihood"]
    if args.model == "pcfg":
        result.update(_output_pcfg(model, corpus, args))
    else:
        result.update(_output_dmv(model, corpus, args, detect_format(args.input, args.encoding)
                                  if args.format == "auto" else args.format))
    if "warnings" in result:
        result["warnings"] = result.pop("warnings")
    return _finish(model, result, args, corpus)


def _output_pcfg(model, corpus, args) -> dict:
    from ..corpus.writers import write_ptb
    from ..eval.baselines import bracket_baselines
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
        out["unlabeled_brackets"]["baselines"] = bracket_baselines(gold)
    return out


def _output_dmv(model, corpus, args, fmt: str) -> dict:
    from ..corpus.transforms import describe_punctuation, punctuation_column
    from ..corpus.writers import write_conllu, write_conllx_heads

    heads = model.predict_flat(corpus)
    per_sentence = corpus.split(heads)
    if fmt == "conllu":
        write_conllu(args.output, [_with_heads(s, h) for s, h in zip(corpus.sentences, per_sentence)])
    else:
        write_conllx_heads(args.output, corpus.sentences, per_sentence)
    out = {}
    if corpus.heads is not None:
        scores = score_dependencies(heads, corpus.sentences, args.punct, args.punct_tagset, args.input)
        if args.wsj10 or args.strip_punct:
            found = next((f for f in map(punctuation_column, corpus.sentences) if f is not None), None)
            scores["punctuation"] = f"removed before training ({describe_punctuation(found)})"
        out["attachment"] = {k: scores[k] for k in ("directed", "undirected", "tokens", "punctuation", "baselines")}
    return out


def _run_latent(args, loaded=None) -> int:
    """``--model pcfg-la``: train on ``--train`` (or ``--load``), parse INPUT, score against its gold trees."""
    from ..corpus.formats import load_corpus
    from ..corpus.writers import write_ptb
    from ..eval.brackets import bracket_scores
    from ..parsers.latent_pcfg import PRIOR_GRID, LatentPCFGParser

    if args.infer == "mh":
        raise ConfigError("--model pcfg-la supports --infer em, vi and cvi")
    skipped: dict[str, int] = {}
    corpus = load_corpus(args.input, args.format, encoding=args.encoding, max_length=args.max_length,
                         skipped=skipped)
    _report_skipped(skipped, args)
    if corpus.n_sentences == 0:
        raise ConfigError(f"{args.input}: no sentences left to parse")
    result = {"model": "pcfg-la", "sentences": corpus.n_sentences, "tokens": corpus.n_tokens}
    if loaded is not None:
        model = loaded
        model.decode = args.decode
    elif args.train:
        train = load_corpus(args.train, encoding=args.encoding)
        dev = load_corpus(args.dev, encoding=args.encoding) if args.dev else None
        prior = list(PRIOR_GRID) if dev is not None and args.infer != "em" else (args.alpha or 1.0)
        model = LatentPCFGParser(n_subtypes=args.subtypes, infer=args.infer, alpha=prior,
                                 n_iter=100 if args.iterations is None else args.iterations, decode=args.decode,
                                 random_state=args.seed, verbose=show_progress(args)).fit(train, dev=dev)
        result.update({"train_sentences": train.n_sentences, "train_seconds": model.train_seconds_,
                       "iterations": model.n_iter_, "alpha": model.alpha_})
        if model.dev_scores_:
            result["dev_scores"] = model.dev_scores_
    else:
        raise ConfigError("--model pcfg-la needs --train TREEBANK or --load MODEL")
    result.update({"infer": model.infer, "subtypes": model.n_subtypes, "decode": model.decode})
    start = time.perf_counter()
    trees = model.parse(corpus, use_tags=args.use_tags)
    seconds = time.perf_counter() - start
    result.update({"parse_seconds": seconds, "sentences_per_second": corpus.n_sentences / max(seconds, 1e-9)})
    write_ptb(args.output, trees)
    if corpus.sentences and all(s.tree is not None for s in corpus.sentences):
        gold = [s.tree for s in corpus.sentences]
        for name, cutoff in (("labeled_brackets", None), ("labeled_brackets_40", 40)):
            result[name] = {k: v for k, v in bracket_scores(trees, gold, max_length=cutoff).items()
                            if k in ("precision", "recall", "f1", "exact", "sentences")}
    return _finish(model, result, args, corpus)


def _finish(model, result: dict, args, corpus) -> int:
    """Save the model when asked, write the HTML report when asked, print the result; exit status 0."""
    if args.save_model:
        model.save(args.save_model)
        result["model_file"] = args.save_model
    result["output"] = args.output
    if args.report:
        from ..report import parse_examples, write_report

        examples = parse_examples(model, corpus, **({"use_tags": args.use_tags} if args.model == "pcfg-la" else {}))
        write_report(args.report, {"command": "parse", **result, "trace": model.history_, **examples})
    emit(result, args.json)
    return 0

"""``induce tag``: HMM part-of-speech induction from the command line.

Reads any supported corpus (or ``demo``), fits an :class:`induce.HMMTagger`
(or, with ``--model hdp-hmm``, an :class:`induce.HDPHMMTagger` that learns the
number of states) with the chosen inference algorithm, writes the corpus back in its own format
with the induced tags added, and, when the input has gold tags, prints
many-to-one (plain and cross-validated), one-to-one, VI and V-measure (plus
plain accuracy with a tag dictionary, whose states are the tags).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from ..atomic import atomic_write
from ..errors import ConfigError
from .common import emit

GOLD_PREFERENCE = ("xpos", "pos", "upos", "cpos")


def register(sub: argparse._SubParsersAction) -> None:
    from ..kernels.hdp_qc import QC_METHODS
    from ..taggers.hdp_hmm import HDP_ALGORITHMS
    from ..taggers.hmm import ALGORITHMS, DECODERS

    p = sub.add_parser("tag", help="induce part-of-speech tags with an HMM",
                       description="Fit an HMM tagger on INPUT and write INPUT with the induced tags.")
    p.add_argument("input", help="corpus file or directory (any supported format) or 'demo'")
    p.add_argument("-o", "--output", help="write the tagged corpus here (same format as the input)")
    p.add_argument("--format", default="auto", help="input format (default: detect)")
    p.add_argument("--model", choices=("hmm", "hdp-hmm"), default="hmm",
                   help="finite HMM (default) or HDP-HMM (learns the number of states up to --truncation)")
    p.add_argument("--infer", choices=ALGORITHMS + HDP_ALGORITHMS, default=None,
                   help="inference algorithm (default cvi2; hdp-hmm: cvi, scvi, svi or beam, default cvi)")
    p.add_argument("--states", type=int, default=45, help="number of hidden states K (default 45)")
    p.add_argument("--iterations", type=int, default=50, help="passes over the corpus (default 50)")
    p.add_argument("--alpha", type=float, default=0.1, help="transition Dirichlet prior (default 0.1)")
    p.add_argument("--beta", type=float, default=0.1, help="emission Dirichlet prior (default 0.1)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--decode", choices=DECODERS, default="posterior", help="decoding (default posterior)")
    p.add_argument("--map", action="store_true", help="with --infer em: MAP estimates under the priors")
    p.add_argument("--order", choices=("sequential", "shuffle"), default="sequential",
                   help="sentence order of the incremental algorithms (cvi1, cvi2)")
    p.add_argument("--block-size", type=int, default=0, metavar="B",
                   help="cvi2: update B sentences in parallel against counts frozen at the block start "
                        "(default 0: exact sequential order)")
    p.add_argument("--cgs-keep", type=int, default=0,
                   help="cgs: decode by the per-token mode of the last N samples (default: last sample)")
    hdp = p.add_argument_group("HDP-HMM (--model hdp-hmm)")
    hdp.add_argument("--truncation", type=int, default=45, metavar="K",
                     help="truncation level K (beam: initial number of states; default 45)")
    hdp.add_argument("--gamma", type=float, default=1.0, help="top-level concentration (default 1)")
    hdp.add_argument("--sigma", type=float, default=1.0, help="transition concentration (default 1)")
    hdp.add_argument("--fix-hyper", action="store_true", help="keep gamma and sigma fixed")
    hdp.add_argument("--qc", choices=QC_METHODS, default="heuristic",
                     help="how q(C>0) is computed (default heuristic)")
    hdp.add_argument("--qc-samples", type=int, default=100, help="paths per sentence for --qc sampling")
    hdp.add_argument("--batch-size", type=int, default=100, help="scvi/svi minibatch size in sentences")
    hdp.add_argument("--tau", type=float, default=1.0, help="scvi/svi step size (tau + m)^-kappa: tau")
    hdp.add_argument("--kappa", type=float, default=0.6, help="scvi/svi step size: kappa")
    p.add_argument("--tag-dict", metavar="from-gold|FILE",
                   help="semi-supervised: restrict words to their legal tags (states = tags)")
    p.add_argument("--tag-dict-cutoff", type=int, default=1, metavar="D",
                   help="words seen fewer than D times may take any tag (default 1: complete dictionary)")
    p.add_argument("--gold-column", help="gold tag column to evaluate against (default: xpos/pos/upos if present)")
    p.add_argument("--output-column", help="where the induced tags go (CoNLL-U: upos, xpos or a MISC key, default MISC induced=; column formats: an extra last column)")
    p.add_argument("--lowercase", action="store_true", help="lowercase words before training")
    p.add_argument("--unk-threshold", type=int, default=0, help="words seen fewer times become <unk>")
    p.add_argument("--save", metavar="MODEL", help="save the fitted model (.npz)")
    p.add_argument("--eval-every", type=int, default=0, metavar="N",
                   help="score against gold every N iterations in the trace (default: only at the end)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="machine-readable results: to stdout, or to FILE (with the per-iteration trace)")
    p.set_defaults(handler=run)


def _gold_column(corpus, requested: str | None) -> str | None:
    if requested:
        if requested not in corpus.tags:
            raise ConfigError(f"--gold-column {requested!r} not in the input; it has {sorted(corpus.tags) or 'no tags'}")
        return requested
    return next((c for c in GOLD_PREFERENCE if c in corpus.tags), None)


def run(args: argparse.Namespace) -> int:
    from ..corpus.formats import detect_format, load_corpus
    from ..corpus.writers import write_tagged
    from ..eval.tagging import accuracy, tagging_report
    from ..taggers import HDPHMMTagger, HMMTagger, TagDictionary
    from ..taggers.hdp_hmm import HDP_ALGORITHMS
    from ..taggers.hmm import ALGORITHMS

    hdp = args.model == "hdp-hmm"
    args.infer = args.infer or ("cvi" if hdp else "cvi2")
    if args.infer not in (HDP_ALGORITHMS if hdp else ALGORITHMS):
        raise ConfigError(f"--infer {args.infer} is not available for --model {args.model}; choose one of "
                          f"{', '.join(HDP_ALGORITHMS if hdp else ALGORITHMS)}")
    if hdp and args.tag_dict:
        raise ConfigError("--tag-dict cannot be used with --model hdp-hmm (it learns its states)")

    corpus = load_corpus(args.input, args.format, lowercase=args.lowercase, unk_threshold=args.unk_threshold)
    if corpus.n_tokens == 0:
        raise ConfigError(f"{args.input}: no tokens to tag")
    gold_column = _gold_column(corpus, args.gold_column)
    tag_dict = None
    if args.tag_dict:
        if args.tag_dict == "from-gold":
            if gold_column is None:
                raise ConfigError("--tag-dict from-gold needs gold tags in the input (see --gold-column)")
            tag_dict = TagDictionary.from_gold(corpus, gold_column, cutoff=args.tag_dict_cutoff)
        else:
            tag_dict = TagDictionary.from_file(args.tag_dict, corpus.vocab)
    common = dict(infer=args.infer, n_iter=args.iterations, beta=args.beta, decode=args.decode, order=args.order,
                  random_state=args.seed, progress=not args.quiet,
                  eval_column=gold_column if args.eval_every > 0 else None, eval_every=max(1, args.eval_every))
    model = HDPHMMTagger(
        truncation=args.truncation, gamma=args.gamma, sigma=args.sigma, fix_hyper=args.fix_hyper, qc=args.qc,
        qc_samples=args.qc_samples, batch_size=args.batch_size, tau=args.tau, kappa=args.kappa, **common,
    ) if hdp else HMMTagger(
        n_states=args.states, infer=args.infer, n_iter=args.iterations, alpha=args.alpha, beta=args.beta,
        decode=args.decode, map_estimate=args.map, cgs_keep=args.cgs_keep, order=args.order, cvi2_block=args.block_size,
        random_state=args.seed, progress=not args.quiet,
        eval_column=gold_column if args.eval_every > 0 else None, eval_every=max(1, args.eval_every),
    )
    start = time.perf_counter()
    model.fit(corpus, tag_dict)
    seconds = time.perf_counter() - start
    states = model.labels_
    if tag_dict is not None:
        names = np.asarray(tag_dict.tags.itos, dtype=object)
    else:
        names = np.asarray([f"S{k}" for k in range(model.n_states_)], dtype=object)
    result = {
        "input": str(args.input), "infer": args.infer, "states": model.n_states_, "iterations": args.iterations,
        "alpha": args.alpha, "beta": args.beta, "seed": args.seed, "sentences": corpus.n_sentences,
        "tokens": corpus.n_tokens, "seconds": round(seconds, 3),
        "tokens_per_s": round(corpus.n_tokens * args.iterations / seconds, 1) if seconds > 0 else None,
    }
    last = model.trace_[-1]
    objective = [k for k in last if k not in ("iteration", "seconds", "tokens_per_s", "temperature")][0]
    result[objective] = last[objective]
    if hdp:
        result.update(model_type=args.model, alpha=None, truncation=args.truncation, effective_states=model.effective_states_,
                      gamma=model.gamma_, sigma=model.sigma_)
    if gold_column is not None:
        gold = corpus.tags[gold_column]
        result["gold_column"] = gold_column
        result.update({k: v for k, v in tagging_report(states, gold, corpus.offsets).items()
                       if k not in ("tokens",)})
        if tag_dict is not None:
            # states are tags: compare names in one shared id space
            both = np.concatenate([names[states], np.asarray(corpus.tag_vocabs[gold_column].itos, dtype=object)[gold]])
            _, ids = np.unique(both.astype(str), return_inverse=True)
            result["accuracy"] = accuracy(ids[: len(states)], ids[len(states):])
    if args.output:
        if corpus.sentences is None:
            raise ConfigError("the input's sentences were not kept; cannot write the output")
        fmt = args.format if args.format != "auto" else detect_format(args.input)
        tags = [names[states[s]].tolist() for s in corpus.iter_slices()]
        column = args.output_column or ("induced" if fmt == "conllu" and tag_dict is None else None)
        write_tagged(args.output, corpus.sentences, tags, fmt, column)
        result["output"] = args.output
    if args.save:
        model.save(args.save)
        result["model"] = args.save
    if args.json and args.json != "-":
        with atomic_write(args.json) as out:
            json.dump(result | {"trace": model.trace_}, out, indent=2, default=float)
    emit(result, args.json == "-")
    return 0

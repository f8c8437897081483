"""``induce tag``: HMM part-of-speech induction from the command line.

Reads any supported corpus (or ``demo``), fits an :class:`induce.HMMTagger`
(or, with ``--model hdp-hmm``, an :class:`induce.HDPHMMTagger` that learns the
number of states) with the chosen inference algorithm, writes the corpus back in its own format
with the induced tags added, and, when the input has gold tags, prints
many-to-one (plain and cross-validated), one-to-one, VI and V-measure (plus
plain accuracy with a tag dictionary, whose states are the tags).

This module registers the command and runs it; the rest is in the modules its names point to:
:mod:`~induce.cli.tag_options` (the options), :mod:`~induce.cli.tag_checks` (the rules between them and the
defaults), :mod:`~induce.cli.tag_model` (the estimator they describe, the run's summary),
:mod:`~induce.cli.tag_outputs` (input, scores and outputs) and :mod:`~induce.cli.tag_hsmm` (``--model hsmm``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..distributed import cluster
from ..errors import ConfigError
from .common import (corpus_path, emit, encoding, gold_tag_column, load_model, output_path, positive_int,
                     refuse_given_except, reported_warnings, show_progress)
from .tag_checks import check_options, default_emission, default_infer
from .tag_hsmm import add_options as add_hsmm_options, run_hsmm
from .tag_model import new_model, stochastic_options, summary
from .tag_options import (LOAD_OPTIONS, add_emission_options, add_hdp_options, add_model_options, add_output_options,
                          add_stochastic_options)
from .tag_outputs import deliver, finish, interrupted, outputs, read_corpus, tag_dictionary
from .vector_options import add_vector_options


#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "induce part-of-speech tags with an HMM"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tag", help=HELP,
                       description="Fit an HMM tagger on INPUT and write INPUT with the induced tags.")
    p.add_argument("input", type=corpus_path, help="corpus file or directory (any supported format) or 'demo'")
    p.add_argument("-o", "--output", type=output_path, help="write the tagged corpus here (same format as the input)")
    p.add_argument("--format", default="auto", help="input format (default: detect)")
    p.add_argument("--encoding", type=encoding, default="utf-8",
                   help="input text encoding (default utf-8; latin-1 for CoNLL-2007 Basque); the output is UTF-8")
    add_model_options(p)
    add_emission_options(p)
    add_hsmm_options(p)
    add_hdp_options(p)
    add_output_options(p)
    add_stochastic_options(p)
    add_vector_options(p)
    cluster.add_options(p, "em, vi, cvi2, svi, scvi; hdp-hmm: scvi, svi")
    p.add_argument("--sync-every", type=positive_int, default=None, metavar="R",
                   help="svi/scvi with --workers/--cluster: each worker runs R minibatches on its shard against its "
                        "own copy of the counts, then the copies are merged by adding their changes (rows travel "
                        "once a round instead of every minibatch; the other workers' statistics are up to R-1 "
                        "minibatches stale; default 64; 1: every minibatch exchanged exactly)")
    p.add_argument("--staleness", type=int, choices=(0, 1), default=None,
                   help="with --sync-every R > 1 on several workers: 1 starts each worker's round without waiting "
                        "for the others' previous round, whose changes arrive one round late (default 0; beyond two "
                        "workers it loses held-out quality: 0.2-0.5 nats/token at 4-32 workers)")
    p.set_defaults(handler=run)


def _run_stream(args: argparse.Namespace) -> int:
    from ..taggers import HMMTagger

    if args.output or args.tag_dict or args.report:
        raise ConfigError("--stream trains from disk without keeping the corpus: -o, --tag-dict and --report "
                          "are not available")
    model = HMMTagger(n_states=args.states or 45, infer=args.infer, alpha=args.alpha, beta=args.beta,
                      random_state=args.seed, verbose=show_progress(args), client=args.client, **stochastic_options(args))
    start = time.perf_counter()
    warned: dict = {}
    with reported_warnings(warned):
        model.fit_stream(args.input, args.format, lowercase=args.lowercase, buffer_sentences=args.buffer_sentences)
    seconds = time.perf_counter() - start
    if model.interrupted_:
        return interrupted(model, args)
    last = model.trace_[-1]
    result = {"input": str(args.input), "infer": args.infer, "states": model.n_states_, "seed": args.seed,
              "sentences": model.stream_sentences_, "tokens": model.stream_tokens_,
              "heldout_tokens": model.heldout_tokens_, "epochs": model.n_iter_, "converged": model.converged_,
              "minibatches": model.n_batches_,
              "tokens_seen": last["tokens_seen"], "seconds": round(seconds, 3),
              "tokens_per_s": round(last["tokens_seen"] / last["seconds"], 1) if last["seconds"] > 0 else None}
    if "heldout_log_likelihood_per_token" in last:
        result["heldout_log_likelihood_per_token"] = last["heldout_log_likelihood_per_token"]
    return outputs(model, args, result | warned)


def run(args: argparse.Namespace) -> int:
    """``induce tag``; with ``--workers`` / ``--cluster`` inside a dask client session (:mod:`induce.distributed`)."""
    from ..taggers.hmm import CLUSTER_ALGORITHMS

    args.emission = args.emission or default_emission(args)
    infer = args.infer or default_infer(args)
    supported = (infer in CLUSTER_ALGORITHMS and args.emission == "categorical") if args.model == "hmm" else \
        infer in ("scvi", "svi")
    rounds = args.model == "hmm" and infer in ("svi", "scvi") and (args.workers or args.cluster)
    if (args.sync_every is not None or args.staleness is not None) and not rounds:
        raise ConfigError("--sync-every R and --staleness run --model hmm --infer svi or scvi on --workers N or "
                          "--cluster ADDRESS")
    with cluster.from_args(args, supported, f"--model hmm with --emission categorical and --infer "
                                            f"{' or '.join(CLUSTER_ALGORITHMS)}, or --model hdp-hmm with --infer "
                                            "scvi or svi") as client:
        args.client = client
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Check the options, read the corpus, fit, score, write; each step a function of the modules named above."""
    if args.load:
        return _run_loaded(args)
    if args.model == "hsmm":
        return run_hsmm(args)
    hdp = check_options(args)
    if args.stream:
        return _run_stream(args)
    corpus = read_corpus(args)
    gold_column = gold_tag_column(corpus.tag_vocabs, args.gold_column)
    tag_dict = tag_dictionary(args, corpus, gold_column)
    model = new_model(args, hdp, corpus, gold_column, tag_dict)
    start = time.perf_counter()
    warned: dict = {}
    with reported_warnings(warned):
        model.fit(corpus, tag_dict=tag_dict)
    seconds = time.perf_counter() - start
    if getattr(model, "interrupted_", False):
        return interrupted(model, args)
    states = model.labels_
    names = np.asarray(tag_dict.tags.itos if tag_dict is not None
                       else [f"S{k}" for k in range(model.n_states_)], dtype=object)
    result = summary(args, hdp, model, corpus, seconds) | warned
    return finish(args, model, corpus, result, states, names, gold_column, tag_dict)


def _run_loaded(args: argparse.Namespace) -> int:
    """``--load MODEL``: tag INPUT with a saved HMMTagger, HDPHMMTagger or HSMMTagger (words unseen in training
    share the model's unseen-word emissions; a feature model scores each by its own features), score it against
    gold tags when INPUT has them; no training."""
    from ..taggers import HDPHMMTagger, HMMTagger

    refuse_given_except(args, LOAD_OPTIONS, "with --load (the saved model is applied as it is, not trained)")
    from ..taggers.hmm_vectors import VECTOR_KIND
    from ..taggers.hsmm_tagger import HSMMTagger

    model = load_model(args.load, {"HMMTagger": HMMTagger, VECTOR_KIND: HMMTagger, "HDPHMMTagger": HDPHMMTagger,
                                   "HSMMTagger": HSMMTagger})
    tag_vocab = getattr(model, "tag_vocab_", None)  # the HSMM tagger has no tag dictionary
    if "decode" in getattr(args, "_given", {}):
        model.decode = args.decode
    corpus = read_corpus(args)
    gold_column = gold_tag_column(corpus.tag_vocabs, args.gold_column)
    start = time.perf_counter()
    states = model.predict_flat(corpus)
    tags = tag_vocab.itos if tag_vocab is not None else [f"S{k}" for k in range(model.n_states_)]
    names = np.asarray(tags, dtype=object)
    result = {"input": str(args.input), "model_file": args.load, "model_type": type(model).__name__,
              "infer": model.infer, "states": model.n_states_, "sentences": corpus.n_sentences,
              "tokens": corpus.n_tokens, "seconds": round(time.perf_counter() - start, 3),
              "log_likelihood_per_token": model.score(corpus)}
    deliver(args, model, corpus, result, states, names, gold_column, tag_vocab)
    emit(result, args.json)
    return 0

"""``induce tag --model hsmm``: semi-Markov tagging (:class:`induce.taggers.hsmm_tagger.HSMMTagger`), the series
HSMM engine over the sentences with the categorical family.  Its options, checks and run; the corpus reading,
scores and outputs are those of :mod:`induce.cli.tag_outputs`."""

from __future__ import annotations

import argparse
import time

import numpy as np

from .common import default_n_states, gold_tag_column, positive_int, refuse_given, refuse_given_except
from .common import reported_warnings
from .tag_outputs import finish, read_corpus

#: the options only ``--model hsmm`` reads
HSMM_OWN = ("durations", "max_duration", "max_r")
#: what ``--model hsmm`` reads: input, output, evaluation, the HSMM's, and the shared model options
HSMM_OPTIONS = HSMM_OWN + ("input", "output", "format", "encoding", "lowercase", "unk_threshold", "model", "infer",
                           "states", "iterations", "tol", "alpha", "beta", "seed", "decode", "gold_column",
                           "output_column", "json", "report", "trace", "quiet", "progress", "save", "batch_size",
                           "tau", "kappa")


def add_options(p: argparse.ArgumentParser) -> None:
    """The ``--model hsmm`` group of ``induce tag``."""
    from ..names import DURATION_FAMILIES

    g = p.add_argument_group("HSMM (--model hsmm: segments of one state; --infer em, vi, cvi2, svi or scvi, default "
                             "vi; svi and scvi read --batch-size, default 100, --tau and --kappa)")
    g.add_argument("--durations", choices=DURATION_FAMILIES, default="negbin",
                   help="segment length family (default negbin with r learned: geometric, as the HMM's, or more "
                        "regular, state by state)")
    g.add_argument("--max-duration", type=positive_int, default=8, metavar="D",
                   help="longest segment, in tokens; cost O(T K D) a pass (default 8)")
    g.add_argument("--max-r", type=positive_int, default=3, metavar="R",
                   help="--durations negbin: largest learned r (default 3)")


def refuse_own(args: argparse.Namespace) -> None:
    """The HSMM's options are errors with the other models."""
    refuse_given(args, HSMM_OWN, f"to --model {args.model} (the HSMM's: --model hsmm)")


def run_hsmm(args: argparse.Namespace) -> int:
    """Fit the HSMM tagger on INPUT, score it against the gold tags, write the outputs."""
    from ..algorithms import support
    from ..taggers.hsmm_tagger import HSMMTagger

    refuse_given_except(args, HSMM_OPTIONS, "to --model hsmm (it reads input, output, evaluation, --states, --infer, "
                                            "--iterations, --tol, --alpha, --beta, --seed, --decode, --save-model, "
                                            "--batch-size, --tau, --kappa and its own)")
    args.infer = args.infer or "vi"
    support.check("hsmm", args.infer, "categorical", "tag")
    corpus = read_corpus(args)
    gold_column = gold_tag_column(corpus.tag_vocabs, args.gold_column)
    model = HSMMTagger(n_states=default_n_states(corpus, gold_column, args.states), infer=args.infer,
                       durations=args.durations, max_duration=args.max_duration, max_r=args.max_r,
                       alpha=1.0 if args.alpha is None else args.alpha, beta=args.beta, n_iter=args.iterations or 100,
                       tol=1e-4 if args.tol is None else args.tol, batch_size=args.batch_size or 100, tau=args.tau,
                       kappa=args.kappa, decode=args.decode, random_state=args.seed)
    start = time.perf_counter()
    warned: dict = {}
    with reported_warnings(warned):
        model.fit(corpus)
    seconds = time.perf_counter() - start
    states, names = model.labels_, np.asarray([f"S{k}" for k in range(model.n_states_)], dtype=object)
    last = model.trace_[-1]
    result = {"input": str(args.input), "model_type": "hsmm", "infer": args.infer, "states": model.n_states_,
              "durations": args.durations, "max_duration": args.max_duration,
              "mean_durations": [round(float(v), 3) for v in model.mean_durations()], "iterations": model.n_iter_,
              "converged": model.converged_, "seed": args.seed, "sentences": corpus.n_sentences,
              "tokens": corpus.n_tokens, "seconds": round(seconds, 3), **{k: v for k, v in last.items()
                                                                          if k != "iteration"}} | warned
    return finish(args, model, corpus, result, states, names, gold_column, None)

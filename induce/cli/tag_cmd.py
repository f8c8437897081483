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
import os
import sys
import time

import numpy as np

from ..atomic import atomic_write
from ..distributed import cluster
from ..errors import ConfigError
from .eval_cmd import halvable
from .common import add_progress_options, load_model, refuse_given, refuse_given_except, show_progress
from .common import add_learn_hyper_option
from .tag_hsmm import add_options as add_hsmm_options, refuse_own as refuse_hsmm_options, run_hsmm
from .vector_options import add_vector_options, check_vector_options, vector_params
from .common import (corpus_path, default_n_states, dump_json, emit, encoding, existing_file, finite_nonneg_float,
                     finite_positive_float, forgetting_rate, fraction, gold_tag_column, nonneg_int, output_path,
                     positive_int, reported_warnings, seed)


#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "induce part-of-speech tags with an HMM"


def _emission_concentration(text: str) -> float | str:
    """``--emission-concentration``: ``symmetric`` or a finite positive number."""
    return text if text == "symmetric" else finite_positive_float(text)


def _new_word_mass(text: str) -> float | str:
    """``--new-word-mass``: ``learned`` or a finite positive number."""
    return text if text == "learned" else finite_positive_float(text)


def _tag_dict(text: str) -> str:
    """``--tag-dict``: ``from-gold`` or a readable file."""
    return text if text == "from-gold" else existing_file(text)


def _fixed_hyper(args: argparse.Namespace) -> bool | tuple[str, ...]:
    """``HDPHMMTagger.fix_hyper`` from ``--fix-hyper`` (all) and ``--fix NAME`` (those named)."""
    if args.fix_hyper:
        return True
    return tuple(args.fix) if args.fix else False


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tag", help=HELP,
                       description="Fit an HMM tagger on INPUT and write INPUT with the induced tags.")
    p.add_argument("input", type=corpus_path, help="corpus file or directory (any supported format) or 'demo'")
    p.add_argument("-o", "--output", type=output_path, help="write the tagged corpus here (same format as the input)")
    p.add_argument("--format", default="auto", help="input format (default: detect)")
    p.add_argument("--encoding", type=encoding, default="utf-8",
                   help="input text encoding (default utf-8; latin-1 for CoNLL-2007 Basque); the output is UTF-8")
    _add_model_options(p)
    _add_emission_options(p)
    add_hsmm_options(p)
    _add_hdp_options(p)
    _add_output_options(p)
    _add_stochastic_options(p)
    add_vector_options(p)
    cluster.add_options(p, "em, vi, cvi2, svi, scvi; hdp-hmm: scvi, svi")
    p.add_argument("--sync-every", type=positive_int, default=None, metavar="R",
                   help="svi/scvi with --workers/--cluster: each worker runs R minibatches on its shard against its "
                        "own copy of the counts, then the copies are merged by adding their changes (rows travel "
                        "once a round instead of every minibatch; the other workers' statistics are up to R-1 "
                        "minibatches stale; default 64; 1: every minibatch exchanged exactly)")
    p.set_defaults(handler=run)


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """The model, the algorithm and its priors, seed, decoding and the batch algorithms' options."""
    from ..names import HDP_ALGORITHMS, HMM_ALGORITHMS as ALGORITHMS, HMM_DECODERS as DECODERS

    p.add_argument("--model", choices=("hmm", "hdp-hmm", "hsmm"), default="hmm",
                   help="finite HMM (default), HDP-HMM (learns the number of states up to --truncation) or HSMM "
                        "(semi-Markov: each state emits a segment of tokens, see its group below)")
    p.add_argument("--infer", choices=tuple(dict.fromkeys(ALGORITHMS + HDP_ALGORITHMS)), default=None,
                   help="inference algorithm (default em with the default --emission features, cvi2 with --emission "
                        "categorical; hdp-hmm: cvi, scvi, svi or beam, default cvi; hsmm: em, "
                        "vi, cvi2, svi or scvi, default vi)")
    p.add_argument("--states", type=positive_int, default=None,
                   help="number of hidden states K (default: the number of gold tags when the input has them, "
                        "as in the thesis' experiments, at most 50; else 45, the size of the PTB tag set)")
    p.add_argument("--iterations", type=positive_int, default=None, metavar="N",
                   help="maximum passes over the corpus; training stops earlier when the objective's change per "
                        "pass stays below --tol of its progress since the first pass, 3 passes running (default "
                        "500, em 2000, --emission features 1000; hdp-hmm: cvi 1000, scvi and svi 300, which stop on "
                        "--tol too, and beam "
                        "3000 sweeps, all run)")
    p.add_argument("--tol", type=finite_nonneg_float, default=None,
                   help="convergence tolerance: a pass's change of the objective relative to the progress so far "
                        "(default 1e-5); minibatch algorithms: an epoch's gain of held-out log-likelihood relative to "
                        "its best (default 1e-4; hdp-hmm scvi and svi: an epoch's summed minibatch log-likelihood); 0: run all "
                        "--iterations / --epochs")
    p.add_argument("--alpha", type=finite_positive_float, default=None,
                   help="transition Dirichlet prior (default: the value the thesis grid chose for --infer on "
                        "held-out WSJ, e.g. 1 for cvi2; see --learn-hyper)")
    p.add_argument("--beta", type=finite_positive_float, default=None,
                   help="emission Dirichlet prior (default: the grid's value for --infer, e.g. 0.003 for "
                        "cvi2; hdp-hmm: 0.01, its best on held-out WSJ)")
    add_learn_hyper_option(p, extra=("per-state",), default=None,
                   help="default: cvi2 learns an emission prior per state (each at most the pooled estimate, alpha "
                        "held at 1) after a burn-in of 50 passes, svi both priors at each epoch's end, the other "
                        "algorithms hold the grid's priors; "
                        "all: learn every prior not given (a symmetric beta; svi and scvi at each epoch's end); "
                        "per-state (cvi2): as all, with an emission prior per state; none: hold them all")
    p.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    p.add_argument("--decode", choices=DECODERS, default="posterior", help="decoding (default posterior)")
    p.add_argument("--map", action=argparse.BooleanOptionalAction, default=True,
                   help="with --infer em: MAP estimates under the priors (default; priors >= 1, default alpha 2, "
                        "beta 1.003: add-1 smoothing of the transitions, add-0.003 of the emissions); --no-map: "
                        "maximum likelihood")
    p.add_argument("--order", choices=("sequential", "shuffle"), default="sequential",
                   help="sentence order of the incremental algorithms (cvi1, cvi2)")
    p.add_argument("--block-size", type=nonneg_int, default=0, metavar="B",
                   help="cvi2: update B sentences in parallel against counts frozen at the block start "
                        "(default 0: exact sequential order)")
    p.add_argument("--cgs-keep", type=nonneg_int, default=0,
                   help="cgs: decode by the per-token mode of the last N samples (default: last sample)")


def _add_hdp_options(p: argparse.ArgumentParser) -> None:
    """The HDP-HMM's options (``--model hdp-hmm``)."""
    from ..names import HDP_HYPERPARAMETERS as HYPERPARAMETERS, QC_METHODS, TABLE_ESTIMATES

    hdp = p.add_argument_group("HDP-HMM (--model hdp-hmm)")
    hdp.add_argument("--truncation", type=positive_int, default=45, metavar="K",
                     help="truncation level K (beam: initial number of states; default 45)")
    hdp.add_argument("--gamma", type=finite_positive_float, default=1.0, help="top-level concentration (default 1)")
    hdp.add_argument("--sigma", type=finite_positive_float, default=1.0, help="transition concentration (default 1)")
    hdp.add_argument("--fix-hyper", action="store_true",
                     help="keep gamma and sigma (and an asymmetric emission prior) fixed")
    hdp.add_argument("--fix", action="append", choices=HYPERPARAMETERS, metavar="NAME",
                     help="keep only this hyperparameter fixed and learn the others; repeatable "
                          f"({', '.join(HYPERPARAMETERS)}), e.g. --fix sigma")
    hdp.add_argument("--emission-prior", choices=("symmetric", "asymmetric"), default="symmetric",
                     help="emissions Dir(beta) or Dir(beta tau) with beta and tau learned (thesis 5.5.3; cvi and scvi)")
    hdp.add_argument("--emission-concentration", type=_emission_concentration, default=None, metavar="B|symmetric",
                     help="Dir(beta tau): the starting beta (default 10; 'symmetric': W x --beta, the symmetric "
                          "model's total); where the learned beta ends depends on it")
    hdp.add_argument("--new-word-mass", type=_new_word_mass, default=1.0, metavar="learned|M",
                     help="Dir(beta tau): tau's share for unseen words, the DP concentration gamma_e: 'learned' "
                          "(ML-II fixed point) or a fixed positive number (default 1)")
    hdp.add_argument("--hyper-burn-in", type=nonneg_int, default=None, metavar="N",
                     help="keep the hyperparameters at their initial values for the first N passes (scvi: epochs; "
                          "default: cvi until the objective beats the first pass by 1%%, scvi 0; with --emission-prior "
                          "asymmetric 50 cvi passes / 5 scvi epochs, at most half of --iterations)")
    hdp.add_argument("--qc", choices=QC_METHODS, default="heuristic",
                     help="how q(C>0) is computed (default heuristic)")
    hdp.add_argument("--qc-samples", type=positive_int, default=100, help="paths per sentence for --qc sampling")
    hdp.add_argument("--table-estimate", choices=TABLE_ESTIMATES, default="first-order",
                     help="cvi: expected table counts behind the sticks, gamma and sigma by eq. 5.35-5.36 "
                          "(first-order, default) or from sampled transition counts (sampled)")
    hdp.add_argument("--table-samples", type=positive_int, default=10, metavar="S",
                     help="draws of the transition counts per pass for --table-estimate sampled (default 10)")
    hdp.add_argument("--n-init", type=positive_int, default=1, metavar="N",
                     help="cvi: fit from N random starts and keep the highest final objective (default 1)")
    hdp.add_argument("--no-merge-moves", dest="merge_moves", action="store_false",
                     help="turn off the split-merge moves (cvi) and the merges of the global counts (scvi) that are on "
                          "by default with the symmetric emission prior (docs/experiments/hdp_defaults.md)")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    """Tag dictionary, evaluation, output, the model file and the reports."""
    p.add_argument("--tag-dict", type=_tag_dict, metavar="from-gold|FILE",
                   help="semi-supervised: restrict words to their legal tags (states = tags)")
    p.add_argument("--tag-dict-cutoff", type=nonneg_int, default=1, metavar="D",
                   help="words seen fewer than D times may take any tag (default 1: complete dictionary)")
    p.add_argument("--gold-column", help="gold tag column to evaluate against (default: the first of xpos, pos, upos, cpos "
                   "with two or more tags)")
    p.add_argument("--output-column", help="where the induced tags go (CoNLL-U: upos, xpos or a MISC key, default MISC induced=; column formats: an extra last column)")
    p.add_argument("--lowercase", action="store_true", help="lowercase words before training")
    p.add_argument("--unk-threshold", type=nonneg_int, default=0, help="words seen fewer times become <unk>")
    p.add_argument("--save-model", "--save", dest="save", type=output_path, metavar="MODEL",
                   help="save the fitted model (.npz; --save is the old name)")
    p.add_argument("--load", type=existing_file, metavar="MODEL",
                   help="tag INPUT with a saved model (--save-model of an HMM, HDP-HMM or HSMM run) instead of training; "
                        "only input, output, evaluation and --decode options apply")
    p.add_argument("--eval-every", type=nonneg_int, default=0, metavar="N",
                   help="score against gold every N iterations in the trace (default: only at the end)")
    add_progress_options(p)
    p.add_argument("--json", nargs="?", const="-", type=output_path, metavar="FILE",
                   help="machine-readable results: to stdout, or to FILE (with the per-iteration trace)")
    p.add_argument("--report", type=output_path, metavar="FILE.html",
                   help="also write a self-contained HTML report (needs matplotlib)")


def _add_stochastic_options(p: argparse.ArgumentParser) -> None:
    """The minibatch and single-sequence algorithms' schedule, held-out stop, streaming and checkpoints."""
    s = p.add_argument_group("stochastic and single-sequence inference (svi, scvi, cvi3, scvi3, ...)")
    s.add_argument("--batch-size", type=positive_int, metavar="M",
                   help="sentences (svi, scvi) or subsequences (scvi3, svi-buffered, ...) per minibatch (default 100; "
                        "on a cluster: the largest that keeps 500 minibatches in the run, as the step overhead shrinks "
                        "with larger ones)")
    s.add_argument("--tau", type=finite_nonneg_float, default=1.0,
                   help="step size rho_m = (tau + m + 1)^-kappa, m = 0, 1, ... (default 1: the thesis' (1 + m)^-kappa)")
    s.add_argument("--kappa", type=forgetting_rate, default=0.5, help="forgetting rate in [0.5, 1] (default 0.5)")
    s.add_argument("--epochs", type=positive_int, metavar="N",
                   help="at most N passes over the data (default 50); training stops earlier once the held-out "
                        "log-likelihood has gained no more than --tol of its best for 3 epochs (see --heldout)")
    s.add_argument("--max-batches", type=positive_int, metavar="N", help="stop after N minibatches")
    s.add_argument("--subseq-length", type=positive_int, default=10, metavar="T",
                   help="cvi3 / single-sequence algorithms: subsequence length (default 10)")
    s.add_argument("--buffer", type=nonneg_int, default=10, metavar="B",
                   help="svi-buffered: observations padded on each side (default 10)")
    s.add_argument("--heldout", type=fraction, metavar="FRACTION",
                   help="hold out a seeded random FRACTION of the sentences (single-sequence algorithms: the end of "
                        "the sequence) to stop on and trace their per-token log-likelihood; they are still tagged "
                        "(default 0.05; 0: none, and every epoch runs)")
    s.add_argument("--heldout-every", type=nonneg_int, default=0, metavar="N",
                   help="held-out log-likelihood also every N minibatches and at the start (default 0: at the end "
                        "of each epoch only)")
    s.add_argument("--heldout-max-tokens", type=positive_int, metavar="N",
                   help="cap on the held-out sample (default 100000)")
    s.add_argument("--trace", type=output_path, metavar="FILE.json|FILE.csv", help="write the trace (held-out LL vs tokens and time)")
    s.add_argument("--stream", action="store_true",
                   help="svi/scvi: read INPUT from disk in chunks (memory independent of corpus size); no -o")
    s.add_argument("--buffer-sentences", type=positive_int, default=10_000, metavar="N",
                   help="--stream: sentences per seeded shuffle buffer (default 10000)")
    s.add_argument("--checkpoint", type=output_path, metavar="FILE", help="checkpoint file of the global counts (atomic writes)")
    s.add_argument("--checkpoint-every", type=nonneg_int, default=0, metavar="N", help="checkpoint every N minibatches")
    s.add_argument("--checkpoint-minutes", type=finite_nonneg_float, default=0.0, metavar="M", help="checkpoint every M minutes")
    s.add_argument("--resume", action="store_true", help="continue from --checkpoint FILE")

def _write_trace(path: str, trace: list[dict]) -> None:
    """The trace as JSON (a list of records) or CSV (one row per record), atomically."""
    if path.endswith(".csv"):
        import csv

        columns = list(dict.fromkeys(k for rec in trace for k in rec))
        with atomic_write(path) as out:
            writer = csv.DictWriter(out, fieldnames=columns)
            writer.writeheader()
            writer.writerows(trace)
    else:
        with atomic_write(path) as out:
            dump_json(trace, out, indent=1)


def _outputs(model, args, result: dict) -> int:
    """Save the model, write the trace and the JSON file, print the results."""
    if hasattr(model, "batch_size_"):  # a minibatch fit: the size it used
        result["batch_size"] = model.batch_size_
    if args.client is not None:
        result["workers"] = cluster.n_workers(args.client)
        if result.get("tokens_per_s"):
            result["tokens_per_s_per_worker"] = round(result["tokens_per_s"] / result["workers"], 1)
        if hasattr(model, "cluster_meter_"):  # step overhead, per-worker throughput and peak memory
            result.update(model.cluster_meter_.report(result["workers"]))
    if args.save:
        model.save(args.save)
        result["model"] = args.save
    if args.trace:
        _write_trace(args.trace, model.trace_)
        result["trace"] = args.trace
    if args.json and args.json != "-":
        with atomic_write(args.json) as out:
            dump_json(result | {"trace": model.trace_}, out, indent=2)
    emit(result, args.json == "-")
    return 0


def _stochastic_options(args) -> dict:
    held = {k: v for k, v in (("heldout_fraction", args.heldout), ("heldout_max_tokens", args.heldout_max_tokens),
                              ("sync_every", args.sync_every)) if v is not None}  # else the model's defaults
    return dict(batch_size=args.batch_size, tau=args.tau, kappa=args.kappa, n_epochs=args.epochs, **held,
                max_batches=args.max_batches, subseq_length=args.subseq_length, buffer=args.buffer,
                heldout_every=args.heldout_every, checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                checkpoint_minutes=args.checkpoint_minutes, resume=args.resume)


def _interrupted(model, args) -> int:
    print(f"induce tag: interrupted after {model.n_batches_} minibatches; checkpoint written to {args.checkpoint}; "
          f"rerun with --resume to continue", file=sys.stderr)
    if args.trace:
        _write_trace(args.trace, model.trace_)
    return 130


def _run_stream(args: argparse.Namespace) -> int:
    from ..taggers import HMMTagger

    if args.output or args.tag_dict or args.report:
        raise ConfigError("--stream trains from disk without keeping the corpus: -o, --tag-dict and --report "
                          "are not available")
    model = HMMTagger(n_states=args.states or 45, infer=args.infer, alpha=args.alpha, beta=args.beta,
                      random_state=args.seed, verbose=show_progress(args), client=args.client, **_stochastic_options(args))
    start = time.perf_counter()
    warned: dict = {}
    with reported_warnings(warned):
        model.fit_stream(args.input, args.format, lowercase=args.lowercase, buffer_sentences=args.buffer_sentences)
    seconds = time.perf_counter() - start
    if model.interrupted_:
        return _interrupted(model, args)
    last = model.trace_[-1]
    result = {"input": str(args.input), "infer": args.infer, "states": model.n_states_, "seed": args.seed,
              "sentences": model.stream_sentences_, "tokens": model.stream_tokens_,
              "heldout_tokens": model.heldout_tokens_, "epochs": model.n_iter_, "converged": model.converged_,
              "minibatches": model.n_batches_,
              "tokens_seen": last["tokens_seen"], "seconds": round(seconds, 3),
              "tokens_per_s": round(last["tokens_seen"] / last["seconds"], 1) if last["seconds"] > 0 else None}
    if "heldout_log_likelihood_per_token" in last:
        result["heldout_log_likelihood_per_token"] = last["heldout_log_likelihood_per_token"]
    return _outputs(model, args, result | warned)


def run(args: argparse.Namespace) -> int:
    """``induce tag``; with ``--workers`` / ``--cluster`` inside a dask client session (:mod:`induce.distributed`)."""
    from ..taggers.hmm import CLUSTER_ALGORITHMS

    args.emission = args.emission or default_emission(args)
    infer = args.infer or default_infer(args)
    supported = (infer in CLUSTER_ALGORITHMS and args.emission == "categorical") if args.model == "hmm" else \
        infer in ("scvi", "svi")
    rounds = args.model == "hmm" and infer in ("svi", "scvi") and (args.workers or args.cluster)
    if args.sync_every is not None and not rounds:
        raise ConfigError("--sync-every R runs --model hmm --infer svi or scvi on --workers N or --cluster ADDRESS")
    with cluster.from_args(args, supported, f"--model hmm with --emission categorical and --infer "
                                            f"{' or '.join(CLUSTER_ALGORITHMS)}, or --model hdp-hmm with --infer "
                                            "scvi or svi") as client:
        args.client = client
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Check the options, read the corpus, fit, score, write; each step a function below."""
    if args.load:
        return _run_loaded(args)
    if args.model == "hsmm":
        return run_hsmm(args)
    hdp = _check_options(args)
    if args.stream:
        return _run_stream(args)
    corpus = _read(args)
    gold_column = gold_tag_column(corpus.tag_vocabs, args.gold_column)
    tag_dict = _tag_dictionary(args, corpus, gold_column)
    model = _model(args, hdp, corpus, gold_column, tag_dict)
    start = time.perf_counter()
    warned: dict = {}
    with reported_warnings(warned):
        model.fit(corpus, tag_dict=tag_dict)
    seconds = time.perf_counter() - start
    if getattr(model, "interrupted_", False):
        return _interrupted(model, args)
    states = model.labels_
    names = np.asarray(tag_dict.tags.itos if tag_dict is not None
                       else [f"S{k}" for k in range(model.n_states_)], dtype=object)
    result = _summary(args, hdp, model, corpus, seconds) | warned
    return _finish(args, model, corpus, result, states, names, gold_column, tag_dict)


def _finish(args, model, corpus, result: dict, states, names, gold_column, tag_dict) -> int:
    """The scores against the gold column, the tagged output, the report, then the summary and model file."""
    if gold_column is not None:
        result.update(_scores(corpus, states, names, gold_column, tag_dict))
    if args.output:
        result["output"] = _write_output(args, corpus, states, names, tag_dict)
    if args.report:
        from ..report import tagging_data, write_report

        write_report(args.report, {"command": "tag", **result, "trace": model.trace_,
                                   **tagging_data(corpus, states, names, gold_column)})
    return _outputs(model, args, result)


#: the options of the HDP-HMM group, which the finite HMM does not read
HDP_OPTIONS = ("truncation", "gamma", "sigma", "fix_hyper", "fix", "emission_prior", "emission_concentration",
               "new_word_mass", "hyper_burn_in", "qc", "qc_samples", "table_estimate", "table_samples", "n_init",
               "merge_moves")
#: the options of the finite HMM that the HDP-HMM does not read
HMM_ONLY_OPTIONS = ("states", "alpha", "learn_hyper", "map", "block_size", "cgs_keep", "emission")
#: what ``--load`` reads besides the model: input, output, evaluation, decoding, cluster
LOAD_OPTIONS = ("input", "load", "output", "format", "encoding", "lowercase", "unk_threshold", "decode",
                "gold_column", "output_column", "json", "report", "quiet", "progress", "workers", "cluster",
                "cluster_timeout")


def _add_emission_options(p: argparse.ArgumentParser) -> None:
    """``--emission`` and the options of the feature family (:mod:`induce.emissions.features`)."""
    from ..names import TEXT_EMISSIONS as EMISSIONS

    g = p.add_argument_group("emission family (--model hmm)")
    g.add_argument("--emission", choices=EMISSIONS, default=None,
                   help="features (the default of --model hmm when neither --infer nor an option of the "
                        "categorical emissions is given): p(w|k) ~ exp(lambda_k . f(w)) over the vocabulary with "
                        "word identity (words seen 3 times or more), shape, suffix and length features "
                        "(Berg-Kirkpatrick et al. 2010), trained with --infer em; categorical (the default otherwise): "
                        "a Dirichlet-multinomial over words per state; embeddings: Gaussian over word vectors "
                        "(--embeddings FILE)")
    add_feature_options(g)


def add_feature_options(g) -> None:
    """The options of the feature family (:data:`FEATURE_OPTIONS`), on the argument group ``g``."""
    from ..names import FEATURE_FITS

    g.add_argument("--features", metavar="FILE", default=None,
                   help="--emission features: the feature templates, one a line (identity, 'identity N': only "
                        "for words seen N times or more, form, initial-capital, proper-capital (a capital that is "
                        "not merely sentence-initial), all-caps, has-digit, has-hyphen, has-punct, length, "
                        "'suffix N', 'prefix N'; # comments); default: 'identity 3' (rarer words are told apart by "
                        "their other features), proper-capital and the other shape flags, suffixes 1-3 and length")
    g.add_argument("--feature-l2", type=finite_nonneg_float, default=None, metavar="KAPPA",
                   help="--emission features: L2 strength kappa of the weights (default 1; 3 was worse on EWT "
                        "and 7 of 9 UD treebanks)")
    g.add_argument("--feature-fit", choices=FEATURE_FITS, default=None,
                   help="--emission features: direct (default; L-BFGS on the marginal likelihood, the paper's "
                        "Algorithm 2) or em (EM with an L-BFGS M-step, Algorithm 1)")


#: the options only ``--emission features`` reads
FEATURE_OPTIONS = ("features", "feature_l2", "feature_fit")
#: options of the Bayesian categorical HMM (its Dirichlet priors, its algorithms' settings, the cluster) that the
#: feature family does not take: given without ``--emission``, they keep the categorical default
CATEGORICAL_OPTIONS = ("alpha", "beta", "learn_hyper", "block_size", "cgs_keep", "tag_dict", "stream", "workers",
                       "cluster")


def default_emission(args: argparse.Namespace) -> str:
    """``--emission`` when not given: ``features`` for ``--model hmm`` with neither ``--infer`` nor an option of
    :data:`CATEGORICAL_OPTIONS` (it beats the categorical HMM on ptb-sample, EWT, Brown and all 9 UD treebanks,
    docs/experiments/features.md "The default emission" and "The identity threshold"), else ``categorical``."""
    given = getattr(args, "_given", {})
    plain = args.model == "hmm" and args.infer is None and not any(d in given for d in CATEGORICAL_OPTIONS)
    return "features" if plain else "categorical"


def default_infer(args: argparse.Namespace) -> str:
    """``--infer`` when not given: cvi (hdp-hmm), em (the feature family), cvi2 (categorical)."""
    return "cvi" if args.model == "hdp-hmm" else "em" if args.emission == "features" else "cvi2"


def _check_applicable(args: argparse.Namespace, hdp: bool) -> None:
    """An option the chosen model or algorithm does not read is an error (one line), not silently ignored."""
    if hdp:
        refuse_given(args, HMM_ONLY_OPTIONS, "to --model hdp-hmm (the finite HMM's; the HDP-HMM learns its "
                                             "states up to --truncation)")
    else:
        refuse_given(args, HDP_OPTIONS, "to --model hmm (the HDP-HMM's: --model hdp-hmm)")
    for dest, infer in (("block_size", "cvi2"), ("cgs_keep", "cgs"), ("map", "em")):
        if args.infer != infer:
            refuse_given(args, (dest,), f"to --infer {args.infer} (only {infer} reads it)")


def _check_options(args: argparse.Namespace) -> bool:
    """Cross-option rules, before any work; fills in the default ``--infer``; True for the HDP-HMM."""
    from ..algorithms import support
    from ..taggers.hmm import STOCHASTIC_ALGORITHMS
    from ..taggers.hmm_vectors import COVARIANCES

    hdp = args.model == "hdp-hmm"
    refuse_hsmm_options(args)
    if args.emission != "features":
        refuse_given(args, FEATURE_OPTIONS, "without --emission features")
    args.infer = args.infer or default_infer(args)
    family = COVARIANCES[args.covariance] if args.emission == "embeddings" else args.emission
    support.check(args.model, args.infer, family, "tag")
    _check_applicable(args, hdp)
    check_vector_options(args)
    if hdp and args.tag_dict:
        raise ConfigError("--tag-dict cannot be used with --model hdp-hmm (it learns its states)")
    if args.resume and not args.checkpoint:
        raise ConfigError("--resume needs --checkpoint FILE")
    if args.checkpoint and (hdp or args.infer not in STOCHASTIC_ALGORITHMS):
        raise ConfigError(f"--checkpoint and --resume apply to the stochastic algorithms of --model hmm "
                          f"({', '.join(STOCHASTIC_ALGORITHMS)}), not --infer {args.infer}")
    if args.resume and not os.path.isfile(args.checkpoint):
        raise ConfigError(f"--resume: no checkpoint file {args.checkpoint}")
    if args.stream and args.encoding.replace("-", "").lower() not in ("utf8", "ascii"):
        raise ConfigError("--stream reads UTF-8 input; convert the file first (e.g. iconv -f latin-1 -t utf-8)")
    if args.heldout is not None and (hdp or args.infer not in STOCHASTIC_ALGORITHMS):
        raise ConfigError(f"--heldout applies to the stochastic algorithms of --model hmm "
                          f"({', '.join(STOCHASTIC_ALGORITHMS)})")
    return hdp


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
    corpus = _read(args)
    gold_column = gold_tag_column(corpus.tag_vocabs, args.gold_column)
    start = time.perf_counter()
    states = model.predict_flat(corpus)
    tags = tag_vocab.itos if tag_vocab is not None else [f"S{k}" for k in range(model.n_states_)]
    names = np.asarray(tags, dtype=object)
    result = {"input": str(args.input), "model_file": args.load, "model_type": type(model).__name__,
              "infer": model.infer, "states": model.n_states_, "sentences": corpus.n_sentences,
              "tokens": corpus.n_tokens, "seconds": round(time.perf_counter() - start, 3),
              "log_likelihood_per_token": model.score(corpus)}
    if gold_column is not None:
        result.update(_scores(corpus, states, names, gold_column, tag_vocab))
    if args.output:
        result["output"] = _write_output(args, corpus, states, names, tag_vocab)
    if args.report:
        from ..report import tagging_data, write_report

        write_report(args.report, {"command": "tag", **result, "trace": model.trace_,
                                   **tagging_data(corpus, states, names, gold_column)})
    emit(result, args.json)
    return 0


def _read(args: argparse.Namespace):
    """The input corpus (``--heldout`` sentences are split off by the model, which still tags them)."""
    from ..corpus.formats import load_corpus

    corpus = load_corpus(args.input, args.format, encoding=args.encoding, lowercase=args.lowercase,
                         unk_threshold=args.unk_threshold)
    if corpus.n_tokens == 0:
        raise ConfigError(f"{args.input}: no tokens to tag")
    return corpus


def _tag_dictionary(args, corpus, gold_column):
    """The ``--tag-dict`` (from the gold column or a file), or None."""
    from ..taggers import TagDictionary

    if not args.tag_dict:
        return None
    if args.tag_dict == "from-gold":
        if gold_column is None:
            raise ConfigError("--tag-dict from-gold needs gold tags in the input (see --gold-column)")
        return TagDictionary.from_gold(corpus, gold_column, cutoff=args.tag_dict_cutoff)
    return TagDictionary.from_file(args.tag_dict, corpus.vocab)


def _model(args, hdp: bool, corpus, gold_column, tag_dict):
    """The unfitted HMMTagger or HDPHMMTagger the options describe (unset options keep the API's defaults)."""
    from ..taggers import HDPHMMTagger, HMMTagger

    common = dict(infer=args.infer, decode=args.decode, order=args.order, random_state=args.seed,
                  verbose=show_progress(args), eval_column=gold_column if args.eval_every > 0 else None,
                  eval_every=max(1, args.eval_every))
    given = {"n_iter": args.iterations} if args.iterations is not None else {}
    if hdp:
        if "truncation" not in getattr(args, "_given", {}):
            print(f"induce tag: truncation K = {args.truncation} (the HDP-HMM learns how many states it uses; "
                  "--truncation sets K)", file=sys.stderr)
        return HDPHMMTagger(
            truncation=args.truncation, gamma=args.gamma, sigma=args.sigma, fix_hyper=_fixed_hyper(args),
            emission_prior=args.emission_prior, emission_concentration=args.emission_concentration,
            new_word_mass=args.new_word_mass, hyper_burn_in=args.hyper_burn_in, qc=args.qc,
            qc_samples=args.qc_samples, table_estimate=args.table_estimate, table_samples=args.table_samples,
            n_init=args.n_init, merge_moves=args.merge_moves, batch_size=args.batch_size, tau=args.tau,
            kappa=args.kappa, client=args.client, tol=args.tol,
            **common, **given, **({"beta": args.beta} if args.beta is not None else {}))
    n_states = len(tag_dict.tags) if tag_dict is not None else default_n_states(corpus, gold_column, args.states)
    learn_hyper = {"all": True, "per-state": "per-state", "none": False}.get(args.learn_hyper)  # None: the default
    features = {} if args.emission != "features" else dict(
        emission=args.emission, features=args.features, feature_l2=args.feature_l2,
        **({"feature_fit": args.feature_fit} if args.feature_fit else {}))
    return HMMTagger(n_states=n_states, tol=args.tol, alpha=args.alpha, beta=args.beta,
                     learn_hyper=learn_hyper, map_estimate=args.map, cgs_keep=args.cgs_keep,
                     cvi2_block=args.block_size, client=args.client, **common, **_stochastic_options(args), **given,
                     **vector_params(args), **features)


def _summary(args, hdp: bool, model, corpus, seconds: float) -> dict:
    """What the run did: settings actually used, passes, convergence, time, the final objective."""
    from ..taggers.hmm import STOCHASTIC_ALGORITHMS

    result = {
        "input": str(args.input), "infer": args.infer, "states": model.n_states_, "iterations": model.n_iter_,
        "converged": getattr(model, "converged_", False), "seed": args.seed, "sentences": corpus.n_sentences,
        "tokens": corpus.n_tokens, "seconds": round(seconds, 3),
        "tokens_per_s": round(corpus.n_tokens * model.n_iter_ / seconds, 1) if seconds > 0 else None,
    }
    last = model.trace_[-1]
    if hdp:
        result.update(model_type=args.model, alpha=None, truncation=args.truncation,
                      effective_states=model.effective_states_, gamma=model.gamma_, sigma=model.sigma_,
                      merge_moves=model.merge_moves)
        if len(model.init_objectives_) > 1:
            result["init_objectives"] = [round(x, 3) for x in model.init_objectives_]
    else:
        result.update(alpha=model.alpha_, beta=np.asarray(model.beta_).tolist(),
                      learned=[name for name in ("alpha", "beta") if name in model.learned_hyper_])
        if model.emission == "features":
            result.update(emission="features", feature_fit=model.feature_fit, feature_l2=model._feature_l2(),
                          features=model.feature_spec_, n_features=len(model.feature_names_),
                          top_features={f"S{k}": top for k, top in enumerate(model.top_features())})
    if args.emission == "embeddings":
        result.update(model.embedding_summary())
    if not hdp and args.infer in STOCHASTIC_ALGORITHMS and args.emission != "embeddings":
        result.update({"epochs": result.pop("iterations"), "minibatches": model.n_batches_,
                       "heldout_tokens": model.heldout_tokens_, "tokens_seen": last["tokens_seen"],
                       "tokens_per_s": round(last["tokens_seen"] / last["seconds"], 1) if last["seconds"] > 0 else None})
        for key in ("heldout_log_likelihood_per_token", "minibatch_log_likelihood_per_token"):
            if key in last:
                result[key] = last[key]
    else:
        objective = next(k for k in last if k not in ("iteration", "seconds", "tokens_per_s", "temperature",
                                                      "alpha", "beta"))
        result[objective] = last[objective]
    return result


def _scores(corpus, states, names, gold_column: str, tag_dict) -> dict:
    """The tagging metrics against ``gold_column`` (plus plain accuracy when the states are the dictionary's tags)."""
    from ..eval.tagging import accuracy, tagging_report

    gold = corpus.tags[gold_column]
    halves = corpus.offsets if halvable(corpus.offsets) else None
    report = tagging_report(states, gold, halves)
    # ``states`` is K in every run (also with --stream); the report's distinct predicted states are states_used
    scores = {"gold_column": gold_column, "states_used": report.pop("states")}
    scores.update({k: v for k, v in report.items() if k not in ("tokens",)})
    if halves is None:
        scores["note"] = "cross-validated many-to-one skipped: it needs two halves with tokens (>= 2 sentences)"
    if tag_dict is not None:
        # states are tags: compare names in one shared id space
        both = np.concatenate([names[states], np.asarray(corpus.tag_vocabs[gold_column].itos, dtype=object)[gold]])
        _, ids = np.unique(both.astype(str), return_inverse=True)
        scores["accuracy"] = accuracy(ids[: len(states)], ids[len(states):])
    return scores


def _write_output(args, corpus, states, names, tag_dict) -> str:
    """The input with the induced tags added (atomic); returns the path.

    The format is the one ``-o`` names by its extension (``x.conllu``: CoNLL-U with the gold tags kept and
    the induced ones in MISC, whatever the input was), else the input's.  PTB output has no spare column:
    its preterminals become ``GOLD=INDUCED`` (:func:`induce.corpus.writers.write_tagged`).
    """
    from ..corpus.formats import detect_format, format_of_name
    from ..corpus.writers import write_tagged

    if corpus.sentences is None:
        raise ConfigError("the input's sentences were not kept; cannot write the output")
    fmt = format_of_name(args.output) or (args.format if args.format != "auto"
                                          else detect_format(args.input, args.encoding))
    tags = [names[s].tolist() for s in corpus.split(states)]
    column = args.output_column or ("induced" if fmt == "conllu" and tag_dict is None else None)
    write_tagged(args.output, corpus.sentences, tags, fmt, column)
    return args.output

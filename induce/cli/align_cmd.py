"""``induce align``: train a word aligner on a bitext and write Pharaoh links.

    induce align SRC TGT -o OUT.align [--model fertility --infer gibbs --samplers 3] \\
        [--model hmm --infer cvi --tol 0.01 --iterations 50] \\
        [--symmetrize grow-diag-final-and] [--gold GOLD [--gold-format naacl|pharaoh]]

``SRC TGT`` are line-aligned tokenised files, or ``SRC`` alone holds
``source ||| target`` lines.  Output: one line of 0-based ``i-j`` links per pair
(``i`` source, ``j`` target), written atomically.  With ``--gold`` the links of
the first pairs (as many as the gold file has) are scored: precision, recall,
AER (Och & Ney 2003).  Each stage (Model 1, then the HMM) runs at most its
``--ibm1-iterations`` / ``--iterations`` passes and stops earlier when the
objective's relative change stays below ``--tol`` for 3 passes; the JSON says
how many passes ran, whether they converged, and the priors used (learned with
``--learn-hyper all`` unless ``--alpha`` fixes the translation prior).  The
default, ``--infer gibbs`` (collapsed Gibbs sampling, eflomal's recipe), runs
``--samplers`` chains through IBM-1, HMM and fertility for a fixed number of
passes (``--gibbs-passes``; ``--iterations``, ``--ibm1-iterations`` and ``--tol`` are refused) and
decodes the links from their averaged link marginals; ``--infer cvi`` with ``--model fertility`` runs
collapsed variational inference of the same model through the same stages (each with the stopping rule) and
decodes the links from its mean-field link marginals.
"""

from __future__ import annotations

import argparse
import sys

from .common import add_progress_options, load_model, one_stdin, refuse_given, refuse_given_except, show_progress
from .common import add_learn_hyper_option, finite_nonneg_float, reported_warnings
from .common import (add_base_option, add_json_flag, one_based, emit, existing_file, finite_positive_float, fraction, nonneg_int, output_path,
                     positive_int, probability, seed)


#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "word alignment (IBM Model 1 / HMM / fertility with EM, VI, CVI, Gibbs sampling)"


def register(subparsers) -> None:
    from ..names import ALIGN_DECODERS as DECODERS, ALIGN_DEFAULT_ALPHA as DEFAULT_ALPHA, ALIGNMENT_FORMATS
    from ..names import ALIGN_DIRECTIONAL as DIRECTIONAL, ALIGN_HMM_CVI as HMM_CVI, ALIGN_INFERENCE as INFERENCE
    from ..names import ALIGN_MAX_ITER as MAX_ITER, ALIGN_MAX_ITER_IBM1 as MAX_ITER_IBM1, ALIGN_MODELS as MODELS
    from ..names import ALIGN_SUPPORTS as SUPPORTS, ALIGN_TOL as TOL, SYMMETRIZATIONS as METHODS

    p = subparsers.add_parser("align", help=HELP,
                              description=__doc__)
    p.add_argument("src", type=existing_file, help="source side (or a 'source ||| target' file)")
    p.add_argument("tgt", nargs="?", type=existing_file, help="target side, line-aligned with SRC")
    p.add_argument("-o", "--output", required=True, type=output_path, help="Pharaoh output file (0-based i-j)")
    # defaults from the record (docs/experiments/alignment.md, "Gibbs"): below eflomal -m 3 on every gold set
    p.add_argument("--model", choices=MODELS, default="fertility",
                   help="default fertility (with --infer gibbs, or cvi: collapsed variational inference of the "
                        "same model)")
    p.add_argument("--infer", choices=INFERENCE, default="gibbs")
    p.add_argument("--iterations", type=positive_int, default=MAX_ITER,
                   help=f"maximum passes of the final model (default {MAX_ITER})")
    p.add_argument("--ibm1-iterations", type=nonneg_int, default=MAX_ITER_IBM1,
                   help=f"maximum Model 1 passes before the HMM (default {MAX_ITER_IBM1})")
    p.add_argument("--tol", type=finite_nonneg_float, default=TOL,
                   help=f"stop a stage when the objective's relative change is below this for 3 passes (default "
                        f"{TOL:g}; 0 runs all passes)")
    p.add_argument("--hmm-cvi", choices=HMM_CVI, default="cvi1", help="CVI form for the HMM model (default cvi1: "
                   "ahead on Hansards at 10k, 50k, 251k pairs, behind on the small gold sets; half cvi2's speed)")
    p.add_argument("--samplers", type=positive_int, default=3,
                   help="--infer gibbs: independent chains whose link marginals are averaged (default 3; with "
                        "--workers N they run in N threads, with the links of one)")
    p.add_argument("--gibbs-passes", type=positive_int, nargs="+", metavar="N",
                   help="--infer gibbs: passes of each stage (IBM-1, HMM, fertility up to --model; default: eflomal's "
                        "max(2, 5000 / sqrt(pairs)) for the last stage, a quarter of that for each earlier one)")
    p.add_argument("--alpha", type=finite_positive_float, default=None,
                   help=f"Dirichlet prior of the translation tables (default {DEFAULT_ALPHA:g}, or learned with "
                        "--learn-hyper all; the thesis's 0.1 over-smooths large vocabularies)")
    add_learn_hyper_option(p, help="vi, cvi: all: learn the translation and jump priors not given by empirical "
                                   "Bayes on the decoded alignment after every pass; none (default): hold them")
    p.add_argument("--prior-support", choices=SUPPORTS, default="vocabulary")
    p.add_argument("--null-prob", type=fraction, default=0.2, help="probability of a NULL state (HMM)")
    p.add_argument("--symmetrize", choices=METHODS + DIRECTIONAL, default="grow-diag-final-and")
    p.add_argument("--decode", choices=DECODERS, default="viterbi")
    p.add_argument("--threshold", type=probability, default=0.5, help="posterior threshold for --decode posterior")
    p.add_argument("--lowercase", action="store_true", help="lowercase and accent-fold tokens before training")
    p.add_argument("--gold", type=existing_file, help="gold alignment file to score against")
    p.add_argument("--gold-format", choices=("auto",) + ALIGNMENT_FORMATS, default="auto",
                   help="format of --gold (default: detected from its first line)")
    add_base_option(p, "--gold-base", "the gold file's positions", old="yes-no")
    p.add_argument("--max-length", type=positive_int, metavar="N",
                   help="skip sentence pairs with a side longer than N words (written without links; the count is "
                        "printed)")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--save-model", type=output_path, help="also write the trained model (.npz)")
    p.add_argument("--load", type=existing_file, metavar="MODEL",
                   help="align with a saved model (--save-model) instead of training; only the input, output, "
                        "--gold, --symmetrize, --decode and --threshold options apply")
    add_progress_options(p)
    add_json_flag(p)
    p.add_argument("--report", type=output_path, metavar="FILE.html",
                   help="also write a self-contained HTML report (needs matplotlib)")
    from ..distributed import cluster

    cluster.add_options(p, "em, vi")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """``induce align``; with ``--workers`` / ``--cluster`` inside a dask client session (:mod:`induce.distributed`),
    except ``--infer gibbs --workers N``: its chains in N threads."""
    from ..distributed import cluster

    if args.infer == "gibbs" and args.workers and not args.cluster:  # the chains in threads of this process
        return _run(args, None)
    with cluster.from_args(args, args.infer in ("em", "vi"), "--infer em or vi (--infer gibbs: --workers N runs "
                           "its chains in N threads)") as client:
        return _run(args, client)


#: what ``--load`` reads besides the model
LOAD_OPTIONS = ("src", "tgt", "output", "load", "lowercase", "max_length", "gold", "gold_format", "gold_base",
                "symmetrize", "decode", "threshold", "json", "report", "quiet", "progress")


def _gold(args: argparse.Namespace, pairs: list):
    """The ``--gold`` alignments (read, and failing, before any training or output), or None; a gold file with
    more pairs than the bitext is refused as ``eval align`` refuses it (fewer: the first pairs are scored)."""
    from ..errors import CorpusFormatError
    from ..corpus.parallel import read_alignments

    if not args.gold:
        return None
    gold = read_alignments(args.gold, args.gold_format, one_based=one_based(args.gold_base))
    if len(gold) > len(pairs):
        raise CorpusFormatError(args.gold, None, None, f"at most {len(pairs)} sentence pairs, as many as the "
                                f"bitext; got {len(gold)}")
    return gold


def _aligner(args: argparse.Namespace, client):
    """The saved aligner of ``--load`` (with the output options given now), or a new one from the options."""
    from ..align.aligner import WordAligner

    if args.load:
        refuse_given_except(args, LOAD_OPTIONS, "with --load (the saved model is applied as it is, not trained)")
        aligner = load_model(args.load, {"WordAligner": WordAligner})
        for dest, param in (("symmetrize", "symmetrize"), ("decode", "decode"), ("threshold", "posterior_threshold")):
            if dest in args._given:
                setattr(aligner, param, getattr(args, dest))
        return aligner
    if args.infer == "gibbs":
        refuse_given(args, ("iterations", "ibm1_iterations", "tol"),
                     "to --infer gibbs (it runs a fixed number of passes per stage: --gibbs-passes)")
    return WordAligner(model=args.model, infer=args.infer, n_iter=args.iterations, tol=args.tol,
                          n_iter_ibm1=args.ibm1_iterations, alpha=args.alpha, prior_support=args.prior_support,
                          learn_hyper=args.learn_hyper == "all",
                          null_prob=args.null_prob, hmm_cvi=args.hmm_cvi, symmetrize=args.symmetrize,
                          samplers=args.samplers, gibbs_passes=args.gibbs_passes,
                          n_jobs=(args.workers or 1) if args.infer == "gibbs" else 1,
                          decode=args.decode, posterior_threshold=args.threshold, random_state=args.seed,
                          verbose=show_progress(args), client=client)


def _run(args: argparse.Namespace, client) -> int:
    from ..align.aligner import PairSource
    from ..corpus.parallel import clip_alignments, write_pharaoh
    from ..distributed import cluster
    from ..eval.alignment import alignment_scores

    one_stdin(SRC=args.src, TGT=args.tgt, **{"--gold": args.gold})
    source = PairSource(args.src, args.tgt, args.lowercase, args.max_length)
    pairs = source.pairs()
    gold = _gold(args, pairs)
    kept = source.kept(pairs)
    if len(kept) < len(pairs):
        print(f"induce align: skipped {len(pairs) - len(kept)} sentence pairs with a side longer than "
              f"--max-length {args.max_length} (written without links)", file=sys.stderr)
    aligner = _aligner(args, client)
    links: list[set] = [set() for _ in pairs]
    fit_warnings: dict = {}
    with reported_warnings(fit_warnings):
        aligned = (aligner.align if args.load else aligner.fit_align)([pairs[k] for k in kept],
                                                                        *(() if args.load else (source,)))
    for k, found in zip(kept, aligned):
        links[k] = set(found)
    write_pharaoh(args.output, links)
    if args.save_model:
        aligner.save(args.save_model)
    result = {"pairs": len(pairs), "links": sum(len(x) for x in links), "output": args.output,
              "model": aligner.model, "infer": aligner.infer, "symmetrize": aligner.symmetrize}
    if args.load:
        result.update(model_file=args.load, alpha=aligner.alpha_, jump_alpha=aligner.jump_alpha_)
    else:
        result.update(fit_seconds=aligner.fit_seconds_, pairs_per_second=len(kept) / max(aligner.fit_seconds_, 1e-9),
                      iterations=aligner.n_iter_, converged=aligner.converged_, alpha=aligner.alpha_,
                      jump_alpha=aligner.jump_alpha_, learned=list(aligner.learned_hyper_))
        if aligner.model != "ibm1":
            result["ibm1_iterations"] = aligner.n_iter_ibm1_
    if len(kept) < len(pairs):
        result["skipped_pairs"] = len(pairs) - len(kept)
    if client is not None:
        result.update(aligner.cluster_meter_.report(cluster.n_workers(client)))
    if gold is not None:
        gold, dropped = clip_alignments(gold, pairs[: len(gold)])
        scores = alignment_scores(links[: len(gold)], [g.sure for g in gold], [g.possible for g in gold])
        result["scores"] = {"aer": scores["aer"], "precision": scores["precision"], "recall": scores["recall"],
                            "f1": scores["f1"], "scored_pairs": len(gold), "gold_links_dropped": dropped}
    if args.report:
        from ..report import alignment_examples, write_report

        trace = [{"direction": name, **rec} for name in ("forward", "reverse")
                 for rec in (getattr(getattr(aligner, f"{name}_", None), "history", None) or [])]
        write_report(args.report, {"command": "align", **result, "trace": trace,
                                   **alignment_examples(pairs, links, gold if args.gold else None)})
    result.update(fit_warnings)
    emit(result, args.json)
    return 0

"""``induce segment``: HMM segmentation of numeric time series (CSV/TSV, .npy, .npz).

Parses options, calls :class:`induce.series.HMMSegmenter`, writes the input rows with a ``state``
column (and ``p_state_k`` columns with ``--posteriors``) and prints a summary (``--json``).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time

import numpy as np

from ..atomic import atomic_write
from ..distributed import cluster
from ..errors import ConfigError, CorpusFormatError
from ..names import HDP_HSMM_N_ITER, SERIES_COLLAPSED, SERIES_HDP_ALGORITHMS
from .common import add_progress_options, load_model, refuse_given, refuse_given_except, show_progress
from .common import (emit, existing_file, finite_nonneg_float, finite_positive_float, forgetting_rate,
                     fraction, nonneg_int, output_path, positive_int, reported_warnings, seed)


#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "segment numeric time series with an HMM (Gaussian, Poisson, ... emissions)"


def _columns(text: str) -> list[str]:
    names = [c.strip() for c in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected NAME[,NAME...], got {text!r}")
    return names


def register(sub) -> None:
    from ..names import DURATION_FAMILIES, EMISSION_FAMILIES, SERIES_MODELS

    p = sub.add_parser("segment", help=HELP,
                       description="Fit an HMM with conjugate exponential-family emissions to one or more numeric "
                       "sequences and label every step with a state.")
    p.add_argument("series", type=existing_file,
                   help="CSV/TSV with a header row (one row per step; also .gz, .bz2, .xz; '-': stdin), .npy or .npz")
    p.add_argument("-o", "--output", type=output_path, help="write the input rows with a 'state' column added (CSV)")
    p.add_argument("--emission", choices=EMISSION_FAMILIES, default="gaussian", help="emission family (default gaussian)")
    p.add_argument("--columns", type=_columns, metavar="NAME[,NAME...]",
                   help="numeric columns to model (default: all but --id-column)")
    p.add_argument("--id-column", metavar="NAME", help="sequence id column (default: blank lines separate sequences)")
    p.add_argument("--states", type=positive_int, default=None,
                   help="number of hidden states K (default 3; --model hdp-hmm and hdp-hsmm: the truncation, "
                        f"default {HDP_DEFAULT_STATES})")
    p.add_argument("--infer", choices=_infer_names(), default=None, metavar=_infer_metavar(),
                   help="inference algorithm (default vi: the best held-out fit on the real series, see "
                        "docs/experiments/timeseries.md; --model hdp-hmm: cvi); cvi1, cgs: step-by-step collapsed VI "
                        "and collapsed Gibbs sampling (--model hmm, gaussian, diag-gaussian or poisson emissions; cgs "
                        "runs all --iterations sweeps, keeps the last sample); hdp-*: the HDP-HMM, as --model hdp-hmm")
    p.add_argument("--iterations", type=positive_int, default=None,
                   help=f"iteration / epoch cap (default 100; --model hdp-hsmm: {HDP_HSMM_N_ITER})")
    p.add_argument("--tol", type=finite_nonneg_float, default=1e-4,
                   help="stop when the objective's relative change stays below this for 3 passes (default 1e-4)")
    p.add_argument("--alpha", type=finite_positive_float, default=1.0, help="transition Dirichlet prior (default 1)")
    p.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    p.add_argument("--heldout", type=fraction, default=0.0, metavar="FRACTION",
                   help="hold out the last FRACTION of each series and report its log-likelihood per step")
    p.add_argument("--decode", choices=("viterbi", "posterior"), default="viterbi",
                   help="state labels: Viterbi path or per-step posterior argmax (default viterbi)")
    p.add_argument("--round", action="store_true",
                   help="round values to the nearest integer first (counts stored with decimals, for poisson)")
    p.add_argument("--posteriors", action="store_true", help="add p_state_k columns (posterior marginals)")
    p.add_argument("--save-model", type=output_path, metavar="MODEL", help="save the fitted model (.npz)")
    p.add_argument("--load", type=existing_file, metavar="MODEL",
                   help="label the series with a saved model (any --model: the file says which) instead of fitting")
    add_progress_options(p)
    p.add_argument("--json", nargs="?", const="-", type=output_path, metavar="FILE",
                   help="print the summary as JSON (or write FILE)")
    p.add_argument("--report", type=output_path, metavar="FILE.html",
                   help="also write a self-contained HTML report: the first series coloured by state (needs matplotlib)")
    m = p.add_argument_group("models (--model hdp-hmm: --infer cvi, scvi or svi; hsmm: em, vi, svi, cvi2 or scvi; "
                             "hdp-hsmm: vi, svi, cvi2 or scvi)")
    m.add_argument("--model", choices=SERIES_MODELS, default="hmm",
                   help="hmm; hdp-hmm: the HDP-HMM truncated at --states (learns how many it uses); hsmm: explicit "
                        "state durations, no self-transitions; hdp-hsmm: the HDP-HSMM truncated at --states, with "
                        "--gamma and --sigma learned from their starting values, started from the HMM with merge moves "
                        "(default hmm)")
    m.add_argument("--durations", choices=DURATION_FAMILIES, default="negbin",
                   help="duration family (default negbin with r learned: geometric, as the HMM's, or more regular, "
                        "state by state; docs/experiments/hsmm_defaults.md)")
    m.add_argument("--max-duration", type=positive_int, default=None, metavar="D",
                   help="longest segment the HSMM considers; cost O(T K D) (default: the longest sequence, or "
                        "where that costs over 3e7 terms a pass 4 x the longest segment of the HMM's Viterbi path)")
    m.add_argument("--negbin-r", type=finite_positive_float, default=None, metavar="R",
                   help="fixed r of negbin durations (an integer r runs on the HMM embedding, no --max-duration); "
                        "default: r learned over 1..--max-r (paper 002 section 5.2)")
    m.add_argument("--max-r", type=positive_int, default=3, metavar="R", help="largest learned r (default 3)")
    m.add_argument("--negbin-samples", type=nonneg_int, default=0, metavar="S",
                   help="learned r: the sampled update of q(r, p) with S models per pass on the embedding (vi or svi); "
                        "0 (default): the exact update, explicit messages up to --max-duration")
    m.add_argument("--segments", type=output_path, metavar="FILE",
                   help="write the Viterbi segments as CSV rows (sequence, start, end, state), end exclusive")
    h = p.add_argument_group("HDP-HMM (--model hdp-hmm)")
    h.add_argument("--gamma", type=finite_positive_float, default=1.0,
                   help="top-level concentration (default 1; learned by hdp-cvi/hdp-scvi and hdp-hsmm, fixed for hdp-svi)")
    h.add_argument("--sigma", type=finite_positive_float, default=1.0,
                   help="transition concentration (default 1; learned by hdp-cvi/hdp-scvi and hdp-hsmm, fixed for hdp-svi)")
    s = p.add_argument_group("stochastic and subsequence options (cvi2, svi, scvi and the hdp-* algorithms)")
    s.add_argument("--batch-size", type=positive_int, metavar="M",
                   help="items per minibatch (default 10; --model hmm on a cluster: the largest that keeps 500 "
                        "minibatches an epoch)")
    s.add_argument("--tau", type=finite_nonneg_float, default=1.0, help="step-size delay (default 1)")
    s.add_argument("--kappa", type=forgetting_rate, default=0.6, help="forgetting rate in [0.5, 1] (default 0.6)")
    s.add_argument("--subseq-length", type=positive_int, default=None, metavar="T",
                   help="cut series into items of T steps (default: automatic, about 20 items)")
    cluster.add_options(p, "--model hmm with --infer svi or scvi")
    p.set_defaults(handler=run)


def _split_heldout(seqs, share):
    """Per sequence, the first (1 - share) steps for training and the rest held out (at least 1 step each)."""
    train, test = [], []
    for x in seqs:
        cut = min(max(1, int(round(x.shape[0] * (1.0 - share)))), x.shape[0] - 1)
        if cut < 1:
            raise ConfigError(f"a sequence of {x.shape[0]} steps is too short for --heldout {share}")
        train.append(x[:cut])
        test.append(x[cut:])
    return train, test


def run(args) -> int:
    """``induce segment``; with ``--workers`` / ``--cluster`` inside a dask client session (:mod:`induce.distributed`)."""
    from ..series.segmenter import CLUSTER_ALGORITHMS

    supported = args.model == "hmm" and args.infer in CLUSTER_ALGORITHMS and not args.load
    with cluster.from_args(args, supported, "--model hmm with --infer svi or scvi (fitting, not --load)") as client:
        args.client = client
        return _run(args)


def _run(args) -> int:
    from ..series import read_series

    table = read_series(args.series, args.columns, args.id_column)
    seqs = [np.round(x) for x in table.sequences] if args.round else table.sequences
    start = time.perf_counter()
    model = _model(args, seqs[0].shape[1])
    _check_values(model, args, table, seqs)
    if not args.load:
        _check_size(args, table, seqs)
    train, test = _split_heldout(seqs, args.heldout) if args.heldout > 0 else (seqs, None)
    warned: dict = {}
    if not args.load:
        from ..progress import bars

        with reported_warnings(warned), bars(show_progress(args)):
            model.fit(train)
    summary = {"series": table.path, "columns": table.columns, "sequences": len(seqs),
               "steps": int(sum(x.shape[0] for x in seqs)), "emission": model.family_.name,
               "states": int(model.n_states), "infer": model.infer, "iterations": int(model.n_iter_),
               "converged": bool(model.converged_), "seconds": round(time.perf_counter() - start, 3),
               "train_loglik_per_step": model.score(train)}
    if args.client is not None:
        summary["workers"] = cluster.n_workers(args.client)
        meter = model.cluster_meter_.report(summary["workers"])  # its "steps" are minibatches, its tokens time steps
        meter["minibatches"], meter["worker_steps_per_s"] = meter.pop("steps"), meter.pop("worker_tokens_per_s")
        summary.update(meter)
        summary["batch_size"] = model.batch_size_
    if test is not None:
        summary["heldout_steps"] = int(sum(x.shape[0] for x in test))
        summary["heldout_loglik_per_step"] = model.score(test, context=train)
    with reported_warnings(warned):  # a decoded HSMM segment that reaches --max-duration
        paths = model.predict(seqs, decode=args.decode)
    summary["state_counts"] = np.bincount(np.concatenate(paths), minlength=model.n_states).tolist()
    if args.model in ("hsmm", "hdp-hsmm"):
        summary.update(model.duration_summary())
    if args.infer in SERIES_HDP_ALGORITHMS or args.model == "hdp-hsmm":
        from ..infer.hdp import effective_states

        summary["effective_states"] = effective_states(model.family_.counts(model.stats_))
    if args.model == "hdp-hsmm":  # the concentrations the fit ended with (learned), the moves kept
        summary.update(gamma=float(model.gamma_), sigma=float(model.sigma_),
                       **{key: [[int(k), int(l)] for k, l in getattr(model, f"{key}_", [])]
                          for key in ("merges", "splits")},
                       deletes=[int(k) for k in getattr(model, "deletes_", [])])
    if args.segments:
        _write_segments(args.segments, paths)
    summary.update(warned)
    if args.report:
        from ..report import series_data, write_report

        trace = [{"iteration": i + 1, "objective": float(v)} for i, v in enumerate(model.trace_)]
        write_report(args.report, {"command": "segment", **summary, "trace": trace,
                                   **series_data(seqs[0], paths[0], table.columns)})
    if args.output:
        _write(args.output, table, paths, model.predict_proba(seqs) if args.posteriors else None)
    if args.save_model:
        model.save(args.save_model)
    if args.json and args.json != "-":
        with atomic_write(args.json) as handle:
            emit(summary, True, handle)
    else:
        emit(summary, bool(args.json))
    return 0


def _infer_names() -> tuple[str, ...]:
    """Every algorithm name ``--infer`` takes: one the model or family cannot run is refused with its reason
    (:func:`_algorithm`), not by argparse."""
    from ..names import HDP_ALGORITHMS, HMM_ALGORITHMS, SERIES_ALGORITHMS

    return tuple(dict.fromkeys(SERIES_ALGORITHMS + SERIES_HDP_ALGORITHMS + HMM_ALGORITHMS + HDP_ALGORITHMS))


def _infer_metavar() -> str:
    """``--infer``'s metavar: the names the series estimators run, then "..." for the text ones
    :func:`_infer_names` also takes."""
    from ..names import SERIES_ALGORITHMS

    return "{" + ",".join(SERIES_ALGORITHMS + SERIES_COLLAPSED + SERIES_HDP_ALGORITHMS) + ",...}"


def _algorithm(model: str, infer: str | None, family: str) -> str:
    """The segmenter's ``infer`` for ``--model`` and ``--infer`` (None: the default): ``--model hdp-hmm`` runs the
    HDP-HMM algorithms (``cvi`` -> ``hdp-cvi``; default cvi), ``--infer hdp-*`` alone selects them too.  A
    combination the ``family`` emissions cannot run is refused with its reason (:mod:`induce.algorithms.support`)."""
    from ..algorithms import support

    if model != "hdp-hmm":
        if infer is None:
            return "vi"
        if infer in SERIES_HDP_ALGORITHMS and model != "hmm":
            raise ConfigError(f"--infer {infer} is the HDP-HMM (--model hdp-hmm), not --model {model}")
        if infer not in SERIES_HDP_ALGORITHMS:
            support.check(model, infer, family, "segment")
        return infer
    infer = (infer or "cvi").removeprefix("hdp-")
    support.check(model, infer, family, "segment")
    return f"hdp-{infer}"


def _model(args, n_columns: int):
    """The loaded model (``--load``, checked against the input's columns) or a new unfitted one."""
    from ..series import HMMSegmenter
    from ..series import HDPHSMMSegmenter, HSMMSegmenter

    if args.load:
        refuse_given_except(args, LOAD_OPTIONS, "with --load (the saved model is applied as it is, not trained)")
        model = load_model(args.load, {"HMMSegmenter": HMMSegmenter, "HSMMSegmenter": HSMMSegmenter,
                                       "HDPHSMMSegmenter": HDPHSMMSegmenter})
        kind = {HSMMSegmenter: "hsmm", HDPHSMMSegmenter: "hdp-hsmm"}.get(type(model), "hmm")
        if "model" in args._given and args.model != kind and not (kind == "hmm" and args.model == "hdp-hmm"):
            raise ConfigError(f"--load {args.load} holds a --model {kind} model, not --model {args.model}")
        args.model, args.infer = kind, model.infer
        if model.family_.dim != n_columns:
            raise ConfigError(f"{args.load} models {model.family_.dim} columns, the input has {n_columns}")
        return model
    args.infer = _algorithm(args.model, args.infer, args.emission)
    _check_applicable(args)
    if args.model in ("hsmm", "hdp-hsmm"):
        common = dict(n_states=args.states, emission=args.emission, durations=args.durations,
                      max_duration=args.max_duration, r=args.negbin_r, infer=args.infer,
                      n_iter=args.iterations or (HDP_HSMM_N_ITER if args.model == "hdp-hsmm" else 100),
                      tol=args.tol, alpha=args.alpha, batch_size=args.batch_size or 10, tau=args.tau,
                      kappa=args.kappa, subsequence_length=args.subseq_length, random_state=args.seed,
                      max_r=args.max_r)
        if args.model == "hdp-hsmm":
            return HDPHSMMSegmenter(gamma=args.gamma, sigma=args.sigma, **common)
        return HSMMSegmenter(negbin_samples=args.negbin_samples, **common)
    return HMMSegmenter(n_states=args.states, emission=args.emission, infer=args.infer,
                        n_iter=args.iterations or 100,
                        tol=args.tol, alpha=args.alpha, batch_size=args.batch_size, tau=args.tau, kappa=args.kappa,
                        subsequence_length=args.subseq_length, gamma=args.gamma, sigma=args.sigma,
                        random_state=args.seed, client=args.client)


#: what ``--load`` reads besides the model: input, output, decoding
LOAD_OPTIONS = ("series", "load", "model", "output", "columns", "id_column", "heldout", "decode", "round", "posteriors",
                "segments", "json", "report", "quiet", "progress")
#: the HDP's concentrations, read by ``--model hdp-hmm`` (``--infer hdp-*``) and ``hdp-hsmm`` only
HDP_OPTIONS = ("gamma", "sigma")
#: the truncation of --model hdp-hmm / hdp-hsmm when --states is not given: room for the number of states to
#: be learned (a truncation of 3 would cap it at 3); docs/experiments/segment_truncation.md
HDP_DEFAULT_STATES = 20
#: --states when not given, for the finite models
DEFAULT_STATES = 3


def _check_applicable(args) -> None:
    """Options the chosen model does not read are errors; sets the default ``--states`` (the HDP's truncation
    large enough to learn from, said on stderr)."""
    hdp = args.model == "hdp-hsmm" or args.infer in SERIES_HDP_ALGORITHMS
    if not hdp:
        refuse_given(args, HDP_OPTIONS, f"to --model {args.model} (the HDP's: --model hdp-hmm or hdp-hsmm)")
    if args.states is None:
        args.states = HDP_DEFAULT_STATES if hdp else DEFAULT_STATES
        if hdp:
            print(f"induce segment: truncation K = {args.states} (the HDP learns how many states it uses; "
                  "--states sets K)", file=sys.stderr)


def _check_size(args, table, seqs) -> None:
    """K within what the series can inform (no more states than steps) and within memory: the HMM's K x K
    tables and the longest series' K-wide lattices (:func:`induce.resources.hmm_bytes`), before any work."""
    from ..resources import check_memory, hmm_bytes

    lengths = np.array([x.shape[0] for x in seqs])
    steps, d = int(lengths.sum()), seqs[0].shape[1]
    if args.states > steps:
        raise ConfigError(f"--states {args.states} exceeds the {steps} steps of {table.path}: a state needs steps "
                          "to be estimated from; use fewer states")
    check_memory(hmm_bytes(args.states, 1 + d + d * d, lengths), f"the tables of --states {args.states}",
                 f"{table.path}, {int(lengths.max())} steps", remedy="use fewer --states")


def _check_values(model, args, table, seqs) -> None:
    """The emission family's value checks (counts, codes), with errors located at ``file:line``."""
    from ..emissions import get_family

    family = model.family_ if args.load else get_family(args.emission)
    for i, x in enumerate(seqs):
        try:
            family.check_data(x)
        except CorpusFormatError as exc:
            raise table.locate(exc, i) from None


def _write(path, table, paths, probs) -> None:
    """The input rows with ``state`` (and ``p_state_k``) columns, in input order."""
    K = probs[0].shape[1] if probs is not None else 0
    step = [0] * len(paths)
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(table.header + ["state"] + [f"p_state_{k}" for k in range(K)])
        for cells, s in zip(table.rows, table.seq_of_row):
            t = step[s]
            step[s] += 1
            extra = [f"{p:.6g}" for p in probs[s][t]] if probs is not None else []
            writer.writerow(list(cells) + [int(paths[s][t])] + extra)


def _write_segments(path, paths) -> None:
    """``sequence, start, end, state`` rows of every run of equal states (0-based steps, end exclusive)."""
    from ..infer.series_hsmm import runs

    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["sequence", "start", "end", "state"])
        for i, path_i in enumerate(paths):
            writer.writerows([i, *seg] for seg in runs(np.asarray(path_i)))

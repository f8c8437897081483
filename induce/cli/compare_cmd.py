"""``induce compare``: every named inference algorithm on one corpus, head to head.

    induce compare CORPUS --infer em,vi,cvi2,cgs --seeds 3 [--states K --iterations N]
        [--emission categorical,features,embeddings [--embeddings FILE]] [--json [FILE]] [--report FILE.html]

Fits an HMM tagger per algorithm and seed (:func:`induce.compare.compare`) and
prints one table: per metric (rows) and algorithm (columns) the mean and sample
standard deviation over the seeds, with the time per run.  With several emission
families each family runs with every algorithm of --infer it trains with (features:
em; embeddings: the series engine's), its columns named family/algorithm.  ``--json`` prints the
summary and the runs' final numbers; ``--json FILE`` writes them with every run's
per-iteration trace; ``--report`` writes an HTML page with the curves of every run.
"""

from __future__ import annotations

import argparse
import sys

from ..atomic import atomic_write
from ..errors import ConfigError
from .common import add_progress_options, refuse_given, show_progress
from .tag_options import FEATURE_OPTIONS, add_feature_options
from .vector_options import VECTOR_OPTIONS, add_vector_options
from .common import (corpus_path, default_n_states, dump_json, emit, encoding, finite_positive_float, gold_tag_column,
                     output_path, positive_int, reported_warnings)


#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "inference algorithms head to head on one corpus (HMM tagging)"


def _algorithms(text: str) -> list[str]:
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated algorithm names, e.g. em,vi,cvi2,cgs")
    return names


def _emissions(text: str) -> list[str]:
    from ..names import TEXT_EMISSIONS

    names = [e.strip() for e in text.split(",") if e.strip()]
    bad = [e for e in names if e not in TEXT_EMISSIONS]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"expected comma-separated emission families of {', '.join(TEXT_EMISSIONS)}"
                                         + (f"; not {', '.join(bad)}" if bad else ""))
    return list(dict.fromkeys(names))


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help=HELP,
                       description=__doc__)
    p.add_argument("input", metavar="CORPUS", type=corpus_path, help="corpus file or directory (any supported format) or 'demo'")
    p.add_argument("--infer", type=_algorithms, default=["em", "vi", "cvi2", "cgs"], metavar="A,B,...",
                   help="comma-separated inference algorithms of induce tag (default em,vi,cvi2,cgs)")
    p.add_argument("--seeds", type=positive_int, default=3, metavar="N", help="runs per algorithm, seeds 0..N-1 (default 3)")
    p.add_argument("--states", type=positive_int, default=None,
                   help="number of hidden states K (default as induce tag: the number of gold tags, at most 50)")
    p.add_argument("--iterations", type=positive_int, default=None,
                   help="maximum passes per run (default as induce tag: 500, em 2000, stopping on convergence)")
    p.add_argument("--alpha", type=finite_positive_float, default=None, help="transition Dirichlet prior (default: learned)")
    p.add_argument("--beta", type=finite_positive_float, default=None, help="emission Dirichlet prior (default: learned)")
    p.add_argument("--gold-column", help="gold tag column (default: xpos/pos/upos if present)")
    p.add_argument("--eval-every", type=positive_int, default=1, metavar="N",
                   help="score against gold every N iterations in the traces (default 1)")
    p.add_argument("--format", default="auto", help="input format (default: detect)")
    p.add_argument("--encoding", type=encoding, default="utf-8", help="input text encoding (default utf-8)")
    p.add_argument("--lowercase", action="store_true", help="lowercase words before training")
    g = p.add_argument_group("emission families")
    g.add_argument("--emission", type=_emissions, default=["categorical"], metavar="E,F,...",
                   help="comma-separated emission families of induce tag: categorical (default), features, "
                        "embeddings; each runs with the algorithms of --infer it trains with")
    add_feature_options(g)
    add_vector_options(p)
    add_progress_options(p)
    p.add_argument("--json", nargs="?", const="-", type=output_path, metavar="FILE",
                   help="machine-readable results: to stdout, or to FILE (with every run's trace)")
    p.add_argument("--report", type=output_path, metavar="FILE.html",
                   help="also write a self-contained HTML report (needs matplotlib)")
    p.set_defaults(handler=run)


def format_table(summary: dict) -> str:
    """Rows = summarised fields, columns = algorithms, cells ``mean ± sd``."""
    algorithms = list(summary)
    fields = list(dict.fromkeys(k for stats in summary.values() for k in stats))
    cells = [[f"{summary[a][k]['mean']:.4f} \u00b1 {summary[a][k]['sd']:.4f}" if k in summary[a] else "-"
              for a in algorithms] for k in fields]
    width = max(len(k) for k in fields)
    cols = [max(len(a), *(len(row[j]) for row in cells)) for j, a in enumerate(algorithms)]
    lines = ["  ".join([" " * width] + [a.rjust(c) for a, c in zip(algorithms, cols)])]
    lines += ["  ".join([k.ljust(width)] + [v.rjust(c) for v, c in zip(row, cols)]) for k, row in zip(fields, cells)]
    return "\n".join(lines) + "\n"


def _family_params(args: argparse.Namespace) -> dict:
    """The :class:`~induce.taggers.HMMTagger` parameters of the feature and word-vector options, refused (one
    line) without their family in ``--emission``."""
    params = {}
    if "features" in args.emission:
        params.update(features=args.features, feature_l2=args.feature_l2,
                      **({"feature_fit": args.feature_fit} if args.feature_fit else {}))
    else:
        refuse_given(args, FEATURE_OPTIONS, "without features in --emission")
    if "embeddings" in args.emission:
        if not args.embeddings:
            raise ConfigError("--emission embeddings needs --embeddings FILE (word vectors; 'induce embed' makes "
                              "them)")
        params.update(embeddings=args.embeddings, embeddings_vocab=args.embeddings_vocab,
                      covariance=args.covariance, vector_norm=args.vector_norm, unknown_vectors=args.unknown_vectors)
    else:
        refuse_given(args, VECTOR_OPTIONS, "without embeddings in --emission")
    return params


def run(args: argparse.Namespace) -> int:
    from ..compare import compare
    from ..corpus.formats import load_corpus

    if args.seeds < 1:
        raise ConfigError(f"--seeds must be at least 1, got {args.seeds}")
    params = _family_params(args)
    corpus = load_corpus(args.input, args.format, encoding=args.encoding, lowercase=args.lowercase)
    if corpus.n_tokens == 0:
        raise ConfigError(f"{args.input}: no tokens to tag")
    gold_column = gold_tag_column(corpus.tag_vocabs, args.gold_column)
    warned: dict = {}
    with reported_warnings(warned):  # one ``induce: warning:`` line each, as the other commands print them
        result = compare(corpus, args.infer, args.seeds, gold_column=gold_column,
                         n_states=default_n_states(corpus, gold_column, args.states, "induce compare"),
                         n_iter=args.iterations, alpha=args.alpha, beta=args.beta, eval_every=args.eval_every,
                         verbose=show_progress(args), emission=args.emission, **params)
    result["input"] = str(args.input)
    result.update(warned)
    if args.report:
        from ..report import write_report

        write_report(args.report, result, f"induce compare: {', '.join(args.infer)} on {args.input}")
    if args.json and args.json != "-":
        with atomic_write(args.json) as out:
            dump_json(result, out, indent=1)
    if args.json == "-":
        emit(result | {"runs": [{k: v for k, v in r.items() if k != "trace"} for r in result["runs"]]}, True)
    else:
        sys.stdout.write(format_table(result["summary"]))
    return 0

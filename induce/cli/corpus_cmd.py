"""``induce corpus stats|demo``: corpus statistics and the built-in demo corpus.

``stats`` streams the sentences of a file, a directory or ``demo`` and reports
sentences, tokens, word types, the tag columns with their tag-set sizes,
whether heads / trees are present, and a histogram of sentence lengths.
With ``--target`` (two line-aligned files) or ``--parallel`` (one
``src ||| tgt`` file) it reports sentence pairs and the tokens of each side;
with ``--alignments naacl|pharaoh`` the pairs and sure / possible-only links of
a gold alignment file.  ``demo`` writes the generated demo corpus as CoNLL-U or
PTB brackets.
"""

from __future__ import annotations

import argparse

import numpy as np

from .common import add_base_option, add_json_flag, one_based, corpus_path, emit, encoding, existing_file, output_path, positive_int, seed

#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "corpus statistics, format conversion and the demo corpus"


#: Upper edges of the sentence-length buckets (the last bucket is open).
LENGTH_EDGES = (5, 10, 20, 40, 80)


def _length_histogram(lengths: list[int]) -> dict[str, int]:
    edges = np.asarray(LENGTH_EDGES)
    counts = np.bincount(np.searchsorted(edges, lengths, side="left"), minlength=len(edges) + 1)
    labels = [f"{lo + 1}-{hi}" for lo, hi in zip((0,) + LENGTH_EDGES[:-1], LENGTH_EDGES)] + [f">{LENGTH_EDGES[-1]}"]
    return dict(zip(labels, counts.tolist()))


def corpus_stats(path: str, fmt: str = "auto", encoding: str = "utf-8") -> dict:
    """The statistics ``induce corpus stats`` prints, as a dict."""
    from ..corpus.formats import detect_format, read_sentences

    types: set[str] = set()
    tagsets: dict[str, set[str]] = {}
    lengths: list[int] = []
    n_heads = n_trees = 0
    for sent in read_sentences(path, fmt, encoding=encoding):
        lengths.append(len(sent))
        types.update(sent.words)
        for column, tags in sent.tags.items():
            tagsets.setdefault(column, set()).update(tags)
        n_heads += sent.heads is not None
        n_trees += sent.tree is not None
    resolved = fmt if fmt != "auto" else ("demo" if path == "demo" else detect_format(path, encoding))
    return {
        "path": path,
        "format": resolved,
        "sentences": len(lengths),
        "tokens": int(sum(lengths)),
        "types": len(types),
        "mean_length": float(np.mean(lengths)) if lengths else 0.0,
        "max_length": max(lengths, default=0),
        "tag_columns": {column: len(tags) for column, tags in sorted(tagsets.items())},
        "sentences_with_heads": n_heads,
        "sentences_with_trees": n_trees,
        "length_histogram": _length_histogram(lengths),
    }


def parallel_stats(src: str, tgt: str | None = None) -> dict:
    """Sentence pairs and tokens per side of parallel text."""
    from ..corpus.parallel import read_parallel

    pairs = src_tokens = tgt_tokens = 0
    for source, target in read_parallel(src, tgt):
        pairs += 1
        src_tokens += len(source)
        tgt_tokens += len(target)
    return {"path": src, "target": tgt, "pairs": pairs, "source_tokens": src_tokens, "target_tokens": tgt_tokens}


def alignment_stats(path: str, fmt: str, one_based: bool | None) -> dict:
    """Sentence pairs and sure / possible-only links of a gold alignment file."""
    from ..corpus.parallel import read_alignments

    alignments = read_alignments(path, fmt, one_based=one_based)
    sure = sum(len(a.sure) for a in alignments)
    return {
        "path": path,
        "format": fmt,
        "pairs": len(alignments),
        "sure_links": sure,
        "possible_only_links": sum(len(a.possible) for a in alignments) - sure,
    }


def _stats(args: argparse.Namespace) -> int:
    if args.alignments:
        result = alignment_stats(args.file, args.alignments, one_based(args.base))
    elif args.parallel or args.target:
        result = parallel_stats(args.file, args.target)
    else:
        result = corpus_stats(args.file, args.format, args.encoding)
    emit(result, args.json)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from ..corpus.demo import demo_sentences
    from ..corpus.writers import write_sentences

    sentences = demo_sentences(n_sentences=args.sentences, seed=args.seed)
    write_sentences(args.output, sentences, args.format)
    emit({"output": args.output, "format": args.format, "sentences": len(sentences),
          "tokens": sum(len(s) for s in sentences)}, args.json)
    return 0


def _convert(args: argparse.Namespace) -> int:
    from ..corpus.formats import read_sentences
    from ..corpus.writers import write_sentences

    sentences = list(read_sentences(args.input, args.format, encoding=args.encoding))
    write_sentences(args.output, sentences, args.to)
    emit({"input": args.input, "output": args.output, "format": args.to, "sentences": len(sentences),
          "tokens": sum(len(s) for s in sentences)}, args.json)
    return 0


def register(subparsers) -> None:
    from ..names import ALIGNMENT_FORMATS, CORPUS_FORMATS as FORMATS

    parser = subparsers.add_parser("corpus", help=HELP)
    sub = parser.add_subparsers(dest="corpus_command", metavar="SUBCOMMAND")
    sub.required = True

    stats = sub.add_parser("stats", help="sentences, tokens, types, tag sets and a length histogram")
    stats.add_argument("file", type=corpus_path, help="corpus file, directory of corpus files, or 'demo'")
    stats.add_argument("--format", default="auto", choices=("auto",) + FORMATS)
    stats.add_argument("--encoding", type=encoding, default="utf-8", help="text encoding (default utf-8; latin-1 for CoNLL-2007 Basque)")
    stats.add_argument("--parallel", action="store_true", help="FILE is parallel text, 'source ||| target' per line")
    stats.add_argument("--target", type=existing_file, help="FILE is the source side of parallel text and this the target side")
    stats.add_argument("--alignments", choices=ALIGNMENT_FORMATS, help="FILE is a gold word-alignment file")
    add_base_option(stats, "--base", "the alignment file's positions", old="boolean")
    add_json_flag(stats)
    stats.set_defaults(handler=_stats)

    demo = sub.add_parser("demo", help="write the built-in demo corpus")
    demo.add_argument("-o", "--output", required=True, type=output_path, help="output file")
    demo.add_argument("--sentences", type=positive_int, default=2000, help="number of sentences (default 2000)")
    demo.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    demo.add_argument("--format", default="conllu", choices=("conllu", "ptb"))
    add_json_flag(demo)
    demo.set_defaults(handler=_demo)

    convert = sub.add_parser("convert", help="write a corpus in another format (every column the target has kept)")
    convert.add_argument("input", type=corpus_path, help="corpus file, directory of corpus files, 'demo' or '-'")
    convert.add_argument("-o", "--output", required=True, type=output_path, help="output file ('-': stdout)")
    convert.add_argument("--to", required=True, choices=FORMATS, help="output format")
    convert.add_argument("--format", default="auto", choices=("auto",) + FORMATS, help="input format")
    convert.add_argument("--encoding", type=encoding, default="utf-8", help="input text encoding; the output is UTF-8")
    add_json_flag(convert)
    convert.set_defaults(handler=_convert)

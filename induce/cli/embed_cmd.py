"""``induce embed CORPUS [CORPUS ...] -o vectors.vec``: train word vectors for ``induce tag --emission embeddings``.

Skip-gram vectors (gensim, :func:`induce.embeddings.train_vectors`) of the words of one or more corpora, in any
format ``induce tag`` reads, written atomically in the word2vec text format (``.gz``: compressed) or as a ``.npy``
matrix with its ``.vocab`` file.  The defaults (dimension 20, a window of 1 word, 10 epochs, every word kept) aim at
syntactic similarity and are measured in docs/experiments/embeddings.md; one worker thread and ``--seed`` make the
vectors the same on every run.
"""

from __future__ import annotations

import argparse
import time

from .common import corpus_path, emit, encoding, output_path, positive_int, seed

#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "train word vectors from corpora (for induce tag --emission embeddings; needs gensim)"


def register(sub: argparse._SubParsersAction) -> None:
    from ..names import EMBED_DEFAULTS as D

    p = sub.add_parser("embed", help=HELP, description=__doc__.split("\n\n", 1)[1])
    p.add_argument("input", nargs="+", type=corpus_path, help="corpus files or directories (any supported format)")
    p.add_argument("-o", "--output", type=output_path, required=True,
                   help="vectors file: .vec / .txt (word2vec text), .gz (compressed) or .npy (plus NAME.vocab)")
    p.add_argument("--format", default="auto", help="input format (default: detect)")
    p.add_argument("--encoding", type=encoding, default="utf-8", help="input text encoding (default utf-8)")
    p.add_argument("--lowercase", action="store_true", help="lowercase words (then tag with --lowercase too)")
    p.add_argument("--dim", type=positive_int, default=D["dim"], help=f"vector dimension (default {D['dim']})")
    p.add_argument("--window", type=positive_int, default=D["window"],
                   help=f"context words on each side (default {D['window']}: small windows give syntactic vectors)")
    p.add_argument("--min-count", type=positive_int, default=D["min_count"],
                   help=f"keep words seen at least this often (default {D['min_count']}); the others get "
                        "induce tag's --unknown-vectors back-off")
    p.add_argument("--epochs", type=positive_int, default=D["epochs"], help=f"passes over the text (default {D['epochs']})")
    p.add_argument("--seed", type=seed, default=D["seed"], help=f"random seed (default {D['seed']})")
    p.add_argument("--json", nargs="?", const="-", type=output_path, metavar="FILE",
                   help="print the summary as JSON, or write it to FILE")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Read every input, train, write the vectors, print the summary."""
    from ..corpus.formats import load_corpus
    from ..corpus.vectors import write_vectors
    from ..embeddings import train_vectors

    sentences, tokens = [], 0
    for path in args.input:
        corpus = load_corpus(path, args.format, encoding=args.encoding, lowercase=args.lowercase)
        itos, offsets = corpus.vocab.itos, corpus.offsets
        sentences += [[itos[t] for t in corpus.tokens[lo:hi]] for lo, hi in zip(offsets[:-1], offsets[1:])]
        tokens += corpus.n_tokens
    start = time.process_time()
    found = train_vectors(sentences, dim=args.dim, window=args.window, min_count=args.min_count,
                          epochs=args.epochs, seed=args.seed)
    seconds = time.process_time() - start
    write_vectors(args.output, found.words, found.vectors)
    emit({"input": [str(p) for p in args.input], "output": args.output, "sentences": len(sentences),
          "tokens": tokens, "words": len(found.words), "dim": found.dim, "window": args.window,
          "min_count": args.min_count, "epochs": args.epochs, "seed": args.seed,
          "cpu_seconds": round(seconds, 3)}, args.json)
    return 0

"""The word-vector options of ``induce tag`` (``--emission embeddings``): registration, the cross-option rules
and the :class:`induce.taggers.HMMTagger` parameters they give."""

from __future__ import annotations

import argparse

from ..errors import ConfigError
from .common import existing_file, refuse_given

#: the options of this group (argparse dests), which only ``--emission embeddings`` reads
VECTOR_OPTIONS = ("embeddings", "embeddings_vocab", "covariance", "vector_norm", "unknown_vectors")
#: options of the categorical HMM that word-vector emissions do not read
CATEGORICAL_ONLY = ("beta", "learn_hyper", "map", "block_size", "cgs_keep", "tag_dict", "stream", "heldout",
                    "checkpoint", "resume", "subseq_length", "buffer", "eval_every")


def add_vector_options(p: argparse.ArgumentParser) -> None:
    """``--embeddings FILE`` and the options of the Gaussian emissions over word vectors."""
    from ..names import UNKNOWN_VECTOR_POLICIES, VECTOR_NORMS

    g = p.add_argument_group("word-vector emissions (--emission embeddings)")
    g.add_argument("--embeddings", type=existing_file, metavar="FILE",
                   help="word vectors: word2vec / fastText text (.vec, .txt, header 'N D'; also .gz) or a .npy "
                        "matrix with a vocabulary file (see --embeddings-vocab); 'induce embed' makes them")
    g.add_argument("--embeddings-vocab", type=existing_file, metavar="FILE",
                   help="the words of a .npy --embeddings, one per line (default: the .npy name with .vocab)")
    g.add_argument("--covariance", choices=("diag", "full"), default="diag",
                   help="Gaussian emissions with diagonal or full covariance (default diag)")
    g.add_argument("--vector-norm", choices=VECTOR_NORMS, default="unit",
                   help="normalise the vectors first: unit length (default; the best M-1 on ptb-sample, "
                        "docs/experiments/embeddings.md), every dimension to mean 0 and variance 1, or none")
    g.add_argument("--unknown-vectors", choices=UNKNOWN_VECTOR_POLICIES, default="suffix",
                   help="the vector of a word the file lacks: the mean vector of the words sharing its longest "
                        "suffix of 3, 2 or 1 characters, or the mean vector of all (default suffix)")


def check_vector_options(args: argparse.Namespace) -> None:
    """Vector options only with ``--emission embeddings``, which needs ``--embeddings`` and takes neither the
    categorical HMM's options nor the HDP-HMM."""
    from ..taggers.hmm_vectors import VECTOR_ALGORITHMS

    if args.emission != "embeddings":
        refuse_given(args, VECTOR_OPTIONS, "without --emission embeddings")
        return
    if args.model != "hmm":
        raise ConfigError("--emission embeddings runs with --model hmm")
    if not args.embeddings:
        raise ConfigError("--emission embeddings needs --embeddings FILE (word vectors; 'induce embed' makes them)")
    if args.infer not in VECTOR_ALGORITHMS:
        raise ConfigError(f"--infer {args.infer} does not run with --emission embeddings; choose one of "
                          f"{', '.join(VECTOR_ALGORITHMS)}")
    refuse_given(args, CATEGORICAL_ONLY, "to --emission embeddings (the categorical HMM's)")


def vector_params(args: argparse.Namespace) -> dict:
    """The :class:`~induce.taggers.HMMTagger` parameters of the emission options."""
    if args.emission != "embeddings":
        return {}
    return {"emission": "embeddings", "embeddings": args.embeddings, "embeddings_vocab": args.embeddings_vocab,
            "covariance": args.covariance, "vector_norm": args.vector_norm, "unknown_vectors": args.unknown_vectors}

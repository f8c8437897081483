"""The cross-option rules of ``induce tag`` and the defaults that depend on other options (``--emission``,
``--infer``), checked before any work."""

from __future__ import annotations

import argparse
import os

from ..errors import ConfigError
from .common import refuse_given
from .tag_hsmm import refuse_own as refuse_hsmm_options
from .tag_options import CATEGORICAL_OPTIONS, FEATURE_OPTIONS, HDP_OPTIONS, HMM_ONLY_OPTIONS
from .vector_options import check_vector_options


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


def check_options(args: argparse.Namespace) -> bool:
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

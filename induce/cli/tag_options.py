"""The options of ``induce tag``: their declarations (one function per group), the parsers of their values, and
the tables of which model, family or mode reads which (:mod:`induce.cli.tag_checks` applies them)."""

from __future__ import annotations

import argparse

from .common import (add_learn_hyper_option, add_progress_options, existing_file, finite_nonneg_float,
                     finite_positive_float, forgetting_rate, fraction, nonneg_int, output_path, positive_int, seed)


def emission_concentration(text: str) -> float | str:
    """``--emission-concentration``: ``symmetric`` or a finite positive number."""
    return text if text == "symmetric" else finite_positive_float(text)


def new_word_mass(text: str) -> float | str:
    """``--new-word-mass``: ``learned`` or a finite positive number."""
    return text if text == "learned" else finite_positive_float(text)


def tag_dict_source(text: str) -> str:
    """``--tag-dict``: ``from-gold`` or a readable file."""
    return text if text == "from-gold" else existing_file(text)


def add_model_options(p: argparse.ArgumentParser) -> None:
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


def add_emission_options(p: argparse.ArgumentParser) -> None:
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
                        "not merely sentence-initial), all-caps, has-digit, has-hyphen, has-punct, length, plural "
                        "(an -s form of a word seen 3 times or more), 'suffix N', 'prefix N'; # comments); default: "
                        "'identity 3' (rarer words are told apart by their other features), proper-capital and the "
                        "other shape flags, suffixes 1-3, length and plural")
    g.add_argument("--feature-l2", type=finite_nonneg_float, default=None, metavar="KAPPA",
                   help="--emission features: L2 strength kappa of the weights (default 1; 3 was worse on EWT "
                        "and 7 of 9 UD treebanks)")
    g.add_argument("--feature-fit", choices=FEATURE_FITS, default=None,
                   help="--emission features: direct (default; L-BFGS on the marginal likelihood, the paper's "
                        "Algorithm 2) or em (EM with an L-BFGS M-step, Algorithm 1)")


def add_hdp_options(p: argparse.ArgumentParser) -> None:
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
    hdp.add_argument("--emission-concentration", type=emission_concentration, default=None, metavar="B|symmetric",
                     help="Dir(beta tau): the starting beta (default 10; 'symmetric': W x --beta, the symmetric "
                          "model's total); where the learned beta ends depends on it")
    hdp.add_argument("--new-word-mass", type=new_word_mass, default=1.0, metavar="learned|M",
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


def add_output_options(p: argparse.ArgumentParser) -> None:
    """Tag dictionary, evaluation, output, the model file and the reports."""
    p.add_argument("--tag-dict", type=tag_dict_source, metavar="from-gold|FILE",
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


def add_stochastic_options(p: argparse.ArgumentParser) -> None:
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


#: the options only ``--emission features`` reads
FEATURE_OPTIONS = ("features", "feature_l2", "feature_fit")


#: options of the Bayesian categorical HMM (its Dirichlet priors, its algorithms' settings, the cluster) that the
#: feature family does not take: given without ``--emission``, they keep the categorical default
CATEGORICAL_OPTIONS = ("alpha", "beta", "learn_hyper", "block_size", "cgs_keep", "tag_dict", "stream", "workers",
                       "cluster")

"""The names (and a few defaults) of the estimators' algorithms and options, in a module that imports nothing.

The estimators validate against these tuples and the ``induce`` subcommands offer them as choices (and show
the defaults); keeping them here lets ``induce <command> --help`` list them without importing numba, SciPy,
scikit-learn or NLTK (the CLI imports the estimators only when a command runs; docs/experiments/ecosystem.md).
"""

#: stochastic algorithms over many sequences, and over one long sequence cut into subsequences (thesis 3.6-3.7)
STOCHASTIC = ("svi", "scvi")
SINGLE_SEQUENCE = ("scvi3", "scvi3-vanilla", "svi-buffered", "svi-vanilla")
#: every ``HMMTagger(infer=...)``
HMM_ALGORITHMS = ("em", "vi", "cvi1", "cvi2", "cgs", "cvi3") + STOCHASTIC + SINGLE_SEQUENCE
HMM_DECODERS = ("posterior", "viterbi")
#: ``HDPHMMTagger(infer=...)``, the hyperparameters ``fix_hyper`` accepts, ``table_estimate`` and ``qc`` values
HDP_ALGORITHMS = ("cvi", "scvi", "svi", "beam")
HDP_HYPERPARAMETERS = ("gamma", "sigma", "emission")
TABLE_ESTIMATES = ("first-order", "sampled")
QC_METHODS = ("heuristic", "exact", "meanfield", "sampling")

#: corpus formats (:mod:`induce.corpus.formats`) and gold word-alignment file formats (:mod:`induce.corpus.parallel`)
CORPUS_FORMATS = ("conllu", "conllx", "conll2000", "brown", "malt", "ptb", "plain")
ALIGNMENT_FORMATS = ("naacl", "pharaoh")
#: the punctuation tag sets :data:`induce.corpus.transforms.PUNCT_TAGSETS` names, in its order
PUNCT_TAGSET_NAMES = ("upos", "universal", "conll2007", "ptb")

#: :class:`induce.align.WordAligner`: models, inference, HMM CVI forms, decoders, prior supports, directions
ALIGN_MODELS = ("ibm1", "hmm", "fertility")
ALIGN_INFERENCE = ("em", "vi", "cvi", "gibbs")
ALIGN_HMM_CVI = ("cvi1", "cvi2")
ALIGN_DIRECTIONAL = ("forward", "reverse")
ALIGN_DECODERS = ("viterbi", "posterior")
ALIGN_SUPPORTS = ("cooccur", "vocabulary")
#: the aligner's defaults: translation prior (Dirichlet alpha), iteration caps (HMM, IBM 1) and tolerance
ALIGN_DEFAULT_ALPHA = 1e-4
ALIGN_MAX_ITER = 50
ALIGN_MAX_ITER_IBM1 = 50
ALIGN_TOL = 1e-2
#: symmetrization heuristics (:mod:`induce.align.symmetrize`)
SYMMETRIZATIONS = ("intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and")

#: :class:`induce.series.HMMSegmenter` (``infer=...``): finite-HMM algorithms, then the HDP-HMM ones
SERIES_ALGORITHMS = ("em", "vi", "cvi2", "svi", "scvi")
SERIES_HDP_ALGORITHMS = ("hdp-cvi", "hdp-scvi", "hdp-svi")
#: the token-level collapsed algorithms of the series HMM (:mod:`induce.algorithms.series_collapsed`)
SERIES_COLLAPSED = ("cvi1", "cgs")
#: ``induce segment --model``
SERIES_MODELS = ("hmm", "hdp-hmm", "hsmm", "hdp-hsmm")
#: the registered emission and duration families (``induce.emissions``, ``induce.durations``; a test checks
#: these equal the registries, so a new family adds its name here)
EMISSION_FAMILIES = ("categorical", "diag-gaussian", "gaussian", "poisson")
DURATION_FAMILIES = ("geometric", "negbin", "poisson")

#: ``induce parse``: :class:`induce.parsers.PCFGInducer` algorithms (the DMV and the PCFG-LA take all but mh),
#: ``DMVParser(init=...)`` and ``LatentPCFGParser(decode=...)``
PCFG_ALGORITHMS = ("em", "vi", "cvi", "mh")
DMV_INITS = ("harmonic", "random")
LATENT_PCFG_DECODERS = ("max-rule-sum", "viterbi")

#: the emission families of the text HMM (``HMMTagger(emission=...)``, ``induce tag --emission``) and the two
#: training algorithms of the log-linear family (:mod:`induce.algorithms.features`: the paper's Algorithms 1 and 2)
TEXT_EMISSIONS = ("categorical", "features", "embeddings")
FEATURE_FITS = ("em", "direct")

#: word-vector emissions (:mod:`induce.embeddings`): normalisations, unknown-word policies, ``induce embed``'s
#: defaults (docs/experiments/embeddings.md)
VECTOR_NORMS = ("unit", "standardize", "none")
UNKNOWN_VECTOR_POLICIES = ("suffix", "mean")
EMBED_DEFAULTS = {"dim": 20, "window": 1, "min_count": 1, "epochs": 10, "seed": 0}

#: the HDP-HSMM's default pass cap: its learned transition concentration creeps to a fixed point on short series
#: (Nile: 146 passes, faithful 120; docs/experiments/hsmm.md, "The pass cap")
HDP_HSMM_N_ITER = 200

"""The names of the HMM taggers' algorithms and options, in a module that imports nothing.

The estimators validate against these tuples and the ``induce tag`` parser offers them as choices; keeping
them here lets ``induce tag --help`` list them without importing numba, SciPy or scikit-learn (the CLI
imports the estimators only when a command runs).
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

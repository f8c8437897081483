"""Evaluation metrics: tagging (M-1, cross-validated M-1, 1-1, VI, V-measure),
dependency attachment, evalb brackets, alignment AER, and perplexity; the chain and
branching baselines scored under the same conventions."""

from .alignment import alignment_scores
from .baselines import bracket_baselines, chain_heads, dependency_baselines
from .brackets import bracket_scores, sentence_bracket_scores
from .dependencies import attachment_scores, punctuation_mask
from .lm import perplexity
from .tagging import (
    accuracy,
    cross_validated_many_to_one,
    many_to_one,
    one_to_one,
    one_to_one_greedy,
    tagging_report,
    tagging_scorer,
    v_measure,
    variation_of_information,
)

__all__ = [
    "accuracy",
    "alignment_scores",
    "attachment_scores",
    "bracket_baselines",
    "bracket_scores",
    "chain_heads",
    "cross_validated_many_to_one",
    "dependency_baselines",
    "many_to_one",
    "one_to_one",
    "one_to_one_greedy",
    "perplexity",
    "punctuation_mask",
    "sentence_bracket_scores",
    "tagging_scorer",
    "tagging_report",
    "v_measure",
    "variation_of_information",
]

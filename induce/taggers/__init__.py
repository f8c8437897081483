"""Taggers: HMM part-of-speech induction and tag dictionaries."""

from .hmm import HMMTagger
from .tag_dict import TagDictionary

__all__ = ["HMMTagger", "TagDictionary"]

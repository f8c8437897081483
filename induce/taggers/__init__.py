"""Taggers: HMM and HDP-HMM part-of-speech induction and tag dictionaries."""

from .hdp_hmm import HDPHMMTagger
from .hmm import HMMTagger
from .tag_dict import TagDictionary

__all__ = ["HDPHMMTagger", "HMMTagger", "TagDictionary"]

"""Taggers: HMM, HDP-HMM and HSMM part-of-speech induction and tag dictionaries."""

from .hdp_hmm import HDPHMMTagger
from .hmm import HMMTagger
from .hsmm_tagger import HSMMTagger
from .tag_dict import TagDictionary

__all__ = ["HDPHMMTagger", "HMMTagger", "HSMMTagger", "TagDictionary"]

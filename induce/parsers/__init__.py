"""Grammar induction: PCFGs (inside-outside) and the Dependency Model with Valence.

* :class:`PCFGInducer` -- CNF PCFGs from a rule file or generated fully
  connected, trained with ``em`` / ``vi`` / ``cvi`` / ``mh`` (thesis ch. 4);
* :class:`DMVParser` -- Klein & Manning's DMV with ``em`` / ``vi`` / ``cvi``;
* :class:`LatentPCFGParser` -- treebank PCFG with latent annotations (PCFG-LA),
  ``em`` / ``vi`` / ``cvi`` (thesis section 4.5.3).
"""

from .dmv import DMVParser
from .grammar import Grammar, full_grammar, read_grammar, write_grammar
from .latent_pcfg import LatentPCFGParser
from .pcfg import PCFGInducer

__all__ = ["DMVParser", "Grammar", "LatentPCFGParser", "PCFGInducer", "full_grammar", "read_grammar", "write_grammar"]

"""Grammar induction: PCFGs (inside-outside) and the Dependency Model with Valence.

* :class:`PCFGInducer` -- CNF PCFGs from a rule file or generated fully
  connected, trained with ``em`` / ``vi`` / ``cvi`` / ``mh`` (thesis ch. 4);
* :class:`DMVParser` -- Klein & Manning's DMV with ``em`` / ``vi`` / ``cvi``;
* :class:`LatentPCFGParser` -- treebank PCFG with latent annotations (PCFG-LA),
  ``em`` / ``vi`` / ``cvi`` (thesis section 4.5.3);
* :class:`CCMParser` -- Klein & Manning's constituent-context model, ``em`` / ``vi`` / ``cvi``;
* :class:`DMVCCMParser` -- the DMV x CCM product model (Klein & Manning 2004), EM.
"""

from .ccm import CCMParser
from .dmv import DMVParser
from .dmv_ccm import DMVCCMParser
from .grammar import Grammar, full_grammar, read_grammar, write_grammar
from .latent_pcfg import LatentPCFGParser
from .pcfg import PCFGInducer

__all__ = ["CCMParser", "DMVCCMParser", "DMVParser", "Grammar", "LatentPCFGParser", "PCFGInducer", "full_grammar", "read_grammar", "write_grammar"]

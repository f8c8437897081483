"""Grammar induction: PCFGs (inside-outside) and the Dependency Model with Valence.

* :class:`PCFGInducer` -- CNF PCFGs from a rule file or generated fully
  connected, trained with ``em`` / ``vi`` / ``cvi`` / ``mh`` (thesis ch. 4);
* :class:`DMVParser` -- Klein & Manning's DMV with ``em`` / ``vi`` / ``cvi``.
"""

from .dmv import DMVParser
from .grammar import Grammar, full_grammar, read_grammar, write_grammar
from .pcfg import PCFGInducer

__all__ = ["DMVParser", "Grammar", "PCFGInducer", "full_grammar", "read_grammar", "write_grammar"]

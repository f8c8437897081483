"""Corpus layer: readers, writers and transforms, and the integer-encoded :class:`Corpus`.

Readers stream :class:`Sentence` records (``read_sentences``); ``load_corpus``
transforms and encodes them into flat arrays.
"""

from .corpus import Corpus
from .formats import FORMATS, detect_format, load_corpus, read_sentences
from .parallel import Alignment, read_alignments, read_parallel, write_pharaoh
from .sentence import Sentence
from .vocab import Vocabulary

__all__ = [
    "FORMATS",
    "Alignment",
    "Corpus",
    "Sentence",
    "Vocabulary",
    "detect_format",
    "load_corpus",
    "read_alignments",
    "read_parallel",
    "read_sentences",
    "write_pharaoh",
]

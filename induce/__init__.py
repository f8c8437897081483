"""induce: unsupervised NLP with collapsed variational inference.

The main entry points are importable from the top level (loaded lazily):
:class:`HMMTagger`, :class:`HDPHMMTagger`, :class:`TagDictionary`, :class:`WordAligner`,
:class:`PCFGInducer`, :class:`DMVParser`, :class:`LatentPCFGParser`, :class:`Corpus` and
:func:`load_corpus`.
"""

__version__ = "0.1.0"  # the one source of the version: pyproject.toml reads it ([tool.setuptools.dynamic])

_EXPORTS = {
    "HMMTagger": "induce.taggers",
    "HDPHMMTagger": "induce.taggers",
    "TagDictionary": "induce.taggers",
    "WordAligner": "induce.align",
    "PCFGInducer": "induce.parsers",
    "DMVParser": "induce.parsers",
    "LatentPCFGParser": "induce.parsers",
    "Corpus": "induce.corpus",
    "load_corpus": "induce.corpus",
    "read_sentences": "induce.corpus",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        from importlib import import_module

        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'induce' has no attribute {name!r}")

"""Corpus formats: detection, streaming reading and loading into a :class:`Corpus`.

==============  ==========================================  =====================================
format          layout                                      tag columns / structure
==============  ==========================================  =====================================
``conllu``      CoNLL-U, 10 TAB columns (``conllu`` lib)    ``upos``, ``xpos``; heads, deprels
``conllx``      CoNLL-X / CoNLL-2007, 10 TAB columns        ``cpos``, ``pos``; heads, deprels
``conll2000``   ``word POS chunk``                          ``pos``, ``chunk``
``brown``       ``word/tag`` tokens, a sentence per line    ``pos`` (upper-cased as NLTK)
``malt``        ``word<TAB>tag<TAB>head`` (``.dp`` files)   ``pos``; heads
``ptb``         bracketed trees (``.mrg``)                  ``pos``; tree
``plain``       tokenized text, a sentence per line         --
==============  ==========================================  =====================================

A path may be a file, a directory (its data files in sorted order; README,
LICENSE, ``cats.txt``, ``CONTENTS`` and the like are skipped) or the string
``"demo"`` for the built-in demo corpus.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..errors import ConfigError, CorpusFormatError
from . import registry
from .corpus import Corpus
from .read_brown import read_brown, split_tagged
from .read_columns import COLUMN_FORMATS, read_columns
from .read_conllu import read_conllu
from .read_lines import COMPRESSED_SUFFIXES, STDIN, iter_lines, read_plain
from .read_ptb import read_ptb
from .sentence import Sentence
from .transforms import (
    UNK,
    UNK_MODES,
    count_words,
    frequent_words,
    load_universal_map,
    pipeline,
    replace_unknown,
)
from .vocab import Vocabulary

from ..names import CORPUS_FORMATS as FORMATS
DEMO = "demo"

READERS: dict[str, Callable[[str | os.PathLike, str], Iterator[Sentence]]] = {
    "conllu": read_conllu,
    "conllx": lambda p, enc: read_columns(p, COLUMN_FORMATS["conllx"], enc),
    "conll2000": lambda p, enc: read_columns(p, COLUMN_FORMATS["conll2000"], enc),
    "malt": lambda p, enc: read_columns(p, COLUMN_FORMATS["malt"], enc),
    "brown": read_brown,
    "ptb": read_ptb,
    "plain": read_plain,
}

_EXTENSIONS = {
    ".conllu": "conllu",
    ".conll": "conllx",
    ".conllx": "conllx",
    ".mrg": "ptb",
    ".dp": "malt",
}
#: File names of a format's data files inside a directory, where the format has a convention.
_DATA_NAMES = {
    "ptb": re.compile(r".*\.mrg$"),
    "malt": re.compile(r".*\.dp$"),
    "conllu": re.compile(r".*\.conllu$"),
    "brown": re.compile(r"^c[a-r]\d\d$"),
}
_NOT_DATA = re.compile(r"^(\..*|README.*|LICENSE.*|CONTENTS|cats\.txt|.*\.(md|xml|tsv|map|json|py))$", re.IGNORECASE)
_UPOS = frozenset(
    "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()
)
_CHUNK = re.compile(r"^(O|[BIES]-\S+)$")
_SNIFF_LINES = 200


# ----------------------------------------------------------------- detection
def _sniff(path: str | os.PathLike, encoding: str) -> str | None:
    """Format of a file judged from its first non-blank lines, ``None`` if undecidable."""
    lines = []
    for _, text in iter_lines(path, encoding):
        if text.strip():
            lines.append(text)
            if len(lines) >= _SNIFF_LINES:
                break
    if lines[0].lstrip().startswith("("):
        return "ptb"
    comments = [t for t in lines if t.startswith("#")]
    body = [t for t in lines if not t.startswith("#")]
    tab_widths = {len(t.split("\t")) for t in body}
    if tab_widths == {10} or (tab_widths == {10, 11} and not comments):
        rows = [t.split("\t") for t in body]
        ud_like = comments or any(not r[0].isdigit() for r in rows)
        return "conllu" if ud_like or all(r[3] in _UPOS for r in rows) else "conllx"
    if tab_widths <= {3, 4} and all(t.split("\t")[2].lstrip("-").isdigit() for t in body):
        return "malt"
    # a truncated last line (a cut-off download) must not turn CoNLL-2000 into three-word plain sentences:
    # judge by the lines before it; reading then reports the bad line
    chunked = [len(t.split()) in (3, 4) and bool(_CHUNK.match(t.split()[2])) for t in body]
    if chunked and all(chunked[:-1]) and (chunked[-1] or len(chunked) >= 2):
        return "conll2000"
    if all(split_tagged(tok) is not None for t in body for tok in t.split()):
        return "brown"
    if tab_widths == {1}:
        return "plain"
    return None


#: numeric tables (``induce segment``'s input), which auto-detection does not read as text: a CSV's lines would
#: each be a "sentence" of one token
TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".npy", ".npz")


def format_of_name(path: str | os.PathLike) -> str | None:
    """The format a file name announces by its extension (``.conllu``, ``.conll``/``.conllx``, ``.mrg``,
    ``.dp``), or None."""
    return _EXTENSIONS.get(Path(str(path)).suffix)


def detect_format(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """The format of a file or directory: by extension (or Brown file name), then by content.

    The built-in ``"demo"`` corpus is CoNLL-U.  Raises ``CorpusFormatError`` when
    the content fits no format (pass ``format=``).
    """
    if str(path) == DEMO:
        return "conllu"
    if str(path) == STDIN:
        return _detected(STDIN, encoding)
    path = Path(registry.resolve(path))
    if path.is_dir():
        files = _data_files(path)
        for fmt, pattern in _DATA_NAMES.items():
            if any(pattern.match(f.name) for f in files):
                return fmt
        if not files:
            raise CorpusFormatError(str(path), None, None, "a directory with corpus files")
        return detect_format(files[0], encoding)
    named = path.with_suffix("") if path.suffix in COMPRESSED_SUFFIXES else path  # x.conllu.gz: as x.conllu
    if named.suffix in _EXTENSIONS:
        return _EXTENSIONS[named.suffix]
    if named.suffix.lower() in TABLE_SUFFIXES:
        raise CorpusFormatError(str(path), None, None, f"a text corpus, not a {named.suffix} table of values (induce "
                                "segment reads those; --format plain reads it as text anyway)")
    if _DATA_NAMES["brown"].match(named.name):
        return "brown"
    return _detected(path, encoding)


def _detected(path: str | os.PathLike, encoding: str) -> str:
    fmt = _sniff(path, encoding)
    if fmt is None:
        raise CorpusFormatError(
            str(path), 1, None, f"a recognisable corpus format ({', '.join(FORMATS)}); pass the format explicitly"
        )
    return fmt


def _data_files(directory: Path, fmt: str | None = None) -> list[Path]:
    files = sorted(p for p in directory.iterdir() if p.is_file() and not _NOT_DATA.match(p.name))
    pattern = _DATA_NAMES.get(fmt or "")
    if pattern is not None and any(pattern.match(p.name) for p in files):
        files = [p for p in files if pattern.match(p.name)]
    return files


# ------------------------------------------------------------------- reading
def read_sentences(
    path: str | os.PathLike, format: str = "auto", *, encoding: str = "utf-8", **options
) -> Iterator[Sentence]:
    """Stream the sentences of a file, a directory of files, or ``"demo"``.

    Files are decoded strictly in ``encoding`` (UTF-8 by default; the CoNLL-2007
    Basque files need ``"latin-1"``).  ``options`` are passed to the demo
    generator (``n_sentences``, ``seed``); file formats take none.
    ``Sentence.source`` is ``(file, first line)``.
    """
    if str(path) == DEMO and not Path(path).exists():
        from .demo import demo_sentences

        yield from demo_sentences(**options)
        return
    path = registry.resolve(path)
    if options:
        raise ConfigError(f"unknown reader options for {path}: {', '.join(sorted(options))}")
    if format != "auto" and format not in FORMATS:
        raise ConfigError(f"unknown corpus format {format!r}; one of auto, {', '.join(FORMATS)}")
    if str(path) == STDIN:
        yield from READERS[detect_format(path, encoding) if format == "auto" else format](STDIN, encoding)
        return
    path = Path(path)
    if not path.exists():
        raise CorpusFormatError(str(path), None, None, "an existing corpus file or directory (or 'demo')")
    fmt = detect_format(path, encoding) if format == "auto" else format
    files = _data_files(path, fmt) if path.is_dir() else [path]
    for file in files:
        yield from READERS[fmt](file, encoding)


def _encode_with(vocab: Vocabulary, sentences: Iterable[Sentence], unk_mode: str, keep: bool, name: str) -> Corpus:
    """Encode with a frozen vocabulary: unseen words become their unknown class, else ``vocab.unk``."""
    known = vocab.stoi
    try:
        return Corpus.from_sentences(
            (replace_unknown(s, known, unk_mode) for s in sentences),
            vocab=vocab,
            grow_vocab=False,
            keep_sentences=keep,
            name=name,
        )
    except KeyError as exc:
        raise ConfigError(f"word {exc.args[0]!r} is not in the given vocabulary, which has no unknown item") from None


def load_corpus(
    path: str | os.PathLike,
    format: str = "auto",
    *,
    lowercase: bool = False,
    normalize_digits: bool = False,
    unk_threshold: int = 0,
    unk_mode: str = "unk",
    max_length: int | None = None,
    wsj10: bool = False,
    strip_punct: bool = False,
    universal_map: str | os.PathLike | None = None,
    vocab: Vocabulary | None = None,
    keep_sentences: bool = True,
    skipped: dict[str, int] | None = None,
    **options,
) -> Corpus:
    """Read ``path``, transform the sentences and encode them (``Corpus.from_sentences``).

    Order: ``universal_map`` (adds the ``"universal"`` column from ``xpos``/``pos``;
    a .map path or a shorthand such as ``"en-ptb"``), ``strip_punct`` (remove the
    punctuation tokens), ``wsj10`` (Klein & Manning's WSJ10: punctuation removed,
    then sentences of at most 10 words), ``max_length``, ``lowercase``, ``normalize_digits``,
    then rare words: with ``unk_threshold > 0`` words seen fewer than
    ``unk_threshold`` times become ``"<unk>"`` (``unk_mode="unk"``) or their
    word-shape class (``"shape"``), and the vocabulary's unknown item is
    ``"<unk>"``.  With a given ``vocab`` (e.g. the training vocabulary) the
    vocabulary is frozen and unseen words are replaced the same way.
    ``skipped["max_length"]`` (when a dict is given) counts the sentences
    longer than ``max_length``.
    """
    if unk_mode not in UNK_MODES:
        raise ConfigError(f"unk_mode must be one of {UNK_MODES}, got {unk_mode!r}")
    transform = pipeline(
        lowercase_words=lowercase,
        digits=normalize_digits,
        universal=load_universal_map(universal_map) if universal_map is not None else None,
        max_length=max_length,
        wsj10=wsj10,
        strip_punct=strip_punct,
        skipped=skipped,
    )
    name = str(path)
    transformed = normalize_digits or max_length or wsj10 or strip_punct  # (beyond what workers re-read)

    def stream() -> Iterator[Sentence]:
        return transform(read_sentences(path, format, **options))

    if vocab is not None:
        return _encode_with(vocab, stream(), unk_mode, keep_sentences, name)
    if unk_threshold <= 0:
        corpus = Corpus.from_sentences(stream(), keep_sentences=keep_sentences, name=name)
        corpus.source = _source(path, format, lowercase, transformed, options)
        return corpus
    sentences: Iterable[Sentence] = list(stream()) if keep_sentences else stream()
    known = frequent_words(count_words(sentences), unk_threshold)
    if not keep_sentences:
        sentences = stream()
    corpus = Corpus.from_sentences(
        (replace_unknown(s, known, unk_mode) for s in sentences),
        vocab=Vocabulary(unk=UNK),
        keep_sentences=keep_sentences,
        name=name,
    )
    corpus.source = _source(path, format, lowercase, transformed or unk_mode != "unk", options)
    return corpus


def _source(path, format: str, lowercase: bool, transformed, options: dict) -> tuple[str, str, bool] | None:
    """:attr:`Corpus.source` of a corpus read from ``path``: ``None`` for the demo, stdin, a non-UTF-8 file, or
    sentences ``transformed`` beyond lowercasing (rare words as ``"<unk>"`` are the vocabulary's unknown item)."""
    encoding = str(options.get("encoding", "utf-8")).replace("-", "").replace("_", "").lower()
    if transformed or set(options) - {"encoding"} or encoding not in ("utf8", "ascii") or \
            str(path) in (DEMO, STDIN) or not Path(registry.resolve(path)).exists():
        return None
    return str(path), format, bool(lowercase)

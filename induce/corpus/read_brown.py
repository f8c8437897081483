"""Brown corpus reader (``word/tag`` tokens, one sentence per non-blank line).

Tags are normalised as NLTK's Brown reader does (``nltk.tag.util.str2tuple``):
the token is split at its *rightmost* ``/`` and the tag is upper-cased, so
``Fulton/np-tl`` gives ``("Fulton", "NP-TL")`` -- the case used by the keys of
``universal-tagset/en-brown.map``.  The tag column is ``"pos"``;
``Sentence.record`` keeps the rows ``[word, tag as written]``.
"""

from __future__ import annotations

import os
from typing import Iterator

from ..errors import CorpusFormatError
from .read_lines import Rows, iter_lines
from .sentence import Sentence


def split_tagged(token: str) -> tuple[str, str] | None:
    """``(word, tag)`` split at the rightmost ``/`` (tag as written), ``None`` if not ``word/tag``."""
    loc = token.rfind("/")
    if loc <= 0 or loc == len(token) - 1:
        return None
    return token[:loc], token[loc + 1 :]


def read_brown(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[Sentence]:
    """Sentences of a Brown-format file, tags upper-cased as in NLTK."""
    name = str(path)
    for number, text in iter_lines(path, encoding):
        rows = []
        for token in text.split():
            pair = split_tagged(token)
            if pair is None:
                raise CorpusFormatError(name, number, text, f"word/TAG tokens; got token {token!r}")
            rows.append(list(pair))
        if rows:
            yield Sentence(
                words=[w for w, _ in rows],
                tags={"pos": [t.upper() for _, t in rows]},
                source=(name, number),
                record=Rows(rows, "brown"),
            )

"""Brown corpus reader (``word/tag`` tokens, one sentence per non-blank line).

Tags are normalised as NLTK's Brown reader does (``nltk.tag.util.str2tuple``):
the token is split at its *rightmost* ``/`` and the tag is upper-cased, so
``Fulton/np-tl`` gives ``("Fulton", "NP-TL")`` -- the case used by the keys of
``universal-tagset/en-brown.map``.  The tag column is ``"pos"``;
``Sentence.record`` keeps the rows ``[word, tag as written]``.

:func:`base_tag` reduces a full Brown tag to its base tag (the evaluation tag
set "Brown base tags"); :func:`add_base_tags` adds it as the ``"base"`` column.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Iterator

from ..errors import CorpusFormatError
from .read_lines import Rows, iter_lines
from .sentence import Sentence, split_induced


def split_tagged(token: str) -> tuple[str, str] | None:
    """``(word, tag)`` split at the rightmost ``/`` (tag as written), ``None`` if not ``word/tag``."""
    loc = token.rfind("/")
    if loc <= 0 or loc == len(token) - 1:
        return None
    return token[:loc], token[loc + 1 :]


_AFFIX = re.compile(r"-(?:HL|TL|NC)$")


def base_tag(tag: str) -> str:
    """The base tag of a Brown tag: affixes and compounds removed.

    ``FW-`` (foreign word) prefix and the ``-HL`` (headline), ``-TL`` (title)
    and ``-NC`` (cited word) suffixes, in any combination, are dropped, and a
    ``+`` contraction keeps its first part: ``NN-TL-HL`` -> ``NN``,
    ``FW-IN+AT`` -> ``IN``, ``PPS+BEZ`` -> ``PPS``.  Possessive ``$`` and the
    negation ``*`` stay part of the tag (``NP$``, ``BEZ*``), as in the Brown
    manual's tag list.  On the shared Brown corpus the 472 full tags become 104.
    """
    tag = tag.split("+", 1)[0]
    if tag.startswith("FW-") and len(tag) > 3:
        tag = tag[3:]
    while True:
        stripped = _AFFIX.sub("", tag)
        if stripped == tag or not stripped:
            return tag
        tag = stripped


def add_base_tags(sent: Sentence) -> Sentence:
    """``sent`` with the ``"base"`` tag column: :func:`base_tag` of its ``"pos"`` column."""
    tags = dict(sent.tags)
    tags["base"] = [base_tag(t) for t in sent.tags["pos"]]
    return replace(sent, tags=tags)


def read_brown(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[Sentence]:
    """Sentences of a Brown-format file, tags upper-cased as in NLTK.

    induce's tagged output of a Brown input (``word/GOLD=INDUCED`` on every
    token of a line) is read as the gold tags in ``"pos"`` and the induced ones
    in ``"induced"``.
    """
    name = str(path)
    for number, text in iter_lines(path, encoding):
        rows = []
        for token in text.split():
            pair = split_tagged(token)
            if pair is None:
                raise CorpusFormatError(name, number, text, f"word/TAG tokens; got token {token!r}")
            rows.append(list(pair))
        if rows:
            tags = [t.upper() for _, t in rows]
            split = split_induced(tags)
            yield Sentence(
                words=[w for w, _ in rows],
                tags={"pos": tags} if split is None else {"pos": split[0], "induced": split[1]},
                source=(name, number),
                record=Rows(rows, "brown"),
            )

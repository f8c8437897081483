"""CoNLL-U reader (Universal Dependencies) on top of the ``conllu`` library.

Following the UD specification, the words of a sentence are its *syntactic
words*, the lines with an integer ID.  Multiword-token ranges (``1-2``) and
empty nodes (``5.1``) are not words; they stay in ``Sentence.record`` (the full
``conllu.TokenList`` with its comments) so that the writer reproduces them.

Tag columns: ``"upos"`` and ``"xpos"`` (``xpos`` is left out of a sentence whose
XPOS are all ``_``), and ``"induced"`` when every word's MISC has an
``induced=TAG`` entry (what ``induce tag`` writes).  Heads and relations come
from HEAD and DEPREL.
"""

from __future__ import annotations

import os
from typing import Iterator

import conllu
from conllu.exceptions import ParseException

from ..errors import CorpusFormatError

#: MISC key under which ``induce tag`` stores induced tags in CoNLL-U.
INDUCED_KEY = "induced"
from .read_columns import MISSING, check_heads
from .read_lines import Line, iter_blocks
from .sentence import Sentence

N_FIELDS = len(conllu.parser.DEFAULT_FIELDS)


def _parse_block(block: list[Line], path: str) -> conllu.TokenList:
    for number, text in block:
        if not text.startswith("#") and len(text.split("\t")) != N_FIELDS:
            raise CorpusFormatError(
                path, number, text, f"{N_FIELDS} TAB-separated CoNLL-U columns; got {len(text.split(chr(9)))}"
            )
    try:
        return conllu.parse_token_and_metadata("\n".join(text for _, text in block))
    except ParseException as exc:
        for number, text in block:
            if text.startswith("#"):
                continue
            try:
                conllu.parser.parse_line(text, conllu.parser.DEFAULT_FIELDS)
            except ParseException as line_exc:
                raise CorpusFormatError(path, number, text, f"a valid CoNLL-U token line ({line_exc})") from None
        raise CorpusFormatError(path, block[0][0], block[0][1], f"a valid CoNLL-U sentence ({exc})") from None


def read_conllu(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[Sentence]:
    """Sentences of a CoNLL-U file; words are the syntactic words (integer IDs)."""
    name = str(path)
    for block in iter_blocks(path, encoding):
        tokens = _parse_block(block, name)
        token_lines = [line for line in block if not line[1].startswith("#")]
        words, lines = [], []
        for token, line in zip(tokens, token_lines):
            if isinstance(token["id"], int):
                if token["id"] != len(words) + 1:
                    raise CorpusFormatError(name, line[0], line[1], f"word id {len(words) + 1}")
                words.append(token)
                lines.append(line)
        if not words:
            raise CorpusFormatError(name, block[0][0], block[0][1], "a sentence with at least one word line")
        tags = {"upos": [t["upos"] for t in words]}
        xpos = [t["xpos"] for t in words]
        if any(x is not None for x in xpos):
            tags["xpos"] = [MISSING if x is None else x for x in xpos]
        # an empty MISC column (a trailing TAB) leaves no "misc" key in the token
        induced = [(t.get("misc") or {}).get(INDUCED_KEY) for t in words]
        if all(v is not None for v in induced):
            tags[INDUCED_KEY] = induced
        heads = [t["head"] for t in words]
        if all(h is None for h in heads):
            heads = None
        else:
            for h, (number, text) in zip(heads, lines):
                if h is None:
                    raise CorpusFormatError(name, number, text, "an integer head; got head '_'")
            check_heads(heads, lines, name)
        yield Sentence(
            words=[t["form"] for t in words],
            tags=tags,
            heads=heads,
            deprels=[t["deprel"] for t in words],
            source=(name, block[0][0]),
            record=tokens,
        )

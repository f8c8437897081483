"""The record every corpus reader yields, before integer encoding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Sentence:
    """One sentence as read from a file.

    * ``words``: surface forms (the tokens the models see);
    * ``tags``: gold tag columns by name, each as long as ``words``
      (``"upos"``, ``"xpos"``, ``"pos"``, ``"universal"``, ...);
    * ``heads``: gold dependency heads, 1-based, 0 = root (or ``None``);
    * ``deprels``: gold dependency relations (or ``None``);
    * ``tree``: gold constituency tree as an ``nltk.Tree`` (or ``None``);
    * ``source``: ``(file, line)`` where the sentence starts, for messages;
    * ``record``: the format's own representation (e.g. a ``conllu.TokenList``),
      kept so that writers can reproduce every input column.
    """

    words: list[str]
    tags: dict[str, list[str]] = field(default_factory=dict)
    heads: list[int] | None = None
    deprels: list[str] | None = None
    tree: Any = None
    source: tuple[str, int] | None = None
    record: Any = None

    def __len__(self) -> int:
        return len(self.words)


#: joins a gold tag and the induced tag written beside it where a format has no spare column
#: (PTB preterminals ``NN=S12``, Brown tokens ``dog/NN=S12``), as PTB's ``=`` index suffix
INDUCED_MARK = "="


def with_induced(gold: list[str], induced) -> list[str]:
    """``GOLD=INDUCED`` labels: the gold tags kept, the induced ones after :data:`INDUCED_MARK`."""
    return [f"{g}{INDUCED_MARK}{t}" for g, t in zip(gold, induced)]


def split_induced(labels: list[str]) -> tuple[list[str], list[str]] | None:
    """``(gold, induced)`` when every label is ``GOLD=INDUCED`` (split at the last ``=``); else None."""
    pairs = [label.rpartition(INDUCED_MARK) for label in labels]
    if not all(gold and induced for gold, _, induced in pairs):
        return None
    return [gold for gold, _, _ in pairs], [induced for _, _, induced in pairs]

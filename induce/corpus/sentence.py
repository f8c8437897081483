"""The record every corpus reader yields, before integer encoding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Sentence:
    """One sentence as read from a file.

    ``words``    surface forms (the tokens the models see);
    ``tags``     gold tag columns by name, each as long as ``words``
                 (``"upos"``, ``"xpos"``, ``"pos"``, ``"universal"``, ...);
    ``heads``    gold dependency heads, 1-based, 0 = root (or ``None``);
    ``deprels``  gold dependency relations (or ``None``);
    ``tree``     gold constituency tree as an ``nltk.Tree`` (or ``None``);
    ``source``   ``(file, line)`` where the sentence starts, for messages;
    ``record``   the format's own representation (e.g. a ``conllu.TokenList``),
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

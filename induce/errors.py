"""Typed errors of induce.

Every error a user can cause with bad input is an :class:`InduceError`; the CLI
prints it as one line and exits with status 2.
"""

from __future__ import annotations


class InduceError(Exception):
    """Base class of all user-facing errors."""


class CorpusFormatError(InduceError):
    """A corpus file does not have the expected format.

    Carries the file name, the 1-based line number, the offending text and a
    description of what was expected, and formats them as
    ``file:line: expected ...; got '...'``.
    """

    def __init__(self, path: str | None, line: int | None, text: str | None, expected: str):
        self.path = path
        self.line = line
        self.text = text
        self.expected = expected
        where = str(path) if path is not None else "<input>"
        if line is not None:
            where = f"{where}:{line}"
        got = ""
        if text is not None:
            shown = text if len(text) <= 80 else text[:77] + "..."
            got = f"; got {shown!r}"
        super().__init__(f"{where}: expected {expected}{got}")


class ModelFormatError(InduceError):
    """A saved model file cannot be read (wrong format version, missing arrays)."""


class ConfigError(InduceError):
    """Invalid combination of options or hyperparameters."""

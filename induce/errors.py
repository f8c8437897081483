"""Typed errors of induce.

Every error a user can cause with bad input is an :class:`InduceError`; the CLI
prints it as one line and exits with status 2.
"""

from __future__ import annotations

import operator


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


# ------------------------------------------------------------------ value domains
# One place for the domain of every numeric option: the CLI's argparse types
# (:mod:`induce.cli.common`) and the estimators' validation both call these, so
# a value is refused the same way from the command line and from Python.

#: Seeds are accepted by every generator (``numpy.random.default_rng``, legacy ``RandomState``).
SEED_LIMIT = 2**32


def _domain(minimum, maximum, min_open: bool, max_open: bool) -> str:
    minimum, maximum = (b if b is None or isinstance(b, int) else f"{b:g}" for b in (minimum, maximum))
    if minimum is not None and maximum is not None:
        return f"in {'(' if min_open else '['}{minimum}, {maximum}{')' if max_open else ']'}"
    if minimum is not None:
        return f"{'>' if min_open else '>='} {minimum}"
    if maximum is not None:
        return f"{'<' if max_open else '<='} {maximum}"
    return ""


def check_int(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an ``int`` if it is an integer in ``[minimum, maximum]``, else ``ConfigError``."""
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)
    except TypeError:
        raise ConfigError(f"{name} must be an integer {_domain(minimum, maximum, False, False)}; got {value!r}") from None
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ConfigError(f"{name} must be an integer {_domain(minimum, maximum, False, False)}; got {value}")
    return value


def check_float(name: str, value, minimum: float | None = None, maximum: float | None = None, *,
                min_open: bool = False, max_open: bool = False) -> float:
    """``value`` as a finite ``float`` within the bounds (open or closed), else ``ConfigError``.

    NaN and infinities are always refused: ``nan <= 0`` is false, so a plain
    comparison would let NaN through to a kernel.
    """
    domain = _domain(minimum, maximum, min_open, max_open)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a finite number {domain}; got {value!r}") from None
    if isinstance(value, bool) or number != number or number in (float("inf"), float("-inf")) or (
            minimum is not None and (number <= minimum if min_open else number < minimum)) or (
            maximum is not None and (number >= maximum if max_open else number > maximum)):
        raise ConfigError(f"{name} must be a finite number {domain}; got {value!r}")
    return number


def check_seed(name: str, value) -> int | None:
    """A seed: ``None`` or an integer in ``[0, 2**32)``."""
    return None if value is None else check_int(name, value, 0, SEED_LIMIT - 1)

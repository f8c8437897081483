"""Helpers shared by the CLI subcommands: option types, ``--json`` output and key/value tables.

Option types
------------
Every option value is checked by its argparse ``type=`` function before any
work starts; a bad value ends the command with one line
``induce: error: argument --NAME: expected ...`` and status 2.  The numeric
domains are those of :func:`induce.errors.check_int` / :func:`~induce.errors.check_float`,
which the estimators call too.  Paths: :func:`existing_file` (an input file or
``-`` for stdin), :func:`corpus_path` (a file, a directory or ``demo``),
:func:`output_path` (writable, checked with :func:`induce.atomic.check_writable`;
``-`` is stdout), :func:`encoding` (a codec Python knows).

JSON
----
:func:`dump_json` is the one way JSON leaves induce: NaN and infinities become
``null`` (JSON has no such numbers) and the writer runs with ``allow_nan=False``.
"""

from __future__ import annotations

import argparse
import codecs
import json
import math
import os
import sys
from typing import Any, Callable

import numpy as np

from ..atomic import STDIO, check_writable
from ..corpus.formats import DEMO
from ..errors import SEED_LIMIT, ConfigError, check_float, check_int


def _typed(description: str, parse: Callable[[str], Any], check: Callable[[Any], Any]) -> Callable[[str], Any]:
    """An argparse type: ``parse`` the text, then ``check`` its domain; failures are ``ArgumentTypeError``."""

    def convert(text: str):
        try:
            return check(parse(text))
        except (ValueError, ConfigError):
            raise argparse.ArgumentTypeError(f"expected {description}; got {text!r}") from None

    convert.__name__ = description
    return convert


positive_int = _typed("a positive integer", int, lambda v: check_int("value", v, 1))
nonneg_int = _typed("a non-negative integer", int, lambda v: check_int("value", v, 0))
seed = _typed(f"a seed, an integer in [0, {SEED_LIMIT - 1}]", int, lambda v: check_int("seed", v, 0, SEED_LIMIT - 1))
finite_positive_float = _typed("a finite number > 0", float, lambda v: check_float("value", v, 0.0, min_open=True))
finite_nonneg_float = _typed("a finite number >= 0", float, lambda v: check_float("value", v, 0.0))
probability = _typed("a probability in [0, 1]", float, lambda v: check_float("value", v, 0.0, 1.0))
fraction = _typed("a fraction in [0, 1)", float, lambda v: check_float("value", v, 0.0, 1.0, max_open=True))
forgetting_rate = _typed("a number in [0.5, 1]", float, lambda v: check_float("kappa", v, 0.5, 1.0))


def _readable_file(text: str) -> str:
    if text == STDIO:
        return text
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text}: is a directory; expected a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable")
    return text


def existing_file(text: str) -> str:
    """An input file that exists and is readable (not a directory), or ``-`` for stdin."""
    return _readable_file(text)


def corpus_path(text: str) -> str:
    """A corpus input: a readable file, a directory, ``demo`` or ``-`` (stdin)."""
    if text == DEMO and not os.path.exists(text):
        return text
    if os.path.isdir(text):
        if not os.access(text, os.R_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{text}: directory not readable")
        return text
    return _readable_file(text)


def output_path(text: str) -> str:
    """An output file that can be written (checked now, before any work); ``-`` is stdout."""
    try:
        check_writable(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def encoding(text: str) -> str:
    """A text encoding Python knows (``utf-8``, ``latin-1``, ...)."""
    try:
        codecs.lookup(text)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown text encoding {text!r} (e.g. utf-8, latin-1)") from None
    return text


def finite_json(value: Any) -> Any:
    """``value`` with NaN and infinities (also inside lists and dicts) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def dump_json(value: Any, stream, **options) -> None:
    """Write ``value`` as strict JSON (numpy values made plain, non-finite numbers as ``null``)."""
    json.dump(finite_json(_plain(value)), stream, allow_nan=False, **options)


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def emit(result: dict, as_json: bool, stream=None) -> None:
    """Print ``result`` as JSON (``--json``) or as an aligned ``key  value`` table."""
    stream = stream or sys.stdout
    result = _plain(result)
    if as_json:
        dump_json(result, stream, indent=2)
        stream.write("\n")
        return
    _print_table(result, stream, indent="")


def _print_table(result: dict, stream, indent: str) -> None:
    width = max((len(str(k)) for k in result), default=0)
    for key, value in result.items():
        if isinstance(value, dict):
            stream.write(f"{indent}{key}:\n")
            _print_table(value, stream, indent + "  ")
        else:
            if isinstance(value, float):
                value = f"{value:.4f}"
            stream.write(f"{indent}{str(key).ljust(width)}  {value}\n")

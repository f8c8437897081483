"""Helpers shared by the CLI subcommands: ``--json`` output and key/value tables."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np


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
    return value


def emit(result: dict, as_json: bool, stream=None) -> None:
    """Print ``result`` as JSON (``--json``) or as an aligned ``key  value`` table."""
    stream = stream or sys.stdout
    result = _plain(result)
    if as_json:
        json.dump(result, stream, indent=2, sort_keys=False)
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

"""``induce --help`` and ``induce <command> --help``, for every command, import no heavy module (numba, SciPy,
scikit-learn, NLTK, dask, kernels): the parsers take their choices from :mod:`induce.names`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from induce.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numba", "scipy", "sklearn", "nltk", "dask", "induce.kernels", "induce.taggers", "induce.corpus")
COMMANDS = list(build_parser("")._subparsers._group_actions[0].choices)
PROBE = """
import sys
from induce.cli import main
try:
    main({argv!r})
except SystemExit as exc:
    assert exc.code == 0, exc.code
print(sorted(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("argv", [["--help"], *([cmd, "--help"] for cmd in COMMANDS), ["eval", "deps", "--help"],
                                  ["eval", "align", "--help"], ["corpus", "convert", "--help"]], ids=" ".join)
def test_help_imports_no_heavy_module(argv):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert "usage: induce" in out
    assert out.strip().splitlines()[-1] == "[]"


def test_lazy_parser_lists_every_command_with_its_help_line():
    full = build_parser()._subparsers._group_actions[0]
    lazy = build_parser("")._subparsers._group_actions[0]
    assert list(lazy.choices) == list(full.choices)
    assert [a.help for a in lazy._choices_actions] == [a.help for a in full._choices_actions]
    tag_only = build_parser("tag")._subparsers._group_actions[0].choices
    assert any(a.dest == "infer" for a in tag_only["tag"]._actions)
    assert not any(a.dest == "infer" for a in tag_only["parse"]._actions)


def test_every_command_is_probed():
    assert {"tag", "parse", "align", "segment", "eval", "corpus", "corpora", "compare", "report"} <= set(COMMANDS)


def test_static_family_names_equal_the_registries():
    """``induce segment`` offers the emission and duration families from names.py: they must be the registered ones."""
    from induce.durations import DURATIONS
    from induce.emissions import family_names
    from induce.names import DURATION_FAMILIES, EMISSION_FAMILIES

    assert EMISSION_FAMILIES == tuple(family_names())
    assert DURATION_FAMILIES == tuple(sorted(DURATIONS))

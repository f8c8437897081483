"""The user guide's examples run with the tests.

* Python examples are doctests (``--doctest-glob='*.rst'`` in pyproject.toml): each page runs in a fresh
  temporary directory (examples may write files), with ``CORPORA`` (the shared corpora folder, or ``None``) in
  its namespace; a page that reads the shared corpora is skipped, with the reason, when they are absent.
* Command-line examples are the ``$ induce ...`` lines of ``.. code-block:: console`` blocks: each page's run
  in order in one temporary directory, through ``induce.cli.main``, and must exit with status 0 (a page
  whose commands name ``$INDUCE_CORPORA`` is skipped without the corpora).  Templates that cannot run as
  written (your own files, a cluster) are plain ``::`` literal blocks.
"""

from __future__ import annotations

import os
import re
import shlex
import string
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))
from induce_figures import find_corpora as _find_corpora  # noqa: E402  (one place that knows where they are)

#: pages whose examples read ``$INDUCE_CORPORA`` / ``../shared/corpora`` (the demo corpus needs nothing)
NEEDS_CORPORA = {"timeseries.rst", "alignment.rst"}


@pytest.fixture(autouse=True)
def _doctest_page(request, doctest_namespace, tmp_path, monkeypatch):
    path = Path(str(request.node.fspath))
    if path.suffix != ".rst":
        return
    corpora = _find_corpora()
    if path.name in NEEDS_CORPORA and corpora is None:
        pytest.skip(f"{path.name}: the shared corpora are absent (set INDUCE_CORPORA or put them in ../shared/corpora)")
    doctest_namespace["CORPORA"] = corpora
    monkeypatch.chdir(tmp_path)


# ----------------------------------------------------------------------------- command-line examples
#: a ``.. code-block:: console`` block: its ``$ induce ...`` lines run, in order, in one temporary directory
_CONSOLE = re.compile(r"^\.\. code-block:: console\n\n((?:(?:[ ]{3,}.*)?\n)+)", re.M)


def console_commands(text: str) -> list[str]:
    """The ``$ ...`` command lines of every console block of ``text`` (``\\`` continuations joined)."""
    commands = []
    for block in _CONSOLE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip()[2:] for line in joined.splitlines() if line.strip().startswith("$ ")]
    return commands


class ConsoleExamples(pytest.Item):
    """Every ``$ induce ...`` line of one page, run in process (``induce.cli.main``) and required to exit 0."""

    def __init__(self, *, commands, **kw):
        super().__init__(**kw)
        self.commands = commands

    def runtest(self):
        from induce.cli import main

        corpora = _find_corpora()
        if corpora is None and any("$INDUCE_CORPORA" in c for c in self.commands):
            pytest.skip(f"{self.path.name}: the shared corpora are absent (set INDUCE_CORPORA)")
        where = {"INDUCE_CORPORA": str(corpora)}
        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)
            try:
                for command in self.commands:
                    argv = shlex.split(string.Template(command).safe_substitute(where), comments=True)
                    if not argv:                      # a comment line
                        continue
                    assert argv[0] == "induce", f"{self.path.name}: not an induce command: {command}"
                    status = main(argv[1:])
                    assert status == 0, f"{self.path.name}: `{command}` exited with status {status}"
            finally:
                os.chdir(cwd)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}: {len(self.commands)} command-line examples"


class ConsolePage(pytest.File):
    def collect(self):
        commands = console_commands(self.path.read_text(encoding="utf-8"))
        if commands:
            yield ConsoleExamples.from_parent(self, name="console", commands=commands)


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".rst":
        return ConsolePage.from_parent(parent, path=file_path)
    return None

"""The user guide's examples run with the tests.

* Python examples are doctests (``--doctest-glob='*.rst'`` in pyproject.toml): each page runs in a fresh
  temporary directory (examples may write files), with ``CORPORA`` (the shared corpora folder, or ``None``) in
  its namespace; a page that reads the shared corpora is skipped, with the reason, when they are absent.
* Command-line examples are the ``$ induce ...`` lines of ``.. code-block:: console`` blocks: each page's run
  in order in one temporary directory, through ``induce.cli.main``, and must exit with status 0 (a page
  whose commands name ``$INDUCE_CORPORA`` is skipped without the corpora).  The directory holds the user
  files the examples name (:data:`USER_FILES`), and the demo corpus is cut to :data:`DEMO_SENTENCES`
  sentences there (the same generator and seed): the commands run as written, on a tenth of the data
  (also for the doctests of :data:`SMALL_DEMO_DOCTESTS`, which print nothing that depends on its size).
* Templates that cannot run as written (a cluster of machines, hmmlearn's own code) are plain ``::``
  literal blocks, each introduced by a sentence saying why it is not run; the options of their ``induce``
  lines are checked against the command's parser (:class:`TemplateOptions`): every ``--option`` exists,
  and every listed value of an option with choices (``--qc heuristic|exact``) is one of them.
"""

from __future__ import annotations

import contextlib
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


#: pages whose doctests print nothing that depends on the demo corpus's size: they run on the small demo
SMALL_DEMO_DOCTESTS = {"compare.rst", "nltk.rst"}


@pytest.fixture(autouse=True)
def _doctest_page(request, doctest_namespace, tmp_path, monkeypatch):
    path = Path(str(request.node.fspath))
    if path.suffix != ".rst":
        yield
        return
    corpora = _find_corpora()
    if path.name in NEEDS_CORPORA and corpora is None:
        pytest.skip(f"{path.name}: the shared corpora are absent (set INDUCE_CORPORA or put them in ../shared/corpora)")
    doctest_namespace["CORPORA"] = corpora
    monkeypatch.chdir(tmp_path)
    with small_demo() if path.name in SMALL_DEMO_DOCTESTS else contextlib.nullcontext():
        yield


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


#: the demo corpus's size in the command-line examples (the full corpus has 2,000 sentences)
DEMO_SENTENCES = 200
#: files the command-line examples read as "your own files": a two-regime series (``series.csv``)
USER_FILES = {"series.csv": "year,value\n" + "".join(
    f"{1900 + t},{(10.0 if t < 30 else 20.0) + (t * 7 % 5) * 0.4:.1f}\n" for t in range(60))}


@contextlib.contextmanager
def small_demo():
    """Within the block, the demo corpus has at most :data:`DEMO_SENTENCES` sentences."""
    from induce.corpus import demo

    full = demo.demo_sentences

    def small(n_sentences: int = 2000, seed: int = 0, max_len: int = 40):
        return full(min(n_sentences, DEMO_SENTENCES), seed, max_len)

    demo.demo_sentences = small
    try:
        yield
    finally:
        demo.demo_sentences = full


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
        with tempfile.TemporaryDirectory() as tmp, small_demo():
            os.chdir(tmp)
            for name, text in USER_FILES.items():
                Path(name).write_text(text)
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


# ----------------------------------------------------------------------------- templates
#: a literal block (``::`` then indented lines): its ``induce ...`` lines are templates, not run
_LITERAL = re.compile(r"::\n\n((?:(?:[ ]{3,}.*)?\n)+)")


def template_commands(text: str) -> list[str]:
    """The ``induce ...`` lines of every literal block of ``text`` (``\\`` continuations joined, comments cut)."""
    commands = []
    for block in _LITERAL.findall(text):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("induce "):
                commands.append(line)
    return commands


def _subparser(parser, words: list[str]):
    """``(parser, rest)``: the (sub)command parser the leading ``words`` name, and the words after them."""
    import argparse

    while words:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or words[0] not in sub.choices:
            break
        parser, words = sub.choices[words[0]], words[1:]
    return parser, words


def option_problems(command: str) -> list[str]:
    """What in a template ``induce ...`` line its parser does not know: an ``--option``, or a listed value
    (``a|b|c`` or a single word) of an option with choices."""
    from induce.cli import build_parser

    words = shlex.split(command)[1:]
    parser, rest = _subparser(build_parser(words[0]), words)
    options = {o: a for a in parser._actions for o in a.option_strings}
    problems = []
    for i, word in enumerate(rest):
        name = word.strip("[]")
        if not name.startswith("--"):
            continue
        if name not in options:
            problems.append(f"{command}: {name} is not an option of induce {parser.prog.split(' ', 1)[1]}")
            continue
        choices = options[name].choices
        if choices and i + 1 < len(rest) and not rest[i + 1].strip("[]").startswith("-"):
            problems += [f"{command}: {name} {value} is not one of {sorted(choices)}"
                         for value in rest[i + 1].strip("[]").split("|") if value not in choices]
    return problems


class TemplateOptions(pytest.Item):
    """The options of every template ``induce`` line of one page, checked against the command's parser."""

    def __init__(self, *, commands, **kw):
        super().__init__(**kw)
        self.commands = commands

    def runtest(self):
        problems = [p for command in self.commands for p in option_problems(command)]
        assert not problems, "\n".join(problems)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}: options of {len(self.commands)} command templates"


class ConsolePage(pytest.File):
    def collect(self):
        text = self.path.read_text(encoding="utf-8")
        commands = console_commands(text)
        if commands:
            yield ConsoleExamples.from_parent(self, name="console", commands=commands)
        templates = template_commands(text)
        if templates:
            yield TemplateOptions.from_parent(self, name="templates", commands=templates)


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".rst":
        return ConsolePage.from_parent(parent, path=file_path)
    return None

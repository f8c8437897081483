"""``.. induce-help:: [COMMAND]``: the ``--help`` text of ``induce`` (or of ``induce COMMAND``) as a literal block;
``.. induce-commands::``: a heading and the ``--help`` text of every subcommand the command line has.

The text is generated from the command line's own parser at build time, so the reference never
disagrees with the options the code defines.
"""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

WIDTH = "100"


def help_text(command: str | None = None) -> str:
    """``induce --help`` (``command=None``) or ``induce COMMAND --help``, formatted ``WIDTH`` columns wide."""
    from induce.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser(command or "")
        if command:
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = sub.choices[command]
        return parser.format_help()
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


class InduceHelp(SphinxDirective):
    optional_arguments = 1

    def run(self):
        text = help_text(self.arguments[0] if self.arguments else None)
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        return [block]


class InduceCommands(SphinxDirective):
    def run(self):
        from induce.cli import _command_modules

        out = []
        for module in _command_modules():
            name = module.removesuffix("_cmd")
            out.append(nodes.rubric(text=f"induce {name}", ids=[f"cli-{name}"]))
            text = help_text(name)
            block = nodes.literal_block(text, text)
            block["language"] = "text"
            out.append(block)
        return out


def setup(app):
    app.add_directive("induce-help", InduceHelp)
    app.add_directive("induce-commands", InduceCommands)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

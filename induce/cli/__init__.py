"""The ``induce`` command line.

Each subcommand lives in its own ``*_cmd`` module exposing ``HELP`` (its
one-line description) and ``register(subparsers)`` (discovered automatically);
the handler it installs returns a process exit code.  Only the subcommand being
run is registered in full (its heavy modules -- numba kernels, SciPy,
scikit-learn -- are imported only when its handler runs), so
``induce --help`` and every ``induce CMD --help`` stay fast (docs/experiments/ecosystem.md).  User errors
(:class:`induce.errors.InduceError`), bad option values (argparse) and
operating-system errors on a named file are printed as one line
``induce: error: ...`` on stderr and the process exits with status 2.  A closed
output pipe (``induce ... | head``) ends the process quietly with status 141
(128 + SIGPIPE), and SIGTERM / SIGHUP unwind it so temporary files are removed
(:func:`induce.atomic.install_signal_handlers`).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..atomic import install_signal_handlers
from ..errors import InduceError


def plain_text(text: str | None) -> str | None:
    """Help text without reStructuredText markup (module docstrings serve as descriptions)."""
    if not text:
        return text
    import re

    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)  # :class:`~x.Y` -> x.Y
    return re.sub(r"``([^`]+)``", r"\1", text)        # ``x`` -> x


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions keep their line breaks; every option with a default says it, unless its help already does."""

    def _format_action(self, action):
        if action.help is None and action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            action.help = "default: %(default)s"
        return super()._format_action(action)

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
                and "default" not in text.lower() and "%(default)" not in text):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """``ArgumentParser`` for every subcommand: one-line errors, ``induce: error: ...`` (status 2); plain-text
    descriptions; defaults shown in every help line."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs["description"] = plain_text(kwargs.get("description"))
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"induce: error: {message}\n")



def _command_modules() -> list[str]:
    """Every ``*_cmd`` module of this package, in name order."""
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.endswith("_cmd"))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``induce`` parser: every subcommand in full (``command=None``), or only ``command`` in full and the
    others by name and ``HELP`` line (``command=""``: none in full, enough for ``induce --help``)."""
    from importlib import import_module

    from .. import __version__

    parser = Parser(
        prog="induce",
        description="Unsupervised NLP with collapsed variational inference: "
        "PoS induction, grammar induction and word alignment.",
    )
    parser.add_argument("--version", action="version", version=f"induce {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _command_modules():
        module = import_module(f"{__name__}.{name}")
        if command is None or command == name.removesuffix("_cmd"):
            module.register(sub)
        else:
            sub.add_parser(name.removesuffix("_cmd"), help=module.HELP)
    return parser


def _command(argv: list[str]) -> str:
    """The subcommand ``argv`` names (its first word that is not an option), or ``""``."""
    return next((a for a in argv if not a.startswith("-")), "")


def _error(message: str) -> int:
    print(f"induce: error: {message}", file=sys.stderr)
    return 2


def _bare_json(argv: list[str]) -> list[str]:
    """``--json`` followed by an argument that is no ``*.json`` file means JSON on stdout: ``--json=-``.

    ``--json [FILE]`` takes an optional value, so argparse would otherwise read
    ``induce parse --json corpus.txt -o out`` as JSON to ``corpus.txt``; a FILE
    not ending in ``.json`` is written as ``--json=FILE``.
    """
    out = list(argv)
    for i, token in enumerate(out[:-1]):
        following = out[i + 1]
        if token == "--json" and not following.startswith("-") and not following.lower().endswith(".json"):
            out[i] = "--json=-"
    return out


def main(argv: list[str] | None = None) -> int:
    argv = _bare_json(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    install_signal_handlers()
    from .common import note_given_options, route_summaries

    note_given_options(parser, args, argv)
    route_summaries(args)
    try:
        status = int(args.handler(args) or 0)
        sys.stdout.flush()
        return status
    except InduceError as exc:
        return _error(str(exc))
    except BrokenPipeError:
        # the reader of our stdout went away: silence the final flush at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("induce: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        return _error("out of memory; use a smaller model (fewer --states, nonterminals or subtypes) or shorter "
                      "input (tag, parse and align: --max-length)")
    except OSError as exc:
        if exc.filename is None:
            raise
        return _error(f"{exc.filename}: {exc.strerror}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

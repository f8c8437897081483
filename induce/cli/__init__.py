"""The ``induce`` command line.

Each subcommand lives in its own ``*_cmd`` module exposing
``register(subparsers)`` (discovered automatically); the
handler it installs returns a process exit code.  User errors
(:class:`induce.errors.InduceError`) are printed as one line on stderr and the
process exits with status 2.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import InduceError



def _command_modules() -> list[str]:
    """Every ``*_cmd`` module of this package, in name order."""
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.endswith("_cmd"))


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="induce",
        description="Unsupervised NLP with collapsed variational inference: "
        "PoS induction, grammar induction and word alignment.",
    )
    parser.add_argument("--version", action="version", version=f"induce {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _command_modules():
        import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except InduceError as exc:
        print(f"induce: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("induce: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

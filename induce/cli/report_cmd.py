"""``induce report``: render a run file (``--json FILE`` of tag, parse, align, compare) as one HTML page.

The run file is the JSON object a command writes with ``--json FILE`` (settings,
metrics and the per-iteration ``trace``), optionally with the payload keys of
:mod:`induce.report.document` (``confusion``, ``trees``, ``series``, ...).
``--corpus`` adds the tagging sections from a tagged corpus, e.g. the ``-o``
output of ``induce tag`` (induced tags in the ``induced`` column next to the gold ones).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import ConfigError
from .common import corpus_path, existing_file, output_path


#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "render a run's JSON file as a self-contained HTML report"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help=HELP,
                       description="Render RUN.json (written by --json FILE) as one self-contained HTML page.")
    p.add_argument("run", metavar="RUN.json", type=existing_file, help="run file written by tag/parse/align/compare --json FILE")
    p.add_argument("-o", "--output", type=output_path, metavar="FILE.html", help="HTML output (default: RUN with suffix .html)")
    p.add_argument("--corpus", type=corpus_path, metavar="FILE",
                   help="tagged corpus (e.g. the -o output of induce tag) for the state x gold-tag heat map "
                        "and the state usage (default: none)")
    p.add_argument("--predicted-column", default="induced",
                   help="--corpus: column holding the induced tags (default induced)")
    p.add_argument("--gold-column", help="--corpus: gold tag column (default: the run's gold_column)")
    p.add_argument("--format", default="auto", help="--corpus format (default: detect)")
    p.add_argument("--title", help="page title (default: 'induce COMMAND report')")
    p.set_defaults(handler=run)


def load_run(path: str) -> dict:
    """The run dict of a JSON file; a ConfigError (``file:line: expected ...``) when it is not one."""
    try:
        with open(path, encoding="utf-8") as handle:
            run = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the run file ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: expected a JSON run file; {exc.msg}") from None
    if not isinstance(run, dict):
        raise ConfigError(f"{path}:1: expected a JSON object (a run written by --json FILE), got {type(run).__name__}")
    return run


def _corpus_payload(args, run: dict) -> dict:
    from ..corpus.formats import load_corpus
    from ..report import tagging_data

    corpus = load_corpus(args.corpus, args.format)
    gold = args.gold_column or run.get("gold_column")
    for name, column in (("--predicted-column", args.predicted_column), ("--gold-column", gold)):
        if column is not None and column not in corpus.tags:
            raise ConfigError(f"{args.corpus}: {name} {column!r} is not a column of the corpus; "
                              f"it has {sorted(corpus.tags) or 'no tag columns'}")
    return tagging_data(corpus, corpus.tags[args.predicted_column], corpus.tag_vocabs[args.predicted_column].itos,
                        gold)


def run(args: argparse.Namespace) -> int:
    from ..report import write_report

    data = load_run(args.run)
    if args.corpus:
        data.update(_corpus_payload(args, data))
    output = args.output or str(Path(args.run).with_suffix(".html"))
    write_report(output, data, args.title)
    print(output)
    return 0

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
from .common import corpus_path, existing_file, output_path, summary_stream


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
    """The run dict of a JSON file, checked (:func:`check_run`); a ConfigError (``file[:line]: expected ...``)
    when it is not one: unreadable, not UTF-8, not JSON, nested beyond reason, not an object, empty, or with a
    field of the wrong type."""
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the run file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: expected a UTF-8 JSON run file; byte {exc.start} is not UTF-8") from None
    try:
        run = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: expected a JSON run file; {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{path}: expected a JSON run file; it is nested too deeply") from None
    if not isinstance(run, dict):
        raise ConfigError(f"{path}:1: expected a JSON object (a run written by --json FILE), got {type(run).__name__}")
    if isinstance(run.get("series"), str):  # segment --json names its input file "series"
        run["input"] = run.pop("series")
    check_run(path, run)
    return run


def _is_number(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _records(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


#: the payload fields of a run file and the shape each must have (:mod:`induce.report.document` reads them)
PAYLOAD_SHAPES = {
    "trace": ("a list of records (objects)", _records),
    "runs": ("a list of records (objects)", _records),
    "trees": ("a list of records (objects)", _records),
    "dependencies": ("a list of records (objects)", _records),
    "alignments": ("a list of records (objects)", _records),
    "summary": ("an object of objects", lambda v: isinstance(v, dict) and all(isinstance(x, dict) for x in v.values())),
    "confusion": ("an object with states, tags, counts and mapping lists",
                  lambda v: isinstance(v, dict) and all(isinstance(v.get(k), list) for k in
                                                        ("states", "tags", "counts", "mapping"))),
    "state_usage": ("an object with names and counts lists",
                    lambda v: isinstance(v, dict) and isinstance(v.get("names"), list)
                    and isinstance(v.get("counts"), list) and all(map(_is_number, v["counts"]))),
    "series": ("an object with values and states lists", lambda v: isinstance(v, dict)
               and isinstance(v.get("values"), list) and isinstance(v.get("states"), list)),
    "title": ("a string", lambda v: isinstance(v, str)),
}


def check_run(path: str, run: dict) -> None:
    """A run file holds something to report, its payload fields have their shapes (:data:`PAYLOAD_SHAPES`) and
    its metrics are numbers (``null``: not computed); else one ``ConfigError`` naming the field."""
    from ..report.document import is_metric

    if not run:
        raise ConfigError(f"{path}: expected a run written by --json FILE; the object is empty")
    for key, (shape, accepts) in PAYLOAD_SHAPES.items():
        if key in run and not accepts(run[key]):
            raise ConfigError(f"{path}: field {key!r}: expected {shape}; got {json.dumps(run[key])[:60]}")
    if "runs" in run and "summary" not in run or "summary" in run and "runs" not in run:
        raise ConfigError(f"{path}: a compare run needs both 'runs' and 'summary'")
    for key, value in run.items():
        if key not in PAYLOAD_SHAPES and is_metric(key) and not (
                _is_number(value) or isinstance(value, dict) or isinstance(value, list) and all(map(_is_number, value))):
            raise ConfigError(f"{path}: metric {key!r}: expected a number; got {json.dumps(value)[:60]}")


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
    print(output, file=summary_stream())
    return 0

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
import contextlib
import json
import math
import os
import statistics
import sys
import warnings
from typing import Any, Callable

import numpy as np

from ..atomic import STDIO, check_writable
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


def one_stdin(**paths: str | None) -> None:
    """Standard input can be read once: ``ConfigError`` when more than one of the named inputs is ``-``
    (``induce align - -`` would read the same stream as both sides)."""
    named = [name for name, path in paths.items() if path == STDIO]
    if len(named) > 1:
        raise ConfigError(f"{' and '.join(named)} are both '-': standard input can be read once; give files")


def corpus_path(text: str) -> str:
    """A corpus input: a readable file, a directory, ``demo``, ``-`` (stdin) or a fetched registry corpus."""
    from ..corpus import registry
    from ..corpus.formats import DEMO
    from ..errors import InduceError

    if text == DEMO and not os.path.exists(text):
        return text

    try:
        text = str(registry.resolve(text))
    except InduceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
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
    """``--json [FILE]``, the same in every subcommand: JSON on stdout instead of the table, or written to FILE."""
    parser.add_argument("--json", nargs="?", const="-", type=output_path, metavar="FILE",
                        help="print the results as JSON instead of a table, or write them to FILE (a name ending in "
                             ".json, or any name as --json=FILE)")


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


#: True while the command's data goes to stdout (``-o -``): its summary then goes to stderr (set by
#: :func:`route_summaries`)
_DATA_ON_STDOUT = False


def note_given_options(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> None:
    """Record in ``args._given`` the options ``argv`` wrote (dest -> the spelling used, also an abbreviation
    argparse accepted), so that :func:`refuse_given` can tell a value given from a default."""
    actions, stack = [], [parser]
    while stack:
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif action.option_strings:
                actions.append(action)
    given: dict[str, str] = {}
    for token in argv:
        name = token.split("=", 1)[0]
        if not name.startswith("-") or name == "-":
            continue
        spelled = [(a, name) for a in actions if name in a.option_strings] or [
            (a, o) for a in actions for o in a.option_strings if name.startswith("--") and o.startswith(name)]
        if len(spelled) == 1:
            given.setdefault(spelled[0][0].dest, spelled[0][1])
    args._given = given


def refuse_given(args: argparse.Namespace, dests, why: str) -> None:
    """``ConfigError`` (one line) when the command line gave any option of ``dests``: it does not apply
    ``why`` (e.g. ``"to --infer em (only cvi2 updates blocks)"``).  Options left at their defaults pass."""
    given = getattr(args, "_given", {})
    named = [given[d] for d in dests if d in given]
    if named:
        raise ConfigError(f"{', '.join(named)} {'does' if len(named) == 1 else 'do'} not apply {why}")


def refuse_given_except(args: argparse.Namespace, allowed, why: str) -> None:
    """:func:`refuse_given` for every option given on the command line but those of ``allowed``."""
    refuse_given(args, [d for d in getattr(args, "_given", {}) if d not in allowed], why)


def load_model(path: str, classes: dict, option: str = "--load"):
    """The estimator saved at ``path``, of one of ``classes`` (class name -> class) by the file's own kind; a
    file of another kind is a one-line ``ConfigError`` naming what it holds and what ``option`` takes."""
    from ..modelfile import kind_of

    kind = kind_of(path)
    if kind not in classes:
        raise ConfigError(f"{option} {path}: the file holds a {kind}; this command applies a "
                          f"{' or '.join(classes)}")
    return classes[kind].load(path)


def route_summaries(args: argparse.Namespace) -> None:
    """Called once per command before it runs: with ``-o -`` stdout carries the data only, so that
    ``induce tag C -o - | induce corpus stats -`` works; the summary table and ``--json`` go to stderr."""
    global _DATA_ON_STDOUT
    _DATA_ON_STDOUT = getattr(args, "output", None) == STDIO


def summary_stream():
    """Where a command's summary (table, ``--json`` without FILE, notes) is printed: stdout, or stderr while
    the data goes to stdout (:func:`route_summaries`)."""
    return sys.stderr if _DATA_ON_STDOUT else sys.stdout


def emit(result: dict, as_json, stream=None) -> None:
    """Print ``result`` as JSON or as an aligned ``key  value`` table.

    ``as_json`` is the value of ``--json [FILE]``: ``None``/``False`` prints the
    table, ``"-"``/``True`` prints JSON, a path writes JSON there (atomically)
    and prints the table.  The default ``stream`` is :func:`summary_stream`.
    """
    stream = stream or summary_stream()
    result = _plain(result)
    if isinstance(as_json, str) and as_json != "-":
        from ..atomic import atomic_write

        with atomic_write(as_json) as out:
            dump_json(result, out, indent=2)
            out.write("\n")
        as_json = False
    if as_json:
        dump_json(result, stream, indent=2)
        stream.write("\n")
        return
    _print_table(result, stream, indent="")


#: keys of rates (tokens/s, pairs/s, ...), printed with one decimal
RATE_SUFFIXES = ("_per_s", "_per_second", "_per_worker")


#: a list of more numbers than this is summarised in the text table (the JSON keeps every value)
LIST_SUMMARY_ABOVE = 8


def _cell(value, key: str = "") -> str:
    """One value of the text table: a float to 4 decimals (scores, seconds; a rate, see :data:`RATE_SUFFIXES`,
    to 1), none from 1000 on; a list comma-separated (``none`` when empty), a list of more than
    :data:`LIST_SUMMARY_ABOVE` numbers (per-state priors) as its count, range and median; a record as ``key
    value`` pairs."""
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:.0f}"
        return f"{value:.1f}" if str(key).endswith(RATE_SUFFIXES) else f"{value:.4f}"
    if isinstance(value, dict):
        return "  ".join(f"{k} {_cell(v, k)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if len(value) > LIST_SUMMARY_ABOVE and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                   for v in value):
            lo, mid, hi = float(min(value)), float(statistics.median(value)), float(max(value))
            return (f"{len(value)} values, {_cell(lo, key)} to {_cell(hi, key)}, median {_cell(mid, key)} "
                    f"(--json: all)")
        return ", ".join(_cell(v, key) for v in value) if value else "none"
    return str(value)


def _print_table(result: dict, stream, indent: str) -> None:
    """``key  value`` lines; a dict value as an indented block, a list of records (``dev_scores``) one per line."""
    width = max((len(str(k)) for k in result), default=0)
    for key, value in result.items():
        if isinstance(value, dict):
            stream.write(f"{indent}{key}:\n")
            _print_table(value, stream, indent + "  ")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            stream.write(f"{indent}{key}:\n")
            for record in value:
                stream.write(f"{indent}  {_cell(record)}\n")
        elif isinstance(value, list) and any(isinstance(v, str) and len(v) > 40 for v in value):
            stream.write(f"{indent}{key}:\n")  # long messages (warnings): one per line
            for item in value:
                stream.write(f"{indent}  - {item}\n")
        else:
            stream.write(f"{indent}{str(key).ljust(width)}  {_cell(value, key)}\n")


#: Gold tag columns in order of preference, shared by ``tag``, ``eval tags`` and
#: ``parse --use-tags``: the treebank's own (fine, PTB-style) tags first -- CoNLL-U
#: XPOS (EWT: the 45 PTB tags), the POS column of PTB / Malt / Brown / CoNLL-X files --
#: then the universal or coarse ones (UPOS, CoNLL-X CPOS), which the UD treebanks
#: without XPOS (hu_szeged, fr_gsd) fall back to.
GOLD_TAG_COLUMNS = ("xpos", "pos", "upos", "cpos")
#: The CoNLL placeholder of a missing tag.
MISSING_TAG = "_"


def gold_tag_column(columns, requested: str | None = None, option: str = "--gold-column") -> str | None:
    """The gold tag column to use among ``columns`` (name -> the distinct tags seen, e.g.
    ``corpus.tag_vocabs``): ``requested`` when given (ConfigError if absent), else the first
    of :data:`GOLD_TAG_COLUMNS` with at least two distinct tags other than ``_``, else the
    first of them present; None if none is."""
    if requested:
        if requested not in columns:
            raise ConfigError(f"{option} {requested!r} not in the input; it has {', '.join(sorted(columns)) or 'no tags'}")
        return requested
    present = [name for name in GOLD_TAG_COLUMNS if name in columns]
    informative = [name for name in present if len(set(columns[name]) - {MISSING_TAG}) >= 2]
    return (informative or present or [None])[0]


@contextlib.contextmanager
def reported_warnings(result: dict):
    """Collects the fit warnings raised inside the block (scikit-learn's ``ConvergenceWarning``,
    :class:`induce.infer.convergence.FitWarning`): each is printed as one line
    ``induce: warning: ...`` on stderr and listed under ``result["warnings"]``; other
    warnings are shown as usual."""
    from sklearn.exceptions import ConvergenceWarning

    from ..infer.convergence import FitWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    lines = []
    for w in caught:
        if issubclass(w.category, (ConvergenceWarning, FitWarning)):
            lines.append(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    lines = list(dict.fromkeys(lines))
    for line in lines:
        print(f"induce: warning: {line}", file=sys.stderr)
    if lines:
        result["warnings"] = result.get("warnings", []) + lines


#: with gold tags and no --states, K is the number of gold tags (the convention of the thesis' experiments, under
#: which M-1 and 1-1 compare like with like), at most this many: the cost of a pass grows as K^2, and a raw tag set
#: such as Brown's 472 affixed tags is not a sensible number of states
MAX_DEFAULT_STATES = 50


def default_n_states(corpus, gold_column: str | None, requested: int | None, command: str = "induce tag") -> int:
    """``requested``, or the number of ``gold_column`` tags (at most :data:`MAX_DEFAULT_STATES`), else 45 (the
    PTB tag set); says on stderr which K was chosen and why."""
    if requested is not None:
        return requested
    n_gold = len(corpus.tag_vocabs[gold_column]) if gold_column is not None else 0
    n_states = min(n_gold, MAX_DEFAULT_STATES) if n_gold else 45
    why = (f"the number of gold {gold_column} tags" if n_gold == n_states
           else f"{n_gold} gold {gold_column} tags, capped at {MAX_DEFAULT_STATES}" if n_gold else "the default")
    print(f"{command}: K = {n_states} states ({why}; --states sets K)", file=sys.stderr)
    return n_states


def add_progress_options(parser) -> None:
    """``--quiet`` and ``--progress``, the same in every training command (:func:`show_progress`)."""
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--progress", action="store_true",
                        help="draw the progress bar even when stderr is not a terminal (default: only on one)")


def show_progress(args: argparse.Namespace) -> bool:
    """Whether to draw a progress bar: ``--progress``, else on a terminal unless ``--quiet`` (a bar's ``\\r``
    updates would fill a log file)."""
    return bool(getattr(args, "progress", False)) or (not args.quiet and sys.stderr.isatty())


LEARN_HYPER = ("all", "none")


def add_learn_hyper_option(parser, help: str, default: str | None = "none", extra: tuple[str, ...] = ()) -> None:
    """``--learn-hyper all|none``, as ``tag``, ``parse`` and ``align`` take it: ``all`` learns the Dirichlet
    priors the user did not give (``--alpha`` ...) by empirical Bayes, ``none`` holds them at their defaults
    (``default=None``: the model's own default, which may differ by algorithm); ``extra``: a command's own
    further choices (``tag``: ``per-state``)."""
    parser.add_argument("--learn-hyper", choices=LEARN_HYPER + extra, default=default, help=help)


def add_base_option(parser, flag: str, what: str, old: str | None = None) -> None:
    """``--X-base {0,1}``: the index base of alignment positions, the one form every subcommand uses (default: the
    format's, naacl 1, pharaoh 0).  ``old`` keeps an earlier spelling working (``yes``/``no`` or a boolean flag)
    without listing it."""
    dest = flag.lstrip("-").replace("-", "_")
    parser.add_argument(flag, dest=dest, type=int, choices=(0, 1), default=None,
                        help=f"index base of {what} (default: the format's, naacl 1, pharaoh 0)")
    if old == "yes-no":
        parser.add_argument(flag.replace("-base", "-one-based"), dest=dest, type=_yes_no_base, help=argparse.SUPPRESS)
    elif old == "boolean":
        parser.add_argument("--one-based", dest=dest, action="store_const", const=1, help=argparse.SUPPRESS)
        parser.add_argument("--no-one-based", dest=dest, action="store_const", const=0, help=argparse.SUPPRESS)


def _yes_no_base(text: str) -> int:
    """The old ``--gold-one-based yes|no`` as an index base."""
    if text not in ("yes", "no"):
        raise argparse.ArgumentTypeError(f"expected yes or no, got {text!r}")
    return 1 if text == "yes" else 0


def one_based(base: int | None) -> bool | None:
    """The reader's ``one_based`` from an ``--X-base`` value (None: the format's default)."""
    return None if base is None else base == 1

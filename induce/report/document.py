"""One self-contained HTML page from a run dictionary.

The input is the dict a command prints with ``--json`` plus these optional keys
(all JSON-serialisable, so a run file can be rendered later by ``induce report``):

* ``trace``: list of per-iteration records (``iteration``, the objective, metrics, ...);
  string-valued fields (e.g. an aligner's ``direction``/``stage``) split the records into lines;
* ``confusion``: ``{"states": [...], "tags": [...], "counts": [[...]], "mapping": [...]}`` (see
  :func:`induce.report.payloads.confusion_data`);
* ``state_usage``: ``{"names": [...], "counts": [...]}``: tokens per induced state;
* ``trees``: ``[{"predicted": "(S ...)", "gold": "(S ...)" or null}, ...]``;
* ``dependencies``: ``[{"words": [...], "heads": [...], "gold": [...] or null}, ...]`` (heads 1-based, 0 = root);
* ``alignments``: ``[{"source": [...], "target": [...], "links": [[i, j], ...], "sure": [...], "possible": [...]}]``;
* ``series``: ``{"values": (T,) or (T, D), "states": (T,), "names": [...], "time": (T,)}``;
* ``runs``, ``summary``: the head-to-head runs of :func:`induce.compare.compare`.

Every other scalar is a run setting, unless its name is a metric (or a nested dict
holds metrics), in which case it goes to the metrics table.  Each section is an
``<section id=...>`` (ids in :data:`SECTION_IDS`) present only when it has data;
settings and metrics are always there.  No external URL is referenced: figures
are inline SVG.
"""

from __future__ import annotations

import json
import math
from html import escape
from typing import Any

import numpy as np

from ..atomic import atomic_write
from ..cli.common import _plain
from ..algorithms.loop import OBJECTIVES
from . import drawings, figures

PAYLOAD_KEYS = ("trace", "confusion", "state_usage", "trees", "dependencies", "alignments", "series", "runs",
                "summary", "title")
METRIC_NAMES = {"m1", "m1_cv", "1to1", "1to1_greedy", "vi", "vm", "homogeneity", "completeness", "accuracy",
                "precision", "recall", "f1", "exact", "aer", "directed", "undirected", "perplexity",
                "acceptance_rate", "effective_states", "states_used", "predictive_log_likelihood", "log_likelihood"}
#: trace fields that are bookkeeping, not curves
NOT_CURVES = {"iteration", "seconds", "tokens_per_s", "tokens", "tags", "states", "tokens_seen", "epoch"}
SECTION_IDS = ("settings", "metrics", "convergence", "confusion", "state-usage", "trees", "dependencies",
               "alignments", "series", "runs")
MAX_EXAMPLES = 5

_CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1150px; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: .2em .8em; border-bottom: 1px solid #eee;
text-align: left; } table.grid td { white-space: nowrap; } table.grid th { vertical-align: bottom; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
nav a { margin-right: 1em; } .example { margin: .8em 0; overflow-x: auto; } .note { color: #666; font-size: .9em; }
svg { max-width: 100%; height: auto; }
"""


def is_metric(name: str) -> bool:
    """A metric is a known score name or any log-likelihood / objective / ELBO."""
    return name in METRIC_NAMES or any(s in name for s in ("log_likelihood", "objective", "elbo"))


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def split_settings(run: dict) -> tuple[dict, dict]:
    """``(settings, metrics)`` of a run dict (payload keys dropped, nested dicts flattened to ``a.b``)."""
    settings, metrics = {}, {}
    for key, value in run.items():
        if key in PAYLOAD_KEYS:
            continue
        if isinstance(value, dict):
            flat = _flatten(value, f"{key}.")
            target = metrics if any(is_metric(k.rsplit(".", 1)[-1]) for k in flat) else settings
            target.update(flat)
        else:
            (metrics if is_metric(key) else settings)[key] = value
    return settings, metrics


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4f}" if math.isfinite(value) and abs(value) < 1e5 else f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return _fmt_list(list(value))
    return str(value)


#: a list longer than this is summarised in a table cell (its head, its tail, its length and range)
LONG_LIST = 8


def _fmt_list(value: list) -> str:
    """A list as JSON, or past :data:`LONG_LIST` entries its first three and last two with the count (and, for
    numbers, the minimum and maximum): ``[5, 3, 9, …, 2, 7] (1000 values, min 0, max 41)``."""
    if len(value) <= LONG_LIST:
        return json.dumps(value, default=str)
    ends = [json.dumps(v, default=str) for v in value[:3]] + ["\u2026"] + [json.dumps(v, default=str)
                                                                          for v in value[-2:]]
    numbers = [v for v in value if _numeric(v)]
    extent = f", min {_fmt(min(numbers))}, max {_fmt(max(numbers))}" if len(numbers) == len(value) else ""
    return f"[{', '.join(ends)}] ({len(value)} {'values' if extent else 'items'}{extent})"


def _table(rows: dict) -> str:
    body = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(_fmt(v))}</td></tr>" for k, v in rows.items())
    return f"<table>{body}</table>"


def _breakable(name: str) -> str:
    """``name`` escaped, with a line-break opportunity after each ``_`` and ``.`` (long column names wrap)."""
    return escape(name).replace("_", "_<wbr>").replace(".", ".<wbr>")


def _grid_table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_breakable(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td class="num">{escape(_fmt(c))}</td>' if not isinstance(c, str)
                                    else f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="grid"><tr>{head}</tr>{body}</table>'


def _numeric(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def trace_lines(trace: list[dict]) -> dict[str, dict[str, tuple[list, list]]]:
    """Per quantity, per line (the record's string fields joined; ``""`` for one line): its ``(x, y)`` points.

    ``x`` is the record's ``iteration`` (else its ``epoch``, else its position in its line).
    """
    panels: dict[str, dict[str, tuple[list, list]]] = {}
    position: dict[str, int] = {}
    for rec in trace:
        line = " / ".join(str(v) for v in rec.values() if isinstance(v, str))
        position[line] = position.get(line, 0) + 1
        x = rec.get("iteration", rec.get("epoch", position[line]))
        for key, value in rec.items():
            if key in NOT_CURVES or key == "effective_states" or not _numeric(value):
                continue
            xs, ys = panels.setdefault(key, {}).setdefault(line, ([], []))
            xs.append(x)
            ys.append(value)
    return panels


def _moves(lines: dict[str, tuple[list, list]]) -> bool:
    """Whether a panel is worth drawing: some line has two or more points and takes two or more values (a
    hyperparameter held fixed is a flat line, and gets no panel; its value is in the settings table)."""
    return any(len(xs) > 1 and len(set(ys)) > 1 for xs, ys in lines.values())


def _section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}"><h2>{escape(title)}</h2>{body}</section>'


def _convergence(trace: list[dict]) -> str | None:
    """Curves of every traced quantity with two or more points (a note when the trace has none)."""
    if not trace:
        return None
    panels = {k: v for k, v in trace_lines(trace).items() if _moves(v)}
    body = (figures.curves_svg(panels, "iteration") if panels else
            f'<p class="note">{len(trace)} iterations traced, with no objective or metric recorded per '
            "iteration (e.g. the aligner's CVI passes).</p>")
    return _section("convergence", "Convergence", body)


def _confusion(data: dict) -> str:
    counts = np.asarray(data["counts"])
    svg = figures.heatmap_svg(counts, data["states"], data["tags"], data["mapping"])
    total = counts.sum()
    m1 = counts[np.arange(len(data["mapping"])), data["mapping"]].sum() / max(total, 1)
    mapping = ", ".join(f"{s}\u2192{data['tags'][g]}" for s, g in zip(data["states"], data["mapping"]))
    return _section("confusion", "Induced states \u00d7 gold tags", svg +
                    f'<p class="note">Colour: share of each state\'s tokens per gold tag; outlined: the many-to-one '
                    f"mapping (many-to-one accuracy {m1:.4f} over {total} tokens).</p>"
                    f'<p class="note">Mapping: {escape(mapping)}</p>')


def _state_usage(run: dict) -> str | None:
    parts = []
    usage = run.get("state_usage")
    if usage:
        parts.append(figures.bars_svg(usage["names"], usage["counts"], "tokens per induced state", "state",
                                      "tokens"))
    effective = [(r.get("iteration", i + 1), r["effective_states"]) for i, r in enumerate(run.get("trace") or [])
                 if _numeric(r.get("effective_states"))]
    if effective:  # a line (one panel of fixed size) however many iterations
        xs, ys = zip(*effective)
        parts.append(figures.curves_svg({"effective states per iteration": {"": (list(xs), list(ys))}}, "iteration"))
    return _section("state-usage", "State usage", "".join(parts)) if parts else None


def _examples(run: dict) -> list[str]:
    out = []
    trees = run.get("trees") or []
    if trees:
        body = "".join(
            '<div class="example"><p class="note">predicted</p>' + drawings.tree_svg(t["predicted"])
            + (('<p class="note">gold</p>' + drawings.tree_svg(t["gold"])) if t.get("gold") else "") + "</div>"
            for t in trees[:MAX_EXAMPLES])
        out.append(_section("trees", "Example trees", body))
    deps = run.get("dependencies") or []
    if deps:
        body = "".join(f'<div class="example">{drawings.dependency_svg(d["words"], d["heads"], d.get("gold"))}</div>'
                       for d in deps[:MAX_EXAMPLES])
        out.append(_section("dependencies", "Example dependency arcs", body +
                            '<p class="note">Above: predicted (blue: correct, red: wrong); below: gold.</p>'))
    aligns = run.get("alignments") or []
    if aligns:
        body = "".join('<div class="example">' + drawings.alignment_svg(a["source"], a["target"], a["links"],
                                                                        a.get("sure"), a.get("possible"))
                       + "</div>" for a in aligns[:MAX_EXAMPLES])
        out.append(_section("alignments", "Example alignment grids", body +
                            '<p class="note">Filled: predicted links; red outline: gold sure; dashed: gold '
                            "possible.</p>"))
    series = run.get("series")
    if series:
        svg = figures.series_svg(np.asarray(series["values"]), np.asarray(series["states"]), series.get("names"),
                                 None if series.get("time") is None else np.asarray(series["time"]))
        out.append(_section("series", "Series coloured by state", svg))
    return out


def _compare_sections(run: dict) -> list[str]:
    """The head-to-head table, the curves of every run overlaid (one colour per algorithm) and the run list."""
    summary = run["summary"]
    names = list(dict.fromkeys(k for stats in summary.values() for k in stats))
    rows = [[k] + [f"{s[k]['mean']:.4f} \u00b1 {s[k]['sd']:.4f}" if k in s else "" for s in summary.values()]
            for k in names]
    out = [_section("metrics", "Head to head (mean \u00b1 sd over seeds)", _grid_table([""] + list(summary), rows))]
    palette = figures.colormap(figures.PALETTE)
    colors = {infer: palette(i % 10) for i, infer in enumerate(summary)}
    panels: dict[str, dict] = {}
    for r in run["runs"]:
        for key, lines in trace_lines(r.get("trace") or []).items():
            for _, xy in lines.items():
                panels.setdefault(key, {})[f"{r.get('label', r['infer'])} #{r['seed']}"] = xy
    objective, names = _shared_objective(panels, run.get("tokens"))
    panels = objective | {k: v for k, v in panels.items() if _moves(v)}
    if panels:
        note = ("" if not names else '<p class="note">objective: each algorithm\'s own, on one axis ('
                + escape("; ".join(f"{a}: {k}" for a, k in names.items())) + ")</p>")
        out.append(_section("convergence", "Convergence, every run",
                            figures.curves_svg(panels, "iteration", colors) + note))
    keys = list(dict.fromkeys(k for r in run["runs"] for k in r if k != "trace"))
    out.append(_section("runs", "Runs", '<div class="example">' + _grid_table(
        keys, [[r.get(k, "") for k in keys] for r in run["runs"]]) + "</div>"))
    return out


#: the trace keys that may hold an algorithm's objective, in order of preference (svi's: held-out per token)
OBJECTIVE_KEYS = OBJECTIVES + ("heldout_log_likelihood_per_token",)


def _shared_objective(panels: dict[str, dict], tokens) -> tuple[dict, dict]:
    """``({title: lines}, {algorithm: key})``: the runs' objectives moved out of ``panels`` into one panel, so
    that the algorithms share its axis (each run's first :data:`OBJECTIVE_KEYS` key; totals divided by the
    corpus's ``tokens`` when known, so that they meet the per-token objectives of svi)."""
    lines, names = {}, {}
    for key in OBJECTIVE_KEYS:
        for label, (xs, ys) in list(panels.get(key, {}).items()):
            if label in lines:
                continue
            scale = 1.0 if key.endswith("_per_token") or not tokens else 1.0 / tokens
            lines[label] = (xs, [y * scale for y in ys])
            names.setdefault(label.split(" #")[0], key)
            del panels[key][label]
    if not lines:
        return {}, {}
    title = "objective per token" if tokens or all(k.endswith("_per_token") for k in names.values()) else "objective"
    return {title: lines}, names


def render_report(run: dict, title: str | None = None) -> str:
    """The HTML page (a string) for ``run`` (see the module docstring for its keys)."""
    figures.require_matplotlib()  # fail early, with the install hint, when matplotlib is missing
    settings, metrics = split_settings(run)
    title = title or run.get("title") or f"induce {run.get('command', 'run')} report"
    sections = [_section("settings", "Run settings", _table(settings))]
    if "runs" in run and "summary" in run:
        sections += _compare_sections(run)
    else:
        sections.append(_section("metrics", "Metrics", _table(metrics) if metrics
                                 else '<p class="note">no metrics (no gold annotation)</p>'))
        trace = run.get("trace") or []
        for part in (_convergence(trace), _confusion(run["confusion"]) if run.get("confusion") else None,
                     _state_usage(run)):
            if part:
                sections.append(part)
        sections += _examples(run)
    ids = [s.split('"', 2)[1] for s in sections]
    nav = "".join(f'<a href="#{i}">{escape(i)}</a>' for i in ids)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{escape(title)}</h1><nav>{nav}</nav>"
            + "".join(sections) + "</body></html>\n")


def write_report(path, run: dict, title: str | None = None) -> str:
    """Render ``run`` and write it atomically to ``path``; returns ``path``."""
    html = render_report(_plain(run), title)
    with atomic_write(path) as out:
        out.write(html)
    return str(path)

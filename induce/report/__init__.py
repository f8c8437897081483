"""Self-contained HTML reports of runs: settings, metrics, convergence curves, the
state x gold-tag heat map, state usage, example trees / arcs / alignment grids and
time series coloured by state (docs/experiments/report.md).

``write_report(path, run)`` renders a run dict (what a command prints with
``--json``, plus the optional payload keys of :mod:`induce.report.document`);
:mod:`induce.report.payloads` builds those payloads from models and corpora.
Figures need matplotlib (``pip install induce[plot]``).
"""

from .document import SECTION_IDS, render_report, split_settings, write_report
from .payloads import (alignment_examples, confusion_data, parse_examples, series_data, state_usage_data,
                       tagging_data)

__all__ = ["SECTION_IDS", "alignment_examples", "confusion_data", "parse_examples", "render_report",
           "series_data", "split_settings", "state_usage_data", "tagging_data", "write_report"]

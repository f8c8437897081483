"""The report pages of tag, parse, align, segment and compare, rendered in headless Chromium at 1,400 px wide:
no element past the window's edge or clipping its content, no two blocks of a section overlapping, no two
texts of a figure overlapping or cut by its edge, no legend over a plot (issue 39).  The boxes are read by
``layout_check.js``, run in the page after layout; ``--dump-dom`` returns what it found.  Skipped without a
Chromium binary (Debian: ``apt-get install chromium``)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from induce.report import confusion_data, render_report, state_usage_data

from .test_report import ALIGN_RUN, PARSE_RUN, series_run, tagging_run

pytest.importorskip("matplotlib")

CHECK = (Path(__file__).parent / "layout_check.js").read_text()
WIDTH = 1400


def _browser() -> str | None:
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def _trace(n: int, **extra) -> list[dict]:
    """``n`` passes of a tagger's trace: the objective, a score and (HDP) the effective states."""
    return [{"iteration": i + 1, "log_likelihood": -9e4 + 8e4 * (1 - np.exp(-i / 40)), "seconds": 0.1,
             "m1": 0.3 + 0.4 * (1 - np.exp(-i / 60)), **extra} for i in range(n)]


def pages() -> dict[str, dict]:
    """A run of every command, sized like real ones where size matters: a 300-pass HDP trace, 45 states,
    a 1,000-entry vector setting, long sentences, a 4-state 2-column series, three algorithms in compare."""
    rng = np.random.default_rng(1)
    pred = rng.integers(0, 45, 20000)
    gold = (pred // 3 + rng.integers(0, 2, 20000)) % 16
    names, tags = [f"S{k}" for k in range(45)], ["NN", "IN", "DT", "NNP", "JJ", "NNS", ",", ".", "CD", "RB", "VBD",
                                                   "VB", "CC", "TO", "VBZ", "VBN"]
    tag = tagging_run() | {"trace": [r | {"effective_states": 45 - i // 10} for i, r in enumerate(_trace(300))],
                           "state_counts": list(range(1000)), "gamma": 9.13, "sigma": 1.56,
                           "confusion": confusion_data(pred, gold, names, tags),
                           "state_usage": state_usage_data(pred, names)}
    words = "the old man who lived by the sea sold his boat to a young fisher from the north".split()
    parse = PARSE_RUN | {"dependencies": PARSE_RUN["dependencies"] + [
        {"words": words, "heads": [3, 3, 0] + [3] * (len(words) - 3), "gold": [3, 3, 0] + [5] * (len(words) - 3)}]}
    align = ALIGN_RUN | {"alignments": ALIGN_RUN["alignments"] + [
        {"source": words, "target": words[::-1], "links": [[i, len(words) - 1 - i] for i in range(len(words))]}]}
    states = np.repeat(rng.integers(0, 4, 30), 10)
    series = series_run() | {"series": {"values": (states[:, None] * [3.0, -2.0] + rng.normal(size=(300, 2))).tolist(),
                                        "states": states.tolist(), "names": ["waiting", "duration"]}}
    runs = []
    for infer, key in (("em", "log_posterior"), ("cvi2", "predictive_log_likelihood"),
                       ("svi", "heldout_log_likelihood_per_token")):
        for seed in (0, 1):
            trace = [{"iteration" if infer != "svi" else "epoch": i + 1, key: (-4.5 + 0.3 * i / 15) * (
                1 if infer == "svi" else 20858), "m1": 0.3 + 0.01 * i + 0.02 * seed} for i in range(15)]
            runs.append({"infer": infer, "seed": seed, "seconds": 1.5, "predictive_log_likelihood_per_token": -4.0,
                         "states_used": 10, "m1": 0.5, "m1_cv": 0.5, "1to1": 0.4, "1to1_greedy": 0.4, "vi": 2.5,
                         "homogeneity": 0.5, "completeness": 0.7, "vm": 0.6, "trace": trace})
    summary = {a: {"m1": {"mean": 0.5, "sd": 0.01, "n": 2}} for a in ("em", "cvi2", "svi")}
    compare = {"command": "compare", "input": "demo", "tokens": 20858, "runs": runs, "summary": summary}
    return {"tag": tag, "parse": parse, "align": align, "segment": series, "compare": compare}


def layout_problems(browser: str, page: Path) -> list[str]:
    """What ``layout_check.js`` finds in ``page`` at :data:`WIDTH` px."""
    checked = page.with_suffix(".checked.html")
    checked.write_text(page.read_text().replace("</body>", f"<script>{CHECK}</script></body>"))
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={WIDTH},1000", "--dump-dom", checked.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="layout-problems">(.*?)</pre>', done.stdout, re.S)
    assert found, f"{page.name}: the layout check did not run: {done.stderr[-1500:]}"
    return json.loads(html.unescape(found.group(1)))


#: a page with each kind of problem, to show that the check finds them
BAD_PAGE = ('<!DOCTYPE html><html><body><section id="a"><div style="width:2000px">wide</div>'
            '<div style="overflow-x:auto;width:100px"><table><tr><td style="white-space:nowrap">' + "x" * 200
            + '</td></tr></table></div><svg width="200" height="100"><g id="axes_1"><g id="patch_1"><rect '
            'width="100" height="80"/></g></g><g id="legend_1"><text x="20" y="40">label</text></g><text x="22" '
            'y="42">other</text></svg></section></body></html>')


def test_report_pages_have_no_overlapping_or_clipped_elements(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium binary on PATH (chromium, chromium-browser or google-chrome; Debian: "
                    "apt-get install chromium)")
    paths = [tmp_path / "bad.html"]
    paths[0].write_text(BAD_PAGE)
    for name, run in pages().items():
        paths.append(tmp_path / f"{name}.html")
        paths[-1].write_text(render_report(run))
    with ThreadPoolExecutor(len(paths)) as pool:  # one browser per page, side by side
        found = dict(zip((p.stem for p in paths), pool.map(lambda p: layout_problems(browser, p), paths)))
    bad = " | ".join(found.pop("bad"))
    for expected in ("past the window's edge: div", "clips its content: div", "texts overlap", "legend over a plot"):
        assert expected in bad, bad  # the check finds each kind of problem
    assert found == {name: [] for name in found}

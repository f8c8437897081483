"""The HTML report: every section for tagging, parsing, alignment, time-series and compare payloads,
hand-checked contingency tables, no external references, the CLI entry points, and a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest

from induce.cli import main
from induce.corpus.formats import load_corpus
from induce.errors import ConfigError
from induce.eval.tagging import many_to_one
from induce.report import confusion_data, render_report, series_data, split_settings, write_report

pytest.importorskip("matplotlib")


class _Sections(HTMLParser):
    """Section ids, the number of ``<svg>`` per section, and every src/href value."""

    def __init__(self):
        super().__init__()
        self.svgs: dict[str, int] = {}
        self.links: list[str] = []
        self.current = None
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.current = attrs["id"]
            self.svgs[self.current] = 0
        elif tag == "svg" and self.current is not None:
            self.svgs[self.current] += 1
        self.links += [v for k, v in attrs.items() if k in ("src", "href", "xlink:href") and v]
        self._in_title = tag == "title"

    def handle_data(self, data):
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag):
        if tag == "section":
            self.current = None
        self._in_title = False


def sections(html: str) -> _Sections:
    parser = _Sections()
    parser.feed(html)
    # self-contained: only in-page anchors and inline data
    assert all(link.startswith(("#", "data:")) for link in parser.links), parser.links
    assert "<script" not in html and "url(http" not in html
    return parser


def _trace(n=4, **extra):
    return [{"iteration": i + 1, "log_likelihood": -100.0 + 10 * i, "seconds": 0.1, "m1": 0.3 + 0.05 * i,
             **extra} for i in range(n)]


def tagging_run():
    rng = np.random.default_rng(0)
    pred = rng.integers(0, 6, 500)
    gold = (pred + rng.integers(0, 2, 500)) % 4
    return {"command": "tag", "input": "x.conll", "infer": "cvi2", "states": 6, "m1": many_to_one(pred, gold),
            "trace": _trace(), "state_usage": {"names": [f"S{k}" for k in range(6)],
                                               "counts": np.bincount(pred, minlength=6).tolist()},
            "confusion": confusion_data(pred, gold, [f"S{k}" for k in range(6)], ["NN", "VB", "DT", "JJ"])}


PARSE_RUN = {"command": "parse", "model": "pcfg", "infer": "vi", "unlabeled_brackets": {"f1": 0.5, "precision": 0.4},
             "trace": _trace(),
             "trees": [{"predicted": "(S (X (Y the) (Y dog)) (Y barks))", "gold": "(S (NP the dog) (VP barks))"}],
             "dependencies": [{"words": ["the", "dog", "barks"], "heads": [2, 3, 0], "gold": [2, 3, 0]},
                              {"words": ["a", "b"], "heads": [0, 1], "gold": None}]}
ALIGN_RUN = {"command": "align", "pairs": 2, "scores": {"aer": 0.25},
             "trace": [{"direction": d, "stage": "ibm1", "iteration": i, "log_likelihood": -50.0 + i}
                       for d in ("forward", "reverse") for i in (1, 2, 3)],
             "alignments": [{"source": ["le", "chien"], "target": ["the", "dog"], "links": [[0, 0], [1, 1]],
                             "sure": [[0, 0]], "possible": [[0, 0], [1, 1]]}]}


def series_run():
    rng = np.random.default_rng(1)
    states = np.repeat([0, 1, 0, 2], 50)
    values = np.array([0.0, 5.0, 10.0])[states][:, None] + rng.normal(size=(200, 2))
    return {"command": "segment", "log_likelihood": -321.0, "trace": _trace(),
            **series_data(values, states, ["eruptions", "waiting"])}


@pytest.mark.parametrize("run, expected", [
    (tagging_run(), {"settings", "metrics", "convergence", "confusion", "state-usage"}),
    (PARSE_RUN, {"settings", "metrics", "convergence", "trees", "dependencies"}),
    (ALIGN_RUN, {"settings", "metrics", "convergence", "alignments"}),
    (series_run(), {"settings", "metrics", "convergence", "series"}),
], ids=["tagging", "parsing", "alignment", "series"])
def test_every_section_is_present_and_self_contained(run, expected):
    parsed = sections(render_report(run))
    assert set(parsed.svgs) == expected
    figures = {k: v for k, v in parsed.svgs.items() if k not in ("settings", "metrics")}
    assert all(n >= 1 for n in figures.values()), figures
    assert parsed.title == f"induce {run['command']} report"


def test_section_contents():
    html = render_report(PARSE_RUN)
    parsed = sections(html)
    assert parsed.svgs["trees"] == 2 and parsed.svgs["dependencies"] == 2  # predicted + gold tree; two sentences
    assert ">barks</text>" in html and ">VP</text>" in html
    align = render_report(ALIGN_RUN)
    assert "forward / ibm1" in align and "reverse / ibm1" in align  # one line per direction and stage
    settings, metrics = split_settings(PARSE_RUN)
    assert metrics == {"unlabeled_brackets.f1": 0.5, "unlabeled_brackets.precision": 0.4}
    assert settings == {"command": "parse", "model": "pcfg", "infer": "vi"}


def test_trace_without_quantities_gets_a_note():
    run = dict(ALIGN_RUN, trace=[{"direction": "forward", "stage": "hmm-cvi2", "iteration": i} for i in (1, 2)])
    html = render_report(run)
    assert sections(html).svgs["convergence"] == 0 and "2 iterations traced" in html


def test_words_are_escaped():
    run = dict(PARSE_RUN, trees=[], dependencies=[{"words": ["<b>", "&"], "heads": [0, 1], "gold": None}])
    html = render_report(run)
    assert "&lt;b&gt;" in html and "<b>" not in html


def test_confusion_data_by_hand():
    # states 0, 1, 2 (names S0..S2); gold ids 0 (NN, 3 tokens), 1 (VB, 2 tokens)
    pred = np.array([0, 0, 1, 1, 2, 2])
    gold = np.array([0, 0, 0, 1, 1, 1])
    data = confusion_data(pred, gold, ["S0", "S1", "S2"], ["NN", "VB"])
    assert data["tags"] == ["NN", "VB"]  # NN before VB: ties keep id order (3 tokens each)
    rows = dict(zip(data["states"], data["counts"]))
    assert rows == {"S0": [2, 0], "S1": [1, 1], "S2": [0, 2]}
    mapped = {s: data["tags"][m] for s, m in zip(data["states"], data["mapping"])}
    assert mapped == {"S0": "NN", "S1": "NN", "S2": "VB"}  # S1's tie goes to the smaller gold id
    counts = np.array(data["counts"])
    m1 = counts[np.arange(3), data["mapping"]].sum() / counts.sum()
    assert m1 == pytest.approx(many_to_one(pred, gold)) == pytest.approx(5 / 6)


def test_hdp_trace_gives_effective_state_bars():
    run = {"command": "tag", "trace": _trace(effective_states=7)}
    parsed = sections(render_report(run))
    assert parsed.svgs["state-usage"] == 1 and "effective states per iteration" in render_report(run)


def test_compare_payload():
    runs = [{"infer": a, "seed": s, "seconds": 1.0 + s, "m1": 0.5 + 0.1 * s, "trace": _trace()}
            for a in ("em", "cvi2") for s in (0, 1)]
    summary = {a: {"seconds": {"mean": 1.5, "sd": 0.7071, "n": 2}, "m1": {"mean": 0.55, "sd": 0.0707, "n": 2}}
               for a in ("em", "cvi2")}
    html = render_report({"command": "compare", "input": "demo", "runs": runs, "summary": summary})
    assert set(sections(html).svgs) == {"settings", "metrics", "convergence", "runs"}
    assert "0.5500 \u00b1 0.0707" in html
    # one legend above the panels, one entry per algorithm (not per run, not per panel)
    convergence = html[html.index('id="convergence"'):html.index('id="runs"')]
    assert re.findall(r"<text[^>]*>([^<]*)</text>", convergence).count("em") == 1
    # the objectives share one panel, per token: em's log-likelihood total over its tokens beside svi's per token
    svi = [{"infer": "svi", "seed": 0, "m1": 0.5, "trace": [{"epoch": e, "heldout_log_likelihood_per_token": -4.0 + e}
                                                           for e in (1, 2)]}]
    html = render_report({"command": "compare", "tokens": 100, "runs": runs + svi,
                          "summary": summary | {"svi": summary["em"]}})
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", html)
    assert "objective per token" in texts and "log_likelihood" not in texts
    assert "em: log_likelihood; cvi2: log_likelihood; svi: heldout_log_likelihood_per_token" in html


def test_long_vectors_are_summarised():
    settings = render_report({"command": "tag", "state_counts": list(range(1000)), "names": list("abcdefghij"),
                              "short": [1, 2, 3]})
    assert "[0, 1, 2, \u2026, 998, 999] (1000 values, min 0, max 999)" in settings
    assert '[&quot;a&quot;, &quot;b&quot;, &quot;c&quot;, \u2026, &quot;i&quot;, &quot;j&quot;] (10 items)' in settings
    assert "[1, 2, 3]" in settings


def test_series_payload_is_checked():
    with pytest.raises(ConfigError, match="shape"):
        series_data(np.zeros(5), np.zeros(4, dtype=int))
    with pytest.raises(ConfigError, match="integer"):
        series_data(np.zeros(5), np.zeros(5))


def test_global_matplotlib_state_is_left_alone():
    import matplotlib

    before = (matplotlib.get_backend(), dict(matplotlib.rcParams))
    render_report(tagging_run())
    assert (matplotlib.get_backend(), dict(matplotlib.rcParams)) == before


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ConfigError, match=r"pip install induce\[plot\]"):
        render_report(PARSE_RUN)


def test_report_command(tmp_path, capsys):
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps(series_run()))
    assert main(["report", str(run_file)]) == 0
    out = tmp_path / "run.html"
    assert capsys.readouterr().out.strip() == str(out)
    assert "series" in sections(out.read_text()).svgs
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,\n  oops}')
    assert main(["report", str(bad), "-o", str(tmp_path / "x.html")]) == 2
    assert "bad.json:2: expected a JSON run file" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_tag_report_and_report_from_the_tagged_corpus(tmp_path, capsys):
    html, tagged, run_file = tmp_path / "tag.html", tmp_path / "tagged.conllu", tmp_path / "run.json"
    assert main(["tag", "demo", "--states", "5", "--iterations", "3", "--eval-every", "1", "--quiet",
                 "--report", str(html), "-o", str(tagged), "--format", "auto", "--json", str(run_file)]) == 0
    capsys.readouterr()
    first = sections(html.read_text())
    assert set(first.svgs) == {"settings", "metrics", "convergence", "confusion", "state-usage"}
    again = tmp_path / "again.html"
    assert main(["report", str(run_file), "--corpus", str(tagged), "-o", str(again)]) == 0
    text = again.read_text()
    assert set(sections(text).svgs) == set(first.svgs)
    assert f"over {20858} tokens" in text  # the demo corpus, every token in the heat map


def test_stream_has_no_report(tmp_path, capsys):
    assert main(["tag", "demo", "--stream", "--infer", "svi", "--report", str(tmp_path / "r.html")]) == 2
    assert "--report" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


def test_parse_and_align_reports(tmp_path, capsys):
    assert main(["parse", "demo", "--model", "dmv", "--use-tags", "--iterations", "2", "--quiet",
                 "-o", str(tmp_path / "p.conll"), "--report", str(tmp_path / "p.html")]) == 0
    assert set(sections((tmp_path / "p.html").read_text()).svgs) == {"settings", "metrics", "convergence",
                                                                     "dependencies"}
    from induce.corpus.writers import write_ptb

    write_ptb(tmp_path / "small.mrg", [s.tree for s in load_corpus("demo").head(40).sentences])
    assert main(["parse", str(tmp_path / "small.mrg"), "--model", "pcfg", "--nonterminals", "3", "--iterations",
                 "2", "--quiet", "-o", str(tmp_path / "t.mrg"), "--report", str(tmp_path / "t.html")]) == 0
    html = (tmp_path / "t.html").read_text()
    assert set(sections(html).svgs) == {"settings", "metrics", "convergence", "trees"}
    assert sections(html).svgs["trees"] == 6  # three sentences, predicted and gold
    src, tgt, gold = tmp_path / "s", tmp_path / "t", tmp_path / "g"
    src.write_text("le chien noir\nle chat\nun chien\n" * 3)
    tgt.write_text("the black dog\nthe cat\na dog\n" * 3)
    gold.write_text("0-0 1-2 2-1\n0-0 1-1\n0-0 1-1\n")
    assert main(["align", str(src), str(tgt), "--model", "ibm1", "--infer", "em", "--iterations", "3", "--quiet",
                 "-o", str(tmp_path / "a"), "--gold", str(gold), "--gold-format", "pharaoh",
                 "--report", str(tmp_path / "a.html")]) == 0
    html = (tmp_path / "a.html").read_text()
    assert set(sections(html).svgs) == {"settings", "metrics", "convergence", "alignments"}
    capsys.readouterr()


def _browser() -> str | None:
    return next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def test_report_renders_in_headless_chromium(tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless Chromium on PATH (Debian: apt-get install chromium)")
    import matplotlib.image

    run = tagging_run() | {k: v for k, v in PARSE_RUN.items() if k in ("trees", "dependencies")} \
        | {"alignments": ALIGN_RUN["alignments"], "series": series_run()["series"]}
    page, shot = tmp_path / "report.html", tmp_path / "shot.png"
    write_report(page, run)
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--screenshot={shot}", "--window-size=1200,3000", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (3000, 1200)
    assert pixels[..., :3].std() > 0.05  # not blank: text, curves and heat map drawn
    # ink reaches far down the page: the figures rendered, not just the first table
    dark_rows = np.flatnonzero((pixels[..., :3].mean(axis=2) < 0.5).any(axis=1))
    assert dark_rows.max() > 2000

"""``induce compare``: the summary statistics by hand, and a small head-to-head run on the demo corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest

from induce.cli import main
from induce.compare import compare, summarise
from induce.corpus.formats import load_corpus
from induce.errors import ConfigError
from induce.eval.tagging import tagging_report
from induce.taggers import HMMTagger


def test_summarise_by_hand():
    runs = [{"infer": "em", "seed": 0, "m1": 0.5, "seconds": 2.0, "trace": []},
            {"infer": "em", "seed": 1, "m1": 0.7, "seconds": 4.0, "trace": []},
            {"infer": "cgs", "seed": 0, "m1": 0.6, "seconds": 1.0, "trace": []}]
    summary = summarise(runs)
    assert list(summary) == ["em", "cgs"]
    assert summary["em"]["m1"] == pytest.approx({"mean": 0.6, "sd": 0.2 / np.sqrt(2), "n": 2})
    assert summary["em"]["seconds"]["mean"] == 3.0
    assert summary["cgs"]["m1"] == {"mean": 0.6, "sd": 0.0, "n": 1}
    assert "seed" not in summary["em"] and "trace" not in summary["em"]


def test_unknown_algorithm_is_a_config_error(tmp_path, capsys):
    with pytest.raises(ConfigError, match="nope"):
        compare(load_corpus("demo").head(5), ["em", "nope"], 1)
    assert main(["compare", "demo", "--infer", "em,nope", "--seeds", "1", "--quiet"]) == 2
    assert "unknown inference algorithm" in capsys.readouterr().err


def test_compare_on_demo(tmp_path, capsys):
    out, page = tmp_path / "cmp.json", tmp_path / "cmp.html"
    assert main(["compare", "demo", "--infer", "em,cvi2", "--seeds", "2", "--states", "6", "--iterations", "3",
                 "--quiet", "--json", str(out), "--report", str(page)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["em", "cvi2"]
    rows = {line.split()[0]: line for line in table[1:]}
    assert {"m1", "vm", "seconds", "predictive_log_likelihood_per_token"} <= set(rows)
    assert rows["m1"].count("\u00b1") == 2
    result = json.loads(out.read_text())
    runs = result["runs"]
    assert [(r["infer"], r["seed"]) for r in runs] == [("em", 0), ("em", 1), ("cvi2", 0), ("cvi2", 1)]
    assert all(len(r["trace"]) == 3 and "m1" in r["trace"][-1] for r in runs)
    for algorithm in ("em", "cvi2"):
        m1 = [r["m1"] for r in runs if r["infer"] == algorithm]
        assert result["summary"][algorithm]["m1"]["mean"] == pytest.approx(np.mean(m1))
        assert result["summary"][algorithm]["m1"]["sd"] == pytest.approx(np.std(m1, ddof=1))
    # each run is the tagger `induce tag` fits with the same settings and seed
    corpus = load_corpus("demo")
    model = HMMTagger(n_states=6, infer="cvi2", n_iter=3, random_state=1).fit(corpus)
    assert runs[3]["m1"] == pytest.approx(tagging_report(model.labels_, corpus.tags["xpos"])["m1"])
    assert runs[3]["predictive_log_likelihood_per_token"] == pytest.approx(model.predictive_log_likelihood(corpus))
    html = page.read_text()
    assert 'id="convergence"' in html and 'id="runs"' in html
    assert main(["report", str(out), "-o", str(tmp_path / "again.html")]) == 0  # the JSON file renders alike
    again = (tmp_path / "again.html").read_text()
    assert all(f'id="{i}"' in again for i in ("settings", "metrics", "convergence", "runs"))
    capsys.readouterr()
    assert main(["compare", "demo", "--infer", "cvi2", "--seeds", "1", "--states", "6", "--iterations", "1",
                 "--quiet", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "trace" not in printed["runs"][0] and printed["summary"]["cvi2"]["m1"]["n"] == 1


def test_compare_emission_families_side_by_side(tmp_path, capsys):
    """``--emission categorical,features``: each family with the algorithms of --infer it trains with (features:
    em), columns named family/algorithm, each run the tagger `induce tag --emission ...` fits."""
    corpus = load_corpus("demo").head(40)
    result = compare(corpus, ["em", "cvi2"], 1, gold_column="xpos", n_states=5, n_iter=3,
                     emission=["categorical", "features"], feature_l2=0.5)
    assert list(result["summary"]) == ["em", "cvi2", "features/em"]
    run = result["runs"][-1]
    assert (run["emission"], run["infer"]) == ("features", "em") and "predictive_log_likelihood_per_token" not in run
    model = HMMTagger(n_states=5, infer="em", emission="features", feature_l2=0.5, n_iter=3, random_state=0).fit(corpus)
    assert run["m1"] == pytest.approx(tagging_report(model.labels_, corpus.tags["xpos"])["m1"])
    assert run["log_likelihood_per_token"] == pytest.approx(model.score(corpus))
    with pytest.raises(ConfigError, match="trains with em"):
        compare(corpus, ["cvi2"], 1, emission=["features"])
    assert main(["compare", "demo", "--infer", "cvi2", "--feature-l2", "2", "--quiet"]) == 2
    assert "without features in --emission" in capsys.readouterr().err
    assert main(["compare", "demo", "--emission", "categorical,embeddings", "--quiet"]) == 2
    assert "--embeddings FILE" in capsys.readouterr().err

"""Tagged PTB output keeps the gold preterminals: ``GOLD=INDUCED`` labels, read back as both columns."""

from __future__ import annotations

import json

import pytest
from nltk import Tree

from induce.cli import main
from induce.corpus.read_ptb import read_ptb
from induce.corpus.writers import write_tagged
from tests.conftest import CORPORA

SAMPLE = CORPORA / "ptb-sample" if CORPORA is not None else None
needs_ptb = pytest.mark.skipif(SAMPLE is None or not SAMPLE.is_dir(), reason="ptb-sample not found (INDUCE_CORPORA)")


@needs_ptb
def test_round_trip_keeps_gold_and_recovers_induced(tmp_path):
    sentences = [s for f in ("wsj_0001.mrg", "wsj_0020.mrg") for s in read_ptb(SAMPLE / f)]
    assert any(t == "-LRB-" for s in sentences for t in s.tags["pos"])  # a gold tag with a hyphen
    induced = [[f"S{(i + j) % 7}" for j in range(len(s))] for i, s in enumerate(sentences)]
    out = tmp_path / "out.mrg"
    write_tagged(out, sentences, induced, "ptb")
    back = list(read_ptb(out))
    assert [s.words for s in back] == [s.words for s in sentences]
    assert [s.tags["pos"] for s in back] == [s.tags["pos"] for s in sentences]
    assert [s.tags["induced"] for s in back] == induced
    assert [s.tree for s in back] == [s.tree for s in sentences]  # brackets and gold preterminals unchanged
    # a standard tool that strips PTB indices (label up to the first '=' unless it is a -X- tag) sees the gold tag
    raw = Tree.fromstring(out.read_text().splitlines()[0])
    gold = [label.rpartition("=")[0] for _, label in raw.pos()]
    assert gold == sentences[0].tags["pos"]


def test_gold_tags_without_a_mark_are_read_as_they_are(tmp_path):
    path = tmp_path / "g.mrg"
    path.write_text("( (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (-LRB- -LRB-)) )\n"
                    "( (S (NP (DT=S1 a) (NN cat)) ) )\n")  # one '=' only: not induce's output
    first, second = read_ptb(path)
    assert first.tags == {"pos": ["DT", "NN", "VBZ", "-LRB-"]}
    assert second.tags == {"pos": ["DT=S1", "NN"]}


@needs_ptb
def test_cli_tag_then_eval_tags_reads_the_induced_tags(tmp_path, capsys):
    out, stats = tmp_path / "tagged.mrg", tmp_path / "run.json"
    src = SAMPLE / "wsj_0003.mrg"
    assert main(["tag", str(src), "--states", "5", "--iterations", "3", "-o", str(out), "--json", str(stats)]) == 0
    run = json.loads(stats.read_text())
    capsys.readouterr()
    assert [s.tags["pos"] for s in read_ptb(out)] == [s.tags["pos"] for s in read_ptb(src)]
    assert main(["eval", "tags", str(out), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["pred_column"] == "induced" and scored["gold_column"] == "pos"
    assert scored["m1"] == pytest.approx(run["m1"])
    assert main(["eval", "tags", str(out), str(src), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["m1"] == pytest.approx(run["m1"])
    assert main(["eval", "tags", str(src)]) == 2  # gold only: nothing induced to score

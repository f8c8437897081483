"""``induce parse --model ccm|dmv+ccm`` end to end, and the DMV+CCM estimator."""

from __future__ import annotations

import json

import numpy as np
import pytest

from induce.cli import main
from induce.corpus.formats import read_sentences
from induce.parsers.dmv_ccm import DMVCCMParser

TREES = ["(S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .))",
         "(S (NP (DT a) (NN cat)) (VP (VBD ran)) (. .))",
         "(S (NP (PRP it)) (VP (VBD saw) (NP (DT the) (JJ big) (NN dog))))"]


@pytest.fixture
def treebank(tmp_path):
    path = tmp_path / "gold.mrg"
    path.write_text("\n".join(f"( {t})" for t in TREES) + "\n")
    return path


@pytest.mark.parametrize("model,infer,extra", [("ccm", "em", []), ("ccm", "vi", []), ("ccm", "cvi", []),
                                               ("dmv+ccm", "em", []), ("dmv+ccm", "em", ["--attach-order", "any"])])
def test_parse_writes_trees_and_scores_them(treebank, tmp_path, capsys, model, infer, extra):
    out = tmp_path / "out.mrg"
    rc = main(["parse", str(treebank), "--model", model, "--infer", infer, "--use-tags", "--wsj10", "--train",
               str(treebank), "--iterations", "3", "--quiet", "--json", "-o", str(out), *extra])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["train_sentences"] == 6
    trees = list(read_sentences(out, "ptb"))
    assert trees[0].words == ["the", "dog", "saw", "a", "cat"]  # punctuation removed by --wsj10
    scores = result["unlabeled_brackets"]
    assert set(scores) == {"model", "left_branching", "right_branching"}
    # sentence 3 right-branching: (it (saw (the (big dog)))) against (it (saw (the big dog))): K&M spans
    assert 0 <= scores["model"]["km"]["f1"] <= 1 and scores["right_branching"]["km"]["f1"] > 0.5
    if model == "dmv+ccm":
        heads = list(read_sentences(f"{out}.heads.conll", "conllx"))
        assert [h.heads.count(0) for h in heads] == [1, 1, 1]


def test_ccm_rejects_mh_and_alpha(treebank, tmp_path, capsys):
    for extra in (["--infer", "mh"], ["--alpha", "0.5"], ["--save-model", str(tmp_path / "m.npz")]):
        assert main(["parse", str(treebank), "--model", "ccm", *extra, "--quiet", "-o", str(tmp_path / "o")]) == 2
    assert main(["parse", str(treebank), "--model", "dmv+ccm", "--infer", "cvi", "--quiet",
                 "-o", str(tmp_path / "o")]) == 2


def test_dmv_ccm_em_never_decreases_its_objective():
    sents = [s.split() for s in ("D N V D N", "D A N V", "P V D N", "D N V P", "P V", "D N V D A N")] * 2
    model = DMVCCMParser(n_iter=12, tol=0).fit(sents)
    values = np.array([h["objective"] for h in model.history_])
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:])) and values[-1] > values[0]
    heads, trees = model.parse_both(sents)
    assert [int((h == 0).sum()) for h in heads] == [1] * len(sents)
    assert [len(t.leaves()) for t in trees] == [len(s) for s in sents]

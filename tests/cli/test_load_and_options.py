"""Train once, apply many (``--load`` for tag, parse, align, segment: the saved model labels the input as the
training run did, nothing is retrained), and options that do not apply are one-line errors (issue 39)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from induce.cli import main


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A directory with a 40-sentence demo corpus, a small bitext and a two-regime series."""
    d = tmp_path_factory.mktemp("load")
    assert main(["corpus", "demo", "-o", str(d / "c.conllu"), "--sentences", "40", "--json", str(d / "d.json")]) == 0
    (d / "bi.txt").write_text("".join(f"a{i % 3} b c ||| x{i % 3} y z\n" for i in range(12)))
    x = np.r_[np.zeros(25), np.full(25, 4.0), np.zeros(25)] + np.random.default_rng(1).normal(0, 0.3, 75)
    (d / "s.csv").write_text("v\n" + "".join(f"{v:.4f}\n" for v in x))
    return d


def _run(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("train, apply", [
    (["tag", "{c}", "--states", "4", "--iterations", "3", "--quiet"], ["tag", "{c}", "--quiet"]),
    (["tag", "{c}", "--model", "hdp-hmm", "--truncation", "5", "--iterations", "3", "--quiet"], ["tag", "{c}"]),
    (["parse", "{c}", "--iterations", "3", "--quiet"], ["parse", "{c}"]),
    (["parse", "{c}", "--model", "pcfg", "--nonterminals", "3", "--iterations", "2", "--quiet"], ["parse", "{c}"]),
    (["align", "{bi}", "--model", "hmm", "--infer", "cvi", "--iterations", "2", "--ibm1-iterations", "1", "--quiet"],
     ["align", "{bi}"]),
    (["segment", "{s}", "--model", "hsmm", "--iterations", "4"], ["segment", "{s}"]),
])
def test_load_applies_the_saved_model_without_training(work, capsys, train, apply):
    fill = {"{c}": work / "c.conllu", "{bi}": work / "bi.txt", "{s}": work / "s.csv"}
    train = [fill.get(a, a) for a in train]
    apply = [fill.get(a, a) for a in apply]
    model, first, second = work / f"{train[0]}.npz", work / f"{train[0]}.1", work / f"{train[0]}.2"
    assert _run(train + ["-o", first, "--save-model", model], capsys)[0] == 0
    status, out, err = _run(apply + ["-o", second, "--load", model, "--json"], capsys)
    assert status == 0, err
    if train[0] == "tag":  # the run writes the fit's own labels (cvi's q), --load decodes the saved parameters
        from induce.corpus.formats import load_corpus
        from induce.modelfile import kind_of
        from induce import taggers

        tagger = getattr(taggers, kind_of(model)).load(model)
        written = [line.rsplit("induced=", 1)[1] for line in second.read_text().splitlines() if "induced=" in line]
        assert written == [t for sent in tagger.predict_tags(load_corpus(str(work / "c.conllu"))) for t in sent]
    else:
        assert first.read_text() == second.read_text()
    summary = json.loads(out)
    assert not any(k in summary for k in ("train_seconds", "fit_seconds", "iterations")) or train[0] == "segment"
    if train[0] == "segment":
        assert summary["infer"] and summary["states"] == 3  # the HSMM file loads without --model hsmm


@pytest.mark.parametrize("argv, expected", [
    (["tag", "{c}", "--load", "{m}", "--states", "3"], "--states does not apply with --load"),
    (["tag", "{c}", "--infer", "em", "--block-size", "4"], "--block-size does not apply to --infer em"),
    (["tag", "{c}", "--truncation", "10"], "--truncation does not apply to --model hmm"),
    (["tag", "{c}", "--trunc", "10"], "--truncation does not apply to --model hmm"),  # an abbreviation argparse took
    (["tag", "{c}", "--model", "hdp-hmm", "--alpha", "2"], "--alpha does not apply to --model hdp-hmm"),
    (["tag", "{c}", "--infer", "vi", "--no-map"], "--no-map does not apply to --infer vi"),
    (["parse", "{c}", "-o", "{out}", "--load", "{m}"], "the file holds a HMMTagger"),
    (["parse", "{c}", "-o", "{out}", "--load", "{c}"], "not a readable induce model file"),
    (["segment", "{s}", "--gamma", "2"], "--gamma does not apply to --model hmm"),
    (["align", "-", "-", "-o", "{out}"], "SRC and TGT are both '-'"),
    (["align", "{bi}", "-o", "{out}", "--iterations", "3"], "--iterations does not apply to --infer gibbs"),
    (["align", "{bi}", "-o", "{out}", "--tol", "0", "--ibm1-iter", "2"], "--ibm1-iterations, --tol do not apply to "
     "--infer gibbs"),
    (["eval", "tags", "-", "-"], "PRED and GOLD are both '-'"),
    (["tag", "{s}"], "expected a text corpus, not a .csv table"),
    (["segment", "{s}", "--load", "{hsmm}", "--model", "hmm"], "holds a --model hsmm model, not --model hmm"),
])
def test_options_that_do_not_apply_are_one_line_errors(work, capsys, argv, expected):
    model = work / "tagger.npz"
    if not model.exists():
        assert _run(["tag", work / "c.conllu", "--states", "3", "--iterations", "2", "--quiet", "--save-model",
                     model], capsys)[0] == 0
    fill = {"{c}": work / "c.conllu", "{m}": model, "{s}": work / "s.csv", "{out}": work / "never", "{bi}": work / "bi.txt",
            "{hsmm}": work / "segment.npz"}
    if "{hsmm}" in argv and not fill["{hsmm}"].exists():
        assert _run(["segment", fill["{s}"], "--model", "hsmm", "--iterations", "2", "--save-model", fill["{hsmm}"]],
                    capsys)[0] == 0
    status, out, err = _run([fill.get(a, a) for a in argv], capsys)
    assert status == 2 and expected in err and len(err.strip().splitlines()) == 1, err
    assert not (work / "never").exists()


def test_align_gold_longer_than_the_bitext_is_refused(work, capsys):
    gold = work / "gold.align"
    gold.write_text("0-0 1-1\n" * 13)  # 13 pairs for a 12-pair bitext
    status, _, err = _run(["align", work / "bi.txt", "-o", work / "a", "--gold", gold, "--gold-format", "pharaoh",
                           "--gibbs-passes", "1", "1", "1"], capsys)
    assert status == 2 and "expected at most 12 sentence pairs" in err


def test_hdp_segment_without_states_uses_a_truncation_to_learn_from(work, capsys):
    status, out, err = _run(["segment", work / "s.csv", "--model", "hdp-hmm", "--iterations", "5", "--json"], capsys)
    assert status == 0 and "truncation K = 20" in err
    assert json.loads(out)["states"] == 20

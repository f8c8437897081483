"""Grammar-induction defaults (docs/experiments/grammar_defaults.md): harmonic initialiser, WSJ10, the
punctuation convention shared by ``parse`` and ``eval deps``, convergence, collapse
warnings, the gold tag column."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction as F

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from induce.cli import main
from induce.cli.common import gold_tag_column
from induce.corpus.formats import load_corpus
from induce.errors import ConfigError
from induce.infer.convergence import ConvergenceMonitor, FitWarning
from induce.kernels import dmv as K
from induce.parsers import DMVParser
from induce.parsers.dmv import collapse_warnings

from .test_dmv import SENTS


# ------------------------------------------------------------------ harmonic
def test_harmonic_counts_hand_computed():
    """Tags A B A (ids 0 1 0).  Root: 1/3 per word.  Word j's head h != j with probability
    (1 - 1/3) (1/|h-j|) / sum_h' 1/|h'-j|: word 0 -> word 1 4/9, word 2 2/9 (left
    arcs); word 1 -> word 0 1/3 (right), word 2 1/3 (left); word 2 -> word 1 4/9,
    word 0 2/9 (right).  Expected dependents E: word 0 right 5/9, word 1 4/9 each
    side, word 2 left 5/9; a head with E <= 1 on a side has CONTINUE E and STOP
    1 - E adjacent, STOP E after its first dependent."""
    tags = np.array([0, 1, 0], dtype=np.int32)
    offsets = np.array([0, 3], dtype=np.int64)
    root, stop, att = np.zeros(2), np.zeros((2, 2, 2, 2)), np.zeros((2, 2, 2))
    K.harmonic_counts(tags, offsets, root, stop, att)
    L, R, STOP, CONT = 0, 1, 0, 1
    np.testing.assert_allclose(root, [2 / 3, 1 / 3])
    want_att = np.zeros((2, 2, 2))
    want_att[1, L, 0] = 4 / 9
    want_att[0, L, 0] = 2 / 9
    want_att[0, R, 1] = 1 / 3
    want_att[0, L, 1] = 1 / 3
    want_att[1, R, 0] = 4 / 9
    want_att[0, R, 0] = 2 / 9
    np.testing.assert_allclose(att, want_att)
    want_stop = np.zeros((2, 2, 2, 2))
    for d in (L, R):  # tag A: one head with E = 5/9 on side d, one with E = 0
        want_stop[0, d, 0] = [4 / 9 + 1, 5 / 9]
        want_stop[0, d, 1] = [5 / 9, 0]
        want_stop[1, d, 0] = [5 / 9, 4 / 9]  # tag B: E = 4/9 on both sides
        want_stop[1, d, 1] = [4 / 9, 0]
    np.testing.assert_allclose(stop, want_stop)
    # the parser's starting point is these counts normalised (MLE rows)
    model = DMVParser(n_iter=0, tol=0)
    from induce.parsers.dmv import _Counts

    state = _Counts(2, tags, offsets)
    root_p, stop_p, att_p = model._initial_params(state, np.random.default_rng(0))
    assert root_p[0] == pytest.approx(float(F(2, 3)))
    np.testing.assert_allclose(att_p[0, L], [2 / 5, 3 / 5])           # (2/9, 1/3) / (5/9)
    np.testing.assert_allclose(stop_p[0, L, 0], [13 / 18, 5 / 18])    # (13/9, 5/9) / 2
    np.testing.assert_allclose(stop_p[1, R, 1], [1.0, 0.0])


def test_harmonic_is_the_default_initialiser():
    assert DMVParser().init == "harmonic" and DMVParser().infer == "cvi"


# --------------------------------------------------------------------- WSJ10
def _write_dp(path, sentences):
    path.write_text("\n".join("\n".join(f"{w}\t{t}\t{h}" for w, t, h in s) + "\n" for s in sentences))
    return path


def _sentence(n_words, n_punct, first="w"):
    """n words (NN, each headed by the first) followed by n_punct commas/periods."""
    rows = [(f"{first}{k}", "NN", 0 if k == 0 else 1) for k in range(n_words)]
    return rows + [("," if k % 2 else ".", "," if k % 2 else ".", 1) for k in range(n_punct)]


def test_wsj10_removes_punctuation_then_keeps_ten_words(tmp_path):
    sents = [
        _sentence(10, 3, "a"),                      # 13 tokens, 10 words: kept, stripped
        _sentence(11, 0, "b"),                      # 11 words: dropped
        [(".", ".", 0), (",", ",", 1)],             # punctuation only: dropped
        # c0 and c2 hang from punctuation: re-attached to its head c1
        [("c0", "NN", 2), ("``", "``", 3), ("c1", "VBD", 0), ("-LRB-", "-LRB-", 3), ("c2", "NN", 4)],
        _sentence(9, 4, "d") + [("$", "$", 1), ("d9", "CD", 1)],   # 10 words, $ is punctuation: kept
    ]
    corpus = load_corpus(_write_dp(tmp_path / "x.dp", sents), wsj10=True)
    assert corpus.n_sentences == 3
    assert corpus.sentences[0].words == [f"a{k}" for k in range(10)]
    assert corpus.sentences[1].words == ["c0", "c1", "c2"] and corpus.sentences[1].heads == [2, 0, 2]
    assert corpus.sentences[2].words == [f"d{k}" for k in range(10)]
    assert "," not in corpus.tag_vocabs["pos"] and "$" not in corpus.tag_vocabs["pos"]


def test_wsj10_uses_the_upos_and_cpos_punctuation_tags(tmp_path):
    upos = tmp_path / "u.conllu"
    upos.write_text("1\tHi\t_\tINTJ\t_\t_\t0\troot\t_\t_\n2\t!\t_\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n")
    assert load_corpus(upos, wsj10=True).sentences[0].words == ["Hi"]
    conllx = tmp_path / "c.conll"
    conllx.write_text("1\tKaixo\t_\tIZE\tIZE_ARR\t_\t0\tROOT\t_\t_\n2\t.\t_\tPUNT\tPUNT_PUNT\t_\t1\tPUNC\t_\t_\n\n")
    assert load_corpus(conllx, "conllx", wsj10=True).sentences[0].words == ["Kaixo"]


def test_wsj10_on_the_wsj_sample_has_555_sentences(corpora):
    corpus = load_corpus(corpora / "wsj-dep-sample", wsj10=True)
    assert (corpus.n_sentences, corpus.n_tokens) == (555, 3856)


# ---------------------------------------------------------------- evaluation
# gold s1: "John , ran ." heads 3 3 0 3 (both commas/periods attached to ran);
# gold s2: "! !" punctuation only; gold s3: "Go home" heads 0 1.
GOLD = [[("John", "NNP", 3), (",", ",", 3), ("ran", "VBD", 0), (".", ".", 3)],
        [("!", ".", 0), ("!", ".", 1)],
        [("Go", "VB", 0), ("home", "NN", 1)]]


def _eval(capsys, *argv) -> dict:
    assert main(["eval", "deps", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_eval_deps_hand_case_with_and_without_punctuation(tmp_path, capsys):
    gold = _write_dp(tmp_path / "gold.dp", GOLD)
    # full prediction: John->ran, ,->John, ran root, .->John | ! root, !->1 | Go<-home (home root)
    full = _write_dp(tmp_path / "full.dp", [[("John", "NNP", 3), (",", ",", 1), ("ran", "VBD", 0), (".", ".", 1)],
                                           [("!", ".", 0), ("!", ".", 1)],
                                           [("Go", "VB", 2), ("home", "NN", 0)]])
    # punctuation excluded by default: John right, ran right, Go wrong (the reversed edge: right
    # undirected), home wrong (a root attachment has no reverse): directed 2/4, undirected 3/4
    scored = _eval(capsys, full, gold)
    assert (scored["directed"], scored["undirected"], scored["tokens"]) == (0.5, 0.75, 4)
    assert scored["punctuation"] == "excluded (ptb tags of column pos)"
    included = _eval(capsys, full, gold, "--punct", "include")
    assert (included["tokens"], included["directed"], included["punctuation"]) == (8, 4 / 8, "included")
    # the same parse written without punctuation (parse --strip-punct): s1 aligned, s2 skipped
    stripped = _write_dp(tmp_path / "stripped.dp", [[("John", "NNP", 2), ("ran", "VBD", 0)],
                                                   [("Go", "VB", 2), ("home", "NN", 0)]])
    aligned = _eval(capsys, stripped, gold)
    assert (aligned["directed"], aligned["undirected"], aligned["tokens"], aligned["sentences"]) == (0.5, 0.75, 4, 2)
    assert "1 gold sentences scored without their punctuation, 1 of punctuation only skipped" in aligned["punctuation"]
    # a prediction that differs in a word is still an error naming the sentence
    wrong = _write_dp(tmp_path / "wrong.dp", [[("John", "NNP", 2), ("left", "VBD", 0)]])
    assert main(["eval", "deps", str(wrong), str(gold)]) == 2
    assert "sentence 1" in capsys.readouterr().err


def test_parse_and_eval_deps_agree(corpora, tmp_path, capsys):
    """``parse --wsj10`` prints the score that ``eval deps --wsj10`` gives its output against the
    original gold (punctuation and all); both say which convention they used."""
    out = tmp_path / "out.conll"
    gold = tmp_path / "gold"
    gold.mkdir()
    for name in ("wsj_0001.dp", "wsj_0002.dp", "wsj_0003.dp", "wsj_0004.dp"):
        (gold / name).write_bytes((corpora / "wsj-dep-sample" / name).read_bytes())
    assert main(["parse", "--use-tags", "--wsj10", "--quiet", "--json", "--iterations", "5", "--tol", "0",
                 str(gold), "-o", str(out)]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert parsed["tag_column"] == "pos" and parsed["infer"] == "cvi"
    assert parsed["attachment"]["punctuation"] == "removed before training (ptb tags of column pos)"
    scored = _eval(capsys, out, gold, "--wsj10")
    assert scored["directed"] == parsed["attachment"]["directed"]
    assert scored["tokens"] == parsed["attachment"]["tokens"] == parsed["tokens"]
    assert scored["punctuation"].startswith("excluded (ptb tags of column pos)")


# --------------------------------------------------------------- convergence
def test_monitor_counts_consecutive_small_changes():
    m = ConvergenceMonitor(tol=1e-3, patience=3)
    for value, stop in [(-100.0, False), (-99.0, False), (-98.95, False), (-98.94, False), (-98.0, False),
                        (-97.99, False), (-97.98, False), (-97.97, True)]:
        assert m.update(value) is stop
    assert m.converged and not m.diverged
    nan = ConvergenceMonitor()
    assert nan.update(-5.0) is False and nan.update(float("nan")) is True and nan.diverged
    with pytest.warns(FitWarning, match="NaN"):
        assert nan.finish("x", 2, 10)
    down = ConvergenceMonitor(monotone=True)
    for value in (-10.0, -9.0, -9.5):
        down.update(value)
    with pytest.warns(FitWarning, match="decreased at pass 2"):
        assert down.finish("x", 2, 10)


def test_dmv_converges_on_a_tiny_corpus():
    model = DMVParser(infer="em", n_iter=1000, tol=1e-6).fit(SENTS)
    assert model.converged_ and model.n_iter_ < 1000 and len(model.history_) == model.n_iter_ + 1
    ll = np.array([h["log_likelihood"] for h in model.history_])
    rel = np.abs(np.diff(ll)) / np.abs(ll[:-1])
    assert np.all(rel[-3:] < 1e-6) and not np.all(rel[-4:] < 1e-6)
    assert model.warnings_ == []


def test_dmv_cap_warns_and_tol_zero_runs_every_pass():
    with pytest.warns(ConvergenceWarning, match="not converged after 2 passes"):
        model = DMVParser(n_iter=2).fit(SENTS)
    assert (model.n_iter_, model.converged_) == (2, False) and "not converged" in model.warnings_[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fixed = DMVParser(n_iter=7, tol=0).fit(SENTS)
    assert (fixed.n_iter_, fixed.converged_, fixed.warnings_) == (7, False, [])


def test_parse_cli_reports_the_cap_in_one_line_and_the_json(tmp_path, capsys):
    plain = tmp_path / "in.txt"
    plain.write_text("\n".join(" ".join(s) for s in SENTS) + "\n")
    assert main(["parse", str(plain), "--iterations", "2", "--quiet", "--json", "-o", str(tmp_path / "o")]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["iterations"], result["converged"]) == (2, False)
    assert len(result["warnings"]) == 1 and "not converged after 2 passes" in result["warnings"][0]
    assert captured.err.strip().splitlines() == [f"induce: warning: {result['warnings'][0]}"]


# ----------------------------------------------------------------- collapse
def test_collapse_warnings_on_hand_made_trees():
    offsets = np.array([0, 4, 7], dtype=np.int64)
    flat = np.array([2, 0, 2, 2, 0, 1, 1])           # every word a dependent of the root word
    with pytest.warns(FitWarning, match="flat"):
        assert len(collapse_warnings(flat, offsets)) == 1
    chain = np.array([2, 3, 4, 0, 2, 3, 0])          # right-branching: word i headed by i + 1
    with pytest.warns(FitWarning, match="chains"):
        assert len(collapse_warnings(chain, offsets)) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert collapse_warnings(np.array([2, 0, 4, 2, 0, 1, 2]), offsets) == []


# --------------------------------------------------------------- gold column
def test_gold_tag_column_preference():
    ewt = {"upos": ["NOUN", "VERB"], "xpos": ["NN", "VBD"]}
    assert gold_tag_column(ewt) == "xpos"
    hungarian = {"upos": ["NOUN", "VERB"], "xpos": ["_", "_38"]}    # xpos is a placeholder
    assert gold_tag_column(hungarian) == "upos"
    assert gold_tag_column({"cpos": ["N", "V"], "pos": ["NC", "VM"]}) == "pos"
    assert gold_tag_column({"xpos": ["NN"], "upos": ["NOUN"]}) == "xpos"   # none informative: first present
    assert gold_tag_column({"induced": ["S1", "S2"]}) is None
    assert gold_tag_column(ewt, "upos") == "upos"
    with pytest.raises(ConfigError, match="--tag-column 'pos'"):
        gold_tag_column(ewt, "pos", "--tag-column")


def test_tag_eval_and_parse_pick_the_same_column(corpora, tmp_path, capsys):
    source = corpora / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu"
    blocks = source.read_text(encoding="utf-8").split("\n\n")[:30]
    path = tmp_path / "ewt.conllu"
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    assert main(["eval", "tags", str(path), str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gold_column"] == "xpos"
    assert main(["parse", str(path), "--use-tags", "--iterations", "2", "--tol", "0", "--quiet", "--json",
                 "-o", str(tmp_path / "p.conllu")]) == 0
    assert json.loads(capsys.readouterr().out)["tag_column"] == "xpos"
    metrics = tmp_path / "m.json"
    assert main(["tag", str(path), "--states", "5", "--iterations", "2", "--quiet", "-o", str(tmp_path / "t.conllu"),
                 "--json", str(metrics)]) == 0
    assert json.loads(metrics.read_text())["gold_column"] == "xpos"

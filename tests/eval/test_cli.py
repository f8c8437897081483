"""``induce eval``: hand cases on files written here, gold-vs-gold on the shared corpora."""

from __future__ import annotations

import json

import pytest

from induce.cli import main


def run_json(capsys, *argv) -> dict:
    assert main(["eval", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def conllu(rows_per_sentence) -> str:
    """CoNLL-U text from ``[(form, upos, head), ...]`` per sentence."""
    blocks = []
    for rows in rows_per_sentence:
        lines = [f"{k}\t{form}\t_\t{upos}\t_\t_\t{head}\t{'root' if head == 0 else 'dep'}\t_\t_" for k, (form, upos, head) in enumerate(rows, 1)]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks) + "\n"


# the dependency hand case of test_dependencies: s1 gold heads 2 0 2 (word 3 is punctuation),
# predicted 2 0 1; s2 gold 0 1, predicted 2 0
GOLD_DEPS = [[("John", "PROPN", 2), ("ran", "VERB", 0), (".", "PUNCT", 2)], [("Go", "VERB", 0), ("home", "NOUN", 1)]]
PRED_DEPS = [[("John", "X1", 2), ("ran", "X2", 0), (".", "X3", 1)], [("Go", "X2", 2), ("home", "X1", 0)]]


@pytest.fixture
def dep_files(tmp_path):
    gold, pred = tmp_path / "gold.conllu", tmp_path / "pred.conllu"
    gold.write_text(conllu(GOLD_DEPS), encoding="utf-8")
    pred.write_text(conllu(PRED_DEPS), encoding="utf-8")
    return str(pred), str(gold)


def test_deps_hand_case_with_and_without_punctuation(capsys, dep_files):
    # include: directed 2/5, undirected 3/5; exclude (gold UPOS PUNCT): 2/4, 3/4
    included = run_json(capsys, "deps", *dep_files, "--punct", "include")
    assert (included["directed"], included["undirected"], included["punctuation"]) == (0.4, 0.6, "included")
    excluded = run_json(capsys, "deps", *dep_files)
    assert (excluded["directed"], excluded["undirected"], excluded["tokens"]) == (0.5, 0.75, 4)
    assert excluded["punctuation"] == "excluded (upos tags of column upos)"
    # chains on the same 4 words: left 0 1 | 0 1 -> s2 both right, 2/4; right 2 3 | 2 0 -> s1 w1 only, 1/4
    chains = excluded["baselines"]
    assert (chains["left_chain"]["directed"], chains["right_chain"]["directed"]) == (0.5, 0.25)
    # the CoNLL-U file has no xpos column to read PTB punctuation tags from
    assert main(["eval", "deps", *dep_files, "--punct-tagset", "ptb"]) == 2
    assert "xpos, pos" in capsys.readouterr().err


def test_tags_hand_case(capsys, dep_files):
    # predicted UPOS column X1 X2 X3 | X2 X1 against gold PROPN VERB PUNCT | VERB NOUN:
    # X1 -> {PROPN, NOUN}, X2 -> {VERB, VERB}, X3 -> {PUNCT}: M-1 = (1 + 2 + 1) / 5,
    # optimal 1-1 = greedy 1-1 = 4/5 (X1 -> PROPN or NOUN, X2 -> VERB, X3 -> PUNCT)
    report = run_json(capsys, "tags", *dep_files)
    assert (report["pred_column"], report["gold_column"]) == ("upos", "upos")
    assert report["m1"] == report["1to1"] == report["1to1_greedy"] == pytest.approx(0.8)
    assert "accuracy" not in report  # X1.. are no gold tags: plain accuracy does not apply
    # sentence 1 maps X1 -> PROPN, X2 -> VERB, X3 -> PUNCT: on sentence 2 right 1/2 (X2 = VERB);
    # sentence 2 maps X1 -> NOUN, X2 -> VERB, majority tag NOUN (tie, smallest string) for
    # unseen X3: on sentence 1 right 1/3 (ran) -> mean 5/12
    assert report["m1_cv"] == pytest.approx(5 / 12)


def test_mismatching_words_name_the_sentence(tmp_path, capsys, dep_files):
    pred = tmp_path / "other.conllu"
    pred.write_text(conllu([GOLD_DEPS[0], [("Go", "VERB", 0), ("away", "ADV", 1)]]), encoding="utf-8")
    assert main(["eval", "tags", str(pred), dep_files[1]]) == 2
    err = capsys.readouterr().err
    assert "other.conllu:5" in err and "sentence 2" in err and "Go home" in err
    short = tmp_path / "short.conllu"
    short.write_text(conllu(GOLD_DEPS[:1]), encoding="utf-8")
    assert main(["eval", "deps", str(short), dep_files[1]]) == 2
    assert "as many sentences" in capsys.readouterr().err


def test_brackets_hand_case(tmp_path, capsys):
    # the corpus case of test_brackets: P = R = F1 = 5/7, exact 1/2
    gold = tmp_path / "gold.mrg"
    pred = tmp_path / "pred.mrg"
    gold.write_text(
        "( (S (NP (DT The) (NN dog)) (VP (VBD ran) (PRT (RP off))) (. .)) )\n"
        "( (S (NP-SBJ (NNP John)) (, ,) (VP (VBD left)) (. .)) )\n",
        encoding="utf-8",
    )
    pred.write_text(
        "(S (NP (DT The)) (VP (NN dog) (VBD ran) (ADVP (RB off))) (. .))\n"
        "(S (NP (NNP John)) (, ,) (VP (VBD left)) (. .))\n",
        encoding="utf-8",
    )
    scores = run_json(capsys, "brackets", str(pred), str(gold))
    assert (scores["f1"], scores["exact"], scores["sentences"]) == (pytest.approx(5 / 7), 0.5, 2)
    # gold brackets (punctuation deleted): s1 (0,4) (0,2) (2,4) (3,4), s2 (0,2) (0,1) (1,2); right-branching
    # s1 (0,4) (1,4) (2,4), s2 (0,2): 3 of 4 match 3 of 7; left-branching (0,2) (0,3) (0,4) | (0,2): also 3
    for name in ("left_branching", "right_branching"):
        assert scores["baselines"][name]["precision"] == pytest.approx(3 / 4)
        assert scores["baselines"][name]["recall"] == pytest.approx(3 / 7)
    assert run_json(capsys, "brackets", str(pred), str(gold), "--max-length", "4")["sentences"] == 1


def test_align_hand_case(tmp_path, capsys):
    # pharaoh prediction (0-based) against NAACL gold (1-based): the alignment hand case of
    # test_alignment_lm: P = 1/2, R = 1/3, AER = 4/7
    gold = tmp_path / "gold.wa"
    gold.write_text("1 1 1 S\n1 2 2 S\n1 3 2 P\n2 1 1\n", encoding="utf-8")
    pred = tmp_path / "pred.txt"
    pred.write_text("0-0 2-1 2-2\n0-1\n", encoding="utf-8")
    scores = run_json(capsys, "align", str(pred), str(gold))
    assert (scores["precision"], scores["recall"], scores["aer"]) == pytest.approx((0.5, 1 / 3, 4 / 7))


def assert_perfect(scores: dict, keys) -> None:
    for key in keys:
        assert scores[key] == pytest.approx(1.0), key


def test_gold_vs_gold_ud(capsys, corpora):
    path = str(corpora / "ud" / "en_ewt" / "en_ewt-ud-dev.conllu")
    tags = run_json(capsys, "tags", path, path, "--gold-column", "upos")
    assert_perfect(tags, ("m1", "m1_cv", "1to1", "1to1_greedy", "homogeneity", "completeness", "vm", "accuracy"))
    assert tags["vi"] == 0.0 and tags["tokens"] == 25147
    deps = run_json(capsys, "deps", path, path)
    assert_perfect(deps, ("directed", "undirected"))


def test_gold_vs_gold_conll2007(capsys, corpora):
    path = str(corpora / "conll2007" / "esp.test")
    deps = run_json(capsys, "deps", path, path, "--format", "conllx")
    assert_perfect(deps, ("directed", "undirected"))
    assert deps["tokens"] + deps["excluded"] == 19206 and "conll2007" in deps["punctuation"]


def test_gold_vs_gold_wsj(capsys, corpora):
    files = [f"wsj_{k:04d}" for k in range(1, 21)]
    for name in files:
        dep = str(corpora / "wsj-dep-sample" / f"{name}.dp")
        mrg = str(corpora / "ptb-sample" / f"{name}.mrg")
        assert_perfect(run_json(capsys, "deps", dep, dep), ("directed", "undirected"))
        assert_perfect(run_json(capsys, "brackets", mrg, mrg), ("precision", "recall", "f1", "exact"))
        assert_perfect(run_json(capsys, "brackets", mrg, mrg, "--unlabeled", "--max-length", "40"), ("f1",))
        # the two treebanks hold the same words and PTB tags
        assert_perfect(run_json(capsys, "tags", mrg, dep), ("m1", "1to1", "accuracy"))


def test_gold_vs_gold_alignments(capsys, corpora):
    align = corpora / "align"
    naacl = str(align / "en-fr" / "test.wa.nonullalign")
    scores = run_json(capsys, "align", naacl, naacl, "--pred-format", "naacl")
    assert (scores["sure_links"], scores["possible_links"]) == (4038, 4038 + 13400)
    assert (scores["precision"], scores["recall"], scores["aer"]) == (1.0, 1.0, 0.0)
    roen = str(align / "ro-en" / "roen.gold")
    scores = run_json(capsys, "align", roen, roen, "--gold-format", "pharaoh", "--pred-base", "1", "--gold-base", "1")
    assert (scores["aer"], scores["sure_links"], scores["sentences"]) == (0.0, 6198, 248)

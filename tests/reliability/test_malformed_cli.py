"""Malformed input and bad option values through the CLI: one line ``induce: error: ...``, status 2.

Table-driven: each case writes its input files, runs ``induce.cli.main`` in
process and checks the exit status, that stderr is exactly one line starting
``induce: error:`` (no traceback) and that it contains a fragment naming the
problem.  Every case fails before training starts, so the table runs in seconds.
docs/experiments/reliability_inputs.md.
"""

from __future__ import annotations

import os

import pytest

from induce.cli import main

CONLLU_ROW = "1\tThe\t_\tDET\t_\t_\t0\troot\t_\t_\n"

#: name -> (files {name: bytes}, argv (with {tmp}), expected fragment of the error line)
CASES = {
    "conllu head above 2^63": ({"h.conllu": b"1\tA\t_\tX\t_\t_\t99999999999999999999\tr\t_\t_\n"},
                               "corpus stats {tmp}/h.conllu", "h.conllu:1: expected a head between 0 and 1"),
    "conllx head above 2^63": ({"h.conll": b"1\tA\t_\tX\tX\t_\t99999999999999999999\tr\t_\t_\n"},
                               "corpus stats {tmp}/h.conll", "h.conll:1: expected a head between 0 and 1"),
    "malt head above 2^63": ({"h.dp": b"A\tX\t99999999999999999999\n"}, "corpus stats {tmp}/h.dp",
                             "h.dp:1: expected a head between 0 and 1"),
    "malt superscript head": ({"h.dp": "A\tX\t\u00b2\n".encode()}, "corpus stats {tmp}/h.dp", "integer head"),
    "naacl superscript index": ({"g.wa": "1 \u00b2 1 S\n".encode()}, "corpus stats {tmp}/g.wa --alignments naacl",
                                "g.wa:1: expected 'sentence position position [S|P]'"),
    "naacl 10^20 sentence id": ({"g.wa": b"99999999999999999999 1 1 S\n"},
                                "corpus stats {tmp}/g.wa --alignments naacl", "sentence id of at most"),
    "naacl huge position": ({"g.wa": b"1 99999999999 1 S\n"}, "corpus stats {tmp}/g.wa --alignments naacl",
                            "word positions below"),
    "pharaoh bad link": ({"g.al": b"0-1 2x3\n"}, "corpus stats {tmp}/g.al --alignments pharaoh", "links 'i-j'"),
    "NUL bytes": ({"n.txt": b"a b\x00 c\n"}, "corpus stats {tmp}/n.txt", "n.txt:1: expected text without NUL"),
    "invalid UTF-8": ({"u.txt": b"ok\n\xff\xfe bad\n"}, "corpus stats {tmp}/u.txt", "u.txt:2: expected valid UTF-8"),
    "empty file": ({"e.txt": b"\n\n"}, "corpus stats {tmp}/e.txt", "non-empty corpus file"),
    "unbalanced PTB": ({"t.mrg": b"( (S (NP x) )\n"}, "corpus stats {tmp}/t.mrg", "balanced brackets"),
    "conllu 9 columns": ({"c.conllu": b"1\tA\t_\tX\t_\t_\t0\troot\t_\n"}, "corpus stats {tmp}/c.conllu",
                         "10 TAB-separated CoNLL-U columns"),
    "parallel line counts differ": ({"s": b"a b\nc\n", "t": b"x\n"}, "corpus stats {tmp}/s --target {tmp}/t",
                                    "as many lines as"),
    "missing corpus": ({}, "corpus stats {tmp}/nope.conllu", "nope.conllu: no such file"),
    "alignments given a directory": ({}, "corpus stats {tmp} --alignments naacl", "expected a readable file"),
    "--target missing": ({"s": b"a\n"}, "corpus stats {tmp}/s --target {tmp}/nope", "nope: no such file"),
    "align src is a directory": ({}, "align {tmp} -o {tmp}/out", "is a directory"),
    "align tgt missing": ({"s": b"a\n"}, "align {tmp}/s {tmp}/nope -o {tmp}/out", "no such file"),
    "eval align missing gold": ({"p": b"0-0\n"}, "eval align {tmp}/p {tmp}/nope", "no such file"),
    "eval tags directory pred vs missing gold": ({}, "eval tags {tmp} {tmp}/nope", "no such file"),
    "tag --tag-dict directory": ({}, "tag demo --tag-dict {tmp}", "is a directory"),
    "parse --grammar missing": ({}, "parse demo -o {tmp}/o.mrg --model pcfg --grammar {tmp}/g", "no such file"),
    "-o is a directory": ({}, "tag demo -o {tmp}", "is a directory; expected an output file name"),
    "--save is a directory": ({}, "tag demo --save {tmp}", "is a directory"),
    "--encoding bogus": ({}, "tag demo --encoding bogus", "unknown text encoding 'bogus'"),
    "latin-1 text read as UTF-8": ({"l.txt": "caf\u00e9 au lait\n".encode("latin-1")}, "tag {tmp}/l.txt",
                                   "l.txt:1: expected valid UTF-8"),
    "--resume with cvi2": ({}, "tag demo --resume --checkpoint {tmp}/ck", "apply to the stochastic algorithms"),
    "--resume without a checkpoint file": ({}, "tag demo --infer svi --resume --checkpoint {tmp}/ck",
                                           "no checkpoint file"),
    "--checkpoint with hdp-hmm": ({}, "tag demo --model hdp-hmm --checkpoint {tmp}/ck", "stochastic algorithms"),
    "pcfg-la without --train": ({}, "parse demo -o {tmp}/o.mrg --model pcfg-la", "needs --train"),
}

#: bad option values: argv -> fragment
BAD_OPTIONS = {
    "tag demo --seed -1": "argument --seed",
    "parse demo -o {tmp}/o --seed -1": "argument --seed",
    "align {tmp}/s {tmp}/s -o {tmp}/o --seed -1": "argument --seed",
    "corpus demo -o {tmp}/o --seed -1": "argument --seed",
    "tag demo --seed 4294967296": "argument --seed",
    "tag demo --iterations 0": "argument --iterations",
    "tag demo --iterations -1": "argument --iterations",
    "tag demo --iterations 1.5": "argument --iterations",
    "tag demo --max-batches 0": "argument --max-batches",
    "tag demo --alpha nan": "argument --alpha",
    "tag demo --alpha inf": "argument --alpha",
    "tag demo --beta -1": "argument --beta",
    "tag demo --beta nan": "argument --beta",
    "tag demo --states 0": "argument --states",
    "tag demo --states 100000": "HMM states need about",
    "tag demo --model hdp-hmm --gamma nan": "argument --gamma",
    "tag demo --model hdp-hmm --truncation 0": "argument --truncation",
    "tag demo --model hdp-hmm --emission-prior asymmetric --emission-concentration inf": "--emission-concentration",
    "tag demo --model hdp-hmm --emission-prior asymmetric --new-word-mass nan": "--new-word-mass",
    "tag demo --checkpoint-every -1": "argument --checkpoint-every",
    "tag demo --checkpoint-minutes -1": "argument --checkpoint-minutes",
    "tag demo --checkpoint-minutes nan": "argument --checkpoint-minutes",
    "tag demo --heldout-every -1": "argument --heldout-every",
    "tag demo --heldout 1": "argument --heldout",
    "tag demo --cgs-keep -1": "argument --cgs-keep",
    "tag demo --tag-dict-cutoff -1": "argument --tag-dict-cutoff",
    "tag demo --unk-threshold -1": "argument --unk-threshold",
    "tag demo --kappa 0.2": "argument --kappa",
    "tag demo --tau nan": "argument --tau",
    "tag demo --batch-size 0": "argument --batch-size",
    "parse demo -o {tmp}/o --prior nan --infer cvi": "argument --alpha/--prior",
    "parse demo -o {tmp}/o --prior inf --infer vi": "argument --alpha/--prior",
    "parse demo -o {tmp}/o --model pcfg --prior nan": "argument --alpha/--prior",
    "parse demo -o {tmp}/o --model pcfg --nonterminals 0": "argument --nonterminals",
    "parse demo -o {tmp}/o --max-length 0": "argument --max-length",
    "align {tmp}/s {tmp}/s -o {tmp}/o --alpha nan": "argument --alpha",
    "align {tmp}/s {tmp}/s -o {tmp}/o --threshold nan": "argument --threshold",
    "align {tmp}/s {tmp}/s -o {tmp}/o --threshold 2": "argument --threshold",
    "align {tmp}/s {tmp}/s -o {tmp}/o --null-prob 1": "argument --null-prob",
    "align {tmp}/s {tmp}/s -o {tmp}/o --iterations 0": "argument --iterations",
    "corpus demo -o {tmp}/o --sentences -1": "argument --sentences",
    "eval brackets --max-length -1 {tmp}/s {tmp}/s": "argument --max-length",
    "segment {tmp}/s --seed -1": "argument --seed",
    "segment {tmp}/s --kappa 2": "argument --kappa",
    "segment {tmp}/s --alpha nan": "argument --alpha",
    "segment {tmp}/nope": "no such file",
    "segment {tmp}/s -o {tmp}": "is a directory",
    "compare demo --seeds 0": "argument --seeds",
    "compare demo --beta inf": "argument --beta",
    "report {tmp}/nope.json": "no such file",
    "report {tmp}/s -o {tmp}": "is a directory",
}


def _run(argv: list[str], capsys) -> tuple[int, str]:
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse
        status = exc.code
    return status, capsys.readouterr().err


def _check_one_line(status: int, err: str, fragment: str) -> None:
    """Status 2, no traceback, and the error as one last line (progress notes such as 'K = 6 states' may precede)."""
    lines = err.strip().splitlines()
    assert status == 2, err
    assert "Traceback" not in err and lines and lines[-1].startswith("induce: error: "), err
    assert sum(line.startswith("induce: error: ") for line in lines) == 1, err
    assert fragment in lines[-1], lines[-1]


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_input(name, tmp_path, capsys):
    files, argv, fragment = CASES[name]
    for file, content in files.items():
        (tmp_path / file).write_bytes(content)
    status, err = _run(argv.format(tmp=tmp_path).split(), capsys)
    _check_one_line(status, err, fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", list(BAD_OPTIONS))
def test_bad_option_value(argv, tmp_path, capsys):
    (tmp_path / "s").write_text("a b\n")
    status, err = _run(argv.format(tmp=tmp_path).split(), capsys)
    _check_one_line(status, err, BAD_OPTIONS[argv])
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output_directory(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    status, err = _run(["tag", "demo", "-o", str(locked / "out.conllu")], capsys)
    _check_one_line(status, err, "is not writable")


def test_align_bad_gold_fails_before_writing(tmp_path, capsys):
    (tmp_path / "s").write_text("a b\nc d\n")
    (tmp_path / "t").write_text("x y\nz w\n")
    (tmp_path / "g").write_text("1 1 oops S\n")
    out = tmp_path / "out"
    status, err = _run(["align", str(tmp_path / "s"), str(tmp_path / "t"), "-o", str(out), "--gold",
                        str(tmp_path / "g"), "--quiet"], capsys)
    _check_one_line(status, err, "g:1: expected")
    assert not out.exists()


def test_memory_guard_names_sentence_and_option(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INDUCE_MEMORY_LIMIT", str(10 << 20))
    (tmp_path / "long.txt").write_text("short one\n" + " ".join(["w"] * 3000) + "\n")
    for argv in (["parse", str(tmp_path / "long.txt"), "-o", str(tmp_path / "o.conllu"), "--model", "dmv"],
                 ["parse", str(tmp_path / "long.txt"), "-o", str(tmp_path / "o.mrg"), "--model", "pcfg"],
                 ["align", str(tmp_path / "long.txt"), str(tmp_path / "long.txt"), "-o", str(tmp_path / "o.al")]):
        status, err = _run(argv + ["--quiet"], capsys)
        _check_one_line(status, err, "--max-length N")
        assert "GiB" in err or "MiB" in err
    status, err = _run(["parse", str(tmp_path / "long.txt"), "-o", str(tmp_path / "o.conllu"), "--max-length", "10",
                        "--iterations", "1", "--quiet"], capsys)
    assert status == 0 and "skipped 1 sentences longer than --max-length 10" in err


def test_one_sentence_cvi2_refused_and_vi_skips_cv_m1(tmp_path, capsys):
    from induce.corpus.demo import demo_sentences
    from induce.corpus.writers import write_sentences

    write_sentences(tmp_path / "one.conllu", demo_sentences(n_sentences=1, seed=0), "conllu")
    status, err = _run(["tag", str(tmp_path / "one.conllu"), "--infer", "cvi2", "--quiet"], capsys)
    _check_one_line(status, err, "the input has one sentence")
    status = main(["tag", str(tmp_path / "one.conllu"), "--infer", "vi", "--iterations", "2", "--states", "3",
                   "--quiet", "-o", str(tmp_path / "out.conllu")])
    out = capsys.readouterr().out
    assert status == 0 and "cross-validated many-to-one skipped" in out and (tmp_path / "out.conllu").exists()


def test_conllu_empty_misc_column_reads(tmp_path):
    from induce.corpus.formats import read_sentences

    (tmp_path / "m.conllu").write_text(CONLLU_ROW.replace("\t_\n", "\t\n"))
    (sent,) = read_sentences(tmp_path / "m.conllu")
    assert sent.words == ["The"] and sent.heads == [0]


def test_cr_only_lines_and_stdin(tmp_path, capsys, monkeypatch):
    import io
    import json

    from induce.corpus import read_lines

    (tmp_path / "cr.txt").write_bytes(b"a b c\rd e\r\rf\r")
    assert main(["corpus", "stats", str(tmp_path / "cr.txt"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["sentences"], stats["tokens"]) == (3, 6)
    monkeypatch.setattr(read_lines, "_STDIN", None)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x/NN y/VB\nz/NN\n")))
    assert main(["corpus", "stats", "-", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["format"], stats["sentences"], stats["tokens"]) == ("brown", 2, 3)


def test_truncated_conll2000_without_extension_is_not_plain(tmp_path, capsys):
    from induce.corpus.formats import detect_format

    rows = "Confidence NN B-NP\nin IN B-PP\nthe DT B-NP\npound NN I-NP\n\nHe PRP B-NP\nsai"
    (tmp_path / "train").write_text(rows)
    assert detect_format(tmp_path / "train") == "conll2000"
    status, err = _run(["corpus", "stats", str(tmp_path / "train")], capsys)
    _check_one_line(status, err, "train:7: expected 3 space-separated columns")


def test_json_never_prints_nan(capsys):
    import json

    from induce.cli.common import emit

    emit({"a": float("nan"), "b": [1.0, float("inf")], "c": {"d": -float("inf")}}, as_json=True)
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": [1.0, None], "c": {"d": None}}


def test_estimators_refuse_the_same_values():
    from induce import DMVParser, HMMTagger, PCFGInducer, WordAligner
    from induce.corpus.formats import load_corpus
    from induce.errors import ConfigError

    corpus = load_corpus("demo", n_sentences=5)
    for model, fit in ((HMMTagger(alpha=float("nan")), lambda m: m.fit(corpus)),
                       (HMMTagger(random_state=-1), lambda m: m.fit(corpus)),
                       (HMMTagger(n_iter=0), lambda m: m.fit(corpus)),
                       (DMVParser(alpha=float("inf")), lambda m: m.fit(corpus)),
                       (PCFGInducer(alpha=float("nan")), lambda m: m.fit(corpus)),
                       (WordAligner(alpha=float("nan")), lambda m: m.fit([(["a"], ["b"])])),
                       (WordAligner(posterior_threshold=2.0), lambda m: m.fit([(["a"], ["b"])]))):
        with pytest.raises(ConfigError):
            fit(model)

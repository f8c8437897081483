"""One CLI grammar: --json [FILE] and --save-model in every subcommand that has them."""

import json

import pytest

from induce.cli import _bare_json, build_parser, main


def test_bare_json_before_a_positional_means_stdout():
    assert _bare_json(["parse", "--json", "corpus.txt", "-o", "x"]) == ["parse", "--json=-", "corpus.txt", "-o", "x"]
    assert _bare_json(["tag", "demo", "--json", "run.json"]) == ["tag", "demo", "--json", "run.json"]
    assert _bare_json(["tag", "demo", "--json", "--quiet"]) == ["tag", "demo", "--json", "--quiet"]


@pytest.mark.parametrize("command", ["tag", "parse", "align", "segment", "compare", "eval tags", "corpus stats"])
def test_json_takes_an_optional_file_everywhere(command):
    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices
    for word in command.split():
        sub = sub[word] if isinstance(sub, dict) else sub._subparsers._group_actions[0].choices[word]
    action = next(a for a in sub._actions if "--json" in a.option_strings)
    assert action.nargs == "?" and action.const == "-"


def test_parse_json_to_a_file_and_to_stdout(tmp_path, capsys):
    out, report = tmp_path / "heads.conllu", tmp_path / "run.json"
    assert main(["parse", "demo", "-o", str(out), "--use-tags", "--iterations", "3", "--quiet",
                 "--json", str(report)]) == 0
    assert json.loads(report.read_text())["model"] == "dmv"
    capsys.readouterr()
    assert main(["parse", "--json", "demo", "-o", str(out), "--use-tags", "--iterations", "3", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "dmv"


def test_save_model_is_one_option_name(tmp_path):
    for command in ("tag", "parse", "align", "segment"):
        sub = build_parser()._subparsers._group_actions[0].choices[command]
        assert any("--save-model" in a.option_strings for a in sub._actions), command


def test_one_index_base_flag_form_and_the_old_spellings_still_work(tmp_path, corpora):
    gold = str(corpora / "align" / "ja-en" / "jaen.gold")
    parser = build_parser()
    new = parser.parse_args(["corpus", "stats", gold, "--alignments", "pharaoh", "--base", "1"])
    old = parser.parse_args(["corpus", "stats", gold, "--alignments", "pharaoh", "--one-based"])
    assert new.base == old.base == 1
    side = str(corpora / "align" / "ro-en" / "roen.src") if (corpora / "align" / "ro-en" / "roen.src").exists() else gold
    pair = ["align", side, side, "-o", str(tmp_path / "o")]
    a = parser.parse_args(pair + ["--gold-base", "0"])
    b = parser.parse_args(pair + ["--gold-one-based", "no"])
    assert a.gold_base == b.gold_base == 0
    with pytest.raises(SystemExit):
        parser.parse_args(pair + ["--gold-base", "2"])


def test_help_is_plain_text_and_shows_every_default(capsys):
    for command in ("parse", "align", "tag"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert ":class:" not in text and "``--model" not in text
        assert "default: " in text or "(default" in text
    with pytest.raises(SystemExit):
        main(["align", "--help"])
    assert "default: grow-diag-final-and" in capsys.readouterr().out


@pytest.mark.parametrize("suffix,compress", [(".gz", "gzip"), (".bz2", "bz2"), (".xz", "lzma")])
def test_compressed_inputs_are_read_transparently(tmp_path, capsys, suffix, compress):
    import importlib

    from induce.corpus.formats import load_corpus

    assert main(["corpus", "demo", "-o", str(tmp_path / "d.conllu"), "--sentences", "40"]) == 0
    plain = (tmp_path / "d.conllu").read_bytes()
    packed = tmp_path / f"d.conllu{suffix}"
    packed.write_bytes(importlib.import_module(compress).compress(plain))
    a, b = load_corpus(tmp_path / "d.conllu"), load_corpus(packed)
    assert a.n_tokens == b.n_tokens and a.vocab.itos == b.vocab.itos
    truncated = tmp_path / f"cut.conllu{suffix}"
    truncated.write_bytes(packed.read_bytes()[: len(packed.read_bytes()) // 2])
    capsys.readouterr()
    assert main(["corpus", "stats", str(truncated)]) == 2
    assert "cut.conllu" in capsys.readouterr().err


def test_corpus_convert_round_trips_tags_and_refuses_trees_it_lacks(tmp_path, corpora, capsys):
    from induce.corpus.formats import load_corpus

    source = corpora / "ptb-sample" / "wsj_0001.mrg"
    as_conllu, as_columns = tmp_path / "w.conllu", tmp_path / "w.txt"
    assert main(["corpus", "convert", str(source), "-o", str(as_conllu), "--to", "conllu"]) == 0
    assert main(["corpus", "convert", str(as_conllu), "-o", str(as_columns), "--to", "conll2000"]) == 0
    a, b, c = load_corpus(source), load_corpus(as_conllu), load_corpus(as_columns, "conll2000")
    assert a.vocab.itos == b.vocab.itos == c.vocab.itos
    gold = a.tag_vocabs["pos"].itos
    assert [gold[i] for i in a.tags["pos"]] == [b.tag_vocabs["xpos"].itos[i] for i in b.tags["xpos"]]
    capsys.readouterr()
    assert main(["corpus", "convert", str(as_conllu), "-o", str(tmp_path / "w.mrg"), "--to", "ptb"]) == 2
    assert "no constituency tree" in capsys.readouterr().err


def test_alignment_gold_formats_are_detected(corpora, tmp_path):
    from induce.corpus.parallel import detect_alignment_format, read_alignments
    from induce.errors import CorpusFormatError

    assert detect_alignment_format(corpora / "align" / "ro-en" / "roen.gold") == "pharaoh"
    naacl = corpora / "align" / "en-fr" / "test.wa.nonullalign"
    assert detect_alignment_format(naacl) == "naacl"
    assert read_alignments(naacl, "auto") == read_alignments(naacl, "naacl")
    bad = tmp_path / "bad.wa"
    bad.write_text("0 1 2 X Y\n")
    with pytest.raises(CorpusFormatError, match="bad.wa:1"):
        detect_alignment_format(bad)


def test_tag_output_format_follows_the_output_name_and_keeps_gold_pos(tmp_path, corpora):
    from induce.corpus.formats import load_corpus

    source = corpora / "ptb-sample" / "wsj_0001.mrg"
    out = tmp_path / "tagged.conllu"
    assert main(["tag", str(source), "-o", str(out), "--states", "4", "--iterations", "2", "--quiet"]) == 0
    gold, tagged = load_corpus(source), load_corpus(out)
    assert [gold.tag_vocabs["pos"].itos[i] for i in gold.tags["pos"]] == \
        [tagged.tag_vocabs["xpos"].itos[i] for i in tagged.tags["xpos"]]
    assert "induced=S" in out.read_text()

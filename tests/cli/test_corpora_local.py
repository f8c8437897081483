"""``induce corpora`` and registry names honour ``$INDUCE_CORPORA`` (a shared/corpora-style collection)."""

from __future__ import annotations

import json
import shutil

import pytest

from induce.cli import main
from induce.corpus import registry
from induce.corpus.formats import load_corpus
from tests.conftest import CORPORA

pytestmark = pytest.mark.skipif(CORPORA is None, reason="shared corpora not found (INDUCE_CORPORA)")


@pytest.fixture
def collection(tmp_path, monkeypatch):
    """A collection holding alice (verified file), align-ro-en with one damaged file, and the ptb-sample folder."""
    root = tmp_path / "corpora"
    shutil.copytree(CORPORA / "extras" / "alice", root / "extras" / "alice")
    shutil.copytree(CORPORA / "align" / "ro-en", root / "align" / "ro-en")
    with open(root / "align" / "ro-en" / "roen.gold", "a", encoding="utf-8") as damaged:
        damaged.write("1-1\n")
    (root / "ptb-sample").mkdir()
    shutil.copy(CORPORA / "ptb-sample" / "wsj_0001.mrg", root / "ptb-sample")
    monkeypatch.setenv("INDUCE_CORPORA", str(root))
    monkeypatch.setenv("INDUCE_DATA", str(tmp_path / "data"))
    return root


def test_list_shows_what_the_collection_holds(collection, capsys):
    assert main(["corpora", "list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["corpora_dir"] == str(collection)
    local = {c["name"]: c["local"] for c in out["corpora"]}
    assert local["alice"] == str(collection / "extras" / "alice")
    assert local["ptb-sample"] == str(collection / "ptb-sample")
    assert local["align-ro-en"] is None  # a registered checksum differs
    assert local["ud-en-ewt"] is None and all(c["fetched"] is None for c in out["corpora"])
    assert main(["corpora", "list"]) == 0
    text = capsys.readouterr().out
    assert f"local corpora:  {collection}" in text
    assert [line.split()[2] for line in text.splitlines() if line.startswith("alice ")] == ["local"]


def test_fetch_and_names_use_the_collection(collection, capsys, tmp_path):
    assert main(["corpora", "fetch", "alice", "--quiet"]) == 0  # no mirror, no network: found locally
    assert capsys.readouterr().out.strip() == str(collection / "extras" / "alice")
    assert not (tmp_path / "data").exists()
    assert registry.resolve("ptb-sample") == collection / "ptb-sample"
    assert load_corpus("alice").n_tokens == load_corpus(CORPORA / "extras" / "alice").n_tokens
    with pytest.raises(SystemExit):  # damaged copy: not present, not downloaded
        main(["corpus", "stats", "align-ro-en"])
    assert "induce corpora fetch align-ro-en" in capsys.readouterr().err


def test_unset_means_no_collection(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("INDUCE_CORPORA", raising=False)
    assert registry.default_corpora_dir() is None and registry.local_path("alice") is None
    assert main(["corpora", "list", "--json", "--data-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["corpora_dir"] is None and all(c["local"] is None for c in out["corpora"])
    assert main(["corpora", "list", "--json", "--corpora-dir", str(CORPORA)]) == 0
    assert {c["name"]: c["local"] for c in json.loads(capsys.readouterr().out)["corpora"]}["alice"] is not None

"""The public-corpora registry and ``induce corpora``, through a local ``file://`` mirror."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import urllib.parse
import zipfile
from pathlib import Path

import pytest

from induce.cli import main
from induce.corpus import registry
from induce.errors import InduceError

# registry name -> folder of the byte-identical copies in shared/corpora
SHARED = {
    "ud-en-ewt": "ud/en_ewt", "ud-tr-imst": "ud/tr_imst", "ud-hu-szeged": "ud/hu_szeged",
    "ud-vi-vtb": "ud/vi_vtb", "ud-el-gdt": "ud/el_gdt", "ud-de-gsd": "ud/de_gsd",
    "ud-fr-gsd": "ud/fr_gsd", "ud-zh-gsdsimp": "ud/zh_gsdsimp", "ud-ja-gsd": "ud/ja_gsd",
    "align-ro-en": "align/ro-en", "align-ja-en": "align/ja-en", "align-en-fr": "align/en-fr",
    "alice": "extras/alice",
}


@pytest.fixture(autouse=True)
def no_local_collection(monkeypatch):
    """These tests exercise downloads: no ``$INDUCE_CORPORA`` copy may stand in for them
    (tests/cli/test_corpora_local.py covers the local collection)."""
    monkeypatch.delenv("INDUCE_CORPORA", raising=False)


def _mirror_path(mirror: Path, url: str) -> Path:
    return mirror / urllib.parse.urlsplit(url).path.lstrip("/")


def _build_mirror(mirror: Path, corpora: Path, name: str) -> None:
    """Copy the shared files of ``name`` to where its URLs point under ``mirror``."""
    for f in registry.get_entry(name)["files"]:
        dest = _mirror_path(mirror, f["url"])
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpora / SHARED[name] / f["path"], dest)


@pytest.fixture
def mirror(tmp_path, corpora):
    root = tmp_path / "mirror"
    for name in ("align-ro-en", "alice"):
        _build_mirror(root, corpora, name)
    return root


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_registered_checksums_match_the_shared_copies(corpora):
    checked = 0
    for entry in registry.list_corpora():
        if not entry["verified"]:
            assert all(f["sha256"] is None for f in entry["files"])
            continue
        for f in entry["files"]:
            assert registry.sha256_file(corpora / SHARED[entry["name"]] / f["path"]) == f["sha256"]
            checked += 1
    assert checked >= 30


def test_registry_entries_are_complete():
    names = [e["name"] for e in registry.list_corpora()]
    assert len(names) == len(set(names))
    for entry in registry.list_corpora():
        assert {"name", "description", "license", "format", "source", "homepage", "files"} <= set(entry)
        for f in entry["files"]:
            assert f["url"].startswith("https://") and f["path"]
            assert f["sha256"] is None or len(f["sha256"]) == 64
            assert f["extract"] in (None, "zip", "tar.gz")


def test_mirrored_url_replaces_scheme_and_host():
    url = "https://github.com/a/b/raw/0123abcd/x/y.txt"
    assert registry.mirrored_url(url, "file:///srv/m/") == "file:///srv/m/a/b/raw/0123abcd/x/y.txt"
    assert registry.mirrored_url(url, None) == url


def test_fetch_through_mirror_verifies_and_installs(tmp_path, mirror, corpora):
    data = tmp_path / "data"
    path = registry.fetch("align-ro-en", data_dir=data, mirror=mirror.as_uri(), progress=False)
    assert path == data / "align-ro-en"
    for name in ("roen.src-tgt", "roen.gold"):
        assert (path / name).read_bytes() == (corpora / "align/ro-en" / name).read_bytes()
    manifest = json.loads((path / registry.MANIFEST).read_text())
    assert all(d["verified"] for d in manifest["downloads"])
    assert sorted(p.name for p in data.iterdir()) == ["align-ro-en"]  # no staging left
    assert registry.fetched_path("align-ro-en", data) == path


def test_refetch_is_a_no_op(tmp_path, mirror):
    data = tmp_path / "data"
    path = registry.fetch("alice", data_dir=data, mirror=mirror.as_uri(), progress=False)
    stamp = (path / "carroll-alice.txt").stat().st_mtime_ns
    shutil.rmtree(mirror)  # a second download would now fail
    assert registry.fetch("alice", data_dir=data, mirror=mirror.as_uri(), progress=False) == path
    assert (path / "carroll-alice.txt").stat().st_mtime_ns == stamp


def test_damaged_download_is_fetched_again(tmp_path, mirror):
    data = tmp_path / "data"
    path = registry.fetch("alice", data_dir=data, mirror=mirror.as_uri(), progress=False)
    text = path / "carroll-alice.txt"
    text.write_text("truncated")
    assert registry.fetched_path("alice", data) is None
    registry.fetch("alice", data_dir=data, mirror=mirror.as_uri(), progress=False)
    assert _sha(text) == registry.get_entry("alice")["files"][0]["sha256"]


def test_corrupted_mirror_file_raises_checksum_error_and_leaves_nothing(tmp_path, mirror):
    entry = registry.get_entry("align-ro-en")
    bad = _mirror_path(mirror, entry["files"][1]["url"])
    bad.write_bytes(bad.read_bytes()[:-10] + b"0-0 0-0 0\n")
    data = tmp_path / "data"
    with pytest.raises(registry.ChecksumError) as err:
        registry.fetch("align-ro-en", data_dir=data, mirror=mirror.as_uri(), progress=False)
    message = str(err.value)
    assert "roen.gold" in message and entry["files"][1]["sha256"] in message and _sha(bad) in message
    assert isinstance(err.value, InduceError)
    assert list(data.iterdir()) == []


def test_missing_mirror_file_is_a_clear_error(tmp_path, mirror):
    _mirror_path(mirror, registry.get_entry("alice")["files"][0]["url"]).unlink()
    data = tmp_path / "data"
    with pytest.raises(InduceError, match="cannot download"):
        registry.fetch("alice", data_dir=data, mirror=mirror.as_uri(), progress=False)
    assert list(data.iterdir()) == []


def test_unverified_entry_needs_no_verify_and_is_unpacked(tmp_path, corpora):
    mirror, data = tmp_path / "mirror", tmp_path / "data"
    entry = registry.get_entry("align-de-en")
    with pytest.raises(InduceError, match="no-verify"):
        registry.fetch("align-de-en", data_dir=data, mirror=mirror.as_uri(), progress=False)
    assert not data.exists()
    archive = _mirror_path(mirror, entry["files"][0]["url"])
    archive.parent.mkdir(parents=True)
    with zipfile.ZipFile(archive, "w") as zf:
        for name in ("test.de", "test.en", "de-en.wa"):
            zf.write(corpora / "align/de-en" / name, f"German-English/{name}")
    path = registry.fetch("align-de-en", data_dir=data, mirror=mirror.as_uri(), progress=False, no_verify=True)
    assert (path / "German-English/de-en.wa").read_bytes() == (corpora / "align/de-en/de-en.wa").read_bytes()
    assert not (path / "German-English_WordAlignment.zip").exists()
    manifest = json.loads((path / registry.MANIFEST).read_text())
    assert manifest["downloads"][0]["verified"] is False
    assert set(manifest["files"]) == {f"German-English/{n}" for n in ("test.de", "test.en", "de-en.wa")}


def _toy_entry(monkeypatch, tmp_path, payload: bytes, kind: str) -> str:
    """Register a one-archive corpus ``toy`` whose mirror copy is ``payload``."""
    url = "https://example.org/toy/archive.bin"
    dest = _mirror_path(tmp_path / "mirror", url)
    dest.parent.mkdir(parents=True)
    dest.write_bytes(payload)
    entry = {"name": "toy", "description": "toy", "license": "none", "format": "text", "source": "test",
             "homepage": "", "files": [{"url": url, "path": "archive.bin",
                                        "sha256": hashlib.sha256(payload).hexdigest(), "extract": kind}]}
    monkeypatch.setitem(registry._BY_NAME, "toy", entry)
    return (tmp_path / "mirror").as_uri()


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_tar_gz_archive_is_verified_and_unpacked(tmp_path, monkeypatch):
    mirror = _toy_entry(monkeypatch, tmp_path, _tar_gz({"toy/a.txt": b"alpha\n", "toy/b.txt": b"beta\n"}), "tar.gz")
    path = registry.fetch("toy", data_dir=tmp_path / "data", mirror=mirror, progress=False)
    assert (path / "toy/a.txt").read_bytes() == b"alpha\n" and (path / "toy/b.txt").read_bytes() == b"beta\n"


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_archive_escaping_the_target_is_refused(tmp_path, monkeypatch, kind):
    if kind == "zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("../evil.txt", b"x")
        payload = buf.getvalue()
    else:
        payload = _tar_gz({"../evil.txt": b"x"})
    mirror = _toy_entry(monkeypatch, tmp_path, payload, kind)
    data = tmp_path / "data"
    with pytest.raises(InduceError, match="unsafe"):
        registry.fetch("toy", data_dir=data, mirror=mirror, progress=False)
    assert list(data.iterdir()) == [] and not (tmp_path / "evil.txt").exists()


def test_default_data_dir_follows_induce_data(monkeypatch, tmp_path):
    monkeypatch.setenv("INDUCE_DATA", str(tmp_path / "d"))
    assert registry.default_data_dir() == tmp_path / "d"
    monkeypatch.delenv("INDUCE_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert registry.default_data_dir() == tmp_path / "cache" / "induce"


def test_cli_list_json_parses(capsys, tmp_path):
    assert main(["corpora", "list", "--json", "--data-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    by_name = {c["name"]: c for c in out["corpora"]}
    assert {"ud-en-ewt", "alice", "brown"} <= set(by_name)
    assert by_name["alice"]["verified"] and not by_name["brown"]["verified"]
    assert by_name["alice"]["fetched"] is None
    assert main(["corpora", "list", "--data-dir", str(tmp_path)]) == 0
    assert "ud-en-ewt" in capsys.readouterr().out


def test_cli_fetch_prints_path(capsys, tmp_path, mirror):
    data = tmp_path / "data"
    rc = main(["corpora", "fetch", "alice", "--data-dir", str(data), "--mirror", mirror.as_uri(), "--quiet"])
    assert rc == 0
    assert capsys.readouterr().out.strip() == str(data / "alice")


def test_cli_unknown_name_exits_2(capsys, tmp_path):
    assert main(["corpora", "fetch", "no-such-corpus", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown corpus 'no-such-corpus'" in err and "ud-en-ewt" in err
    assert list(tmp_path.iterdir()) == []


def test_registry_names_are_corpus_inputs_once_fetched(tmp_path, mirror, monkeypatch, capsys):
    from induce.cli import main
    from induce.corpus.formats import load_corpus

    data = tmp_path / "data"
    monkeypatch.setenv("INDUCE_DATA", str(data))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["corpus", "stats", "alice"])
    assert "induce corpora fetch alice" in capsys.readouterr().err
    registry.fetch("alice", data_dir=data, mirror=mirror.as_uri(), progress=False)
    assert main(["corpus", "stats", "alice", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == load_corpus(data / "alice").n_tokens > 20_000

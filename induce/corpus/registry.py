"""Registry of public corpora and a verified downloader (``induce corpora list|fetch``).

Each entry gives a name, a description, the license, the file format, the
upstream source (repository @ commit) and its files: the official URL, the
path the file gets under ``data_dir/<name>/``, its SHA-256 and whether it is
an archive to unpack (``"zip"`` or ``"tar.gz"``).

Which corpora carry a checksum, and why
---------------------------------------
These machines have no internet access, so no checksum here comes from a
download.  A SHA-256 is registered only where the copy in ``shared/corpora``
is byte-identical to the upstream file its folder README names
(repository @ commit, path), and was computed from that copy:

* ``ud-*``: the UD CoNLL-U files at the commits recorded in
  ``shared/corpora/README.md`` (English-EWT train at the full commit
  ``34731d23...`` at which ``ud/README.md`` verified its git blob id; the
  other UD commits are recorded abbreviated to 8 hex digits, which GitHub
  resolves);
* ``align-ro-en``, ``align-ja-en``: ``neulab/awesome-align`` ``examples/``;
* ``align-en-fr``: the HLT-NAACL 2003 trial/test text and gold from
  ``NSavov/NLP2-Projects`` (``validation/dev.*`` saved as ``trial.*``);
* ``alice``: ``carroll-alice.txt`` from ``celsofaf/AIND-NLP``.

The NLTK data packages (``ptb-sample``, ``conll2000``, ``brown``,
``universal-tagset``, ``wsj-dep-sample``, ``conll2007``) and the Biçici
German-English zip (``align-de-en``) are zip archives upstream; the shared
folders hold their unpacked contents, so the archives' checksums could not be
established here.  They are listed with their official URL and
``sha256: None``; fetching them needs ``no_verify=True`` (``--no-verify``).
The ISI Hansards training bitext is left out: the shared copy is a
concatenation of 252 upstream files, not an upstream file.

Download protocol
-----------------
:func:`fetch` streams every file (``urllib``, so ``file://`` works; a
``mirror`` base URL replaces the official ``scheme://host``) into a staging
directory beside the target while hashing it, checks the SHA-256 (a mismatch
raises :class:`ChecksumError` naming the file and both hashes, and the staging
directory is removed), unpacks archives, writes a manifest with the SHA-256 of
every resulting file, and renames the staging directory to
``data_dir/<name>`` in one step.  A later fetch whose manifest still matches
the files on disk (and the registry's checksums) downloads nothing.

A local collection: ``$INDUCE_CORPORA``
---------------------------------------
``$INDUCE_CORPORA`` names a folder laid out as ``shared/corpora`` (``ud/en_ewt/``,
``align/ro-en/``, ``ptb-sample/``, ...; :data:`LOCAL_FOLDERS`).  A corpus whose
files are there (with the registered SHA-256 where there is one; an archive
entry counts when its folder is non-empty) is *present*: ``induce corpora list``
shows it, :func:`resolve` takes it when nothing was downloaded, and
:func:`fetch` returns it instead of downloading.
"""

from __future__ import annotations

import copy
import contextlib
import hashlib
import json
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from ..atomic import atomic_write
from ..errors import InduceError

MANIFEST = "induce-manifest.json"
_CHUNK = 1 << 20


class ChecksumError(InduceError):
    """A downloaded file's SHA-256 differs from the registered one."""

    def __init__(self, path: str, url: str, expected: str, actual: str):
        self.path, self.url, self.expected, self.actual = path, url, expected, actual
        super().__init__(f"checksum mismatch for {path} (from {url}): expected sha256 {expected}, got {actual}")


def _github(repo: str, commit: str, path: str) -> str:
    """The raw-file URL of ``path`` in GitHub repository ``repo`` at ``commit``."""
    return f"https://github.com/{repo}/raw/{commit}/{path}"


def _file(url: str, path: str, sha256: str | None, extract: str | None = None) -> dict:
    return {"url": url, "path": path, "sha256": sha256, "extract": extract}


def _ud(name: str, treebank: str, prefix: str, license: str, commit: str, sha256: dict[str, str],
        description: str, commits: dict[str, str] | None = None) -> dict:
    """A UD treebank entry: one CoNLL-U file per split in ``sha256``."""
    repo = f"UniversalDependencies/UD_{treebank}"
    files = [
        _file(_github(repo, (commits or {}).get(split, commit), f"{prefix}-ud-{split}.conllu"),
              f"{prefix}-ud-{split}.conllu", digest)
        for split, digest in sha256.items()
    ]
    return {
        "name": name,
        "description": description,
        "license": license,
        "format": "conllu",
        "source": f"{repo} @ {commit}",
        "homepage": f"https://github.com/{repo}",
        "files": files,
    }


def _github_entry(name: str, repo: str, commit: str, files: list[tuple[str, str, str | None]],
                  description: str, license: str, fmt: str, extract: str | None = None) -> dict:
    """An entry whose files are ``(upstream path, local path, sha256)`` in ``repo`` at ``commit``."""
    return {
        "name": name,
        "description": description,
        "license": license,
        "format": fmt,
        "source": f"{repo} @ {commit}",
        "homepage": f"https://github.com/{repo}",
        "files": [_file(_github(repo, commit, up), local, digest, extract) for up, local, digest in files],
    }


def _nltk(name: str, package: str, description: str, license: str, fmt: str) -> dict:
    """An NLTK data package (a zip upstream, checksum not established here)."""
    zip_name = package.rsplit("/", 1)[-1]
    return _github_entry(name, "nltk/nltk_data", "5db857e6", [(f"packages/{package}", zip_name, None)],
                         description, license, fmt, extract="zip")


_AWESOME = ("neulab/awesome-align", "5f150d45bbe51e167daf0a84abebaeb07c3323d1")
_NSAVOV = ("NSavov/NLP2-Projects", "f80cff259528ac28654ea67d7f55695960c6bbeb")

REGISTRY: tuple[dict, ...] = (
    _ud("ud-en-ewt", "English-EWT", "en_ewt", "CC BY-SA 4.0", "15d613d8", {
        "train": "3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b",
        "dev": "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6",
        "test": "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd",
    }, "UD English Web Treebank (17 UPOS, PTB XPOS, dependencies)",
        commits={"train": "34731d23bafeeff233fdcee18ffc0254b1aa0e28"}),
    _ud("ud-tr-imst", "Turkish-IMST", "tr_imst", "CC BY-NC-SA 4.0", "bcd48daa", {
        "train": "8d8b8b581dab9362e6f2e4328aef77b9fabec1d189a199e320ba136710c7bd83",
        "dev": "3bdaab362b7a9af7cbf8944aee5c1c1d077970ad4bcafcf23c5c062d4cf93801",
        "test": "fc9269bd598489b942a025b678779557266ce0c054a843e47c7db386d76d6459",
    }, "UD Turkish-IMST"),
    _ud("ud-hu-szeged", "Hungarian-Szeged", "hu_szeged", "CC BY-NC-SA 3.0", "8f08ba64", {
        "train": "1e9d02111d6e842ad60d20cccfb43d8f758b4cc311d13e2044af2e285372847a",
        "dev": "8cb5b630e09d5d938ce624b06fe3abe57a631533f5aef186ba533daca6e4ab5b",
        "test": "9031ec98f775ceae6940580a1bb4ef8a2a9e9bee38c40eb9e8ce0f006b56fa59",
    }, "UD Hungarian-Szeged"),
    _ud("ud-vi-vtb", "Vietnamese-VTB", "vi_vtb", "CC BY-SA 4.0", "e8fa5483", {
        "train": "1df180722db99b724f7368aca50597133bee28606de3394cd8d12a57da89978d",
        "dev": "0b779257b9225575b3b30e15d64cc4ef9945a77f8cceb9f92d794b483a2752dd",
        "test": "abc1b0ea98661bbb494a8c0da123ba2fe1a3ef71322c380fe66468884d9b4285",
    }, "UD Vietnamese-VTB (multi-syllable words contain spaces)"),
    _ud("ud-el-gdt", "Greek-GDT", "el_gdt", "CC BY-NC-SA 3.0", "1485f849", {
        "train": "892cd36cd47372ec0d7ccdbc874af9a6994651cdb0cf2cee6ba93bb01ee83794",
        "dev": "53de54735051eecef04aa8c0f5f0fbf2466e0e0d4fd9dfd3d313560c394ddf41",
        "test": "30cb5881ce6f8ba628de88853a4c105e716a365e8fcd9024a85befe41165c260",
    }, "UD Greek-GDT"),
    _ud("ud-de-gsd", "German-GSD", "de_gsd", "CC BY-SA 4.0", "297fcf35", {
        "dev": "00431f2624cbbf66796c097a9303bbc8f8e8ca88ef35c4c5664aa396b2d674c9",
        "test": "bceb8e867ba3ee7f1449d44fb31538d63a514f07e6763e7d9a5ffe794407bed4",
    }, "UD German-GSD, dev and test"),
    _ud("ud-fr-gsd", "French-GSD", "fr_gsd", "CC BY-SA 4.0", "830e2782", {
        "dev": "3e7531b645e5bd6fe37bb619cdd8292e87f5937e64cd8627b4094324eb830e6b",
        "test": "5d1743c7a9ce2908943d4a430ed9a77755e2a8d7e32d42ee0f1d6a0b528f0be8",
    }, "UD French-GSD, dev and test"),
    _ud("ud-zh-gsdsimp", "Chinese-GSDSimp", "zh_gsdsimp", "CC BY-SA 4.0", "eb3aed31", {
        "dev": "342a2969df6d6d08bdc25dbc067c93c86ab3099bb054a9921ae7067cbc2c53ad",
        "test": "573f59b799b499a920d2d5bdc0e3c1dbd7bcacf86bdece4334ecbd03e21b6150",
    }, "UD Chinese-GSDSimp (gold segmentation), dev and test"),
    _ud("ud-ja-gsd", "Japanese-GSD", "ja_gsd", "CC BY-SA 4.0", "7bc20119", {
        "dev": "18d266e29336ef619787a928d89d20f2e64188be70d5b37829e3aadc5bb6b841",
        "test": "5f50ee6ed45c7ebda3787e593eaf5e9a225f25e53f6b4b32df778031862c843f",
    }, "UD Japanese-GSD, dev and test"),
    _github_entry("align-ro-en", *_AWESOME, [
        ("examples/roen.src-tgt", "roen.src-tgt", "e3ae360038e44813c27ebd470e359bf2d2a2a10e4697129060b3cbafbd2742a7"),
        ("examples/roen.gold", "roen.gold", "12c3ae50f32817ce27edbd272c90b91ac8156823505d25ecd34266804ed65b10"),
    ], "WPT 2005 Romanian-English word-alignment test set (248 pairs)",
        "research use (WPT05); repository BSD-3-Clause", "parallel ' ||| ' text + Pharaoh links, 1-based"),
    _github_entry("align-ja-en", *_AWESOME, [
        ("examples/jaen.src-tgt", "jaen.src-tgt", "64471c1189a30979966078c1172e264558d2aefb376553f7fb1a629d585f5a18"),
        ("examples/jaen.gold", "jaen.gold", "05cace5aad9ee118dca8f73d9a98434c80fa5d6531e83a2b27b16057b583afa6"),
    ], "KFTT Japanese-English gold word alignments (582 pairs)",
        "CC BY-SA 3.0", "parallel ' ||| ' text + Pharaoh links, 1-based"),
    _github_entry("align-en-fr", *_NSAVOV, [
        ("Project-1/validation/dev.e", "trial.e", "56a871f16eafc2b44f9ba5942a636e2949baf288f228561f1889d821c04398d0"),
        ("Project-1/validation/dev.f", "trial.f", "fb337c8e86297a538ebe533f9d283dc6e186961ab9ca032257bc1c1769f71b6e"),
        ("Project-1/validation/dev.wa.nonullalign", "trial.wa.nonullalign",
         "1c04fe099aa83c1ef0fd1044547e34684618f2362e20da8dca3d94cb3b096f74"),
        ("Project-1/testing/test.e", "test.e", "d73d6edcf34615f9f9489d0c234a44eadb3294635d10c9ceb77c22afca46bb39"),
        ("Project-1/testing/test.f", "test.f", "7aece2a76346cd3e36a43d6e2958bf08bd22a24469e50c7e21da90fe49e0402d"),
        ("Project-1/testing/test.wa.nonullalign", "test.wa.nonullalign",
         "eedb9a219cb672a79130557fd4a4bc698565078c6a64abe8d9b18c3bb3ec0651"),
    ], "HLT-NAACL 2003 English-French Hansards gold alignments (trial 37, test 447 pairs)",
        "research use (shared task)", "tokenized text, NAACL 'sent e f S|P' links, 1-based"),
    _github_entry("alice", "celsofaf/AIND-NLP", "8cdbb6e6f0c72a043ad93f6d82dd8b4ecc36f5ef", [
        ("carroll-alice.txt", "carroll-alice.txt", "84157c64cf991c7cd7f3fc39aa8fddefebae13710268f448f6034559db37f884"),
    ], "Alice's Adventures in Wonderland (NLTK Gutenberg text), untokenized",
        "public domain", "raw text"),
    _nltk("ptb-sample", "corpora/treebank.zip", "Penn Treebank WSJ sample (wsj_0001-0199)",
          "LDC fragment, non-commercial", "PTB brackets (.mrg)"),
    _nltk("conll2000", "corpora/conll2000.zip", "CoNLL-2000 chunking data (WSJ 15-18, 20)",
          "freely distributed by the shared task", "word POS chunk"),
    _nltk("brown", "corpora/brown.zip", "Brown Corpus, tagged", "non-commercial", "word/TAG"),
    _nltk("universal-tagset", "taggers/universal_tagset.zip", "Petrov et al. universal tagset maps",
          "CC BY-SA 4.0", "fine-tag TAB universal-tag"),
    _nltk("wsj-dep-sample", "corpora/dependency_treebank.zip", "WSJ sample as unlabeled dependencies",
          "LDC fragment, non-commercial", "word TAB POS TAB head"),
    _nltk("conll2007", "corpora/conll2007.zip", "CoNLL 2007 Basque and Spanish dependency data",
          "CC BY-NC-ND", "CoNLL-X"),
    _github_entry("align-de-en", "bicici/SMTData", "eb81ef33c1d77412eee2b5a0ab8dd97936d23cb0", [
        ("German-English_WordAlignment.zip", "German-English_WordAlignment.zip", None),
    ], "Europarl German-English, 100 pairs hand-aligned by E. Bicici",
        "no formal license (training and testing use)", "text + Pharaoh links, 0-based", extract="zip"),
)

_BY_NAME = {entry["name"]: entry for entry in REGISTRY}

#: registry name -> its folder in a ``shared/corpora``-style collection (``$INDUCE_CORPORA``)
LOCAL_FOLDERS = {
    **{e["name"]: "ud/" + e["files"][0]["path"].split("-ud-")[0] for e in REGISTRY if e["name"].startswith("ud-")},
    "align-ro-en": "align/ro-en", "align-ja-en": "align/ja-en", "align-en-fr": "align/en-fr",
    "align-de-en": "align/de-en", "alice": "extras/alice",
    **{name: name for name in ("ptb-sample", "conll2000", "brown", "universal-tagset", "wsj-dep-sample", "conll2007")},
}


# ------------------------------------------------------------------------ queries
def default_data_dir() -> Path:
    """``$INDUCE_DATA``, else ``$XDG_CACHE_HOME/induce``, else ``~/.cache/induce``."""
    if os.environ.get("INDUCE_DATA"):
        return Path(os.environ["INDUCE_DATA"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "induce"


def default_corpora_dir() -> Path | None:
    """``$INDUCE_CORPORA`` (a ``shared/corpora``-style collection), or ``None`` when unset."""
    value = os.environ.get("INDUCE_CORPORA")
    return Path(value).expanduser() if value else None


def local_path(name: str, corpora_dir: str | os.PathLike | None = None) -> Path | None:
    """The folder of ``name`` in ``corpora_dir`` (default ``$INDUCE_CORPORA``) when the corpus is present there
    (see the module docstring), else ``None``."""
    entry = get_entry(name)
    root = Path(corpora_dir) if corpora_dir is not None else default_corpora_dir()
    if root is None:
        return None
    folder = root / LOCAL_FOLDERS[name]
    if any(f["extract"] for f in entry["files"]):
        return folder if folder.is_dir() and any(folder.iterdir()) else None
    for f in entry["files"]:
        path = folder / f["path"]
        if not path.is_file() or (f["sha256"] is not None and sha256_file(path) != f["sha256"]):
            return None
    return folder


def list_corpora() -> list[dict]:
    """Copies of every registry entry, with ``verified`` = every file has a checksum."""
    out = []
    for entry in REGISTRY:
        item = copy.deepcopy(entry)
        item["verified"] = all(f["sha256"] is not None for f in entry["files"])
        out.append(item)
    return out


def get_entry(name: str) -> dict:
    """The registry entry ``name``; an :class:`InduceError` listing the known names otherwise."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InduceError(f"unknown corpus {name!r}; known: {', '.join(_BY_NAME)}") from None


def mirrored_url(url: str, mirror: str | None) -> str:
    """``url`` with its ``scheme://host`` replaced by the base URL ``mirror`` (if given)."""
    if not mirror:
        return url
    parts = urllib.parse.urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return mirror.rstrip("/") + path


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def fetched_path(name: str, data_dir: str | os.PathLike | None = None) -> Path | None:
    """``data_dir/name`` if a complete, checked download of ``name`` is there, else ``None``."""
    entry = get_entry(name)
    target = Path(data_dir) if data_dir is not None else default_data_dir()
    target = target / name
    return target if _is_complete(entry, target) else None


def resolve(path: str | os.PathLike) -> str | os.PathLike:
    """``path``, or for a registry name that is not an existing path the folder of its download.

    Lets every command take ``ud-tr-imst`` where it takes a corpus path: the
    download in the data directory, else the copy in ``$INDUCE_CORPORA``.  A
    registry corpus in neither is an :class:`InduceError` saying how to fetch it.
    """
    name = str(path)
    if name not in _BY_NAME or os.path.exists(name):
        return path
    found = fetched_path(name) or local_path(name)
    if found is None:
        where = f"{default_data_dir()}" + (f" or {default_corpora_dir()}" if default_corpora_dir() else "")
        raise InduceError(f"{name} is a corpus of the registry that is not downloaded yet (in {where}); "
                          f"run: induce corpora fetch {name}")
    return found


def _is_complete(entry: dict, target: Path) -> bool:
    """Whether ``target`` holds every file its manifest lists, with the recorded
    SHA-256, from downloads matching the registry's current checksums."""
    try:
        manifest = json.loads((target / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    downloads = {d["url"]: d for d in manifest.get("downloads", [])}
    for f in entry["files"]:
        got = downloads.get(f["url"])
        if got is None or (f["sha256"] is not None and got["sha256"] != f["sha256"]):
            return False
    try:
        return all(sha256_file(target / rel) == digest for rel, digest in manifest["files"].items())
    except (OSError, KeyError):
        return False


# ---------------------------------------------------------------------- download
def _safe_member(name: str, archive: str) -> None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise InduceError(f"{archive}: unsafe member path {name!r} in archive")


def _extract(archive: Path, kind: str, into: Path) -> None:
    """Unpack ``archive`` (``"zip"`` or ``"tar.gz"``) into ``into``, refusing paths outside it."""
    if kind == "zip":
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                _safe_member(member, archive.name)
            zf.extractall(into)
    elif kind == "tar.gz":
        with tarfile.open(archive, "r:gz") as tf:
            try:
                tf.extractall(into, filter="data")
            except tarfile.FilterError as exc:
                raise InduceError(f"{archive.name}: unsafe archive member: {exc}") from None
    else:
        raise InduceError(f"{archive.name}: unknown archive kind {kind!r} (expected 'zip' or 'tar.gz')")


def _download(url: str, dest: Path, progress: bool) -> str:
    """Stream ``url`` into ``dest`` with a progress bar; returns the SHA-256 of the bytes."""
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
            length = response.headers.get("Content-Length")
            with tqdm(total=int(length) if length else None, unit="B", unit_scale=True,
                      desc=dest.name, disable=not progress, leave=False) as bar:
                for block in iter(lambda: response.read(_CHUNK), b""):
                    out.write(block)
                    digest.update(block)
                    bar.update(len(block))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise InduceError(f"cannot download {url}: {getattr(exc, 'reason', exc)}") from None
    return digest.hexdigest()


def _publish_modes(staging: Path) -> None:
    """Give the staging directory and manifest the modes the umask allows
    (``mkdtemp``/``mkstemp`` create them private)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)
    os.chmod(staging / MANIFEST, 0o666 & ~umask)


def _install(staging: Path, target: Path) -> None:
    """Rename the finished ``staging`` directory to ``target``, replacing an older one."""
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / target.name)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def fetch(name: str, data_dir: str | os.PathLike | None = None, mirror: str | None = None,
          progress: bool = True, no_verify: bool = False, corpora_dir: str | os.PathLike | None = None) -> Path:
    """Download corpus ``name`` into ``data_dir/name`` (see the module docstring) and return that path.

    Idempotent: an existing complete download is returned without network
    access, and so is a copy present in ``corpora_dir`` (default
    ``$INDUCE_CORPORA``; :func:`local_path`).  Raises :class:`InduceError` for an unknown name, a failed
    download or a file without registered checksum (unless ``no_verify``), and
    :class:`ChecksumError` on a mismatch; in every failure nothing is left in
    ``data_dir``.
    """
    entry = get_entry(name)
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    target = root / name
    if _is_complete(entry, target):
        return target
    local = local_path(name, corpora_dir)
    if local is not None:
        return local
    if not no_verify:
        unknown = [f["path"] for f in entry["files"] if f["sha256"] is None]
        if unknown:
            raise InduceError(
                f"corpus {name!r} has no registered checksum for {', '.join(unknown)}; "
                "fetch it with --no-verify (no_verify=True) to accept it unverified"
            )
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=root))
    try:
        downloads = []
        for f in entry["files"]:
            dest = staging / f["path"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            url = mirrored_url(f["url"], mirror)
            digest = _download(url, dest, progress)
            if f["sha256"] is not None and digest != f["sha256"] and not no_verify:
                raise ChecksumError(f["path"], url, f["sha256"], digest)
            downloads.append({"url": f["url"], "fetched_from": url, "path": f["path"], "sha256": digest,
                              "verified": f["sha256"] is not None and digest == f["sha256"]})
            if f["extract"]:
                _extract(dest, f["extract"], dest.parent)
                dest.unlink()
        files = {
            p.relative_to(staging).as_posix(): sha256_file(p)
            for p in sorted(staging.rglob("*")) if p.is_file()
        }
        manifest = {"name": name, "source": entry["source"], "downloads": downloads, "files": files}
        with atomic_write(staging / MANIFEST) as handle:
            json.dump(manifest, handle, indent=2)
            handle.write("\n")
        _publish_modes(staging)
        _install(staging, target)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        raise
    return target

"""The release files agree: one version (induce/__init__.py, read by pyproject.toml) in CITATION.cff and the
changelog; the LICENSE is the MIT text pyproject.toml declares; the docs' API pages cover every public estimator."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import induce

REPO = Path(__file__).resolve().parents[1]


def test_version_has_one_source_and_the_release_files_name_it():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "induce.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", induce.__version__)
    cff = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(induce.__version__)}$", cff, re.M)
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{induce.__version__}]" in changelog


def test_cli_version_is_the_package_version(capsys):
    from induce.cli import main

    try:
        main(["--version"])
    except SystemExit as stop:
        assert stop.code == 0
    assert capsys.readouterr().out.strip() == f"induce {induce.__version__}"


def test_license_is_the_declared_mit_text():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Copyright (c)" in text and "The induce developers" in text
    assert "WITHOUT WARRANTY OF ANY KIND" in text


def test_api_pages_cover_every_public_estimator_and_top_level_name():
    """Every estimator class (an ``InduceEstimator`` with a public name) is exported by a module a public API page
    documents, and every top-level name has its alias on the top-level page."""
    sys.path.insert(0, str(REPO / "docs" / "_ext"))
    try:
        import apigen
    finally:
        sys.path.remove(str(REPO / "docs" / "_ext"))
    from importlib import import_module

    from induce.base import InduceEstimator

    for name in apigen.all_modules():
        import_module(name)
    documented = set()
    for name in apigen.public_modules():
        module = import_module(name)
        exported = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
        documented |= {getattr(module, n) for n in exported if isinstance(getattr(module, n, None), type)}

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    estimators = {c for c in subclasses(InduceEstimator) if c.__module__.startswith("induce.")
                  and not c.__name__.startswith("_") and not any(p.startswith("_") for p in c.__module__.split("."))}
    assert estimators, "no estimator found"
    assert not estimators - documented, sorted(c.__qualname__ for c in estimators - documented)
    toplevel = (REPO / "docs" / "api" / "toplevel.rst").read_text(encoding="utf-8")
    missing = [n for n in induce.__all__ if f":: induce.{n}\n" not in toplevel]
    assert not missing, f"top-level names without an alias on docs/api/toplevel.rst: {missing}"

"""Shared fixtures: the location of the real corpora in ../shared/corpora, and the benchmark scripts as modules."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parent.parent


def _find_corpora() -> Path | None:
    env = os.environ.get("INDUCE_CORPORA")
    candidates = [Path(env)] if env else []
    candidates.append(_REPO.parent / "shared" / "corpora")
    for cand in candidates:
        if cand.is_dir():
            return cand
    return None


CORPORA = _find_corpora()


@pytest.fixture(scope="session")
def corpora() -> Path:
    """Path of the shared corpora; skips the test when they are not present."""
    if CORPORA is None:
        pytest.skip("real corpora not found: expected ../shared/corpora or $INDUCE_CORPORA")
    return CORPORA


@pytest.fixture(scope="session")
def benchmark_script():
    """Import a script of ``benchmarks/`` (not a package) by its file name: ``benchmark_script("timing")``."""
    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"bench_{name}", _REPO / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load

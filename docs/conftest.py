"""The user guide's examples are doctests (``--doctest-glob='*.rst'`` in pyproject.toml): each page runs in a fresh
temporary directory (examples may write files), with ``CORPORA`` (the shared corpora folder, or ``None``) in its
namespace; a page that reads the shared corpora is skipped, with the reason, when they are absent."""

from __future__ import annotations

from pathlib import Path

import pytest

#: pages whose examples read ``$INDUCE_CORPORA`` / ``../shared/corpora`` (the demo corpus needs nothing)
NEEDS_CORPORA = {"timeseries.rst", "alignment.rst"}


def _find_corpora() -> Path | None:
    """``$INDUCE_CORPORA`` or ``../shared/corpora`` beside the checkout (as tests/conftest.py looks)."""
    from induce.corpus.registry import default_corpora_dir

    for cand in (default_corpora_dir(), Path(__file__).resolve().parents[2] / "shared" / "corpora"):
        if cand is not None and cand.is_dir():
            return cand
    return None


@pytest.fixture(autouse=True)
def _doctest_page(request, doctest_namespace, tmp_path, monkeypatch):
    path = Path(str(request.node.fspath))
    if path.suffix != ".rst":
        return
    corpora = _find_corpora()
    if path.name in NEEDS_CORPORA and corpora is None:
        pytest.skip(f"{path.name}: the shared corpora are absent (set INDUCE_CORPORA or put them in ../shared/corpora)")
    doctest_namespace["CORPORA"] = corpora
    monkeypatch.chdir(tmp_path)

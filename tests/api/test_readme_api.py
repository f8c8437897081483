"""README's Python API section runs as written and says what ``predict`` returns (per-sentence arrays)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_api_block_runs_and_predict_is_per_sentence(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Python API"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(block, str(README), "exec"), scope)  # noqa: S102 - the README's own example
    corpus, states, flat, tags = scope["corpus"], scope["states"], scope["flat"], scope["tags"]
    assert len(states) == corpus.n_sentences
    assert [len(s) for s in states] == np.diff(corpus.offsets).tolist()
    assert all(s.dtype == np.int32 for s in states)
    assert flat.shape == (corpus.n_tokens,) and np.array_equal(np.concatenate(states), flat)
    assert len(tags) == 1 and len(tags[0]) == 3 and all(t.startswith("S") for t in tags[0])
    assert "one int32 array of state ids per sentence" in " ".join(section.split())

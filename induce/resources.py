"""Memory guards: estimate a chart's or lattice's size before allocating it.

A dynamic program over one long sentence can ask for more memory than the
machine has (the DMV chart of a 50,000-word sentence is 6 x 50,000^2 doubles,
about 112 GiB).  The estimators call :func:`check_memory` in ``fit`` / ``parse``
with an estimate from the sentence lengths and the model size; when the
estimate exceeds the memory available, a ``ConfigError`` names the longest
sentence (``file:line`` when known), the estimate, what is available and the
option that avoids it (``--max-length``), instead of a ``MemoryError`` (or
swapping) deep inside a kernel.

The estimates count the arrays the kernels allocate, in bytes (float64 = 8):

* DMV (:mod:`induce.kernels.dmv`): per-position attachment counts
  ``sum_i n_i^2`` doubles for the corpus, and for the longest sentence the
  inside and outside charts ``2 x 6 n^2`` plus the ``n^2`` attachment table.
* PCFG (:mod:`induce.kernels.inside_outside`): inside and outside charts
  ``2 (n+1)^2 K`` and the emission table ``n K`` for the longest sentence,
  plus ``K^3`` binary counts per sentence for cvi.
* PCFG-LA parsing (:mod:`induce.kernels.latent_chart`): the unsplit chart's
  index (int32), inside and outside (float64) and mask (bool) over
  ``(n+1)^2 S`` items for the longest sentence.
* Word alignment (:mod:`induce.kernels.align`): ``(I+1) J`` cells per pair, each
  with a key, a table entry, a value and a posterior (4 x 8 bytes) for each
  direction, plus the HMM forward and backward lattices ``2 x 2(I+1) J`` for the
  longest pair.

Available memory is ``MemAvailable`` of ``/proc/meminfo`` (else the free pages
of ``os.sysconf``), capped by a cgroup v2 ``memory.max`` and by the environment
variable ``INDUCE_MEMORY_LIMIT`` (bytes; tests use it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .errors import ConfigError

MEMORY_LIMIT_ENV = "INDUCE_MEMORY_LIMIT"
_GIB = 1 << 30


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_available() -> int | None:
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
        return max(0, int(limit) - used)
    except (OSError, ValueError):
        return None


def available_bytes() -> int | None:
    """Bytes this process can still allocate without swapping (``None`` if unknown)."""
    candidates = [b for b in (_meminfo_available(), _cgroup_available()) if b is not None]
    override = os.environ.get(MEMORY_LIMIT_ENV)
    if override:
        try:
            candidates.append(int(float(override)))
        except ValueError:
            raise ConfigError(f"{MEMORY_LIMIT_ENV} must be a number of bytes; got {override!r}") from None
    return min(candidates) if candidates else None


def _size(n_bytes: float) -> str:
    return f"{n_bytes / _GIB:.1f} GiB" if n_bytes >= _GIB / 10 else f"{n_bytes / (1 << 20):.1f} MiB"


def check_memory(estimate: float, what: str, longest: str,
                 remedy: str = "drop long sentences with --max-length N") -> None:
    """Raise ``ConfigError`` when ``estimate`` bytes exceed the available memory.

    ``what`` names the structure (``"the DMV charts"``), ``longest`` the
    sentence that dominates it (``"file:line, 50000 words"``), ``remedy`` the
    option that avoids it.
    """
    available = available_bytes()
    if available is None or estimate <= available:
        return
    raise ConfigError(f"{what} need about {_size(estimate)} (longest input: {longest}) but only "
                      f"{_size(available)} is available; {remedy}")


def sentence_label(lengths: Sequence[int] | np.ndarray, source: Callable[[int], tuple | None] | None = None) -> str:
    """``"FILE:LINE, N words"`` (or ``"sentence K, N words"``) of the longest sentence."""
    lengths = np.asarray(lengths)
    if lengths.size == 0:
        return "none"
    k = int(np.argmax(lengths))
    where = source(k) if source is not None else None
    place = f"{where[0]}:{where[1]}" if where and where[0] is not None else f"sentence {k + 1}"
    return f"{place}, {int(lengths[k])} words"


def corpus_source(corpus) -> Callable[[int], tuple | None]:
    """``index -> (file, line)`` of a Corpus's kept sentences (``None`` where unknown)."""
    sentences = getattr(corpus, "sentences", None)
    return lambda k: sentences[k].source if sentences is not None and k < len(sentences) else None


def dmv_bytes(lengths: np.ndarray) -> float:
    """Bytes of the DMV's per-position counts and the longest sentence's charts (see the module docstring)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.size == 0:
        return 0.0
    n = lengths.max()
    return 8.0 * (float(np.sum(lengths * lengths)) + 13.0 * n * n + 9.0 * lengths.sum())


def pcfg_bytes(lengths: np.ndarray, n_nonterminals: int, per_sentence_counts: bool) -> float:
    """Bytes of the inside-outside charts of the longest sentence (+ cvi's per-sentence binary counts)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.size == 0:
        return 0.0
    n, k = lengths.max(), float(n_nonterminals)
    chart = 2.0 * (n + 1) ** 2 * k + n * k
    return 8.0 * (chart + (lengths.size * k ** 3 if per_sentence_counts else k ** 3))


def latent_chart_bytes(lengths: np.ndarray, n_symbols: int) -> float:
    """Bytes of the unsplit chart (index, inside, outside, mask) of the longest sentence."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.size == 0:
        return 0.0
    return (4.0 + 8.0 + 8.0 + 1.0) * (lengths.max() + 1) ** 2 * n_symbols


def alignment_bytes(src_lengths: np.ndarray, tgt_lengths: np.ndarray, directions: int) -> float:
    """Bytes of the alignment cells of every pair and the longest pair's HMM lattices."""
    src = np.asarray(src_lengths, dtype=np.float64)
    tgt = np.asarray(tgt_lengths, dtype=np.float64)
    if src.size == 0:
        return 0.0
    cells = (src + 1) * tgt
    return directions * 32.0 * float(cells.sum()) + 8.0 * 4.0 * float(cells.max())


def hmm_bytes(n_states: int, n_words: int, lengths: np.ndarray) -> float:
    """Bytes of an HMM's count and parameter tables (``K^2`` transitions and ``K V`` emissions, four copies
    each: counts, parameters and their working copies) and the longest sentence's forward, backward and
    posterior lattices (``3 T K``)."""
    lengths = np.asarray(lengths, dtype=np.float64)
    k = float(n_states)
    longest = lengths.max() if lengths.size else 0.0
    return 8.0 * (4.0 * k * (k + n_words) + 3.0 * longest * k)

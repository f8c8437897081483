"""Atomic checkpoints of a long-running computation: arrays + a JSON header in one ``.npz`` (:mod:`induce.modelfile`).

A checkpoint is written to a temporary file beside the target and renamed
(:func:`induce.atomic.atomic_write`), so a crash never leaves a half-written
checkpoint.  :class:`CheckpointPolicy` says when one is due (every ``N`` units
of work or ``M`` minutes), and :class:`StopRequest` turns SIGINT / SIGTERM into
a flag that the training loop polls, so that it can write a final checkpoint and
return cleanly.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import numpy as np

from . import modelfile
from .errors import ModelFormatError

KIND = "checkpoint"


def save_checkpoint(path: str | Path, kind: str, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` and the JSON-serialisable ``meta`` atomically (:func:`induce.modelfile.save`, uncompressed)."""
    modelfile.save(path, KIND, {"kind": kind, "meta": meta}, arrays, compressed=False)


def load_checkpoint(path: str | Path, kind: str,
                    schema: modelfile.SchemaLike = ()) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a checkpoint of ``kind``, its arrays checked against ``schema``.

    ``schema`` is as for :func:`induce.modelfile.load`; a callable gets the
    checkpoint's header ``{"kind": kind, "meta": meta}``.  Only the schema's
    arrays are returned (none by default: a caller that reads only ``meta``).
    Raises ``ModelFormatError`` if the file is not a valid checkpoint of ``kind``.
    """
    header, arrays = modelfile.load(path, KIND, schema)
    if header.get("kind") != kind:
        raise ModelFormatError(f"{path}: holds a {header.get('kind')!r} checkpoint, not a {kind} checkpoint")
    if not isinstance(header.get("meta"), dict):
        raise ModelFormatError(f"{path}: field 'header': the checkpoint's 'meta' must be a JSON object")
    return header["meta"], arrays


class CheckpointPolicy:
    """Due every ``every`` steps (0: never by count) or ``minutes`` of wall time (0: never by time)."""

    def __init__(self, every: int = 0, minutes: float = 0.0):
        self.every = int(every)
        self.seconds = 60.0 * float(minutes)
        self._last = time.monotonic()

    def due(self, step: int) -> bool:
        if self.every > 0 and step % self.every == 0:
            return True
        return self.seconds > 0 and time.monotonic() - self._last >= self.seconds

    def written(self) -> None:
        self._last = time.monotonic()


class StopRequest:
    """Context manager: SIGINT / SIGTERM set :attr:`requested` instead of killing the process.

    Outside the main thread (where handlers cannot be installed) it is a plain
    flag.  The previous handlers are restored on exit.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.requested = False
        self.signum: int | None = None
        self._old: dict = {}

    def _handle(self, signum, frame):
        self.requested = True
        self.signum = signum

    def __enter__(self) -> "StopRequest":
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

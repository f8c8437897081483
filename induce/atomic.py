"""Atomic file output: write to a temporary file beside the target, then rename.

A crash or an exception while writing never leaves a half-written file under the
target name, and an existing file is only replaced once the new one is complete.

The contract of :func:`atomic_write`:

* ``"-"`` is standard output (written and flushed, never closed);
* a special file (character or block device such as ``/dev/stdout`` or
  ``/dev/null``, a FIFO, a socket) is opened and written through, never replaced;
* a symbolic link is followed: its final target is replaced atomically and the
  link stays a link;
* a new file gets the mode ``0o666 & ~umask`` (as ``open()`` would give it); an
  existing file keeps its mode;
* the temporary file ``.NAME.PID.XXXXXXXX.tmp`` is removed on every exit path
  Python can catch (exceptions, ``KeyboardInterrupt``, and SIGTERM once the CLI
  has installed :func:`install_signal_handlers`).  A temporary file left by a
  killed process (SIGKILL, power loss) is removed by the next write of the same
  target: those whose writer PID is dead, and those of the older unnumbered
  pattern ``.NAME.XXXXXXXX.tmp`` created before this process started.

:func:`check_writable` is the up-front check the CLI runs on every output path
before any work starts.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Iterator

from .errors import ConfigError

STDIO = "-"
_PROCESS_START = time.time()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove the temporary files a killed writer of ``path`` left beside it; return those removed.

    Only names of the pattern ``.NAME.PID.XXXXXXXX.tmp`` whose PID is not a
    live process (other than this one's, which never has a live temporary file of
    the same target when it starts a write), and ``.NAME.XXXXXXXX.tmp`` (no PID)
    last modified before this process started.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    pattern = re.compile(r"^\." + re.escape(path.name) + r"\.(?:(\d+)\.)?[A-Za-z0-9_]{6,}\.tmp$")
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        pid = match.group(1)
        try:
            if pid is not None:
                stale = int(pid) != os.getpid() and not _pid_alive(int(pid))
            else:
                stale = entry.stat(follow_symlinks=False).st_mtime < _PROCESS_START
            if stale:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def _special(path: Path) -> bool:
    """Whether ``path`` (links followed) is an existing file that is neither regular nor a directory."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _resolve(path: Path) -> Path:
    """The file a write to ``path`` lands in: the final target of a symlink, else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def check_writable(path: str | os.PathLike) -> None:
    """Raise ``ConfigError`` unless :func:`atomic_write` can write ``path`` (checked before any work starts).

    ``-`` is always writable; a directory is not an output; an existing special
    file must be writable itself; otherwise the directory that receives the
    temporary file (the nearest existing ancestor when directories are to be
    created) must be writable.
    """
    if str(path) == STDIO:
        return
    if _special(Path(path)):  # /dev/stdout may be a link to a pipe that realpath cannot name
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{path}: not writable")
        return
    target = _resolve(Path(path))
    if target.is_dir():
        raise ConfigError(f"{path}: is a directory; expected an output file name")
    directory = target.parent if str(target.parent) else Path(".")
    while not directory.exists():
        directory = directory.parent
    if not directory.is_dir():
        raise ConfigError(f"{path}: {directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(f"{path}: directory {directory} is not writable")


@contextlib.contextmanager
def _stdout(binary: bool) -> Iterator[IO]:
    stream = sys.stdout.buffer if binary else sys.stdout
    yield stream
    stream.flush()


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open ``path`` for writing (see the module docstring); on success fsync and rename into place."""
    binary = "b" in mode
    if str(path) == STDIO:
        with _stdout(binary) as stream:
            yield stream
        return
    text_options = {} if binary else {"encoding": encoding, "newline": ""}
    if _special(Path(path)):
        with open(path, mode, **text_options) as handle:  # device, FIFO, socket (links followed): write through
            yield handle
        return
    target = _resolve(Path(path))
    if target.is_dir():
        raise ConfigError(f"{path}: is a directory; expected an output file name")
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(target)
    try:
        file_mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        file_mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, file_mode)
        with os.fdopen(fd, mode, **text_options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class Terminated(SystemExit):
    """Raised in the main thread on SIGTERM / SIGHUP so that ``finally`` blocks (temporary files) run."""


def install_signal_handlers() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` (exit status 128 + signal number).

    Python's default action for these signals ends the process without
    unwinding, which would leave temporary files behind.
    """

    def handler(signum, frame):
        raise Terminated(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread / not supported
            signal.signal(sig, handler)

"""``induce.atomic.atomic_write``: stdout, write-through of FIFOs and symlinks, modes, temporary files.

docs/experiments/reliability_inputs.md: special files and symlinks are written through, new files
get the umask's mode and existing files keep theirs, temporary files go on
every catchable exit path (exceptions, SIGTERM) and a killed writer's
left-overs are removed by the next write of the same target.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from induce.atomic import atomic_write, clean_stale_temporaries

REPO = Path(__file__).resolve().parents[2]


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_dash_is_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with atomic_write("-") as out:
        out.write("hello\n")
    assert capsys.readouterr().out == "hello\n"
    assert not (tmp_path / "-").exists()


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    with atomic_write(fifo) as out:
        out.write("through\n")
    reader.join(10)
    assert received == ["through\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _temporaries(tmp_path) == []


def test_dev_null_stays_a_device():
    with atomic_write("/dev/null") as out:
        out.write("discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_symlink_target_is_replaced_and_link_kept(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "data.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with atomic_write(link) as out:
        out.write("new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert _temporaries(tmp_path) == [] and _temporaries(tmp_path / "real") == []


def test_new_file_gets_umask_mode_and_existing_keeps_its_mode(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "new.txt") as out:
            out.write("x")
        assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o644
        existing = tmp_path / "existing.txt"
        existing.write_text("y")
        os.chmod(existing, 0o640)
        with atomic_write(existing) as out:
            out.write("z")
        assert stat.S_IMODE(os.stat(existing).st_mode) == 0o640 and existing.read_text() == "z"
    finally:
        os.umask(old)


def test_exception_removes_temporary_and_keeps_old_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("complete")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as out:
            out.write("half")
            raise RuntimeError("boom")
    assert target.read_text() == "complete" and _temporaries(tmp_path) == []


def test_stale_temporaries_are_cleaned_only_when_dead_or_old(tmp_path):
    target = tmp_path / "out.txt"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    (tmp_path / f".out.txt.{dead_pid}.abc12345.tmp").write_text("left by a killed run")
    (tmp_path / f".out.txt.{os.getppid()}.abc12345.tmp").write_text("a live writer's")
    old = tmp_path / ".out.txt.oldstyle.tmp"
    old.write_text("old pattern")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    (tmp_path / ".other.txt.1.abc12345.tmp").write_text("another target's")
    removed = {p.name for p in clean_stale_temporaries(target)}
    assert removed == {f".out.txt.{dead_pid}.abc12345.tmp", ".out.txt.oldstyle.tmp"}
    assert (tmp_path / f".out.txt.{os.getppid()}.abc12345.tmp").exists()
    assert (tmp_path / ".other.txt.1.abc12345.tmp").exists()


_WRITER = textwrap.dedent("""
    import os, signal, sys
    from induce.atomic import atomic_write, install_signal_handlers
    install_signal_handlers()
    with atomic_write(sys.argv[1]) as out:
        out.write("x" * 100000)
        out.flush()
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))
        out.write("never")
""")


def _writer(target: Path, sig: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", _WRITER, str(target), sig], env=env, capture_output=True, timeout=60)


def test_sigterm_removes_temporary(tmp_path):
    target = tmp_path / "out.txt"
    proc = _writer(target, "SIGTERM")
    assert proc.returncode == 128 + signal.SIGTERM
    assert not target.exists() and _temporaries(tmp_path) == []


def test_sigkill_leftover_is_cleaned_by_next_run(tmp_path):
    target = tmp_path / "out.txt"
    proc = _writer(target, "SIGKILL")
    assert proc.returncode == -signal.SIGKILL
    assert len(_temporaries(tmp_path)) == 1 and not target.exists()
    with atomic_write(target) as out:
        out.write("done")
    assert target.read_text() == "done" and _temporaries(tmp_path) == []


def test_cli_pipe_to_head_does_not_traceback(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = f"{sys.executable} -m induce corpus demo -o - --sentences 3000 | head -c 100 > /dev/null"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 141)


def test_dev_stdout_into_a_pipe_is_written_through(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "induce", "corpus", "demo", "-o", "/dev/stdout", "--sentences", "2"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# text = ") and "sentences" in proc.stdout
    assert os.path.islink("/dev/stdout")  # not replaced by a regular file

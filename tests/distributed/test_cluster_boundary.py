"""``--cluster`` at the boundary (issue 39): a malformed address is refused by argparse, a scheduler that
accepts the connection but never answers and one without workers end in one line after ``--cluster-timeout``
instead of hanging."""

from __future__ import annotations

import argparse
import socket
import threading
import time

import pytest

pytest.importorskip("distributed")

from induce.cli import main  # noqa: E402
from induce.distributed.cluster import cluster_address, session  # noqa: E402
from induce.errors import ConfigError  # noqa: E402


@pytest.mark.parametrize("text", ["", "not a url", "bogus://x:1", "tcp://host", "tcp://:8786", "tcp://h:port"])
def test_malformed_addresses_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="SCHEME://HOST:PORT"):
        cluster_address(text)
    assert cluster_address("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"


def test_empty_cluster_is_a_one_line_error_not_a_local_run(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["tag", "demo", "--infer", "svi", "--cluster", ""])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --cluster: expected a dask scheduler address" in err and len(err.strip().splitlines()) == 1


def test_a_silent_server_times_out():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    start = time.monotonic()
    with pytest.raises(ConfigError, match="never answered|within 1 s"):
        with session(0, f"tcp://127.0.0.1:{server.getsockname()[1]}", timeout=1.0):
            pass
    assert time.monotonic() - start < 10
    server.close()


def test_a_scheduler_without_workers_fails_with_a_message():
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty:
        start = time.monotonic()
        with pytest.raises(ConfigError, match="has no workers"):
            with session(0, empty.scheduler_address, timeout=1.0):
                pass
        assert time.monotonic() - start < 10

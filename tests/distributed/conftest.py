import pytest


@pytest.fixture(scope="package")
def client():
    """One two-worker LocalCluster (single-threaded worker processes) for every test of the package."""
    distributed = pytest.importorskip("distributed")
    from induce.distributed import cluster

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  env=cluster.worker_environment(2)) as local, distributed.Client(local) as c:
        c.wait_for_workers(2, timeout=120)  # the two-shard tests plan their shards on the workers connected
        yield c


@pytest.fixture
def submitted(client, monkeypatch):
    """The numpy arrays the client submits during the test (``client.submit`` recorded)."""
    import numpy as np

    sent = []
    submit = client.submit

    def recording(fn, *args, **kw):
        sent.extend(a for a in args if isinstance(a, np.ndarray))
        return submit(fn, *args, **kw)

    monkeypatch.setattr(client, "submit", recording)
    return sent

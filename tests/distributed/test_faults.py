"""A worker process killed during training: its tasks are re-run and the model is unchanged
(HMM em, stream scvi, cvi2, HDP-HMM scvi, alignment em)."""

import os
import signal

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from induce import HMMTagger  # noqa: E402
from tests.infer.test_stochastic_hmm import as_corpus, sample_hmm  # noqa: E402


@pytest.fixture
def own_client():
    """A fresh two-worker cluster for each test: the test kills one of its workers, and the next test must not
    depend on the nanny having started a replacement (cvi2's shards are one per worker, and its result depends on
    their number)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=60)
        yield c


def test_em_survives_a_killed_worker(own_client):
    tokens, offsets, _, _ = sample_hmm(150, 6, K=4, W=20)
    corpus = as_corpus(tokens, offsets, 20)
    kw = dict(n_states=4, infer="em", n_iter=6, tol=0, random_state=3)
    ref = HMMTagger(client=own_client, **kw).fit(corpus)
    pids = sorted(own_client.run(os.getpid).values())
    killed = []

    def kill_one(record):
        if record["iteration"] == 2:
            os.kill(pids[0], signal.SIGKILL)  # the worker holding a shard's layout and its task of the next pass
            killed.append(pids[0])

    got = HMMTagger(client=own_client, callback=kill_one, **kw).fit(corpus)
    assert killed and pids[0] not in own_client.run(os.getpid).values()
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-12)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-12, atol=1e-12)
    assert [r["log_posterior"] for r in got.trace_] == pytest.approx([r["log_posterior"] for r in ref.trace_],
                                                                      rel=1e-12)


@pytest.mark.parametrize("case", ["stream-scvi", "stream-scvi-rounds", "stream-scvi-stale", "em-file", "cvi2"])
def test_worker_held_state_survives_a_killed_worker(own_client, tmp_path, case):
    """Shards read by the workers (stream scvi, em fitted from a file) and q(z^i) kept on them (cvi2): a worker
    killed mid-run is replaced, dask recomputes what it held from the lineage, and the model is unchanged (rounds
    with staleness 1: the rounds run again start fresh from the client's counts, so every minibatch is counted
    once, the same mass, not bit for bit)."""
    tokens, offsets, _, _ = sample_hmm(150, 7, K=4, W=20)
    path = tmp_path / "text.txt"
    path.write_text("".join(" ".join(f"w{t}" for t in tokens[a:b]) + "\n" for a, b in zip(offsets[:-1], offsets[1:])))
    if case.startswith("stream-scvi"):  # rounds of local steps: the rounds' tasks are re-run from the shards
        kw = dict(n_states=4, infer="scvi", batch_size=10, n_epochs=2, random_state=3, heldout_every=3,
                  heldout_fraction=0.1, sync_every=1 if case == "stream-scvi" else 4,
                  staleness=int(case.endswith("stale")))
        fit = lambda model: model.fit_stream(path, "plain")  # noqa: E731
        step = "batch"
    elif case == "em-file":
        kw = dict(n_states=4, infer="em", n_iter=5, tol=0, random_state=3)
        fit = lambda model: model.fit(str(path))  # noqa: E731
        step = "iteration"
    else:
        kw = dict(n_states=4, infer="cvi2", cvi2_block=8, n_iter=5, tol=0, random_state=3)
        fit = lambda model: model.fit(as_corpus(tokens, offsets, 20))  # noqa: E731
        step = "iteration"
    ref = fit(HMMTagger(client=own_client, **kw))
    pids = sorted(own_client.run(os.getpid).values())
    killed = []

    def kill_one(record):
        if record[step] >= 2 and not killed:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    got = fit(HMMTagger(client=own_client, callback=kill_one, **kw))
    assert killed  # (a replacement worker may sum in another thread split: equal to float rounding)
    if case.endswith("stale"):
        assert got.n_batches_ == ref.n_batches_ and got.cluster_meter_.minibatches == ref.cluster_meter_.minibatches
        np.testing.assert_allclose(got.transition_counts_.sum(), ref.transition_counts_.sum(), rtol=1e-9)
        return
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-12)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-12, atol=1e-12)


def test_hdp_scvi_survives_a_killed_worker(own_client):
    """The HDP-HMM's minibatch steps on the workers (induce.distributed.hdp): a killed worker's task is re-run."""
    from induce import HDPHMMTagger

    tokens, offsets, _, _ = sample_hmm(120, 8, K=3, W=15)
    corpus = as_corpus(tokens, offsets, 15)
    kw = dict(truncation=6, infer="scvi", batch_size=15, n_iter=4, random_state=4)
    ref = HDPHMMTagger(client=own_client, **kw).fit(corpus)
    pids = sorted(own_client.run(os.getpid).values())
    killed = []

    def kill_one(record):
        if record["iteration"] >= 2 and not killed:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    got = HDPHMMTagger(client=own_client, callback=kill_one, **kw).fit(corpus)
    assert killed and pids[0] not in own_client.run(os.getpid).values()
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-12, atol=1e-12)
    assert got.effective_states_ == ref.effective_states_


def test_alignment_em_survives_a_killed_worker(own_client, monkeypatch):
    """Alignment em (induce.distributed.align): a worker killed after the second E-step; the links and the
    tables are unchanged (its shard is recomputed from the lineage)."""
    from induce.align import WordAligner
    from induce.distributed.align import ClusterTrainer

    from tests.distributed.test_align import sample_bitext

    pairs = sample_bitext()
    kw = dict(model="hmm", infer="em", n_iter=3, n_iter_ibm1=2, tol=0, symmetrize="intersection", random_state=0)
    ref = WordAligner(client=own_client, **kw).fit(pairs)
    pids = sorted(own_client.run(os.getpid).values())
    killed, calls, original = [], [], ClusterTrainer._reduced

    def map_then_kill(self, *args):
        out = original(self, *args)
        calls.append(1)
        if len(calls) == 2:
            os.kill(pids[0], signal.SIGKILL)  # the worker holding one of the shards
            killed.append(pids[0])
        return out

    monkeypatch.setattr(ClusterTrainer, "_reduced", map_then_kill)
    got = WordAligner(client=own_client, **kw).fit(pairs)
    assert killed and len(calls) > 2 and pids[0] not in own_client.run(os.getpid).values()
    for a, b in ((got.forward_, ref.forward_), (got.reverse_, ref.reverse_)):
        np.testing.assert_allclose(a.values, b.values, rtol=1e-12, atol=1e-14)
    assert got.align(pairs) == ref.align(pairs)

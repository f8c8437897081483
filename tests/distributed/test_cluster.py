"""Training on a dask LocalCluster (induce.distributed) equals the single-process run (issue 23)."""

import numpy as np
import pytest

pytest.importorskip("distributed")

from induce import HMMTagger  # noqa: E402
from induce import distributed as dist  # noqa: E402
from induce.errors import ConfigError  # noqa: E402
from induce.algorithms import minibatch  # noqa: E402
from induce.infer import stochastic_hmm as sh  # noqa: E402
from induce.infer.schedules import minibatches  # noqa: E402
from tests.infer.test_stochastic_hmm import as_corpus, sample_hmm  # noqa: E402


@pytest.fixture(scope="module")
def corpus():
    tokens, offsets, _, _ = sample_hmm(120, 4, K=4, W=20)
    return as_corpus(tokens, offsets, 20)


@pytest.fixture(scope="module")
def split(corpus):
    """``corpus`` with the words of its second shard (of two) moved up by 10: the shards' vocabularies are
    0..19 and 10..29 of W = 30."""
    tokens = corpus.tokens.copy()
    tokens[corpus.offsets[dist.shard_bounds(corpus.offsets, 2)[1]]:] += 10
    return as_corpus(tokens, corpus.offsets, 30)


def test_shard_bounds_cover_the_corpus_in_order():
    offsets = np.array([0, 5, 6, 20, 21, 22, 40], dtype=np.int64)
    for n in (1, 2, 3, 6, 10):
        b = dist.shard_bounds(offsets, n)
        assert b[0] == 0 and b[-1] == 6 and np.all(np.diff(b) > 0)
        assert len(b) - 1 == min(n, 6)
    # two shards of about equal tokens: 21 | 19
    assert dist.shard_bounds(offsets, 2).tolist() == [0, 3, 6]


def test_local_workers_share_the_cores_among_their_kernel_threads(client):
    """A worker's numba threads are its share of the cores, claimed by every task: never more kernel threads
    than cores."""
    import os

    import numba

    env = dist.cluster.worker_environment
    assert env(2, cpus=2) == {"INDUCE_WORKER_THREADS": "1"} and env(3, cpus=2) == {"INDUCE_WORKER_THREADS": "1"}
    assert env(4, cpus=16) == {"INDUCE_WORKER_THREADS": "4"}
    workers = list(client.scheduler_info()["workers"])
    threads = client.gather([client.submit(dist.cluster.timed, numba.get_num_threads, pure=False, workers=[w])
                             for w in workers])
    assert {t[0] for t in threads} == {max(1, (os.cpu_count() or 1) // len(workers))}


WORKER_SCRIPT = """
import numba  # imported before dask applies the workers' environment: spawned workers import this script again

from induce.distributed import cluster


def task():
    import numpy as np
    from induce.kernels.emissions import _full_rows_parallel

    # a cached parallel kernel launches numba's threads without compiling (no reload of numba's configuration)
    _full_rows_parallel(np.zeros((8, 1)), np.zeros((2, 1)), np.ones((2, 1, 1)), np.zeros(2), np.full(2, 0.5),
                        np.zeros(2), np.empty((8, 2)), 2)

    @numba.njit
    def later(x):  # then a first compilation reloads numba's configuration from the environment
        return x + 1

    return later(1), numba.get_num_threads()


if __name__ == "__main__":
    with cluster.session(2) as client:
        client.wait_for_workers(2)
        print(*client.submit(cluster.timed, task, pure=False).result()[0])
"""


def test_a_script_importing_numba_first_still_compiles_on_its_workers_with_their_share(tmp_path, client):
    """Regression: with the share passed as NUMBA_NUM_THREADS, a script that imported numba at its top made its
    workers keep one thread per core and fail their first compilation after a parallel kernel had run."""
    import os
    import subprocess
    import sys

    from induce.kernels.emissions import _full_rows_parallel  # compiled here first: the workers load the cache

    _full_rows_parallel(np.zeros((8, 1)), np.zeros((2, 1)), np.ones((2, 1, 1)), np.zeros(2), np.full(2, 0.5),
                        np.zeros(2), np.empty((8, 2)), 2)
    script = tmp_path / "script.py"
    script.write_text(WORKER_SCRIPT)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["2", str(max(1, (os.cpu_count() or 1) // 2))]


@pytest.mark.parametrize("infer", ["em", "vi"])
def test_batch_on_cluster_equals_single_process(client, corpus, infer):
    kw = dict(n_states=4, infer=infer, n_iter=8, tol=0, random_state=1)
    ref = HMMTagger(**kw).fit(corpus)
    got = HMMTagger(client=client, **kw).fit(corpus)
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.transitions_, ref.transitions_, rtol=1e-9, atol=1e-12)
    key = "log_posterior" if infer == "em" else "elbo"  # em: MAP by default
    np.testing.assert_allclose([r[key] for r in got.trace_], [r[key] for r in ref.trace_], rtol=1e-9)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    (W, K), rep = got.emission_counts_.shape, got.cluster_meter_.report(2)
    assert rep["bytes_sent_per_step"] == 8 * ((K + 1) * K + W * K)  # A and B once a pass, passed on by the workers
    assert rep["bytes_between_workers_per_step"] > rep["bytes_sent_per_step"] and rep["bytes_received_per_step"] > 0


def test_batch_estep_fills_token_marginals_in_corpus_order(client, corpus):
    """With several shards the gamma rows come back where the single-process E-step puts them."""
    from induce.infer.hmm_batched import Layout, lockstep_pass

    K, W = 4, 20
    rng = np.random.default_rng(0)
    A = rng.dirichlet(np.ones(K), size=K + 1)
    B = np.ascontiguousarray(rng.dirichlet(np.ones(W), size=K).T)
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    lay = Layout(corpus.tokens, corpus.offsets, 16)
    t_ref, e_ref, g_ref = np.zeros((K + 1, K)), np.zeros((W, K)), np.empty((corpus.n_tokens, K))
    ll_ref = lockstep_pass(A, B, no_mask, lay.lay_tokens, lay.lay_flat, lay.pos_start, lay.block_pos, t_ref, e_ref,
                           g_ref, 1)
    step = dist.ClusterEStep(client, dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets, 3), no_mask, 16)
    assert step.n_shards == 3
    t, e, g = np.zeros((K + 1, K)), np.zeros((W, K)), np.empty((corpus.n_tokens, K))
    ll = step(A, B, t, e, g)
    assert ll == pytest.approx(ll_ref, rel=1e-12)
    np.testing.assert_allclose(t, t_ref, rtol=1e-10)
    np.testing.assert_allclose(e, e_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-12)
    # without marginals the three shards' counts are summed as a tree on the workers: the same counts
    t2, e2 = np.zeros((K + 1, K)), np.zeros((W, K))
    assert step(A, B, t2, e2, np.empty((0, K))) == pytest.approx(ll_ref, rel=1e-12)
    np.testing.assert_allclose(t2, t_ref, rtol=1e-10)
    np.testing.assert_allclose(e2, e_ref, rtol=1e-10, atol=1e-12)
    assert step.meter.steps == 2 and len(step.meter.busy) >= 1


@pytest.mark.parametrize("infer,learn", [("scvi", None), ("svi", False), ("svi", None)])
def test_stochastic_one_shard_equals_single_process(client, corpus, infer, learn, monkeypatch):
    """One shard per minibatch: the same kernel on the same inputs, so the counts are equal exactly; with the
    default held-out share and stop, the cluster run leaves out the same sentences and stops at the same epoch;
    priors learned at the epochs' ends reach the workers' local steps the same way."""
    kw = dict(n_states=4, infer=infer, batch_size=10, random_state=5, learn_hyper=learn)
    ref = HMMTagger(**kw).fit(corpus)
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HMMTagger(client=client, **kw).fit(corpus)
    np.testing.assert_array_equal(got.transition_counts_, ref.transition_counts_)
    np.testing.assert_array_equal(got.emission_counts_, ref.emission_counts_)
    assert ref.converged_ and ref.heldout_tokens_ > 0
    assert (got.n_iter_, got.n_batches_, got.heldout_tokens_) == (ref.n_iter_, ref.n_batches_, ref.heldout_tokens_)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    learns = infer == "svi" and learn is None  # svi learns its priors by default, scvi holds them
    assert (got.alpha_, got.beta_) == (ref.alpha_, ref.beta_) and (ref.beta_ != 0.003) == learns


def test_stochastic_two_shards_within_float_reordering(client, corpus):
    """The exact exchange (``sync_every=1``): every minibatch's step is the single process's."""
    kw = dict(n_states=4, infer="scvi", batch_size=20, n_epochs=2, random_state=2)
    ref = HMMTagger(**kw).fit(corpus)
    got = HMMTagger(client=client, sync_every=1, **kw).fit(corpus)
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-9)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dictionary", [False, True])
def test_sparse_statistics_match_sentence_statistics(client, corpus, dictionary):
    """The workers' statistics are rows of the minibatch's words only, equal to the local ones (with a tag
    dictionary: each piece gets its words' rows of it)."""
    from induce.distributed.minibatch import cut_pieces, shard_statistics

    allowed = np.zeros((0, 0), dtype=np.uint8)
    if dictionary:
        allowed = (np.random.default_rng(3).random((20, 4)) < 0.6).astype(np.uint8)
        allowed[np.arange(20), np.arange(20) % 4] = 1
    counts = sh.GlobalCounts.exponential(np.random.default_rng(0), 4, 20, corpus.n_tokens)
    idx = np.arange(0, corpus.n_sentences, 3)
    tokens, offsets = sh.gather_sentences(corpus.tokens, corpus.offsets, idx)
    t_ref, ids_ref, e_ref, ll_ref = sh.sentence_statistics(counts, "cvi", 0.1, 0.1, tokens, offsets, allowed)
    shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets, 2)
    pieces = cut_pieces(shards, idx)
    assert len(pieces) == 2
    t, ids, e, ll, n = shard_statistics(
        shards, dist.Meter(), 0.0, pieces,
        lambda ids: (*sh.local_parameters(counts, "cvi", 0.1, 0.1, ids), sh.dictionary_rows(allowed, ids, 4)))
    np.testing.assert_array_equal(ids, ids_ref)
    if dictionary:
        assert np.all(e[allowed[ids] == 0] == 0) and np.all(e[allowed[ids] == 1] > 0)
    assert e.shape == (len(ids), 4) and n == len(tokens)
    np.testing.assert_allclose(t, t_ref, rtol=1e-12)
    np.testing.assert_allclose(e, e_ref, rtol=1e-12, atol=1e-14)
    assert ll == pytest.approx(ll_ref, rel=1e-12)


def test_tag_dictionary_on_the_workers_equals_single_process(client, corpus, monkeypatch):
    """scvi with a tag dictionary: each piece gets its words' dictionary rows; one shard gives the same run."""
    from induce.taggers import TagDictionary

    from induce.corpus.vocab import Vocabulary

    allowed = np.random.default_rng(3).random((20, 4)) < 0.6
    allowed[np.arange(20), np.arange(20) % 4] = True
    tags = TagDictionary(corpus.vocab, Vocabulary.from_json({"items": ["A", "B", "C", "D"]}), allowed)
    kw = dict(n_states=4, infer="scvi", batch_size=10, n_epochs=1, random_state=5)
    ref = HMMTagger(**kw).fit(corpus, tag_dict=tags)
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HMMTagger(client=client, **kw).fit(corpus, tag_dict=tags)
    np.testing.assert_array_equal(got.emission_counts_, ref.emission_counts_)


@pytest.mark.parametrize("infer", ["em", "cvi2"])
def test_tag_dictionary_rows_go_with_each_shards_words(client, split, infer, monkeypatch):
    """A tag dictionary is cut into each shard's rows with its words: em on two shards with different
    vocabularies equals the single-process run; cvi2 (start drawn and masked on the worker) on one worker equals
    it bit for bit."""
    from induce.corpus.vocab import Vocabulary
    from induce.taggers import TagDictionary

    allowed = np.random.default_rng(4).random((30, 4)) < 0.6
    allowed[np.arange(30), np.arange(30) % 4] = True
    tags = TagDictionary(split.vocab, Vocabulary.from_json({"items": ["A", "B", "C", "D"]}), allowed)
    kw = dict(n_states=4, infer=infer, n_iter=4, tol=0, random_state=6, **({"cvi2_block": 8} if infer == "cvi2"
                                                                            else {}))
    ref = HMMTagger(**kw).fit(split, tag_dict=tags)
    if infer == "cvi2":
        monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HMMTagger(client=client, **kw).fit(split, tag_dict=tags)
    assert np.all(got.emission_counts_[~allowed] == 0)
    tol = dict(rtol=0, atol=0) if infer == "cvi2" else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, **tol)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, **tol)


def test_unsupported_algorithm_on_cluster_is_a_config_error(client, corpus):
    with pytest.raises(ConfigError, match="cluster"):
        HMMTagger(n_states=4, infer="cvi1", client=client).fit(corpus)


def test_no_client_never_imports_dask():
    import subprocess
    import sys

    code = ("import sys; from induce import HMMTagger; from tests.infer.test_stochastic_hmm import as_corpus, "
            "sample_hmm; t, o, _, _ = sample_hmm(10, 0); HMMTagger(n_states=3, infer='em', n_iter=2)"
            ".fit(as_corpus(t, o, 12)); assert 'distributed' not in sys.modules and 'dask' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_resume_with_a_cluster_equals_an_uninterrupted_run(client, corpus, tmp_path):
    """scvi on the cluster stopped after 3 minibatches and resumed from its checkpoint ends as one run does."""
    shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets)

    def fresh():
        counts = sh.GlobalCounts.exponential(np.random.default_rng(0), 4, 20, corpus.n_tokens)
        upd = dist.WorkerSentenceUpdater(shards, "scvi", 0.1, 0.1)
        batches = upd.batches(np.sort(i) for i in minibatches(corpus.n_sentences, 15, np.random.default_rng(1), 2))
        return counts, upd, batches

    counts, upd, batches = fresh()
    minibatch.run(counts, upd, batches, tau=1.0, kappa=0.6)
    path = str(tmp_path / "ckpt.npz")
    part, upd, batches = fresh()
    assert minibatch.run(part, upd, batches, tau=1.0, kappa=0.6, checkpoint=path, stop_after=3).interrupted
    resumed, upd, batches = fresh()
    minibatch.run(resumed, upd, batches, tau=1.0, kappa=0.6, checkpoint=path, resume=True)
    np.testing.assert_array_equal(resumed.trans, counts.trans)
    np.testing.assert_array_equal(resumed.emissions(), counts.emissions())


@pytest.mark.parametrize("block", [16, 0])
def test_cvi2_one_worker_equals_the_single_process(client, corpus, monkeypatch, block):
    """One worker holding every sentence runs the single-process pass (block-parallel, or the exact sequential
    sweep with block 0) on the same inputs: bit for bit."""
    kw = dict(n_states=4, infer="cvi2", cvi2_block=block, n_iter=4, tol=0, random_state=3)
    ref = HMMTagger(**kw).fit(corpus)
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HMMTagger(client=client, **kw).fit(corpus)
    np.testing.assert_array_equal(got.transition_counts_, ref.transition_counts_)
    np.testing.assert_array_equal(got.emission_counts_, ref.emission_counts_)
    np.testing.assert_array_equal(got.labels_, ref.labels_)
    assert [r["predictive_log_likelihood"] for r in got.trace_] == \
        pytest.approx([r["predictive_log_likelihood"] for r in ref.trace_], rel=1e-12)


def test_cvi2_sharded_rounds_match_a_hand_run_of_the_kernel(client, split):
    """Two shards, rounds of 20 sentences: each round every shard runs cvi2_block_pass on its next sentences
    against the counts at the round start, and the counts move by the sum of the shards' changes.  The shards
    see only their own vocabulary's rows (plus one for the rest of each column) and draw their own starts: shard
    0 the single-process start of its sentences."""
    from induce.distributed.cvi2 import shard_seeds
    from induce.distributed.shards import piece
    from induce.infer import hmm_passes as passes
    from induce.infer.hmm_batched import cvi2_block_pass
    from induce.infer.hmm_passes import random_start

    corpus = split
    K, W, alpha, beta = 4, 30, 0.5, 0.1
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets, 2)
    sweep = dist.ClusterCVI2(shards, K, 5, W, no_mask, 4, sync=20)
    tb = shards.token_bounds
    for v, lo, hi in zip(sweep.vocabs, tb[:-1], tb[1:]):
        np.testing.assert_array_equal(v, np.unique(corpus.tokens[lo:hi]))
        assert len(v) <= 20
    order = np.random.default_rng(0).permutation(corpus.n_sentences)
    t, e = np.zeros((K + 1, K)), np.zeros((W, K))
    ll = sweep(order, alpha, beta, t, e)
    # by hand, on the whole (W, K) table
    st, g = random_start(corpus.tokens, corpus.offsets, K, 5, no_mask, np.float32)
    b = sweep.bounds
    st[b[1]:], g[tb[1]:] = random_start(*piece(corpus.tokens, corpus.offsets, b[1], b[2]), K,
                                        shard_seeds(5, 2)[1], no_mask, np.float32)
    C_t, C_e = np.zeros((K + 1, K)), np.zeros((W, K))
    passes.totals_from_local(corpus.tokens, corpus.offsets, st, g, W, C_t, C_e)
    pieces = [order[(order >= lo) & (order < hi)] for lo, hi in zip(b[:-1], b[1:])]
    ll_ref = 0.0
    for r in range(0, max(map(len, pieces)), 20):
        outs = []
        for p in pieces:
            if len(p) > r:
                ct, ce = C_t.copy(), C_e.copy()
                ll_ref += cvi2_block_pass(ct, ce, st, g, corpus.tokens, corpus.offsets, p[r:r + 20], alpha, beta,
                                          no_mask, 4, 1)
                outs.append((ct, ce))
        C_t, C_e = C_t + sum(ct - C_t for ct, _ in outs), C_e + sum(ce - C_e for _, ce in outs)
    np.testing.assert_allclose(t, C_t, rtol=1e-10)
    np.testing.assert_allclose(e, C_e, rtol=1e-10, atol=1e-10)
    assert ll == pytest.approx(ll_ref, rel=1e-10)
    np.testing.assert_array_equal(sweep.labels(), g.argmax(axis=1))


def test_cvi2_on_two_workers_is_reproducible_and_learns(client, corpus):
    kw = dict(n_states=4, infer="cvi2", cvi2_block=8, n_iter=10, tol=0, random_state=3)
    got = HMMTagger(client=client, **kw).fit(corpus)
    again = HMMTagger(client=client, **kw).fit(corpus)
    np.testing.assert_array_equal(got.emission_counts_, again.emission_counts_)  # given the seed and the shards
    trace = [r["predictive_log_likelihood"] for r in got.trace_]
    assert trace == [r["predictive_log_likelihood"] for r in again.trace_]
    assert trace[-1] > trace[0]
    assert got.emission_counts_.sum() == pytest.approx(corpus.n_tokens, rel=1e-6)
    (W, K), rep = got.emission_counts_.shape, got.cluster_meter_.report(2)
    # each shard's rows of the counts (and one for the rest) out, a round a pass; the changes summed on the
    # workers (one shard's travels to the other's worker) and the one sum back, then the shards' totals alike
    # (a pass's, and the start's spread over the passes): at most three sums of W rows a step
    assert 8 * (K + 1) * K < rep["bytes_sent_per_step"] <= 2 * 8 * ((K + 1) * K + (W + 1) * K + corpus.n_sentences)
    assert 8 * (K + 1) * K < rep["bytes_received_per_step"] <= 3 * 8 * ((K + 1) * K + W * K + W + 1)
    assert rep["bytes_between_workers_per_step"] > 8 * (K + 1) * K


def test_workers_keep_freed_arrays_in_the_heap(tmp_path):
    """Under dask's ``MALLOC_TRIM_THRESHOLD_=65536`` every freed 4 MiB array is unmapped and the next one
    faulted in page by page (~1,000 minor faults each); after :func:`keep_heap` the heap is reused."""
    import os
    import subprocess
    import sys

    script = tmp_path / "faults.py"
    script.write_text(
        "import resource, sys\nimport numpy as np\nfrom induce.distributed.cluster import keep_heap\n"
        "if sys.argv[1] == '1':\n    keep_heap()\n"
        "a = np.ones(1 << 19)\nf0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(50):\n    a = np.ones(1 << 19)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)\n")
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    faults = [int(subprocess.run([sys.executable, str(script), k], env=env, capture_output=True, text=True,
                                 check=True).stdout) for k in ("0", "1")]
    if faults[0] < 50 * 500:
        pytest.skip(f"this libc does not unmap freed arrays under the trim threshold ({faults[0]} faults)")
    assert faults[1] < faults[0] / 10

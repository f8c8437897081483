"""svi / scvi in rounds of local steps merged by adding count deltas (induce.distributed.rounds, issue 41)."""

import json

import numpy as np
import pytest

pytest.importorskip("distributed")

from induce import HMMTagger  # noqa: E402
from induce import distributed as dist  # noqa: E402
from induce.cli import main  # noqa: E402
from induce.algorithms import minibatch  # noqa: E402
from induce.infer import stochastic_hmm as sh  # noqa: E402
from induce.infer.schedules import minibatches  # noqa: E402
from tests.infer.test_stochastic_hmm import as_corpus, sample_hmm  # noqa: E402


#: how far two runs of the same rounds may differ: a dask worker now and then computes a local step's statistics
#: one ulp off (1e-16 relative, docs/experiments/distributed.md, "The one-ulp steps"); one such step anywhere in the
#: runs below moves their end by at most 4.4e-14 relative (measured: every 3rd step nudged by an ulp, in turn), and
#: one lost minibatch (its statistics zeroed) by at least 0.046
ULPS = dict(rtol=1e-11, atol=1e-12)


def assert_same_run(got, ref):
    """The arrays ``got`` and ``ref`` (pairs of counts) equal up to :data:`ULPS`."""
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, **ULPS)


@pytest.fixture(scope="module")
def corpus():
    tokens, offsets, _, _ = sample_hmm(200, 5, K=4, W=30)
    return as_corpus(tokens, offsets, 30)


@pytest.fixture(scope="module")
def text(tmp_path_factory, corpus):
    path = tmp_path_factory.mktemp("rounds") / "text.txt"
    t, o = corpus.tokens, corpus.offsets
    path.write_text("".join(" ".join(f"w{x}" for x in t[a:b]) + "\n" for a, b in zip(o[:-1], o[1:])))
    return str(path)


def _run(shards, updater, corpus, **kw):
    counts = sh.GlobalCounts.exponential(np.random.default_rng(0), 4, 30, corpus.n_tokens)
    batches = updater.batches(np.sort(i) for i in minibatches(corpus.n_sentences, 15, np.random.default_rng(1), 2))
    return counts, minibatch.run(counts, updater, batches, tau=1.0, kappa=0.6, **kw)


@pytest.mark.parametrize("infer", ["scvi", "svi"])
def test_one_worker_is_the_single_process_run(client, corpus, infer, monkeypatch):
    """One shard: the worker runs eq. 3.103 on the same minibatches in the same order on the rows of its words,
    and hands its counts back: the same run up to :data:`ULPS`, whatever the round (svi also learns its priors at
    the epochs' ends, where the rounds are settled)."""
    kw = dict(n_states=4, infer=infer, batch_size=10, random_state=5, n_epochs=3)
    ref = HMMTagger(**kw).fit(corpus)
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HMMTagger(client=client, sync_every=4, **kw).fit(corpus)
    assert_same_run((got.transition_counts_, got.emission_counts_), (ref.transition_counts_, ref.emission_counts_))
    assert got.n_batches_ == ref.n_batches_
    np.testing.assert_allclose((got.alpha_, got.beta_), (ref.alpha_, ref.beta_), **ULPS)
    heldout = lambda m: [r.get("heldout_log_likelihood_per_token", np.nan) for r in m.trace_]  # noqa: E731
    np.testing.assert_allclose(heldout(got), heldout(ref), **ULPS)
    meter = got.cluster_meter_
    assert meter.minibatches == got.n_batches_ and meter.steps < got.n_batches_ / 3 + 4  # rounds of 4, cut at epochs
    if infer == "scvi":  # one shard's delta is the whole sum: staleness 1 is staleness 0
        stale = HMMTagger(client=client, sync_every=4, staleness=1, **kw).fit(corpus)
        assert_same_run((stale.emission_counts_,), (ref.emission_counts_,))


@pytest.mark.parametrize("n_shards", [2, 3])
def test_rounds_of_one_are_eq_3_103_on_the_whole_minibatch(client, corpus, n_shards):
    """Two or three shards, rounds of one minibatch: the summed deltas are the minibatch's statistics (the sum of its
    pieces'), so the run is the exact updater's up to the packed rows on the wire (relative error 2^-11 an entry a
    round, :func:`induce.distributed.rounds.pack`; after the 20 rounds here, measured: 1.6e-3 at most).  Three
    shards: the first two deltas are added on a worker (the tree), the client merges that sum and the third, and
    so does every worker's copy of the counts (the sums travel between the workers)."""
    shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets, n_shards)
    exact, _ = _run(shards, dist.WorkerSentenceUpdater(shards, "scvi", 0.1, 0.1), corpus)
    updater = dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 1)
    rounds, _ = _run(shards, updater, corpus)
    assert updater.meter.moved > 0
    np.testing.assert_allclose(rounds.trans, exact.trans, rtol=5e-3)
    np.testing.assert_allclose(rounds.emissions(), exact.emissions(), rtol=5e-3, atol=1e-9)


def test_two_workers_reach_the_single_process_heldout_likelihood(client, corpus):
    """Rounds of 4 minibatches on two workers: reproducible, fewer bytes a token than the exact exchange (the
    client sends no rows: the counts stay on the workers, which exchange their deltas), and within 0.01 nats a
    token of the single-process held-out log-likelihood (measured: 0.003)."""
    kw = dict(n_states=4, infer="scvi", batch_size=10, random_state=5, n_epochs=3)
    last = lambda m: m.trace_[-1]["heldout_log_likelihood_per_token"]  # noqa: E731
    ref = HMMTagger(**kw).fit(corpus)
    exact = HMMTagger(client=client, sync_every=1, **kw).fit(corpus)
    got = HMMTagger(client=client, sync_every=4, **kw).fit(corpus)
    again = HMMTagger(client=client, sync_every=4, **kw).fit(corpus)
    assert_same_run((got.emission_counts_,), (again.emission_counts_,))
    assert abs(last(got) - last(ref)) < 0.01
    rep, rep_exact = got.cluster_meter_.report(2), exact.cluster_meter_.report(2)
    assert rep["bytes_sent_per_step"] < rep_exact["bytes_sent_per_step"] / 4
    assert rep["bytes_between_workers_per_step"] > 0 and rep["bytes_per_token"] < rep_exact["bytes_per_token"] / 2


def test_lost_copies_are_seeded_again(client, corpus):
    """The workers' copies of the counts dropped mid-run (as a replaced worker would lose them): the next round's
    tasks find none, the client seeds them again from its own counts and runs the rounds in flight again, and
    the run ends as one that lost nothing, up to :data:`ULPS` (every copy equals the client's counts exactly)."""
    from induce.distributed import rounds as rounds_module

    shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets, 2)
    kw = dict(heldout=(corpus.tokens[:50], np.array([0, 50])), heldout_every=4)
    ref, _ = _run(shards, dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3), corpus, **kw)
    dropped = []

    def drop(record):
        if record["batch"] >= 6 and not dropped:
            dropped.append(client.run(lambda: rounds_module._RESIDENT.clear()))

    got, _ = _run(shards, dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3), corpus, callback=drop, **kw)
    assert dropped
    assert_same_run((got.trans, got.emissions()), (ref.trans, ref.emissions()))


def test_a_copy_adds_the_rows_of_its_shards_words_only(client, corpus, monkeypatch):
    """Two shards with disjoint vocabularies (the second's words shifted by W): each worker's copy advances on its
    shard's words only, where it equals the client's counts bit for bit (as do the transitions, the column totals
    and the factor), while the other shard's rows in it stay as seeded."""
    from induce.distributed import rounds as rounds_module

    W = corpus.vocab.__len__()
    lo = dist.shards.shard_bounds(corpus.offsets, 2)[1]
    tokens = corpus.tokens.copy()
    tokens[corpus.offsets[lo]:] += W
    shards = dist.WorkerCorpus.ship(client, tokens, corpus.offsets, 2)
    assert list(shards.sentence_bounds) == [0, lo, corpus.n_sentences]
    updater = dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3)
    seen, advance = [], rounds_module.advance
    monkeypatch.setattr(rounds_module, "advance", lambda counts, *a: (seen.append(
        (counts.trans.copy(), counts.emit_scaled.copy(), counts.emit_factor, counts.emit_totals.copy())),
        advance(counts, *a))[1])
    counts = sh.GlobalCounts.exponential(np.random.default_rng(0), 4, 2 * W, corpus.n_tokens)
    batches = updater.batches(np.sort(i) for i in minibatches(corpus.n_sentences, 15, np.random.default_rng(1), 1))
    minibatch.run(counts, updater, batches, tau=1.0, kappa=0.6)
    token = updater._token
    copies = client.run(lambda: {k[1]: (s[1].trans, s[1].emit_scaled, s[1].emit_factor, s[1].emit_totals, s[3])
                                 for k, s in rounds_module._RESIDENT.items() if k[0] == token})
    copies = {j: c for per_worker in copies.values() for j, c in per_worker.items()}
    start = seen[-1]  # the client's counts before it merged the last round: where every copy stands
    initial = sh.GlobalCounts.exponential(np.random.default_rng(0), 4, 2 * W, corpus.n_tokens).emit_scaled
    for j, (trans, rows, factor, totals, member) in copies.items():
        assert member.sum() <= W and member[W:].any() == (j == 1)
        np.testing.assert_array_equal(trans, start[0])
        np.testing.assert_array_equal(rows[member], start[1][member])
        assert factor == start[2]
        np.testing.assert_array_equal(totals, start[3])
        np.testing.assert_array_equal(rows[~member], initial[~member])
        assert not np.array_equal(rows[~member], start[1][~member])


def test_three_workers_spread_the_sums_along_a_tree(corpus, monkeypatch):
    """Three workers (a cluster of its own): the partial sums reach them as copies made along a tree
    (:func:`induce.distributed.rounds.spread`), and the run is, up to :data:`ULPS`, the run whose tasks fetch the
    sums from their holders."""
    distributed = pytest.importorskip("distributed")
    from induce.distributed import cluster, rounds as rounds_module

    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  env=cluster.worker_environment(3)) as local, distributed.Client(local) as client:
        client.wait_for_workers(3, timeout=120)
        shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets, 3)
        copies, submit = [], client.submit
        monkeypatch.setattr(client, "submit", lambda fn, *a, **k: (copies.append(fn is dist.cluster.same),
                                                                     submit(fn, *a, **k))[1])
        updater = dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3)
        tree, _ = _run(shards, updater, corpus)
        made = sum(copies)
        assert len(set(updater._homes.values())) == 3  # a shard a worker
        monkeypatch.setattr(rounds_module, "TREE_ABOVE", 3)
        copies.clear()
        holder, _ = _run(shards, dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3), corpus)
    assert made >= 3 * 2 * 3 and sum(copies) <= 1  # 3 copies of 2 sums a round (and the seed) / the seed only
    assert_same_run((tree.trans, tree.emissions()), (holder.trans, holder.emissions()))


@pytest.mark.parametrize("staleness", [0, 1])
def test_resume_in_the_middle_of_a_round(client, corpus, tmp_path, staleness):
    """Stopped after 4 minibatches with rounds of 3 (growing: 1, 2, 3, ...), the run goes on to the round's end (6)
    before it stops and writes its checkpoint; resumed, it makes the same rounds (the checkpoint keeps the
    minibatches handed, which size them) and ends as one run does (staleness 1: the resumed run's first round
    starts fresh where one run's started a round stale, so it ends with the same mass, not bit for bit)."""
    shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets)
    fresh = lambda: dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3, staleness=staleness)  # noqa: E731
    counts, _ = _run(shards, fresh(), corpus)
    path = str(tmp_path / "ckpt.npz")
    _, part = _run(shards, fresh(), corpus, checkpoint=path, stop_after=4)
    assert part.interrupted and part.batches == 6
    resumed, _ = _run(shards, fresh(), corpus, checkpoint=path, resume=True)
    if staleness:
        np.testing.assert_allclose(resumed.trans.sum(), counts.trans.sum(), rtol=1e-9)
        return
    assert_same_run((resumed.trans, resumed.emissions()), (counts.trans, counts.emissions()))


def test_staleness_beyond_two_workers_says_what_it_costs(client, corpus, monkeypatch):
    """Rounds that never wait lose held-out quality as workers are added (0.2-0.5 nats/token at 4-32 workers,
    docs/experiments/distributed.md): a fit with ``staleness=1`` on more than two workers says so."""
    from induce.infer.convergence import FitWarning

    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 3)
    with pytest.warns(FitWarning, match="staleness=1 on 3 workers"):
        model = HMMTagger(n_states=4, infer="scvi", batch_size=10, random_state=5, client=client, sync_every=4,
                          staleness=1).fit(corpus)
    assert any(w.startswith("staleness=1 on 3 workers") for w in model.warnings_)


def test_cli_sync_every_reports_the_wire(client, text, capsys):
    argv = [text, "--infer", "scvi", "--states", "3", "--batch-size", "20", "--epochs", "2", "--heldout", "0",
            "--quiet", "--json"]
    assert main(["tag", *argv]) == 0
    ref = json.loads(capsys.readouterr().out)
    assert main(["tag", *argv, "--cluster", client.scheduler.address, "--sync-every", "3"]) == 0
    got = json.loads(capsys.readouterr().out)
    # rounds of 1, 2, then 3 minibatches (round_size), the last cut short; no epoch ends to settle at
    assert got["workers"] == 2 and got["minibatches"] == 2 * 10 and got["steps"] == 8
    assert got["bytes_per_token"] > 0 and got["bytes_sent_per_step"] > 0 and got["bytes_received_per_step"] > 0
    assert abs(got["minibatch_log_likelihood_per_token"] - ref["minibatch_log_likelihood_per_token"]) < 0.05
    assert main(["tag", text, "--infer", "scvi", "--sync-every", "3", "--quiet"]) == 2
    assert "--sync-every" in capsys.readouterr().err
    assert main(["tag", *argv, "--cluster", client.scheduler.address, "--sync-every", "3", "--staleness", "1"]) == 0
    stale = json.loads(capsys.readouterr().out)
    assert stale["minibatches"] == 2 * 10 and stale["steps"] == 8
    assert abs(stale["minibatch_log_likelihood_per_token"] - ref["minibatch_log_likelihood_per_token"]) < 0.05
    assert main(["tag", text, "--infer", "scvi", "--staleness", "1", "--quiet"]) == 2
    assert "--staleness" in capsys.readouterr().err


def test_merge_survives_a_small_emission_factor():
    """The deltas arrive packed (float16 under a power of two); divided by a factor of 1e-40 (reached after ~25
    epochs of Brown) in float32 they overflowed to inf and the next round's forward-backward divided by zero."""
    from induce.distributed.rounds import merge, pack

    counts = sh.GlobalCounts(np.ones((3, 2)), np.ones((4, 2)))
    counts.emit_factor = 1e-40
    merge(counts, np.array([1, 3]), pack(np.full((2, 2), 2.0)), np.ones((3, 2)), np.ones(2))
    assert np.isfinite(counts.emit_scaled).all()
    np.testing.assert_allclose(counts.emissions()[[1, 3]], 2.0 + 1e-40, rtol=1e-6)
    np.testing.assert_array_equal(counts.emit_scaled[[0, 2]], 1.0)
    np.testing.assert_array_equal(counts.trans, 2.0)


def test_packed_rows_keep_their_relative_error():
    """:func:`pack`: an entry within ``2^-13`` of its row's largest magnitude comes back with a relative error of
    at most ``2^-11``, smaller ones with an absolute error of at most ``2^-24`` of it; zero rows, signs and rows
    far outside float16's range (1e-300, 1e300) survive; ``row_bytes`` is what the arrays take; word ids take
    two bytes below 2^16 words."""
    from induce.distributed.rounds import pack, row_bytes, unpack, word_ids

    rng = np.random.default_rng(0)
    rows = rng.exponential(1.0, (500, 45)) ** 3 * np.exp(rng.normal(0, 8, (500, 1)))
    rows[0], rows[1], rows[2], rows[3] = 0.0, -rows[1], 1e-300 * rows[2], 1e300 * rows[3]
    q, e = pack(rows)
    back, peak = unpack((q, e)), np.abs(rows).max(axis=1, keepdims=True)
    big = np.abs(rows) >= 2.0**-13 * peak
    assert np.all(np.abs(back - rows)[big] <= 2.0**-11 * np.abs(rows)[big])
    assert np.all(np.abs(back - rows)[~big] <= 2.0**-24 * np.broadcast_to(peak, rows.shape)[~big])
    assert (back[0] == 0).all() and (back[1] <= 0).all() and np.isfinite(back).all()
    assert q.nbytes + e.nbytes == row_bytes(45) * len(rows)
    assert word_ids(np.arange(2**16)).dtype == np.uint16 and word_ids(np.arange(2**16 + 1)).dtype == np.int32


def test_pack_rounds_as_numpy_does():
    """:func:`pack` (one numba pass, its own float64 -> float16 rounding) gives numpy's ``ldexp(rows, -e)
    .astype(float16)`` and ``frexp`` exponents bit for bit: random rows of every scale and sign, and rows whose
    scaled entries are exact ties between two halves (normal and subnormal: to even), the largest subnormal
    rounding up to the smallest normal, and entries below half the smallest subnormal; and a round's delta
    ``coef (rows - base)`` packed without making it as it is when made."""
    from induce.distributed.rounds import pack

    rng = np.random.default_rng(1)
    rows = rng.exponential(1.0, (300, 45)) ** 3 * np.exp(rng.normal(0, 30, (300, 1))) * rng.choice([-1, 1], (300, 45))
    rows[0], rows[1], rows[2] = 0.0, 1e-310, -1e300
    ties = [0.5 + 2.0**-12, 0.5 + 3 * 2.0**-12, 2.0**-25, 3 * 2.0**-25, 5 * 2.0**-25, 2.0**-14 - 2.0**-25,
            2.0**-26, -(0.25 + 2.0**-13), 0.99999, 2.0**-15 + 2.0**-26, np.nextafter(2.0**-25, 0), -0.0]
    rows = np.vstack([rows, np.r_[0.75, ties, np.zeros(45 - 1 - len(ties))]])
    _, e = np.frexp(np.abs(rows).max(axis=1))
    q, got_e = pack(rows)
    want = np.ldexp(rows, -e[:, None]).astype(np.float16)
    np.testing.assert_array_equal(q.view(np.uint16), want.view(np.uint16))
    np.testing.assert_array_equal(got_e, e)
    assert q.dtype == np.float16 and pack(np.zeros((0, 3)))[0].shape == (0, 3)
    base, coef = rows[::-1] * rng.random(rows.shape), 0.37  # a round's delta, packed without making it
    fused, made = pack(rows, base, coef), pack(coef * (rows - base))
    np.testing.assert_array_equal(fused[0].view(np.uint16), made[0].view(np.uint16))
    np.testing.assert_array_equal(fused[1], made[1])


def test_merge_adds_as_numpy_does():
    """:func:`merge` (one numba pass) adds ``unpack(rows) / factor`` onto the rows ``at`` bit for bit as numpy's
    fancy-indexed ``+=`` does, with and without a member mask (a worker's copy: its shard's words only)."""
    from induce.distributed.rounds import merge, pack

    rng = np.random.default_rng(2)
    at = np.sort(rng.choice(200, 60, replace=False)).astype(np.uint16)
    rows, member = pack(rng.normal(0, 1, (60, 45)) * np.exp(rng.normal(0, 20, (60, 1)))), rng.random(200) < 0.6
    for mask in (None, member):
        counts = sh.GlobalCounts(np.ones((46, 45)), rng.exponential(1.0, (200, 45)))
        counts.emit_factor = 3.7e-9
        want = counts.emit_scaled.copy()
        keep = np.ones(60, dtype=bool) if mask is None else mask[at]
        want[at[keep]] += rows[0][keep].astype(np.float64) * np.ldexp(1.0, rows[1][keep].astype(np.int64))[:, None] \
            / counts.emit_factor
        merge(counts, at, rows, np.zeros((46, 45)), np.zeros(45), mask)
        np.testing.assert_array_equal(counts.emit_scaled, want)


def test_a_worker_process_can_import_the_rounds_first():
    """A fresh worker unpickles a round's task, so its first induce import is this module: no import cycle may
    depend on another entry point having run first (it once left workers failing every task, a hung gather)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import induce.distributed.rounds"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_stale_start_is_the_counts_less_the_others_deltas():
    """Staleness 1, two shards, by hand (K = 2, W = 4, one minibatch of rho = 1/2 in round r - 1): the client's
    ``N_r = D N_{r-1} + d_1 + d_2``; shard 1 starts round r + 1 from ``D N_{r-1} + d_1 = N_r - d_2`` on its words,
    and its copy advanced by round r - 1's sums (a round late) is ``N_r`` bit for bit."""
    from induce.distributed.rounds import ShardCounts, advance, pack, stale_start

    def fresh():
        counts = sh.GlobalCounts(np.ones((3, 2)), np.arange(2.0, 17.0, 2.0).reshape(4, 2))
        counts.emit_totals = np.array([32.0, 40.0])
        return counts

    d1 = (np.array([0, 1]), pack(np.array([[1.0, 1.0], [2.0, 2.0]])), np.full((3, 2), 0.5), np.array([3.0, 3.0]))
    d2 = (np.array([1, 3]), pack(np.array([[4.0, 4.0], [8.0, 8.0]])), np.full((3, 2), 0.25), np.array([12.0, 12.0]))
    client = fresh()
    advance(client, [0.5], [(*d1, np.zeros(1), 0), (*d2, np.zeros(1), 0)], False)
    np.testing.assert_array_equal(client.emissions(), [[2, 3], [9, 10], [5, 6], [15, 16]])
    np.testing.assert_array_equal(client.trans, np.full((3, 2), 1.25))
    np.testing.assert_array_equal(client.emit_totals, [31.0, 35.0])
    copy, words = fresh(), np.array([0, 1, 2], dtype=np.uint16)
    start = ShardCounts(copy.trans, copy.emit_scaled[words], copy.emit_factor, copy.emit_totals, 4)
    stale_start(start, words, [0.5], d1)
    np.testing.assert_array_equal(start.emit_factor * start.emit_scaled, [[2, 3], [5, 6], [5, 6]])
    np.testing.assert_array_equal(start.trans, np.full((3, 2), 1.0))  # N_r's less d_2's 0.25
    np.testing.assert_array_equal(start.emit_totals, [19.0, 23.0])  # N_r's less d_2's 12
    advance(copy, [0.5], [(*d1, np.zeros(1), 0), (*d2, np.zeros(1), 0)], False, np.ones(4, dtype=bool))
    np.testing.assert_array_equal(copy.emit_scaled, client.emit_scaled)
    np.testing.assert_array_equal(copy.trans, client.trans)


def test_rounds_that_never_wait(client, corpus, monkeypatch):
    """Staleness 1, two shards: each round's tasks start one round stale (the copies stand at the start of the
    round before the last), every copy equals the client's counts there bit for bit, and the run lands near the
    staleness-0 run; copies dropped mid-run are seeded again and every minibatch is still counted once."""
    from induce.distributed import rounds as rounds_module

    shards = dist.WorkerCorpus.ship(client, corpus.tokens, corpus.offsets, 2)
    seen, advance = [], rounds_module.advance
    monkeypatch.setattr(rounds_module, "advance", lambda counts, *a: (seen.append(
        (counts.trans.copy(), counts.emit_scaled.copy(), counts.emit_factor, counts.emit_totals.copy())),
        advance(counts, *a))[1] if len(a) == 3 else advance(counts, *a))
    updater = dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3, staleness=1)
    got, result = _run(shards, updater, corpus)
    token, at = updater._token, updater._behind[0].number
    assert at == updater._rounds - 2  # the last round started stale
    copies = client.run(lambda: [(s[0], s[1].trans, s[1].emit_scaled, s[1].emit_factor, s[1].emit_totals, s[3])
                                 for k, s in rounds_module._RESIDENT.items() if k[0] == token])
    copies = [c for per_worker in copies.values() for c in per_worker]
    assert len(copies) == 2
    for r, trans, rows, factor, totals, member in copies:
        assert r == at
        np.testing.assert_array_equal(trans, seen[at][0])
        np.testing.assert_array_equal(rows[member], seen[at][1][member])
        assert factor == seen[at][2]
    ref, _ = _run(shards, dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3), corpus)
    np.testing.assert_allclose(got.trans.sum(), ref.trans.sum(), rtol=1e-6)  # the same mass: eq. 3.103's decay
    assert np.abs(got.emissions() - ref.emissions()).max() < 0.5 * ref.emissions().max()
    dropped = []

    def drop(record):
        if record["batch"] >= 6 and not dropped:
            dropped.append(client.run(lambda: rounds_module._RESIDENT.clear()))

    again = dist.WorkerRoundsUpdater(shards, "scvi", 0.1, 0.1, 3, staleness=1)
    lost, after = _run(shards, again, corpus, callback=drop)
    assert dropped and after.batches == result.batches and again.meter.minibatches == result.batches
    np.testing.assert_allclose(lost.trans.sum(), ref.trans.sum(), rtol=1e-6)

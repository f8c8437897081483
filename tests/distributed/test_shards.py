"""Workers reading their own shards of a corpus file (induce.distributed.shards): same sentences, same results."""

import numpy as np
import pytest

pytest.importorskip("distributed")

from induce import HMMTagger  # noqa: E402
from induce import distributed as dist  # noqa: E402
from induce.corpus import stream  # noqa: E402
from induce.corpus.formats import read_sentences  # noqa: E402
from induce.distributed.shards import _read_ranges, scan_read  # noqa: E402
from induce.infer.hmm_batched import Layout, lockstep_pass  # noqa: E402
from tests.infer.test_stochastic_hmm import sample_hmm  # noqa: E402


def _sentences(n, seed):
    tokens, offsets, _, _ = sample_hmm(n, seed, K=4, W=20)
    return [[f"w{t}" for t in tokens[a:b]] for a, b in zip(offsets[:-1], offsets[1:])]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A plain file with blank lines sprinkled in (they hold no sentence)."""
    path = tmp_path_factory.mktemp("shards") / "text.txt"
    lines = [" ".join(s) + ("\n\n" if i % 17 == 3 else "\n") for i, s in enumerate(_sentences(160, 4))]
    path.write_text("".join(lines))
    return path


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """A plain file whose halves use the words w00..w19 and w10..w29: each shard of two lacks some of the 30."""
    path = tmp_path_factory.mktemp("split") / "text.txt"
    sentences = _sentences(160, 5)
    lines = [" ".join(f"w{int(w[1:]) + 10 * (i >= 80):02d}" for w in s) + "\n" for i, s in enumerate(sentences)]
    path.write_text("".join(lines))
    return path


@pytest.fixture(scope="module")
def columns(tmp_path_factory):
    """A directory of two CoNLL-2000 files (word POS chunk, blank line between sentences)."""
    root = tmp_path_factory.mktemp("cols")
    for name, seed in (("a.txt", 1), ("b.txt", 2)):
        blocks = ["".join(f"{w} NN O\n" for w in s) for s in _sentences(40, seed)]
        (root / name).write_text("\n".join(blocks) + "\n\n")
    return root


@pytest.mark.parametrize("fmt", ["plain", "conll2000"])
def test_byte_ranges_read_the_same_sentences(plain, columns, fmt):
    path = plain if fmt == "plain" else columns
    vocab = stream.scan(path, fmt).vocab
    whole = [vocab.encode(s.words, grow=False).tolist() for s in read_sentences(path, fmt)]
    for n in (1, 2, 3, 7):
        shards = dist.file_ranges(path, fmt, n)
        assert 1 <= len(shards) <= n
        if fmt == "plain":
            assert len(shards) == n and all(lo > 0 for s in shards[1:] for _, lo, _ in s[:1])  # cut inside the file
        got = []
        for ranges in shards:
            tokens, offsets = _read_ranges(ranges, fmt, False, vocab)
            got += [tokens[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
        assert got == whole


def test_local_vocabulary_by_hand():
    from induce.distributed.shards import local_vocabulary

    offsets = np.array([0, 2, 4], dtype=np.int64)
    vocab, (local, off) = local_vocabulary((np.array([5, 2, 5, 9], dtype=np.int32), offsets))
    assert vocab.tolist() == [2, 5, 9] and local.tolist() == [1, 0, 1, 2] and local.dtype == np.int32
    assert off is offsets


@pytest.mark.parametrize("infer", ["em", "vi", "cvi2"])
def test_shards_exchange_only_their_vocabularys_rows(client, split, infer, submitted):
    """Each shard returns the rows of its own words only, and no (tokens, K) start leaves the client; em / vi
    broadcast the emission table once a pass (the shards' rows together would outnumber it: 19 + 22 of the 30
    words here) and receive the shards' counts summed on the workers (rows of the union of their words, once a
    pass); cvi2 sends each shard its rows only and receives the shards' changes (and totals) summed on the
    workers alike.  em / vi equal the single-process run; cvi2 (two shards, each drawing its own start) is
    reproducible given the seed."""
    from induce.corpus.formats import load_corpus

    client.wait_for_workers(2)  # (a worker killed by test_faults may still be restarting: one shard, not two)
    corpus = load_corpus(split)
    W = len(corpus.vocab)
    kw = dict(n_states=4, infer=infer, n_iter=5, tol=0, random_state=2, **({"cvi2_block": 8} if infer == "cvi2"
                                                                            else {}))
    received, gather = [], client.gather
    client.gather = lambda futures: (received.extend(gather(futures)) or received[-len(futures):]
                                     if isinstance(futures, list) else received.append(gather(futures)) or received[-1])
    try:
        got = HMMTagger(client=client, **kw).fit(corpus)
    finally:
        del client.gather
    local = dist.WorkerCorpus.read(client, split, "plain", corpus.vocab).local()[1]
    assert len(local) == 2 and max(map(len, local)) < W - 1 and sum(map(len, local)) > W
    tables = [a for a in submitted if a.dtype.kind == "f" and a.shape[0] >= W]
    assert len(tables) == (0 if infer == "cvi2" else 5) and all(t.shape[0] == W for t in tables)
    # the shards' counts (cvi2: their changes, and their totals) summed on the workers: the client receives the
    # rows of union V_s, once a pass (cvi2: a round and the totals a pass, and the start's totals)
    sums = [r[0] for r in received if isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], tuple)
            and len(r[0]) == 5 and r[0][0].dtype.kind == "i"]
    assert len(sums) == (2 * 5 + 1 if infer == "cvi2" else 5)
    assert all(len(v) == len(e) == len(np.union1d(*local)) for v, _, e, _, _ in sums)
    assert max(a.shape[0] for a in submitted if a.ndim) < corpus.n_sentences < corpus.n_tokens
    if infer == "cvi2":
        again = HMMTagger(client=client, **kw).fit(corpus)
        np.testing.assert_array_equal(got.emission_counts_, again.emission_counts_)
        assert got.emission_counts_.sum() == pytest.approx(corpus.n_tokens, rel=1e-6)
        return
    ref = HMMTagger(**kw).fit(corpus)
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(got.labels_, ref.labels_)


@pytest.mark.parametrize("fraction, cap, shards", [(0.1, 10**6, None), (0.3, 40, 3), (0.0, 10**6, 2)])
def test_read_shards_hold_the_training_sentences(client, plain, fraction, cap, shards):
    """The workers' read holds the training sentences; the workers' scan (:func:`scan_read`: each range's own
    vocabulary, added in file order, the held-out sample drawn over the gathered lengths) gives exactly the
    serial scan's vocabulary, counts and held-out sample, and the same shards."""
    info = stream.scan(plain, "plain", heldout_fraction=fraction, heldout_max_tokens=cap, seed=3)
    corpus = dist.WorkerCorpus.read(client, plain, "plain", info.vocab, skip=info.heldout_ids, n_shards=shards)
    assert corpus.n_shards == (shards or 2)
    assert corpus.n_sentences == info.n_sentences and corpus.n_tokens == info.n_tokens
    (tokens, offsets), = stream.sentence_chunks(plain, "plain", info.vocab, chunk_sentences=10**6,
                                                skip=info.heldout_ids)
    got = client.gather(corpus.shards)
    np.testing.assert_array_equal(np.concatenate([t for t, _ in got]), tokens)
    assert corpus.sentence_bounds[1] == len(got[0][1]) - 1
    both, scanned = scan_read(client, plain, "plain", heldout_fraction=fraction, heldout_max_tokens=cap, seed=3,
                              n_shards=shards)
    assert both.vocab.itos == info.vocab.itos and list(both.vocab.counts) == list(info.vocab.counts)
    assert (both.n_sentences, both.n_tokens) == (info.n_sentences, info.n_tokens)
    for name in ("heldout_ids", "heldout_tokens", "heldout_offsets"):
        np.testing.assert_array_equal(getattr(both, name), getattr(info, name))
    assert (len(info.heldout_ids) > 0) == (fraction > 0)
    assert list(scanned.sentence_bounds) == list(corpus.sentence_bounds)
    for (t, o), (t2, o2) in zip(client.gather(scanned.shards), got):
        np.testing.assert_array_equal(t, t2)
        np.testing.assert_array_equal(o, o2)
        assert t.dtype == t2.dtype and o.dtype == o2.dtype


def test_estep_on_read_shards_equals_shipped_shards(client, plain):
    """em's E-step on shards the workers read equals it on shards the client shipped (and the one-process pass)."""
    info = stream.scan(plain, "plain")
    (tokens, offsets), = stream.sentence_chunks(plain, "plain", info.vocab, chunk_sentences=10**6)
    K, W = 4, len(info.vocab)
    rng = np.random.default_rng(0)
    A = rng.dirichlet(np.ones(K), size=K + 1)
    B = np.ascontiguousarray(rng.dirichlet(np.ones(W), size=K).T)
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    out = {}
    for name, corpus in (("read", dist.WorkerCorpus.read(client, plain, "plain", info.vocab)),
                         ("shipped", dist.WorkerCorpus.ship(client, tokens, offsets))):
        t, e, g = np.zeros((K + 1, K)), np.zeros((W, K)), np.empty((len(tokens), K))
        ll = dist.ClusterEStep(client, corpus, no_mask, 16)(A, B, t, e, g)
        out[name] = (ll, t, e, g)
    lay = Layout(tokens, offsets, 16)
    t, e, g = np.zeros((K + 1, K)), np.zeros((W, K)), np.empty((len(tokens), K))
    ll = lockstep_pass(A, B, no_mask, lay.lay_tokens, lay.lay_flat, lay.pos_start, lay.block_pos, t, e, g, 1)
    for got in out.values():
        assert got[0] == pytest.approx(ll, rel=1e-12)
        for x, ref in zip(got[1:], (t, e, g)):
            np.testing.assert_allclose(x, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("infer", ["scvi", "svi"])
def test_fit_stream_on_read_shards(client, plain, infer, monkeypatch):
    """Two shards: every step has a piece on each worker (:func:`stream.sharded_batches`), a run repeats exactly
    and lands near the single-process run (another minibatch order); one shard: the single-process run exactly."""
    kw = dict(n_states=4, infer=infer, batch_size=12, n_epochs=2, random_state=7, heldout_every=5,
              heldout_fraction=0.1)
    fit = dict(buffer_sentences=50)
    ref = HMMTagger(**kw).fit_stream(plain, "plain", **fit)
    pieces, cut = [], dist.minibatch.cut_pieces
    monkeypatch.setattr(dist.minibatch, "cut_pieces", lambda corpus, idx: pieces.append(cut(corpus, idx)) or pieces[-1])
    two = HMMTagger(client=client, sync_every=1, **kw).fit_stream(plain, "plain", **fit)  # the exact exchange
    assert two.cluster_meter_.steps == two.n_batches_ == len(pieces) and abs(two.n_batches_ - ref.n_batches_) <= 4
    assert sum(len(p) == 2 for p in pieces) >= len(pieces) - 4
    again = HMMTagger(client=client, sync_every=1, **kw).fit_stream(plain, "plain", **fit)
    np.testing.assert_array_equal(again.emission_counts_, two.emission_counts_)
    last = lambda m: m.trace_[-1]["heldout_log_likelihood_per_token"]  # noqa: E731
    # another order of 12-sentence minibatches over 144: measured over random_state 7-12, -3.3% to +2.6% of the
    # single process's held-out (each shard shuffled whole; with buffers of 50 in each shard -1.2% to +1.6%)
    assert last(two) == pytest.approx(last(ref), rel=0.04)
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    one = HMMTagger(client=client, **kw).fit_stream(plain, "plain", **fit)  # rounds of 64 (the default), one shard
    np.testing.assert_array_equal(one.transition_counts_, ref.transition_counts_)
    np.testing.assert_array_equal(one.emission_counts_, ref.emission_counts_)
    assert [r["heldout_log_likelihood_per_token"] for r in one.trace_] == \
        [r["heldout_log_likelihood_per_token"] for r in ref.trace_]


def test_client_submits_no_tokens(client, plain, submitted):
    """With workers reading their shards, nothing the client submits is a token array: only sentence indices
    (int64, at most a minibatch), parameters (float64) and the vocabulary."""
    HMMTagger(n_states=4, infer="scvi", batch_size=12, n_epochs=1, random_state=7, client=client).fit_stream(plain)
    ints = [a for a in submitted if a.dtype.kind in "iu" and a.size]  # (and empty skip lists, empty masks)
    # the workers' scan sends each shard the client's ids of its words (int32, at most the vocabulary)
    words = [a for a in ints if a.dtype == np.int32]
    assert len(words) == 2 and all(a.size <= len(stream.scan(plain, "plain").vocab) for a in words)
    assert all(a.dtype == np.int64 and a.size <= 12 for a in ints if a.dtype != np.int32)
    assert all(a.dtype.kind in "iuf" for a in submitted)
    # the shipped path, for contrast, sends the minibatch's tokens (int32)
    submitted.clear()
    info = stream.scan(plain, "plain")
    (tokens, offsets), = stream.sentence_chunks(plain, "plain", info.vocab, chunk_sentences=10**6)
    dist.WorkerCorpus.ship(client, tokens, offsets)
    assert any(a.dtype == np.int32 for a in submitted)


@pytest.mark.parametrize("infer, read", [("em", dict(format="plain")), ("vi", dict(format="plain", unk_threshold=2)),
                                         ("cvi2", dict(format="auto", lowercase=True)), ("scvi", dict(format="plain"))])
def test_fit_from_a_file_reads_shards_on_the_workers(client, plain, infer, read, submitted, monkeypatch):
    """A corpus read from a file (as the command line reads it; ``fit(path)`` likewise) is read by the workers:
    the client submits no token array, and the fit equals the single-process one."""
    from induce.corpus.formats import load_corpus

    corpus = load_corpus(plain, **read)
    assert corpus.source == (str(plain), read["format"], read.get("lowercase", False))
    kw = dict(n_states=4, infer=infer, n_iter=6, tol=0, random_state=1)
    kw.update({"cvi2_block": 16} if infer == "cvi2" else {"batch_size": 30, "sync_every": 1} if infer == "scvi"
              else {})
    ref = HMMTagger(**kw).fit(corpus)
    if infer == "cvi2":  # one worker: the single-process block pass, bit for bit
        monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HMMTagger(client=client, **kw).fit(corpus)
    if infer == "cvi2":
        np.testing.assert_array_equal(got.emission_counts_, ref.emission_counts_)
    # integers: sentence indices (cvi2's pass order, int64), empty skip lists and masks; no tokens (int32)
    assert not any(a.dtype == np.int32 and a.size for a in submitted)
    assert all(a.dtype == np.int64 or not a.size for a in submitted if a.dtype.kind in "iu")
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(got.labels_, ref.labels_)


def test_in_memory_data_and_changed_files_are_shipped(client, plain, tmp_path, submitted):
    """No file behind the corpus (a subset, token lists): shipped once; a file changed since the client read it:
    shipped, with a warning, and the fit is the single-process one."""
    from induce.corpus.corpus import as_corpus
    from induce.corpus.formats import load_corpus

    assert load_corpus(plain).head(5).source is None and as_corpus([["a", "b"]]).source is None
    assert load_corpus("demo").source is None and load_corpus(plain, normalize_digits=True).source is None
    copy = tmp_path / "copy.txt"
    copy.write_text(plain.read_text())
    corpus = load_corpus(copy)
    copy.write_text(plain.read_text().replace("w1 ", "w2 "))
    kw = dict(n_states=4, infer="em", n_iter=4, tol=0, random_state=1)
    ref = HMMTagger(**kw).fit(corpus)
    with pytest.warns(UserWarning, match="shipped"):
        got = HMMTagger(client=client, **kw).fit(corpus)
    assert any(a.dtype == np.int32 and a.size for a in submitted)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("infer", ["scvi", "svi"])
def test_hdp_from_a_path_reads_shards_on_the_workers(client, plain, infer, submitted, monkeypatch):
    """``fit(path)``: the HDP-HMM's minibatches run on shards the workers read (the client sends sentence
    indices); one worker equals the single-process run (svi: up to the forward-backward's float order)."""
    from induce import HDPHMMTagger

    kw = dict(infer=infer, truncation=5, batch_size=20, n_iter=2, random_state=4)
    # scvi on a cluster has no sentence memory (no memoized moves): the reference runs without it too
    ref = HDPHMMTagger(**kw, **({"scvi_memory": False} if infer == "scvi" else {})).fit(str(plain))
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HDPHMMTagger(client=client, **kw).fit(str(plain))
    assert not any(a.dtype == np.int32 and a.size for a in submitted)
    tol = dict(rtol=0, atol=0) if infer == "scvi" else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, **tol)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, **tol)


def _unreadable(*args):
    raise FileNotFoundError("no such file on this worker")


def test_files_the_workers_cannot_read_are_shipped(client, plain, monkeypatch):
    """Workers on machines without the corpus file: the client ships the corpus, with a warning."""
    from induce.corpus.formats import load_corpus
    from induce.distributed import shards

    corpus = load_corpus(plain)
    kw = dict(n_states=4, infer="em", n_iter=3, tol=0, random_state=1)
    ref = HMMTagger(**kw).fit(corpus)
    submit = client.submit
    monkeypatch.setattr(client, "submit", lambda fn, *a, **k: submit(_unreadable if fn is shards._read_ranges
                                                                     else fn, *a, **k))
    with pytest.warns(UserWarning, match="cannot read"):
        got = HMMTagger(client=client, **kw).fit(corpus)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-9, atol=1e-9)

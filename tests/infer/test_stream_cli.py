"""Streaming from disk, and a SIGTERM-interrupted ``induce tag --stream`` resumed with ``--resume``."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from induce import HMMTagger
from induce.corpus import stream
from induce.corpus.vocab import Vocabulary

REPO = Path(__file__).resolve().parents[2]


def write_plain(path, n=300, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]
    with open(path, "w") as out:
        for _ in range(n):
            out.write(" ".join(rng.choice(words, size=rng.integers(3, 12))) + "\n")


def test_capped_heldout_sample_spans_the_whole_file(tmp_path):
    """Under a token cap the sample is a random subset of the whole file's candidates (it used to stop at the
    file's start once the cap was reached); what is pushed out returns to training; at least one sentence."""
    path = tmp_path / "text.txt"
    with open(path, "w") as out:
        for i in range(2000):
            out.write(" ".join(f"w{(i + j) % 50}" for j in range(5)) + "\n")
    info = stream.scan(path, "plain", heldout_fraction=0.5, heldout_max_tokens=100, seed=4)
    ids = info.heldout_ids
    assert len(ids) == 20 and len(info.heldout_tokens) == 100 and np.all(np.diff(ids) > 0)
    assert ids.min() < 500 and ids.max() > 1500  # spread over the file
    assert (info.n_sentences, info.n_tokens) == (1980, 9900)
    words = open(path).read().split("\n")
    held = [info.heldout_tokens[a:b] for a, b in zip(info.heldout_offsets[:-1], info.heldout_offsets[1:])]
    assert [[info.vocab.itos[t] for t in h] for h in held] == [words[i].split() for i in ids]
    one = stream.scan(path, "plain", heldout_fraction=0.5, heldout_max_tokens=3, seed=4)
    assert len(one.heldout_ids) == 1 and one.n_sentences == 1999


def test_blocked_reading_is_sentence_by_sentence_reading(tmp_path, monkeypatch):
    """The scan and the training chunks read sentences in blocks (``encoded_blocks``): the vocabulary (order and
    counts), the held-out sample and the chunks are those of encoding each sentence in turn, whatever the block
    size, across blank lines and chunks that straddle blocks; an unseen word still fails."""
    path = tmp_path / "text.txt"
    write_plain(path, n=200, seed=3)
    with open(path) as f:
        lines = f.read().split("\n")[:-1]
    lines[7] = lines[50] = ""
    path.write_text("\n".join(lines) + "\n")
    ref = Vocabulary()
    ids = [ref.encode(line.split()) for line in lines if line]  # (a blank line is no sentence)
    outs = []
    for block in (1, 3, 64, 4096):
        monkeypatch.setattr(stream, "BLOCK_SENTENCES", block)
        info = stream.scan(path, "plain", heldout_fraction=0.2, heldout_max_tokens=300, seed=2)
        assert info.vocab.itos == ref.itos and list(info.vocab.counts) == list(ref.counts)
        held = [info.heldout_tokens[a:b] for a, b in zip(info.heldout_offsets[:-1], info.heldout_offsets[1:])]
        assert all(np.array_equal(h, ids[i]) for h, i in zip(held, info.heldout_ids))
        chunks = list(stream.sentence_chunks(path, "plain", info.vocab, chunk_sentences=7, skip=info.heldout_ids))
        kept = [a for i, a in enumerate(ids) if i not in set(info.heldout_ids.tolist())]
        assert [len(o) - 1 for _, o in chunks] == [7] * (len(kept) // 7) + ([len(kept) % 7] if len(kept) % 7 else [])
        np.testing.assert_array_equal(np.concatenate([t for t, _ in chunks]), np.concatenate(kept))
        assert all(t.dtype == np.int32 and o.dtype == np.int64 for t, o in chunks)
        outs.append((info.heldout_ids.tolist(), info.n_sentences, info.n_tokens))
    assert outs.count(outs[0]) == len(outs)
    with pytest.raises(KeyError):
        Vocabulary(["w1"]).encode_sentences([["w1"], ["w2"]], grow=False)


def test_scan_and_minibatches_cover_the_training_sentences(tmp_path):
    path = tmp_path / "text.txt"
    write_plain(path)
    info = stream.scan(path, "plain", heldout_fraction=0.1, seed=1)
    assert info.n_sentences + len(info.heldout_ids) == 300
    assert info.n_tokens + len(info.heldout_tokens) == sum(len(l.split()) for l in open(path))
    batches = list(stream.shuffled_minibatches(path, "plain", info.vocab, batch_size=16, buffer_sentences=64,
                                               n_epochs=1, rng=np.random.default_rng(0), skip=info.heldout_ids))
    assert sum(len(o) - 1 for _, o in batches) == info.n_sentences
    assert sum(len(t) for t, _ in batches) == info.n_tokens
    fits = [HMMTagger(n_states=4, infer="scvi", batch_size=16, n_epochs=2, heldout_every=10, heldout_fraction=0.1)
            .fit_stream(path, "plain", buffer_sentences=64) for _ in range(2)]
    np.testing.assert_array_equal(fits[0].emission_counts_, fits[1].emission_counts_)
    # every 10 minibatches and at each epoch's end (17 minibatches of the 260-odd training sentences)
    assert [(r["batch"], r.get("epoch")) for r in fits[0].trace_] == [(0, None), (10, None), (17, 1), (20, None),
                                                                      (30, None), (34, 2)]
    assert fits[0].n_batches_ == 34 and fits[0].n_iter_ == 2
    assert fits[0].emission_counts_.shape == (len(info.vocab), 4)


def test_sharded_batches_give_every_shard_a_piece_of_every_step():
    """Workers holding consecutive runs of sentences: each epoch visits every sentence once, every minibatch but
    an epoch's last few has sentences of every shard in proportion, and one shard is the plain schedule."""
    bounds = np.array([0, 130, 200, 330])
    kw = dict(batch_size=20, buffer_sentences=50, n_epochs=2)
    batches = list(stream.sharded_batches(bounds, rng=np.random.default_rng(3), **kw))
    per_epoch = len(batches) // 2
    for epoch in (batches[:per_epoch], batches[per_epoch:]):
        seen = np.concatenate(epoch)
        np.testing.assert_array_equal(np.sort(seen), np.arange(330))
        shards = [np.bincount(np.searchsorted(bounds, b, side="right") - 1, minlength=3) for b in epoch]
        full = [c for c in shards if len(c) == 3 and (c > 0).all()]
        assert len(full) >= len(epoch) - 2
        assert all(abs(c[0] - 8) <= 1 and abs(c[1] - 4) <= 1 for c in full[:5])  # 20 x 130/330, 20 x 70/330
    assert all((np.diff(b) > 0).all() for b in batches)
    again = list(stream.sharded_batches(bounds, rng=np.random.default_rng(3), **kw))
    assert all(np.array_equal(a, b) for a, b in zip(batches, again)) and len(again) == len(batches)
    one = list(stream.sharded_batches([0, 330], rng=np.random.default_rng(3), **kw))
    plain = list(stream.shuffled_batches(330, rng=np.random.default_rng(3), **kw))
    assert len(one) == len(plain) and all(np.array_equal(a, b) for a, b in zip(one, plain))
    # several shards: each shuffled whole, not in buffers of 50 (the first piece of shard 0 reaches past its first
    # buffer; all 8 inside it: probability ~5e-4 for a whole shuffle; a buffer-local one never leaves it)
    assert batches[0][batches[0] < 130].max() >= 50 and len(batches[0][batches[0] < 130]) == 8


def test_sigterm_writes_checkpoint_and_resume_matches_uninterrupted(tmp_path):
    path = tmp_path / "text.txt"
    write_plain(path, n=400)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    base = [sys.executable, "-m", "induce", "tag", str(path), "--format", "plain", "--stream", "--infer", "scvi",
            "--states", "4", "--batch-size", "4", "--epochs", "1000", "--seed", "5", "--quiet"]
    ck = tmp_path / "run.ckpt"
    proc = subprocess.Popen(base + ["--checkpoint", str(ck), "--checkpoint-every", "1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not ck.exists() and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert b"--resume" in err
    from induce.checkpoint import load_checkpoint

    done = load_checkpoint(ck, "stochastic_hmm")[0]["batches"]
    total = str(done + 25)
    subprocess.run(base + ["--checkpoint", str(ck), "--resume", "--max-batches", total, "--save",
                           str(tmp_path / "b.npz")], env=env, check=True, capture_output=True)
    out = subprocess.run(base + ["--max-batches", total, "--save", str(tmp_path / "a.npz"), "--json", "-"], env=env,
                         check=True, capture_output=True)
    assert json.loads(out.stdout)["minibatches"] == done + 25
    a, b = HMMTagger.load(tmp_path / "a.npz"), HMMTagger.load(tmp_path / "b.npz")
    np.testing.assert_allclose(b.transition_counts_, a.transition_counts_, rtol=1e-12)
    np.testing.assert_allclose(b.emission_counts_, a.emission_counts_, rtol=1e-12)

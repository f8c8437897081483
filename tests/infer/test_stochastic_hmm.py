"""SVI / SCVI for HMMs (thesis 3.98-3.109), the single-sequence variants, checkpoints and resumption."""

import numpy as np
import pytest

from induce import HMMTagger
from induce.algorithms import minibatch
from induce.corpus.corpus import Corpus
from induce.corpus.vocab import Vocabulary
from induce.errors import ConfigError
from induce.infer import hmm_passes as passes
from induce.infer import stochastic_hmm as sh
from induce.infer.estimators import cvi_params, vi_params
from induce.infer.schedules import blend, minibatches

NO_MASK = np.zeros((0, 0), dtype=np.uint8)


def sample_hmm(n_sentences, seed, K=3, W=12, mean_len=8):
    """Sentences from a sparse known HMM (every state owns a few words)."""
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.full(K, 0.3), size=K + 1)
    B = np.zeros((K, W))
    for k in range(K):
        own = np.arange(k, W, K)
        B[k, own] = rng.dirichlet(np.ones(len(own)))
    lengths = rng.integers(2, 2 * mean_len, size=n_sentences)
    tokens = []
    for T in lengths:
        z = rng.choice(K, p=A[0])
        for _ in range(T):
            tokens.append(rng.choice(W, p=B[z]))
            z = rng.choice(K, p=A[z + 1])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return np.asarray(tokens, dtype=np.int32), offsets, A, B


def as_corpus(tokens, offsets, W):
    vocab = Vocabulary(f"w{i}" for i in range(W))
    return Corpus(tokens=tokens, offsets=offsets, vocab=vocab)


@pytest.mark.parametrize("algorithm,params", [("scvi", cvi_params), ("svi", vi_params)])
def test_full_batch_step_with_unit_rate_is_one_batch_pass(algorithm, params):
    tokens, offsets, _, _ = sample_hmm(30, 0)
    K, W = 3, 12
    counts = sh.GlobalCounts.exponential(np.random.default_rng(1), K, W, len(tokens))
    A = params(counts.trans, 0.1)
    B = np.ascontiguousarray(params(counts.emissions().T, 0.2).T)
    trans_ref, emit_ref = np.zeros((K + 1, K)), np.zeros((W, K))
    ll_ref = passes.batch_pass(A, B, NO_MASK, tokens, offsets, trans_ref, emit_ref, np.empty((0, K)), 1)
    updater = sh.SentenceUpdater(algorithm, 0.1, 0.2, len(offsets) - 1)
    ll, n = updater(counts, 1.0, (tokens, offsets))
    assert n == len(tokens)
    assert ll == pytest.approx(ll_ref, rel=1e-10)
    np.testing.assert_allclose(counts.trans, trans_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(counts.emissions(), emit_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(counts.emit_totals, emit_ref.sum(axis=0), rtol=1e-10)


def test_factored_emission_update_equals_dense_blend():
    rng = np.random.default_rng(2)
    W, K = 9, 4
    counts = sh.GlobalCounts(rng.random((K + 1, K)), rng.random((W, K)))
    dense = counts.emissions().copy()
    for m in range(40):
        ids = np.unique(rng.integers(0, W, size=4))
        stats = rng.random((len(ids), K))
        full = np.zeros((W, K))
        full[ids] = stats
        rho = (m + 1.0) ** -0.5 if m else 0.999999
        blend(dense, full, rho, 3.0)
        counts.update(rho, np.zeros((K + 1, K)), 1.0, ids, stats, 3.0)
    np.testing.assert_allclose(counts.emissions(), dense, rtol=1e-9)
    np.testing.assert_allclose(counts.emit_totals, dense.sum(axis=0), rtol=1e-9)


def test_distinct_words_are_numpys_unique_by_either_route():
    """:func:`induce.corpus.corpus.distinct` (a minibatch's words): ``np.unique(tokens, return_inverse=True)``
    whether it counts them in a table (ids near the tokens' count) or sorts them (ids far above it), and
    :meth:`GlobalCounts.emission_rows` gathers known words as it does a mix with unseen ones."""
    from induce.corpus.corpus import distinct

    rng = np.random.default_rng(3)
    for tokens in (rng.integers(0, 50, 400).astype(np.int32), rng.integers(0, 10**9, 400),
                   np.zeros(0, dtype=np.int64), np.array([[7, 2], [7, 9]])):
        for got, want in zip(distinct(tokens), np.unique(tokens, return_inverse=True)):
            np.testing.assert_array_equal(got, want.reshape(-1))
    counts = sh.GlobalCounts(rng.random((5, 4)), rng.random((30, 4)))
    counts.emit_factor = 0.3
    known, mixed = counts.emission_rows(np.array([2, 29, 5])), counts.emission_rows(np.array([2, 29, 5, 30]))
    np.testing.assert_array_equal(known, mixed[:3])
    np.testing.assert_array_equal(mixed[3], 0.0)
    np.testing.assert_array_equal(known, 0.3 * counts.emit_scaled[[2, 29, 5]])


def test_same_seed_same_result_and_heldout_improves_on_known_hmm():
    tokens, offsets, _, _ = sample_hmm(400, 3)
    corpus = as_corpus(tokens, offsets, 12)
    train, held = corpus.subset(np.arange(360)), corpus.subset(np.arange(360, 400))
    fits = []
    for _ in range(2):
        m = HMMTagger(n_states=3, infer="scvi", batch_size=20, n_epochs=3, heldout_every=18, random_state=4)
        fits.append(m.fit(train, heldout=held))
    np.testing.assert_array_equal(fits[0].transition_counts_, fits[1].transition_counts_)
    np.testing.assert_array_equal(fits[0].emission_counts_, fits[1].emission_counts_)
    lls = [r["heldout_log_likelihood_per_token"] for r in fits[0].trace_]
    assert len(lls) == 4 and lls[-1] > lls[0] + 0.3
    svi = HMMTagger(n_states=3, infer="svi", batch_size=20, n_epochs=3, random_state=4).fit(train, heldout=held)
    assert svi.trace_[-1]["heldout_log_likelihood_per_token"] > lls[0] + 0.3
    # the learned model is close to the generating one on held-out text
    assert lls[-1] > held_truth(held) - 0.15


def held_truth(held):
    _, _, A, B = sample_hmm(400, 3)
    K = A.shape[1]
    ll = passes.batch_pass(A, np.ascontiguousarray(B.T), NO_MASK, held.tokens, held.offsets, np.zeros((K + 1, K)),
                           np.zeros((12, K)), np.empty((0, K)), 1)
    return ll / held.n_tokens


@pytest.mark.parametrize("infer", ["scvi3", "scvi3-vanilla", "svi-buffered", "svi-vanilla"])
def test_single_sequence_algorithms_learn(infer):
    tokens, offsets, _, _ = sample_hmm(200, 5)
    corpus = as_corpus(tokens, offsets, 12)
    train, held = corpus.subset(np.arange(180)), corpus.subset(np.arange(180, 200))
    m = HMMTagger(n_states=3, infer=infer, subseq_length=4, batch_size=25, buffer=3, n_epochs=3,
                  random_state=0).fit(train, heldout=held)
    first = sh.heldout_loglik(sh.GlobalCounts.exponential(np.random.default_rng(0), 3, 12, train.n_tokens), 0.1, 0.1,
                              held.tokens, np.array([0, held.n_tokens]))
    last = m.trace_[-1]["heldout_log_likelihood_per_token"]
    assert last > first + 0.3
    # single-sequence statistics: emissions sum to the corpus size
    assert m.emission_counts_.sum() == pytest.approx(train.n_tokens, rel=1e-6)


@pytest.mark.parametrize("infer", ["scvi", "scvi3"])
def test_interrupted_and_resumed_run_matches_uninterrupted(tmp_path, infer):
    tokens, offsets, _, _ = sample_hmm(120, 7)
    corpus = as_corpus(tokens, offsets, 12)
    opts = dict(n_states=3, infer=infer, batch_size=10, n_epochs=2, subseq_length=3, random_state=9)
    full = HMMTagger(**opts).fit(corpus)
    ck = str(tmp_path / "run.ckpt")
    with pytest.raises(ConfigError):
        HMMTagger(resume=True, **opts).fit(corpus)  # --resume without --checkpoint
    # stopped after 5 minibatches, leaving its checkpoint behind
    part = HMMTagger(checkpoint=ck, checkpoint_every=2, max_batches=5, **opts).fit(corpus)
    assert part.n_batches_ == 5
    resumed = HMMTagger(checkpoint=ck, resume=True, **opts).fit(corpus)
    assert resumed.n_batches_ == full.n_batches_
    np.testing.assert_allclose(resumed.transition_counts_, full.transition_counts_, rtol=1e-12)
    np.testing.assert_allclose(resumed.emission_counts_, full.emission_counts_, rtol=1e-12)
    with pytest.raises(ConfigError):
        HMMTagger(checkpoint=ck, resume=True, **(opts | {"batch_size": 7})).fit(corpus)


@pytest.mark.parametrize("infer", ["svi", "scvi"])
def test_resumed_run_keeps_the_priors_it_learned(tmp_path, infer):
    """learn_hyper: a run cut after its first epoch's prior step resumes with the learned priors (from the
    checkpoint's trace) and ends where the uninterrupted run ends."""
    tokens, offsets, _, _ = sample_hmm(120, 7)
    corpus = as_corpus(tokens, offsets, 12)
    opts = dict(n_states=3, infer=infer, batch_size=10, n_epochs=3, tol=0, learn_hyper=True, random_state=9)
    full = HMMTagger(**opts).fit(corpus)
    assert [r["epoch"] for r in full.trace_ if "beta" in r] == [1, 2, 3] and full.beta_ != 0.003
    ck = str(tmp_path / "run.ckpt")
    HMMTagger(checkpoint=ck, max_batches=15, **opts).fit(corpus)  # 12 minibatches an epoch
    resumed = HMMTagger(checkpoint=ck, resume=True, **opts).fit(corpus)
    assert (resumed.alpha_, resumed.beta_) == (full.alpha_, full.beta_)
    np.testing.assert_allclose(resumed.emission_counts_, full.emission_counts_, rtol=1e-12)


def test_stop_request_writes_checkpoint_and_resumes(tmp_path):
    tokens, offsets, _, _ = sample_hmm(80, 8)
    K, W = 3, 12
    ck = str(tmp_path / "s.ckpt")

    def fresh():
        counts = sh.GlobalCounts.exponential(np.random.default_rng(0), K, W, len(tokens))
        upd = sh.SentenceUpdater("scvi", 0.1, 0.1, len(offsets) - 1)
        return counts, upd, sh.sentence_batches(tokens, offsets, 8, 2, np.random.default_rng(1))

    c0, u0, b0 = fresh()
    minibatch.run(c0, u0, b0, tau=1.0, kappa=0.7)
    c1, u1, b1 = fresh()
    r1 = minibatch.run(c1, u1, b1, tau=1.0, kappa=0.7, checkpoint=ck, stop_after=7, meta={"x": 1})
    assert r1.interrupted and r1.batches == 7
    c2, u2, b2 = fresh()
    r2 = minibatch.run(c2, u2, b2, tau=1.0, kappa=0.7, checkpoint=ck, resume=True, meta={"x": 1})
    assert r2.batches == 20 and not r2.interrupted
    np.testing.assert_allclose(c2.trans, c0.trans, rtol=1e-12)
    np.testing.assert_allclose(c2.emissions(), c0.emissions(), rtol=1e-12)


def test_minibatch_ids_cover_each_epoch():
    seen = np.concatenate(list(minibatches(23, 5, np.random.default_rng(0), 1)))
    assert sorted(seen.tolist()) == list(range(23))


def test_run_continues_the_step_sizes_from_first_batch_and_sums_the_log_likelihoods():
    """A series fit's epoch is one run (minibatch.epoch): its minibatch ``m`` steps with ``rho_{first + m}``
    (eq. 3.104), and the result's ``log_likelihood`` is the sum of the minibatches' (the epoch's objective)."""

    class Recorder(minibatch.Updater):
        def __init__(self):
            self.rhos = []

        def local(self, counts, batch):
            return float(batch), (), 1.0, 1

        def blend(self, counts, rho, stats, scale):
            self.rhos.append(rho)

    updater = Recorder()
    result = minibatch.run((), updater, [1, 2, 3], tau=1.0, kappa=0.7, first_batch=5)
    np.testing.assert_allclose(updater.rhos, [(1.0 + m + 1) ** -0.7 for m in (5, 6, 7)], rtol=1e-15)
    assert result.log_likelihood == 6.0 and result.batches == 3 and result.tokens_seen == 3

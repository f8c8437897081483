"""The collapsed Gibbs aligner: its stationary distribution against exact enumeration, its counts, seeding,
and fertility recovery on a bitext sampled from a known model."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from induce.align import WordAligner
from induce.align.table import build_table
from induce.kernels.align_gibbs import gibbs_counts, gibbs_random_links, gibbs_sweep

# a tiny bitext: (source ids, target ids) per pair; 3 * 3 * 2 * 2 * 3 = 108 alignments
PAIRS = [([0, 1], [0, 1]), ([1, 0, 2], [1]), ([2], [2, 0])]
N_SRC, N_TGT = 3, 3
ALPHA, JUMP_ALPHA, FERT_ALPHA, P0, MAX_JUMP, N_FERT = 0.5, 0.7, 0.6, 0.3, 1, 2


def _flat(pairs):
    def side(k):
        tok = np.array([w for p in pairs for w in p[k]], dtype=np.int32)
        off = np.concatenate([[0], np.cumsum([len(p[k]) for p in pairs])]).astype(np.int64)
        return tok, off
    (src_tok, src_off), (tgt_tok, tgt_off) = side(0), side(1)
    return src_tok, src_off, tgt_tok, tgt_off


def _dm(counts, prior, n_outcomes):
    """log Dirichlet-multinomial marginal of one row of counts with ``n_outcomes`` outcomes."""
    counts = np.asarray(counts, dtype=float)
    return (math.lgamma(n_outcomes * prior) - math.lgamma(counts.sum() + n_outcomes * prior)
            + sum(math.lgamma(c + prior) - math.lgamma(prior) for c in counts))


def _log_joint(links, level):
    """The model of :mod:`induce.kernels.align_gibbs` written out from its definition."""
    lex = np.zeros((N_SRC + 1, N_TGT))
    jumps = np.zeros(2 * MAX_JUMP + 1)
    fert = np.zeros((N_SRC, N_FERT))
    out, t = 0.0, 0
    for src, tgt in PAIRS:
        phi = [0] * len(src)
        prev = -1
        for f in tgt:
            i = links[t]
            t += 1
            lex[0 if i < 0 else src[i] + 1, f] += 1
            out += math.log(P0 if i < 0 else (1 - P0) / (len(src) if level == 1 else 1))
            if i >= 0:
                jumps[int(np.clip(i - prev, -MAX_JUMP, MAX_JUMP)) + MAX_JUMP] += 1
                phi[i] += 1
                prev = i
        jumps[int(np.clip(len(src) - prev, -MAX_JUMP, MAX_JUMP)) + MAX_JUMP] += 1
        for e, n in zip(src, phi):
            fert[e, min(n, N_FERT - 1)] += 1
    out += sum(_dm(row, ALPHA, N_TGT) for row in lex)
    if level >= 2:
        out += _dm(jumps, JUMP_ALPHA, len(jumps))
    if level >= 3:
        out += sum(_dm(row, FERT_ALPHA, N_FERT) for row in fert)
    return out


class _Chain:
    def __init__(self, seed=0, pairs=PAIRS):
        self.src_tok, self.src_off, self.tgt_tok, self.tgt_off = _flat(pairs)
        table, self.cells, self.cell_off = build_table(self.src_tok, self.src_off, self.tgt_tok, self.tgt_off,
                                                        N_SRC, N_TGT)
        self.entry_row, self.n_outcomes = table.entry_row, table.row_outcomes("vocabulary")
        self.links = np.empty(len(self.tgt_tok), dtype=np.int32)
        gibbs_random_links(self.src_off, self.tgt_off, P0, seed, self.links)
        self.lex = np.zeros(table.nnz, dtype=np.int32)
        self.lex_tot = np.zeros(table.n_rows, dtype=np.int32)
        self.jumps = np.zeros(2 * MAX_JUMP + 1, dtype=np.int64)
        self.fert = np.zeros(N_SRC * N_FERT, dtype=np.int32)
        self.recount()
        self.acc = np.zeros(len(self.cells))

    def recount(self):
        gibbs_counts(self.src_off, self.tgt_off, self.src_tok, self.cell_off, self.cells, self.entry_row,
                     self.links, N_FERT, self.lex, self.lex_tot, self.jumps, self.fert)

    def sweep(self, level, seed, weight=0.0):
        gibbs_sweep(np.arange(len(self.src_off) - 1), self.src_off, self.tgt_off, self.src_tok, self.cell_off,
                    self.cells, self.entry_row, self.links, self.lex, self.lex_tot, ALPHA, self.n_outcomes,
                    self.jumps, JUMP_ALPHA, self.fert, N_FERT, FERT_ALPHA, P0, level, seed, self.acc, weight)


def _exact(level):
    """Every alignment of PAIRS with its normalised probability, and the exact per-cell link marginals."""
    choices = [range(-1, len(src)) for src, tgt in PAIRS for _ in tgt]
    states = list(itertools.product(*choices))
    logp = np.array([_log_joint(a, level) for a in states])
    prob = np.exp(logp - logp.max())
    return states, prob / prob.sum()


@pytest.mark.parametrize("level", [1, 2, 3])
def test_stationary_distribution_matches_enumeration(level):
    states, exact = _exact(level)
    index = {a: k for k, a in enumerate(states)}
    chain = _Chain(seed=level)
    n_sweeps = 30000
    seen = np.zeros(len(states))
    for sweep in range(n_sweeps):
        chain.sweep(level, seed=sweep, weight=1.0 / n_sweeps)
        seen[index[tuple(int(x) for x in chain.links)]] += 1
    assert 0.5 * np.abs(seen / n_sweeps - exact).sum() < 0.03
    # the Rao-Blackwellised link marginals against the exact ones
    marg = np.zeros(len(chain.cells))
    t_start = np.concatenate([[0], np.cumsum([len(t) for _, t in PAIRS])])
    for a, p in zip(states, exact):
        for s, (src, tgt) in enumerate(PAIRS):
            for j in range(len(tgt)):
                marg[chain.cell_off[s] + j * (len(src) + 1) + a[t_start[s] + j] + 1] += p
    np.testing.assert_allclose(chain.acc, marg, atol=0.015)


def test_counts_follow_the_links():
    """After many sweeps the incrementally kept counts equal a recount, and sum to the tokens."""
    chain = _Chain(seed=3)
    for sweep in range(50):
        chain.sweep(3, seed=sweep)
    kept = [x.copy() for x in (chain.lex, chain.lex_tot, chain.jumps, chain.fert)]
    chain.recount()
    for a, b in zip(kept, (chain.lex, chain.lex_tot, chain.jumps, chain.fert)):
        np.testing.assert_array_equal(a, b)
    assert chain.lex.sum() == chain.lex_tot.sum() == len(chain.tgt_tok)
    assert chain.fert.sum() == len(chain.src_tok)
    assert chain.jumps.sum() == (chain.links >= 0).sum() + len(PAIRS)


def _fertility_bitext(seed=0, n_pairs=300, n_words=30):
    """Pairs from a known model: source word ``e`` has fertility ``e % 3`` and emits its copies in order as
    the target words ``t{e}_{k}``; after each target word, with probability 0.2, a NULL word ``n0`` .. ``n19``.
    Returns the pairs and the true links."""
    rng = np.random.default_rng(seed)
    pairs, truth = [], []
    for _ in range(n_pairs):
        src = rng.integers(0, n_words, rng.integers(3, 7))
        tgt, links = [], set()
        for i, e in enumerate(src):
            for k in range(e % 3):
                links.add((i, len(tgt)))
                tgt.append(f"t{e}_{k}")
                if rng.random() < 0.2:
                    tgt.append(f"n{rng.integers(20)}")
        pairs.append(([f"s{e}" for e in src], tgt))
        truth.append(links)
    return pairs, truth


def test_fertility_recovery():
    pairs, truth = _fertility_bitext()
    aligner = WordAligner(model="fertility", infer="gibbs", symmetrize="forward", samplers=2,
                          gibbs_passes=(5, 5, 20), random_state=0).fit(pairs)
    fert = aligner.forward_.fertility
    words = [aligner.src_vocab_.stoi[f"s{e}"] for e in range(30)]
    assert [int(np.argmax(fert[w])) for w in words] == [e % 3 for e in range(30)]
    assert all(fert[w, e % 3] > 0.8 for e, w in enumerate(words))
    # and the links: every target word to the source word that emitted it
    links = aligner.align_training()
    found = sum(len(set(a) & b) for a, b in zip(links, truth))
    assert found >= 0.97 * sum(len(b) for b in truth)


def test_same_seed_same_links():
    pairs, _ = _fertility_bitext(seed=1, n_pairs=60)
    fit = [WordAligner(model="hmm", infer="gibbs", samplers=2, gibbs_passes=(2, 3), random_state=seed,
                       n_jobs=jobs).fit(pairs) for seed, jobs in ((4, 1), (4, 2), (5, 1))]
    # (the second runs its chains in 2 threads)
    assert fit[0].align_training() == fit[1].align_training()
    np.testing.assert_array_equal(fit[0].forward_.marginals, fit[1].forward_.marginals)
    assert [r["log_likelihood"] for r in fit[0].forward_.history] == [
        r["log_likelihood"] for r in fit[1].forward_.history]
    assert not np.array_equal(fit[0].forward_.marginals, fit[2].forward_.marginals)
    # the marginals of every target word sum to one over its cells (NULL and the source positions)
    b = fit[0]._fit_bitext
    n_src = np.diff(b.src_off)
    widths = np.repeat(n_src + 1, np.diff(b.tgt_off))
    per_word = np.add.reduceat(fit[0].forward_.marginals, np.concatenate([[0], np.cumsum(widths)[:-1]]))
    np.testing.assert_allclose(per_word, 1.0, atol=1e-5)


def test_saved_gibbs_model_aligns_new_pairs(tmp_path):
    """Pairs outside the training set are decoded by the HMM with the chains' posterior-mean parameters."""
    pairs, truth = _fertility_bitext(seed=2, n_pairs=80)
    aligner = WordAligner(model="fertility", infer="gibbs", gibbs_passes=(3, 3, 10), random_state=0).fit(pairs[20:])
    aligner.save(tmp_path / "m.npz")
    links = WordAligner.load(tmp_path / "m.npz").align(pairs[:20])
    assert links == aligner.align(pairs[:20])
    assert sum(len(set(a) & b) for a, b in zip(links, truth)) >= 0.9 * sum(len(b) for b in truth[:20])


def test_prefetch_changes_no_value():
    """The sampler's cache hint reads nothing back and writes nothing, for every array type it is given, even at
    an index past the end (a prefetch never faults)."""
    from numba import njit

    from induce.kernels.align_gibbs import _prefetch

    @njit
    def touch(a, idx):
        for i in idx:
            _prefetch(a, i)
        return a.sum()

    for dtype in (np.int32, np.int64, np.float64):
        a = np.arange(10, dtype=dtype)
        assert touch(a, np.array([0, 9, 3, 10_000], dtype=np.int64)) == 45
        assert np.array_equal(a, np.arange(10, dtype=dtype))

"""Training schedules: EM monotonicity, exact CVI subtract/add invariants, persistence."""

from __future__ import annotations

import numpy as np
import pytest

from induce.align import WordAligner
from induce.align.direction import Bitext, TrainConfig, _Trainer, encode_side, train_direction
from induce.corpus.parallel import read_parallel
from induce.corpus.vocab import Vocabulary
from induce.errors import ConfigError, ModelFormatError
from induce.kernels import align as K

TOY = [
    ("das haus ist klein".split(), "the house is small".split()),
    ("das haus".split(), "the house".split()),
    ("das buch ist klein".split(), "the book is small".split()),
    ("ein buch".split(), "a book".split()),
    ("ein kleines haus".split(), "a small house".split()),
    ("klein ist das buch".split(), "small is the book".split()),
]


def _bitext(pairs):
    sv, tv = Vocabulary(), Vocabulary()
    src_tok, src_off = encode_side((p[0] for p in pairs), sv, True)
    tgt_tok, tgt_off = encode_side((p[1] for p in pairs), tv, True)
    return Bitext(src_tok, src_off, tgt_tok, tgt_off), len(sv), len(tv)


@pytest.fixture(scope="module")
def deen(corpora):
    root = corpora / "align" / "de-en"
    return [(s, t) for s, t in read_parallel(root / "test.de", root / "test.en")]


@pytest.mark.parametrize("model", ["ibm1", "hmm"])
def test_em_log_likelihood_never_decreases(deen, model):
    bitext, n_src, n_tgt = _bitext(deen)
    cfg = TrainConfig(model=model, infer="em", n_iter=6, n_iter_ibm1=3)
    params = train_direction(bitext, n_src, n_tgt, cfg, np.random.default_rng(0))
    for stage in ("ibm1", "hmm"):
        ll = [h["log_likelihood"] for h in params.history if h["stage"] == stage]
        assert all(b >= a - 1e-9 * abs(a) for a, b in zip(ll, ll[1:])), (stage, ll)
    assert len(params.history) == (6 if model == "ibm1" else 9)


def _cvi_trainer(pairs, hmm_cvi="cvi2"):
    bitext, n_src, n_tgt = _bitext(pairs)
    cfg = TrainConfig(model="hmm", infer="cvi", hmm_cvi=hmm_cvi)
    return _Trainer(bitext, n_src, n_tgt, cfg, np.random.default_rng(1), lambda n: None)


def test_ibm1_and_hmm_cvi2_keep_counts_exact():
    tr = _cvi_trainer(TOY)
    b, t = tr.b, tr.table
    outcomes = t.row_outcomes("vocabulary")
    q = tr.initial_posteriors()
    counts = np.bincount(tr.cells, weights=q, minlength=t.nnz)
    totals = t.row_totals(counts)
    n_tokens = len(b.tgt_tok)
    for _ in range(3):
        K.ibm1_cvi_pass(np.random.default_rng(2).permutation(b.n_pairs), b.src_off, b.tgt_off, tr.cell_off,
                        tr.cells, t.entry_row, counts, totals, q, 0.1, outcomes)
        assert counts.sum() == pytest.approx(n_tokens, rel=1e-6)  # q is stored as float32
        np.testing.assert_allclose(counts, np.bincount(tr.cells, weights=q.astype(np.float64), minlength=t.nnz),
                                   atol=1e-9)
        np.testing.assert_allclose(totals, t.row_totals(counts), atol=1e-9)
    jumps = np.zeros(15)
    sent_jumps = np.zeros((b.n_pairs, 15))
    for _ in range(3):
        K.hmm_cvi2_pass(np.arange(b.n_pairs), b.src_off, b.tgt_off, tr.cell_off, tr.cells, t.entry_row, counts,
                        totals, q, jumps, sent_jumps, 0.1, outcomes, 0.1, 0.2, 7)
        assert counts.sum() == pytest.approx(n_tokens, rel=1e-6)  # q is stored as float32
        np.testing.assert_allclose(counts, np.bincount(tr.cells, weights=q.astype(np.float64), minlength=t.nnz),
                                   atol=1e-9)
        np.testing.assert_allclose(jumps, sent_jumps.sum(axis=0), atol=1e-9)
        # every target word is reached by one jump unless it sits in a NULL state
        null_mass = sum(q[tr.cell_off[s] + j * (b.src_off[s + 1] - b.src_off[s] + 1)]
                        for s in range(b.n_pairs) for j in range(b.tgt_off[s + 1] - b.tgt_off[s]))
        assert jumps.sum() == pytest.approx(n_tokens - null_mass, rel=1e-6)


def test_hmm_cvi1_keeps_counts_exact():
    tr = _cvi_trainer(TOY, "cvi1")
    b, t = tr.b, tr.table
    outcomes = t.row_outcomes("vocabulary")
    state_off, qs = K.cvi1_states_from_cells(b.src_off, b.tgt_off, tr.cell_off, tr.initial_posteriors())
    counts, totals, jumps = np.zeros(t.nnz), np.zeros(t.n_rows), np.zeros(15)
    K.hmm_cvi1_counts(b.src_off, b.tgt_off, tr.cell_off, tr.cells, t.entry_row, state_off, qs, counts, totals, jumps)
    n_tokens = len(b.tgt_tok)
    for _ in range(3):
        K.hmm_cvi1_pass(np.arange(b.n_pairs), b.src_off, b.tgt_off, tr.cell_off, tr.cells, t.entry_row, state_off,
                        qs, counts, totals, jumps, 0.1, outcomes, 0.1, 0.2)
        assert counts.sum() == pytest.approx(n_tokens, rel=1e-6)  # q is stored as float32
        fresh = np.zeros(t.nnz), np.zeros(t.n_rows), np.zeros(15)
        K.hmm_cvi1_counts(b.src_off, b.tgt_off, tr.cell_off, tr.cells, t.entry_row, state_off, qs, *fresh)
        for kept, recomputed in zip((counts, totals, jumps), fresh):
            np.testing.assert_allclose(kept, recomputed, atol=1e-8)
        sizes = np.diff(state_off) // np.maximum(np.diff(b.tgt_off), 1)
        assert np.all(sizes[np.diff(b.tgt_off) > 0] == 2 * np.diff(b.src_off)[np.diff(b.tgt_off) > 0] + 1)


@pytest.mark.parametrize("model,infer,hmm_cvi", [("ibm1", "em", "cvi2"), ("ibm1", "vi", "cvi2"), ("ibm1", "cvi", "cvi2"),
                                                 ("hmm", "em", "cvi2"), ("hmm", "vi", "cvi2"), ("hmm", "cvi", "cvi2"),
                                                 ("hmm", "cvi", "cvi1")])
def test_every_model_learns_the_toy_bitext(model, infer, hmm_cvi):
    aligner = WordAligner(model=model, infer=infer, hmm_cvi=hmm_cvi, symmetrize="intersection", alpha=0.01,
                          n_iter=10, random_state=0)
    links = aligner.fit_align(TOY)
    # the nouns of "das haus" / "the house" and "ein buch" / "a book" translate each other
    assert (1, 1) in links[1] and (1, 1) in links[3]
    assert all(0 <= i < len(s) and 0 <= j < len(t) for (s, t), a in zip(TOY, links) for i, j in a)


def test_save_load_round_trip(tmp_path):
    aligner = WordAligner(model="hmm", infer="cvi", random_state=3).fit(TOY)
    path = tmp_path / "model.npz"
    aligner.save(path)
    loaded = WordAligner.load(path)
    assert loaded.get_params() == aligner.get_params()
    new = [("das kleine buch".split(), "the small book".split()), ("unbekannt haus".split(), "unknown house".split())]
    assert loaded.align(TOY + new) == aligner.align(TOY + new)
    with np.load(path, allow_pickle=False) as data:
        assert "header" in data.files


def test_bad_input_raises_typed_errors(tmp_path):
    with pytest.raises(ConfigError):
        WordAligner(model="ibm3").fit(TOY)
    with pytest.raises(ConfigError):
        WordAligner(symmetrize="grow").fit(TOY)
    with pytest.raises(ConfigError):
        WordAligner().align(TOY)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelFormatError):
        WordAligner.load(bad)

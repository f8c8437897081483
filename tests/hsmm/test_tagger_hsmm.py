"""Semi-Markov tagging: :class:`induce.taggers.hsmm_tagger.HSMMTagger` and ``induce tag --model hsmm``."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from induce.algorithms.hsmm_sentences import SentenceHSMMFit, WordColumns
from induce.cli import main
from induce.corpus.corpus import as_corpus
from induce.emissions import Categorical
from induce.errors import ModelFormatError
from induce.infer.series import chain_posterior
from induce.infer.series_hsmm import hsmm_posterior
from induce.taggers.hsmm_tagger import HSMMTagger

WORDS = (("the", "a", "this", "that"), ("dog", "cat", "idea", "house", "car"), ("runs", "sees", "eats", "likes"))


def _segmented_text(n_sentences: int, seed: int):
    """Sentences of segments of 1-3 tokens of one word class each (the next class another), and each token's
    class."""
    rng = np.random.default_rng(seed)
    sentences, classes = [], []
    for _ in range(n_sentences):
        k, words, labels = int(rng.integers(3)), [], []
        for _ in range(int(rng.integers(2, 5))):
            d = int(rng.integers(1, 4))
            words += list(rng.choice(WORDS[k], size=d))
            labels += [k] * d
            k = (k + 1 + int(rng.integers(2))) % 3
        sentences.append(words)
        classes.append(labels)
    return sentences, np.concatenate(classes)


def _accuracy(labels, classes):
    return max(np.mean(np.array(p)[labels] == classes) for p in itertools.permutations(range(3)))


def test_max_duration_one_is_the_hmm_without_self_transitions():
    """With D = 1 every segment is one token: the HSMM's messages equal the HMM forward-backward under its start
    row, transitions (zero diagonal) and emission rows times each state's ``p(d = 1)`` (the duration factor of a
    one-token segment), so log Z and the marginals agree, and no two neighbouring tokens share a state."""
    text, _ = _segmented_text(30, seed=1)
    model = HSMMTagger(n_states=3, max_duration=1, durations="poisson", n_iter=5, tol=0.0).fit(text)
    for logpi, logA, rows, logD in model._each(model._encode(text)):
        hsmm_logz, hsmm_gamma = hsmm_posterior(logpi, logA, rows, logD)
        hmm_logz, hmm_gamma, _ = chain_posterior(np.exp(np.vstack([logpi, logA])), rows + logD[:, 0])
        np.testing.assert_allclose(hsmm_logz, hmm_logz, rtol=1e-10)
        np.testing.assert_allclose(hsmm_gamma, hmm_gamma, atol=1e-10)
    assert all(np.all(np.diff(path) != 0) for path in model.predict(text))


@pytest.mark.parametrize("infer", ["em", "vi", "cvi2", "svi", "scvi"])
def test_recovers_word_classes_and_segment_lengths_from_the_hmm_start(infer):
    """Seed 1: the HMM start finds the classes and the HSMM keeps them, learning mean durations of 2 (uniform on
    1..3); the same seed, the same fit.  (From seeds 0 and 2 the HMM start mixes two classes, M-1 0.68, and the
    HSMM does not undo it: 0.63-0.71.)"""
    text, classes = _segmented_text(150, seed=2)
    model = HSMMTagger(n_states=3, infer=infer, max_duration=4, n_iter=30, batch_size=10, random_state=1).fit(text)
    assert _accuracy(model.labels_, classes) > 0.97
    np.testing.assert_allclose(model.mean_durations(), 2.0, atol=0.2)
    again = HSMMTagger(n_states=3, infer=infer, max_duration=4, n_iter=30, batch_size=10, random_state=1).fit(text)
    np.testing.assert_array_equal(again.labels_, model.labels_)
    assert np.isfinite(model.score([["the", "unseen", "dog"]]))


def test_tag_command_with_model_hsmm(tmp_path, capsys):
    text, classes = _segmented_text(60, seed=4)
    path = tmp_path / "t.txt"
    path.write_text("\n\n".join("\n".join(f"{w} {('DT', 'NN', 'VB')[k]} O" for w, k in zip(s, c))
                                for s, c in zip(text, np.split(classes, np.cumsum([len(s) for s in text])[:-1]))))
    out = tmp_path / "o.txt"
    assert main(["tag", str(path), "--format", "conll2000", "--model", "hsmm", "--states", "3", "--max-duration", "4",
                 "--seed", "1", "--iterations", "10", "--json", "-o", str(out), "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model_type"] == "hsmm" and result["infer"] == "vi" and result["tokens"] == len(classes)
    assert result["m1"] > 0.95 and len(result["mean_durations"]) == 3
    assert len(out.read_text().split()) == 4 * len(classes)  # word, gold, chunk, induced
    assert main(["tag", str(path), "--model", "hsmm", "--infer", "cgs", "--quiet"]) == 2
    assert "--model hsmm runs --infer em, vi, svi, cvi2, scvi" in capsys.readouterr().err
    assert main(["tag", str(path), "--max-duration", "3", "--quiet"]) == 2
    assert "--max-duration does not apply to --model hmm" in capsys.readouterr().err


def test_word_columns_add_and_subtract_a_sentence_as_its_dense_table():
    """A sentence's sparse own statistics change the columns of its words exactly as the family's dense table."""
    rng = np.random.default_rng(0)
    family = Categorical(beta=0.1, n_symbols=12)
    X = rng.integers(12, size=(9, 1)).astype(np.float64)
    gamma = rng.dirichlet(np.ones(4), size=9)
    S = rng.gamma(1.0, size=(4, 12))
    own = WordColumns(family.codes(X), gamma)
    dense = family.stats(X, gamma)
    expected = S - dense
    S -= own
    np.testing.assert_allclose(S, expected, atol=1e-14)
    S += own
    np.testing.assert_allclose(S, expected + dense, atol=1e-14)
    with pytest.raises(TypeError):
        S * own


@pytest.mark.parametrize("infer", ["cvi2", "svi", "scvi"])
def test_statistics_count_every_token_and_cvi2_keeps_its_sentences_shares(infer):
    """After every pass (cvi2) or minibatch (svi, scvi: eq. 3.103 blends ``scale * batch`` of the same total)
    the emission statistics hold one unit per token; cvi2's global statistics stay the sum of the sentences' own
    shares (eq. 3.95: what one sentence takes out, it puts back)."""
    text, _ = _segmented_text(40, seed=3)
    model = HSMMTagger(n_states=3, max_duration=4, random_state=0).fit(text)
    seqs, tokens, seen = model._encode(text), sum(len(s) for s in text), []

    def check(_, *args):
        state = args[-1]
        seen.append(state["S"].sum())
        if infer == "cvi2":
            S = np.zeros_like(state["S"])
            for own in state["own_S"]:
                S += own
            np.testing.assert_allclose(S, state["S"], atol=1e-8)
            np.testing.assert_allclose(np.sum(state["own_C"], axis=0), state["C"], atol=1e-8)

    fit = SentenceHSMMFit(model.family_, model.durations_, 3, infer=infer, n_iter=4, tol=0.0, batch_size=7,
                          init_gamma=model._start_gamma(as_corpus(text), 3),
                          **{"callback" if infer == "cvi2" else "batch_callback": check})
    fit.run(seqs)
    assert len(seen) >= 4
    np.testing.assert_allclose(seen, tokens, rtol=1e-10)


@pytest.mark.parametrize("infer", ["cvi2", "scvi"])
def test_saved_model_tags_and_scores_as_the_fitted_one(tmp_path, capsys, infer):
    """``--save-model`` then ``--load``: the same states and score; a damaged file is refused in one line."""
    text, classes = _segmented_text(40, seed=4)
    path = tmp_path / "t.txt"
    path.write_text("\n\n".join("\n".join(f"{w} {('DT', 'NN', 'VB')[k]} O" for w, k in zip(s, c))
                                for s, c in zip(text, np.split(classes, np.cumsum([len(s) for s in text])[:-1]))))
    saved, out = tmp_path / "m.npz", tmp_path / "o.txt"
    assert main(["tag", str(path), "--format", "conll2000", "--model", "hsmm", "--infer", infer, "--states", "3",
                 "--max-duration", "4", "--seed", "1", "--iterations", "5", "--batch-size", "10", "--json",
                 "--save-model", str(saved), "-o", str(out), "--quiet"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert main(["tag", str(path), "--format", "conll2000", "--load", str(saved), "--json", "--quiet"]) == 0
    loaded = json.loads(capsys.readouterr().out)
    assert loaded["model_type"] == "HSMMTagger" and loaded["m1"] == fitted["m1"]
    model = HSMMTagger.load(saved)
    assert model.infer == infer and len(model.trace_) == fitted["iterations"]
    with np.load(saved) as f:
        arrays = dict(f)
    arrays["stats"] = -arrays["stats"]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFormatError, match="stats"):
        HSMMTagger.load(tmp_path / "bad.npz")

"""Semi-Markov tagging: :class:`induce.taggers.hsmm_tagger.HSMMTagger` and ``induce tag --model hsmm``."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from induce.cli import main
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


@pytest.mark.parametrize("infer", ["em", "vi"])
def test_recovers_word_classes_and_segment_lengths_from_the_hmm_start(infer):
    """Seed 1: the HMM start finds the classes and the HSMM keeps them, learning mean durations of 2 (uniform on
    1..3); the same seed, the same fit.  (From seeds 0 and 2 the HMM start mixes two classes, M-1 0.68, and the
    HSMM does not undo it: 0.63-0.71.)"""
    text, classes = _segmented_text(150, seed=2)
    model = HSMMTagger(n_states=3, infer=infer, max_duration=4, n_iter=30, random_state=1).fit(text)
    assert _accuracy(model.labels_, classes) > 0.97
    np.testing.assert_allclose(model.mean_durations(), 2.0, atol=0.2)
    again = HSMMTagger(n_states=3, infer=infer, max_duration=4, n_iter=30, random_state=1).fit(text)
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
    assert main(["tag", str(path), "--model", "hsmm", "--infer", "cvi2", "--quiet"]) == 2
    assert "--model hsmm runs --infer em or vi" in capsys.readouterr().err
    assert main(["tag", str(path), "--max-duration", "3", "--quiet"]) == 2
    assert "--max-duration does not apply to --model hmm" in capsys.readouterr().err

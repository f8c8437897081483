"""Tagging with word-vector emissions (issue 36): every series algorithm and both covariances recover two word
classes whose vectors are apart, unknown words are counted and backed off, the model file round-trips and is
schema-checked, ``induce embed`` is deterministic for a seed and ``induce tag --emission embeddings`` runs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from induce import HMMTagger
from induce.cli import main
from induce.corpus.vectors import write_vectors
from induce.errors import ConfigError, ModelFormatError
from induce.eval.tagging import tagging_report

NOUNS = [f"n{i}" for i in range(5)]
VERBS = [f"v{i}ed" for i in range(5)]


def _corpus(n: int = 30, seed: int = 0) -> list[list[str]]:
    """Sentences alternating a noun and a verb (ids chosen at random)."""
    rng = np.random.default_rng(seed)
    return [[(NOUNS if t % 2 == 0 else VERBS)[rng.integers(5)] for t in range(int(rng.integers(2, 7)))]
            for _ in range(n)]


def _vectors(words=NOUNS + VERBS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {w: (np.array([4.0, 0.0, 0.0]) if w.startswith("n") else np.array([0.0, 4.0, 1.0]))
            + rng.normal(0, 0.3, 3) for w in words}


def _gold(sentences):
    return np.array([int(w.startswith("v")) for s in sentences for w in s])


@pytest.mark.parametrize("infer, covariance", [("em", "diag"), ("vi", "diag"), ("cvi2", "diag"), ("svi", "diag"),
                                               ("scvi", "diag"), ("em", "full"), ("cvi2", "full")])
def test_every_algorithm_separates_the_two_classes(infer, covariance):
    sentences = _corpus()
    model = HMMTagger(n_states=2, infer=infer, emission="embeddings", embeddings=_vectors(), covariance=covariance,
                      n_iter=15, random_state=0).fit(sentences)
    assert tagging_report(model.labels_, _gold(sentences))["m1"] == 1.0
    assert model.trace_ and model.n_iter_ >= 1 and model.unknown_tokens_ == 0


def test_unknown_words_are_counted_and_backed_off_by_suffix():
    sentences = _corpus()
    vectors = _vectors(NOUNS + VERBS[:4])                    # v4ed has no vector: "-ed" backs off to the verbs
    model = HMMTagger(n_states=2, infer="em", emission="embeddings", embeddings=vectors, n_iter=15).fit(sentences)
    n_unknown = sum(w == "v4ed" for s in sentences for w in s)
    assert (model.unknown_types_, model.unknown_tokens_) == (1, n_unknown) and n_unknown > 0
    assert tagging_report(model.labels_, _gold(sentences))["m1"] == 1.0
    new = [["n1", "zzzed", "n2", "v0ed"]]                     # an unseen word, backed off as a verb
    verb = model.predict([["n0", "v0ed"]])[0][1]
    np.testing.assert_array_equal(model.predict(new)[0] == verb, [False, True, False, True])


def test_model_file_round_trip_and_schema_check(tmp_path):
    sentences = _corpus()
    write_vectors(tmp_path / "v.vec", list(_vectors()), np.vstack(list(_vectors().values())))
    model = HMMTagger(n_states=2, infer="vi", emission="embeddings", embeddings=str(tmp_path / "v.vec"),
                      vector_norm="standardize", n_iter=10).fit(sentences)
    model.save(tmp_path / "m.npz")
    loaded = HMMTagger.load(tmp_path / "m.npz")
    test = _corpus(5, seed=3) + [["n0", "unseened"]]
    np.testing.assert_array_equal(loaded.predict_flat(test), model.predict_flat(test))
    assert loaded.score(test) == pytest.approx(model.score(test))
    assert (loaded.vector_norm, loaded.n_iter_, loaded.unknown_tokens_) == ("standardize", model.n_iter_, 0)
    arrays = dict(np.load(tmp_path / "m.npz"))
    arrays["vectors"] = arrays["vectors"][:, :2]               # a dimension the header does not announce
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFormatError, match="vectors"):
        HMMTagger.load(tmp_path / "bad.npz")


def test_refusals(tmp_path):
    (tmp_path / "c.txt").write_text("n0 v0ed\n")
    with pytest.raises(ConfigError, match="with word vectors"):
        HMMTagger(emission="embeddings", embeddings=_vectors(), infer="svi").fit_stream(tmp_path / "c.txt", "plain")
    with pytest.raises(ConfigError, match="needs word vectors"):
        HMMTagger(emission="embeddings").fit(_corpus())
    with pytest.raises(ConfigError, match="does not run with word-vector"):
        HMMTagger(emission="embeddings", embeddings=_vectors(), infer="cgs").fit(_corpus())
    with pytest.raises(ConfigError, match="none of the corpus's words"):
        HMMTagger(emission="embeddings", embeddings={"other": [1.0, 2.0]}).fit(_corpus())


def test_embed_is_deterministic_for_a_seed(tmp_path):
    pytest.importorskip("gensim")
    from induce.embeddings import train_vectors

    sentences = _corpus(60)
    a, b = train_vectors(sentences, dim=4, epochs=2, seed=3), train_vectors(sentences, dim=4, epochs=2, seed=3)
    assert a.words == b.words and np.array_equal(a.vectors, b.vectors)
    assert not np.array_equal(a.vectors, train_vectors(sentences, dim=4, epochs=2, seed=4).vectors)


def test_cli_embed_then_tag_then_load(tmp_path, capsys):
    pytest.importorskip("gensim")
    (tmp_path / "c.txt").write_text("".join(" ".join(s) + "\n" for s in _corpus(40)))
    vec = tmp_path / "v.vec"
    assert main(["embed", str(tmp_path / "c.txt"), "--format", "plain", "-o", str(vec), "--dim", "3",
                 "--epochs", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["words"] == 10
    assert main(["tag", str(tmp_path / "c.txt"), "--format", "plain", "--emission", "embeddings", "--embeddings",
                 str(vec), "--infer", "em", "--states", "2", "--iterations", "5", "--json", "--quiet",
                 "--save-model", str(tmp_path / "m.npz")]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["vector_dim"], summary["unknown_tokens"], summary["covariance"]) == (3, 0, "diag")
    assert main(["tag", str(tmp_path / "c.txt"), "--format", "plain", "--load", str(tmp_path / "m.npz"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["states"] == 2


@pytest.mark.parametrize("argv, message", [
    (["--covariance", "full"], "--covariance does not apply without --emission embeddings"),
    (["--emission", "embeddings"], "needs --embeddings FILE"),
    (["--emission", "embeddings", "--embeddings", "{v}", "--infer", "cgs"],
     "(the word-vector HMM) runs --infer em, vi, cvi2, svi or scvi"),  # the support table's reason
    (["--emission", "embeddings", "--embeddings", "{v}", "--beta", "0.1"], "--beta does not apply"),
])
def test_cli_option_rules(tmp_path, capsys, argv, message):
    (tmp_path / "c.txt").write_text("a b\nb a\n")
    (tmp_path / "v.vec").write_text("2 2\na 1 0\nb 0 1\n")
    argv = [a.replace("{v}", str(tmp_path / "v.vec")) for a in argv]
    assert main(["tag", str(tmp_path / "c.txt"), "--format", "plain", "--quiet", *argv]) == 2
    assert message in capsys.readouterr().err

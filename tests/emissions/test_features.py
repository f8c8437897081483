"""The log-linear emission family (Berg-Kirkpatrick et al. 2010): gradients against finite differences, the
identity-feature limit against the categorical ML estimate, monotone objectives, recovery of a known log-linear
HMM, the feature templates, the model file and bad feature files."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from induce.algorithms.features import marginal_objective
from induce.cli import main
from induce.corpus.corpus import Corpus
from induce.corpus.sentence import Sentence
from induce.errors import ConfigError, CorpusFormatError
from induce.emissions.features import FeatureSet, LogLinear, read_feature_file
from induce.eval.tagging import many_to_one
from induce.infer import hmm_passes as passes
from induce.infer.estimators import em_params
from induce.infer.hmm_batched import Layout, lockstep_pass
from induce.infer.lbfgs import lbfgs
from induce.taggers import HMMTagger


def _random_features(rng, Y=12, D=7):
    F = (rng.random((Y, D)) < 0.4).astype(float)
    F[np.arange(Y), rng.integers(0, D, Y)] = 1.0  # every outcome has a feature
    return sp.csr_matrix(F)


def test_ascent_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    ll = LogLinear(_random_features(rng), l2=0.7)
    theta, counts = rng.normal(size=(7, 3)), rng.random((12, 3)) * 5
    _, grad, P = ll.ascent(theta, counts)
    np.testing.assert_allclose(P.sum(axis=0), 1.0)
    h, fd = 1e-6, np.empty_like(theta)
    for i in np.ndindex(theta.shape):
        e = np.zeros_like(theta)
        e[i] = h
        fd[i] = (ll.ascent(theta + e, counts)[0] - ll.ascent(theta - e, counts)[0]) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def _tiny_chain(rng, K=3, W=6, n=20):
    lengths = rng.integers(2, 7, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, W, offsets[-1]).astype(np.int32)
    lay = Layout(tokens, offsets, 8)

    def estep(A, B, t, e, g):
        return lockstep_pass(A, B, np.zeros((0, 0), np.uint8), lay.lay_tokens, lay.lay_flat, lay.pos_start,
                             lay.block_pos, t, e, g, passes.n_threads())
    return estep, np.zeros((K + 1, K)), np.zeros((W, K)), np.empty((0, K))


def test_direct_marginal_gradient_matches_finite_differences():
    """Algorithm 2's gradient from expected counts equals the numerical gradient of the marginal likelihood."""
    rng = np.random.default_rng(1)
    K, W = 3, 6
    estep, trans, emit, g = _tiny_chain(rng, K, W)
    ll = LogLinear(_random_features(rng, W, 4), l2=0.3)
    fun, _ = marginal_objective(ll, estep, K, trans, emit, g)
    x = rng.normal(size=(K + 1) * K + 4 * K) * 0.5
    _, grad = fun(x)
    h = 1e-5
    fd = np.array([(fun(x + h * e)[0] - fun(x - h * e)[0]) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


def test_identity_features_without_penalty_give_the_categorical_ml_estimate():
    rng = np.random.default_rng(2)
    W, K = 9, 3
    counts = rng.random((W, K)) * 10 + 0.1
    ll = LogLinear(sp.identity(W, format="csr"), l2=0.0)
    theta, _ = ll.m_step(np.zeros((W, K)), counts, 300)
    np.testing.assert_allclose(ll.probs(theta), em_params(counts.T).T, atol=1e-6)


def test_lbfgs_decreases_monotonically_and_finds_the_minimum():
    rng = np.random.default_rng(3)
    M = rng.normal(size=(20, 20))
    H, b = M @ M.T + np.eye(20), rng.normal(size=20)
    values = [f for _, f in zip(range(200), (f for _, f in lbfgs(lambda x: (0.5 * x @ H @ x - b @ x, H @ x - b),
                                                                  np.zeros(20))))]
    assert all(b2 < a for a, b2 in zip(values, values[1:]))
    assert values[-1] == pytest.approx(-0.5 * b @ np.linalg.solve(H, b), rel=1e-8)


def _loglinear_hmm_corpus(seed=0, n=250):
    """Sentences from a 3-state HMM whose emissions are log-linear: state k puts weight 3 on feature 'c<k>'
    (shared by its block of words, spelled with a state-specific ending) over a uniform identity part."""
    rng = np.random.default_rng(seed)
    K, per = 3, 8
    words = [f"{stem}{end}" for k, end in enumerate(("ing", "ed", "ly")) for stem in
             ("walk", "talk", "jump", "play", "look", "turn", "call", "wait")[:per]]
    A = np.array([[0.6, 0.2, 0.2], [0.1, 0.1, 0.8], [0.7, 0.2, 0.1], [0.2, 0.7, 0.1]])
    logits = np.zeros((K, len(words)))
    for k in range(K):
        logits[k, k * per:(k + 1) * per] = 3.0
    B = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    sents = []
    for _ in range(n):
        s, ws, zs = rng.choice(K, p=A[0]), [], []
        for t in range(int(rng.integers(5, 12))):
            if t:
                s = rng.choice(K, p=A[s + 1])
            ws.append(words[rng.choice(len(words), p=B[s])])
            zs.append(f"T{s}")
        sents.append(Sentence(ws, {"gold": zs}))
    return Corpus.from_sentences(sents), words, B


@pytest.mark.parametrize("fit", ["em", "direct"])
def test_objective_never_decreases(fit):
    corpus, _, _ = _loglinear_hmm_corpus(n=80)
    m = HMMTagger(n_states=3, infer="em", emission="features", feature_fit=fit, n_iter=15, tol=0,
                  random_state=0).fit(corpus)
    values = [r["log_posterior"] for r in m.trace_]
    assert len(values) >= 10
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:]))


def test_recovers_the_weights_of_a_loglinear_hmm():
    """The planted suffix feature is each state's strongest, and p(w | k) is close to the truth."""
    corpus, words, B = _loglinear_hmm_corpus()
    m = HMMTagger(n_states=3, infer="em", emission="features", features=["identity", "suffix 2"],
                  feature_l2=0.01, n_iter=200, random_state=0).fit(corpus)
    gold = np.array([int(t[1]) for s in corpus.sentences for t in s.tags["gold"]])
    assert many_to_one(m.labels_, gold) > 0.9
    # match states to the truth by their tokens, then compare distributions and the top suffix feature
    match = [np.bincount(gold[m.labels_ == k], minlength=3).argmax() for k in range(3)]
    assert sorted(match) == [0, 1, 2]
    order = [m.vocab_.stoi[w] for w in words]
    for k, true_k in enumerate(match):
        assert np.abs(m.emissions_[order, k] - B[true_k]).sum() < 0.2  # L1; sampling noise ~0.1 at 2,000 tokens
        w = m.feature_weights_[k]
        suffixes = [i for i, n in enumerate(m.feature_names_) if n.startswith("suffix2=")]
        best = m.feature_names_[suffixes[int(np.argmax(w[suffixes]))]]
        assert best == "suffix2=" + ("ng", "ed", "ly")[true_k]


def test_default_templates():
    F, names = FeatureSet().matrix(["The", "U.S.", "1,000", "well-known", "a"])
    rows = {w: {names[j] for j in F[i].indices} for i, w in enumerate(["The", "U.S.", "1,000", "well-known", "a"])}
    assert rows["The"] == {"w=the", "proper-capital", "suffix1=e", "suffix2=he", "len=3"}  # no counts: not positional
    assert {"all-caps", "has-punct"} <= rows["U.S."]
    assert {"has-digit", "has-punct", "suffix3=000", "len=5-6"} <= rows["1,000"]
    assert {"has-hyphen", "len=10+"} <= rows["well-known"]
    assert rows["a"] == {"w=a", "len=1"}
    F, names = FeatureSet().matrix(["The", "the", "walked"], [1, 2, 2])  # identity 3: "walked" goes by its shape
    assert "w=the" in names and not any(n.startswith("w=walk") for n in names) and "suffix2=ed" in names


def test_identity_threshold_counts_the_lowercased_form():
    """``identity N``: the identity feature only for words whose lowercased form was seen at least ``N`` times
    (summed over its spellings); a word without counts (``None``) is frequent, a new word (count 0) never is."""
    words = ["The", "the", "cat", "dog", "Dog"]
    F, names = FeatureSet(["identity 3", "suffix 1"]).matrix(words, [1, 2, 2, 1, 1])
    rows = {w: {names[j] for j in F[i].indices} for i, w in enumerate(words)}
    assert rows["The"] == rows["the"] == {"w=the", "suffix1=e"}  # 1 + 2 = 3 sightings of "the"
    assert rows["cat"] == {"suffix1=t"} and rows["Dog"] == rows["dog"] == {"suffix1=g"}  # 2 < 3
    F, names = FeatureSet(["identity 3", "suffix 1"]).matrix(words)
    assert "w=cat" in names
    assert FeatureSet(["identity 1", "length"]).matrix(["a", "b"], [0, 1])[1] == ["len=1", "w=b"]
    with pytest.raises(ConfigError, match="has no feature"):
        FeatureSet(["identity 2"]).matrix(["a", "b"], [1, 2])


def test_proper_capital_is_not_a_positional_capital():
    """``proper-capital``: a capitalised word has it unless its all-lowercase spelling was seen more often than
    its capitalised spellings together (a sentence-initial ``The``); ``initial-capital`` fires on every capital;
    a new word (count 0) with a capital has it."""
    words = ["The", "the", "THE", "Atlanta", "I", "i", "May", "may", "Apple", "apple", "new"]
    counts = [5, 20, 1, 4, 30, 1, 3, 3, 2, 3, 0]
    F, names = FeatureSet(["proper-capital", "initial-capital", "length"]).matrix(words, counts)
    has = {w: "proper-capital" in {names[j] for j in F[i].indices} for i, w in enumerate(words)}
    # the: 20 lowercase > 5 + 1 capitalised; may: 3 = 3, a tie keeps the capital; apple: 3 > 2
    assert has == {"The": False, "the": False, "THE": False, "Atlanta": True, "I": True, "i": False, "May": True,
                   "may": False, "Apple": False, "apple": False, "new": False}
    assert F[:, names.index("initial-capital")].toarray().ravel().tolist() == [1, 0, 1, 1, 1, 0, 1, 0, 1, 0, 0]
    F, names = FeatureSet(["proper-capital", "length"]).matrix(["the", "Zebra"], [9, 0])
    assert F[1, names.index("proper-capital")] == 1


def test_plural_is_an_s_form_of_a_seen_word():
    """``plural``: 4+ characters, ``-s`` but not ``-ss``, and the stem without ``-s`` (or ``-es``) seen as a word
    at least 3 times, counts summed over a form's spellings; a new word (count 0) has it by its stem; without
    counts every word counts as seen."""
    words = ["dogs", "dog", "boxes", "box", "news", "new", "class", "clas", "Cats", "cat", "Cat", "gas", "ga",
             "axes", "axe", "bus", "bu", "lions"]
    counts = [4, 3, 2, 3, 5, 2, 4, 9, 1, 1, 2, 5, 9, 1, 2, 6, 9, 0]
    F, names = FeatureSet(["plural", "length"]).matrix(words, counts)
    has = {w for i, w in enumerate(words) if "plural" in {names[j] for j in F[i].indices}}
    # news: new seen 2 < 3; class: -ss; Cats: cat 1 + Cat 2 = 3; gas, bus: 3 characters; axes: axe 2, ax unseen
    assert has == {"dogs", "boxes", "Cats"}
    F, names = FeatureSet(["plural", "length"]).matrix(["dog", "dogs", "lion", "lions"], [3, 0, 2, 0])
    assert F[:, names.index("plural")].toarray().ravel().tolist() == [0, 1, 0, 0]
    F, names = FeatureSet(["plural", "length"]).matrix(["news", "new", "class"])
    assert F[:, names.index("plural")].toarray().ravel().tolist() == [1, 0, 0]


def test_callable_features_and_save_load(tmp_path):
    corpus, _, _ = _loglinear_hmm_corpus(n=60)
    m = HMMTagger(n_states=3, infer="em", emission="features", features=lambda w: ["w=" + w, "end=" + w[-2:]],
                  n_iter=5, random_state=0).fit(corpus)
    assert m.feature_spec_["kind"] == "callable" and m.feature_weights_.shape == (3, len(m.feature_names_))
    path = tmp_path / "m.npz"
    m.save(path)
    back = HMMTagger.load(path)
    np.testing.assert_array_equal(back.feature_weights_, m.feature_weights_)
    assert back.feature_names_ == m.feature_names_ and back.top_features(2) == m.top_features(2)
    np.testing.assert_array_equal(back.predict_flat(corpus), m.predict_flat(corpus))


def test_unseen_words_are_tagged_by_their_features_after_load(tmp_path):
    """A loaded feature model scores a word it never saw by its features (paper eq. 2 under the training
    normaliser): a seen word's row from the formula is its fitted row, and new words ending in a state's planted
    suffix take that state, where the categorical model's one unseen-word row cannot tell them apart."""
    corpus, words, _ = _loglinear_hmm_corpus()
    m = HMMTagger(n_states=3, infer="em", emission="features", features=["identity", "suffix 2"],
                  feature_l2=0.01, n_iter=100, random_state=0).fit(corpus)
    path = tmp_path / "m.npz"
    m.save(path)
    back = HMMTagger.load(path)
    np.testing.assert_allclose(back._unseen_rows(words[:2]), m.emissions_[[m.vocab_.stoi[w] for w in words[:2]]],
                               rtol=1e-9)
    labels = back.predict_flat(corpus)
    state_of = {end: np.bincount(labels[np.isin(corpus.tokens, [corpus.vocab.stoi[w] for w in words
                                                                 if w.endswith(end)])]).argmax()
                for end in ("ng", "ed", "ly")}
    assert len(set(state_of.values())) == 3
    new = Corpus.from_sentences([Sentence([w]) for w in ("singing", "hopped", "badly", "zzz")])
    assert list(back.predict_flat(new)[:3]) == [state_of["ng"], state_of["ed"], state_of["ly"]]
    assert back.score(new) < 0 and np.isfinite(back.score(new))


def test_bad_feature_files(tmp_path, capsys):
    bad = tmp_path / "f.txt"
    bad.write_text("identity\n# shapes\nsuffix 2\nsufix 3\n")
    with pytest.raises(CorpusFormatError, match=r"f\.txt:4: expected a feature template"):
        read_feature_file(bad)
    assert main(["tag", "demo", "--emission", "features", "--features", str(bad), "--iterations", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("induce: error: ") and "f.txt:4:" in err
    with pytest.raises(ConfigError, match="unknown feature template"):
        HMMTagger(n_states=2, infer="em", emission="features", features=["suffix 0"]).fit([["a", "b"]])
    with pytest.raises(ConfigError, match="infer='em'"):
        HMMTagger(n_states=2, emission="features").fit([["a", "b"], ["b"]])
    with pytest.raises(ConfigError, match="no client"):  # refused, not silently trained in this process
        HMMTagger(n_states=2, infer="em", emission="features", client=object()).fit([["a", "b"], ["b"]])
    assert main(["tag", "demo", "--features", str(bad), "--infer", "cvi2"]) == 2  # only the feature family reads it
    assert "does not apply without --emission features" in capsys.readouterr().err


def test_cli_default_emission_on_a_cluster_is_categorical():
    """--workers / --cluster without --emission keep the categorical family, whose E-steps run on the workers."""
    import argparse

    from induce.cli.tag_checks import default_emission

    plain = dict(model="hmm", infer=None)
    assert default_emission(argparse.Namespace(**plain, _given={})) == "features"
    for option in ("workers", "cluster"):
        assert default_emission(argparse.Namespace(**plain, _given={option: 2})) == "categorical"


def test_cli_refuses_features_on_a_cluster_before_starting_one(capsys):
    assert main(["tag", "demo", "--emission", "features", "--workers", "2"]) == 2
    assert "--workers / --cluster run --model hmm with --emission categorical" in capsys.readouterr().err


@pytest.mark.parametrize("argv, emission, infer", [
    ([], "features", "em"),  # no flags: the feature family (docs/experiments/features.md, "The default emission")
    (["--infer", "em"], None, "em"), (["--beta", "1.5"], None, "cvi2"), (["--alpha", "0.5"], None, "cvi2"),
    (["--emission", "categorical"], None, "cvi2"),
])
def test_cli_default_emission(tmp_path, capsys, argv, emission, infer):
    src = tmp_path / "c.txt"
    src.write_text("the dog runs .\nthe cats walked .\na dog walked .\n" * 4)
    assert main(["tag", str(src), "--states", "3", "--iterations", "2", "--quiet", "--json", *argv]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary.get("emission") == emission and summary["infer"] == infer

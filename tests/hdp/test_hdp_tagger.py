"""HDPHMMTagger end to end: state recovery, invariants, determinism, save/load, CLI."""

import json

import numpy as np
import pytest

from induce import HDPHMMTagger
from induce.cli import main
from induce.errors import ConfigError, ModelFormatError
from induce.eval.tagging import many_to_one
from induce.taggers.synthetic import sample_beal_grammar, sample_zhang


@pytest.fixture(scope="module")
def neg_corpus():
    return sample_zhang("neg", seed=0)


@pytest.fixture(scope="module")
def neg_model(neg_corpus):
    return HDPHMMTagger(truncation=10, infer="cvi", n_iter=600, gamma=1, sigma=1, beta=1, fix_hyper=True,
                        random_state=0).fit(neg_corpus)


def test_effective_states_shrink_to_the_truth(neg_model, neg_corpus):
    """Thesis Figure 5.7: truncation 10, data from the 4-state cycled HMM (eq. 5.69-5.70)."""
    eff = [r["effective_states"] for r in neg_model.trace_]
    assert eff[0] == 10 and eff[-1] == 4 and neg_model.effective_states_ == 4
    assert many_to_one(neg_model.labels_, neg_corpus.tags["state"]) > 0.95
    # the pruned states have (almost) no prior mass left
    assert np.sort(neg_model.state_prior_)[:5].sum() < 0.05 * neg_model.state_prior_.sum()


def test_counts_are_token_counts(neg_model, neg_corpus):
    n = neg_corpus.n_tokens
    np.testing.assert_allclose(neg_model.emission_counts_.sum(), n, rtol=1e-9)
    np.testing.assert_allclose(neg_model.transition_counts_.sum(), n, rtol=1e-9)
    np.testing.assert_allclose(neg_model.transition_counts_[0].sum(), neg_corpus.n_sentences, rtol=1e-9)
    q = neg_model.qc_positive_
    # q(C > 0) = P(C >= 1) <= E[C] (Markov); exact for the start row, eq. 5.51
    assert np.all((q >= 0) & (q <= 1)) and np.all(q[0] <= neg_model.transition_counts_[0] + 1e-9)


def test_learned_hyperparameters_and_grammar_data():
    corpus = sample_beal_grammar(n_sequences=60, length=60, seed=2)
    model = HDPHMMTagger(truncation=12, n_iter=30, gamma=1, sigma=1, beta=1, hyper_burn_in=0,
                         random_state=1).fit(corpus)
    rec = model.trace_[-1]
    assert rec["gamma"] != 1 and rec["sigma"] != 1 and model.gamma_ > 0 and model.sigma_ > 0
    assert model.transitions_.sum(axis=1).max() < 1  # mass beyond the truncation stays unassigned


@pytest.mark.parametrize("qc", ["heuristic", "exact", "meanfield", "sampling"])
def test_determinism_for_every_qc_method(qc):
    corpus = sample_zhang("pos", n_sequences=20, length=30, seed=3)
    fits = [HDPHMMTagger(truncation=5, n_iter=4, qc=qc, qc_samples=20, random_state=7).fit(corpus) for _ in range(2)]
    drop = ("seconds", "tokens_per_s")
    assert [{k: v for k, v in r.items() if k not in drop} for r in fits[0].trace_] == \
        [{k: v for k, v in r.items() if k not in drop} for r in fits[1].trace_]
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_array_equal(fits[0].qc_positive_, fits[1].qc_positive_)


def test_save_load_roundtrip(tmp_path, neg_model, neg_corpus):
    path = tmp_path / "hdp.npz"
    neg_model.save(path)
    back = HDPHMMTagger.load(path)
    np.testing.assert_array_equal(back.predict_flat(neg_corpus), neg_model.predict_flat(neg_corpus))
    assert back.score(neg_corpus) == pytest.approx(neg_model.score(neg_corpus))
    assert back.effective_states_ == 4 and back.sigma_ == neg_model.sigma_ and back.trace_ == neg_model.trace_
    np.savez(tmp_path / "other.npz", header=np.frombuffer(b'{"format": "x"}', dtype=np.uint8))
    with pytest.raises(ModelFormatError):
        HDPHMMTagger.load(tmp_path / "other.npz")


def test_bad_options(neg_corpus):
    with pytest.raises(ConfigError):
        HDPHMMTagger(infer="cvi2").fit(neg_corpus)
    with pytest.raises(ConfigError):
        HDPHMMTagger(qc="magic").fit(neg_corpus)
    with pytest.raises(ConfigError):
        HDPHMMTagger(sigma=0).fit(neg_corpus)
    with pytest.raises(ConfigError):
        HDPHMMTagger().predict(neg_corpus)


def test_cli_hdp(tmp_path, capsys):
    out = tmp_path / "res.json"
    rc = main(["tag", "demo", "--model", "hdp-hmm", "--truncation", "8", "--iterations", "3", "--quiet",
               "--qc", "meanfield", "--fix-hyper", "--sigma", "2", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["model_type"] == "hdp-hmm" and res["sigma"] == 2 and 1 <= res["effective_states"] <= 8
    assert len(res["trace"]) == 3 and "effective_states" in res["trace"][0]
    assert main(["tag", "demo", "--model", "hdp-hmm", "--infer", "cvi2", "--quiet"]) == 2

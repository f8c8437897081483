"""``n_init``: best of several random cvi starts by the final collapsed objective."""

import json

import numpy as np
import pytest

from induce import HDPHMMTagger
from induce.cli import main
from induce.errors import ConfigError
from induce.taggers.synthetic import sample_zhang


@pytest.fixture(scope="module")
def corpus():
    return sample_zhang("pos", n_sequences=30, length=40, seed=3)


def _fit(corpus, **kw):
    kw = dict(truncation=6, n_iter=15, gamma=1.0, sigma=1.0, beta=1.0, fix_hyper=True, random_state=4) | kw
    return HDPHMMTagger(**kw).fit(corpus)


def test_best_start_is_kept_and_start_zero_is_the_single_run(corpus):
    single = _fit(corpus)
    assert single.init_objectives_ == [single.trace_[-1]["predictive_log_likelihood"]]
    best = _fit(corpus, n_init=4)
    objectives = best.init_objectives_
    assert len(objectives) == 4 and len(set(objectives)) > 1  # the starts differ
    assert objectives[0] == single.init_objectives_[0]
    assert best.trace_[-1]["predictive_log_likelihood"] == max(objectives)
    kept = int(np.argmax(objectives))
    if kept == 0:  # the kept start is a whole fit, not a mixture of starts
        np.testing.assert_array_equal(best.transition_counts_, single.transition_counts_)
    assert best.emission_counts_.sum() == pytest.approx(corpus.n_tokens)
    assert best.n_init == 4 and best.random_state == 4  # the parameters are the caller's
    again = _fit(corpus, n_init=4)
    assert again.init_objectives_ == objectives  # deterministic
    np.testing.assert_array_equal(again.labels_, best.labels_)


def test_save_load_keeps_n_init(tmp_path, corpus):
    model = _fit(corpus, n_init=2)
    model.save(tmp_path / "m.npz")
    loaded = HDPHMMTagger.load(tmp_path / "m.npz")
    assert loaded.n_init == 2 and loaded.init_objectives_ == pytest.approx(model.init_objectives_)
    np.testing.assert_array_equal(loaded.predict_flat(corpus), model.predict_flat(corpus))


def test_bad_n_init(corpus):
    with pytest.raises(ConfigError, match="n_init must be an integer >= 1"):
        _fit(corpus, n_init=0)
    with pytest.raises(ConfigError, match="infer='cvi' only"):
        _fit(corpus, infer="beam", n_init=2)


def test_cli_n_init(tmp_path):
    out = tmp_path / "res.json"
    rc = main(["tag", "demo", "--model", "hdp-hmm", "--truncation", "6", "--iterations", "3", "--quiet",
               "--n-init", "3", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert len(res["init_objectives"]) == 3
    assert res["predictive_log_likelihood"] == pytest.approx(max(res["init_objectives"]), abs=1e-3)

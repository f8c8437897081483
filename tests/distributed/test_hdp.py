"""HDP-HMM scvi and svi with the local steps on a dask LocalCluster (induce.distributed.hdp)."""

import numpy as np
import pytest

pytest.importorskip("distributed")

from induce import HDPHMMTagger  # noqa: E402
from induce import distributed as dist  # noqa: E402
from induce.errors import ConfigError  # noqa: E402
from induce.infer.convergence import FitWarning  # noqa: E402
from tests.infer.test_stochastic_hmm import as_corpus, sample_hmm  # noqa: E402


@pytest.fixture(scope="module")
def corpus():
    tokens, offsets, _, _ = sample_hmm(100, 8, K=3, W=15)
    return as_corpus(tokens, offsets, 15)


# scvi_memory=False: what scvi resolves to on a cluster (no sentence memory there, so instant merges), here for both
KW = dict(truncation=6, batch_size=15, n_iter=3, random_state=4, scvi_memory=False)


@pytest.mark.parametrize("extra", [dict(infer="scvi"), dict(infer="scvi", qc="sampling"),
                                   dict(infer="scvi", emission_prior="asymmetric"), dict(infer="svi")])
def test_one_worker_equals_single_process(client, corpus, extra, monkeypatch):
    ref = HDPHMMTagger(**KW, **extra).fit(corpus)
    monkeypatch.setattr(dist.cluster, "n_workers", lambda client: 1)
    got = HDPHMMTagger(client=client, **KW, **extra).fit(corpus)
    assert got.cluster_meter_.steps == 3 * -(-corpus.n_sentences // 15)
    if extra["infer"] == "scvi":  # the same kernel on the same inputs
        np.testing.assert_array_equal(got.transition_counts_, ref.transition_counts_)
        np.testing.assert_array_equal(got.emission_counts_, ref.emission_counts_)
        np.testing.assert_array_equal(got.state_prior_, ref.state_prior_)
    else:  # svi: the forward-backward threads differ (float order only)
        np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-9)
        np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("infer", ["scvi", "svi"])
def test_two_workers_within_float_reordering(client, corpus, infer):
    ref = HDPHMMTagger(infer=infer, **KW).fit(corpus)
    got = HDPHMMTagger(infer=infer, client=client, **KW).fit(corpus)
    np.testing.assert_allclose(got.transition_counts_, ref.transition_counts_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(got.emission_counts_, ref.emission_counts_, rtol=1e-8, atol=1e-8)
    assert got.effective_states_ == ref.effective_states_


def test_hdp_cvi_on_a_cluster_is_a_config_error(client, corpus):
    with pytest.raises(ConfigError, match="cluster"):
        HDPHMMTagger(infer="cvi", client=client, **KW).fit(corpus)


def test_scvi_on_a_cluster_says_it_runs_instant_merges(client, corpus):
    kw = {k: v for k, v in KW.items() if k != "scvi_memory"}  # the default: memory where it can be kept
    with pytest.warns(FitWarning, match="instant merges"):
        model = HDPHMMTagger(infer="scvi", client=client, **kw).fit(corpus)
    assert any("instant merges" in w for w in model.warnings_)
    quiet = HDPHMMTagger(infer="scvi", client=client, **KW).fit(corpus)  # scvi_memory=False asked for it
    assert not any("instant merges" in w for w in quiet.warnings_)


def test_scvi_sends_each_worker_the_rows_of_its_words(client):
    """A step sends each worker the transition counts, the emission rows and prior pseudo-counts of its piece's
    words and the column totals (never the W x K table), and gets back the rows of those words: on 400 words, a
    minibatch of 10 sentences of 8 tokens, the bytes sent a step stay below one table, and the pieces' tokens are
    the corpus's tokens each pass."""
    tokens, offsets, _, _ = sample_hmm(60, 8, K=3, W=400)
    corpus = as_corpus(tokens, offsets, 400)
    model = HDPHMMTagger(infer="scvi", truncation=4, batch_size=10, n_iter=2, random_state=1, client=client,
                         scvi_memory=False).fit(corpus)
    meter, (W, K) = model.cluster_meter_, model.emission_counts_.shape
    assert meter.steps == 2 * 6 and sum(meter.tokens.values()) == 2 * corpus.n_tokens
    rep = meter.report(2)
    table = 8 * W * K
    assert 8 * ((K + 1) * K + K) < rep["bytes_sent_per_step"] < table
    assert rep["bytes_received_per_step"] < table and rep["bytes_between_workers_per_step"] == 0

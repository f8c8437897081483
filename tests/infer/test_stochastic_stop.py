"""The minibatch algorithms stop on held-out log-likelihood: a seeded held-out share, an epoch cap, no gain on the
best for a few epochs (ConvergenceMonitor ``reference="best"``), resumable, reported in the JSON."""

import json
import math

import numpy as np
import pytest

from induce import HMMTagger
from induce.cli import main
from induce.errors import ConfigError
from induce.infer import stochastic_hmm as sh
from induce.infer.convergence import ConvergenceMonitor
from induce.taggers.hmm import MAX_EPOCHS, STOCHASTIC_PATIENCE, STOCHASTIC_TOL

from .test_stochastic_hmm import as_corpus, sample_hmm


def test_best_reference_counts_epochs_without_a_gain_on_the_best():
    monitor = ConvergenceMonitor(tol=0.01, patience=2, reference="best")
    # -8 gains 2 on -10 (> 0.1); -7.99 gains 0.01 <= 0.08 (1); -7.5 gains 0.49 (reset); -7.52, -7.49: no gain (1, 2)
    stops = [monitor.update(v) for v in (-10.0, -8.0, -7.99, -7.5, -7.52, -7.49)]
    assert stops == [False, False, False, False, False, True] and monitor.converged and monitor.best == -7.49
    never = ConvergenceMonitor(tol=0.0, patience=1, reference="best")
    assert not any(never.update(v) for v in (-3.0, -3.0, -4.0))
    nan = ConvergenceMonitor(tol=0.01, reference="best")
    assert nan.update(-3.0) is False and nan.update(math.nan) and nan.diverged and not nan.converged


def test_restart_streak_counts_calm_passes_again_against_the_same_reference():
    """(the HDP-HMM after a split-merge move that changed the fit)"""
    monitor = ConvergenceMonitor(tol=0.01, patience=2, reference="progress")
    # progress from -100: -50 (50), -49.9 (0.1 <= 0.501: 1), -49.85 (0.05 <= 0.5015: 2, converged)
    assert [monitor.update(v) for v in (-100.0, -50.0, -49.9, -49.85)] == [False, False, False, True]
    monitor.restart_streak()
    assert not monitor.converged and monitor.first == -100.0
    assert [monitor.update(v) for v in (-49.84, -49.83)] == [False, True]


def test_heldout_sentences_are_a_seeded_share_capped_in_tokens():
    lengths = np.arange(1, 101)
    held = sh.heldout_sentences(lengths, 0.1, 10**6, np.random.default_rng(0))
    assert len(held) == 10 and np.all(np.diff(held) > 0)
    np.testing.assert_array_equal(held, sh.heldout_sentences(lengths, 0.1, 10**6, np.random.default_rng(0)))
    capped = sh.heldout_sentences(lengths, 0.1, 120, np.random.default_rng(0))
    assert 1 <= len(capped) < 10 and lengths[capped].sum() <= 120 and set(capped) <= set(held)
    assert len(sh.heldout_sentences(lengths, 0.1, 1, np.random.default_rng(0))) == 1  # at least one sentence
    assert len(sh.heldout_sentences(lengths[:4], 0.1, 10**6, np.random.default_rng(0))) == 0  # rounds to none
    with pytest.raises(ConfigError, match="leaves none to train on"):
        sh.heldout_sentences(lengths[:4], 0.9, 10**6, np.random.default_rng(0))


def test_scvi_by_default_stops_on_its_heldout_share_and_tags_every_sentence():
    tokens, offsets, _, _ = sample_hmm(400, 3)
    corpus = as_corpus(tokens, offsets, 12)
    m = HMMTagger(n_states=3, infer="scvi", batch_size=20, random_state=4).fit(corpus)
    epochs = [r for r in m.trace_ if "epoch" in r]
    assert m.converged_ and m.warnings_ == [] and STOCHASTIC_PATIENCE < m.n_iter_ < MAX_EPOCHS
    assert [r["epoch"] for r in epochs] == list(range(1, m.n_iter_ + 1))
    # the rule: the last epochs gained no more than tol of the best before them, the one before them did
    ll = [r["heldout_log_likelihood_per_token"] for r in epochs]
    best = max(ll[:-STOCHASTIC_PATIENCE])
    assert max(ll[-STOCHASTIC_PATIENCE:]) - best <= STOCHASTIC_TOL * abs(best)
    # 5% of the 400 sentences held out: not trained on (each epoch sees the other tokens), still tagged
    held_sentences = 20
    assert 0 < m.heldout_tokens_ < len(tokens) and m.labels_.shape == (len(tokens),)
    assert m.trace_[-1]["tokens_seen"] == m.n_iter_ * (len(tokens) - m.heldout_tokens_)
    assert m.n_batches_ == m.n_iter_ * math.ceil((400 - held_sentences) / 20)
    again = HMMTagger(n_states=3, infer="scvi", batch_size=20, random_state=4).fit(corpus)
    np.testing.assert_array_equal(again.labels_, m.labels_)


def test_without_a_heldout_share_or_with_tol_0_every_epoch_runs():
    tokens, offsets, _, _ = sample_hmm(100, 2)
    corpus = as_corpus(tokens, offsets, 12)
    none = HMMTagger(n_states=3, infer="svi", batch_size=25, n_epochs=6, heldout_fraction=0, random_state=0).fit(corpus)
    assert (none.n_iter_, none.n_batches_, none.heldout_tokens_, none.converged_) == (6, 24, 0, False)
    assert none.warnings_ == [] and not any("heldout_log_likelihood_per_token" in r for r in none.trace_)
    cap = HMMTagger(n_states=3, infer="svi", batch_size=25, n_epochs=6, tol=0, random_state=0).fit(corpus)
    assert cap.n_iter_ == 6 and cap.warnings_ == [] and len([r for r in cap.trace_ if "epoch" in r]) == 6
    short = HMMTagger(n_states=3, infer="svi", batch_size=25, n_epochs=2, random_state=0)
    with pytest.warns(Warning, match="not converged after 2 passes"):
        short.fit(corpus)


def test_single_sequence_algorithms_hold_out_the_end_of_the_sequence():
    tokens, offsets, _, _ = sample_hmm(100, 5)
    corpus = as_corpus(tokens, offsets, 12)
    m = HMMTagger(n_states=3, infer="scvi3", subseq_length=4, batch_size=25, random_state=0).fit(corpus)
    n_held = round(0.05 * len(tokens))
    assert m.heldout_tokens_ == n_held and m.labels_.shape == (len(tokens),)
    assert m.emission_counts_.sum() == pytest.approx(len(tokens) - n_held, rel=1e-6)
    assert m.converged_ or m.n_iter_ == MAX_EPOCHS


def test_a_resumed_run_stops_where_the_uninterrupted_run_stops(tmp_path):
    tokens, offsets, _, _ = sample_hmm(300, 7)
    corpus = as_corpus(tokens, offsets, 12)
    opts = dict(n_states=3, infer="scvi", batch_size=10, random_state=9)
    full = HMMTagger(**opts).fit(corpus)
    assert full.converged_ and full.n_iter_ > 3
    ck = str(tmp_path / "run.ckpt")
    stop = full.n_batches_ - 30  # a few epochs before the end: the resumed run replays the epochs traced so far
    HMMTagger(checkpoint=ck, max_batches=stop, **opts).fit(corpus)
    resumed = HMMTagger(checkpoint=ck, resume=True, **opts).fit(corpus)
    assert (resumed.n_batches_, resumed.n_iter_, resumed.converged_) == (full.n_batches_, full.n_iter_, True)
    np.testing.assert_allclose(resumed.emission_counts_, full.emission_counts_, rtol=1e-12)
    again = HMMTagger(checkpoint=ck, resume=True, **opts).fit(corpus)  # resuming a finished run adds nothing
    assert again.n_batches_ == full.n_batches_ and again.converged_


def test_tag_reports_epochs_convergence_and_the_heldout_share(tmp_path, capsys):
    tokens, offsets, _, _ = sample_hmm(200, 1)
    path = tmp_path / "text.txt"
    path.write_text("".join(" ".join(f"w{t}" for t in tokens[a:b]) + "\n" for a, b in zip(offsets[:-1], offsets[1:])))
    out = tmp_path / "tags.txt"
    assert main(["tag", str(path), "--infer", "scvi", "--states", "3", "--quiet", "--json", "-o", str(out)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["converged"] and 0 < got["epochs"] < MAX_EPOCHS and 0 < got["heldout_tokens"] < len(tokens)
    assert len(out.read_text().split()) == len(tokens)  # the held-out sentences are tagged too
    assert main(["tag", str(path), "--infer", "scvi", "--states", "3", "--quiet", "--json", "--heldout", "0",
                 "--epochs", "3"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["epochs"], got["heldout_tokens"], got["converged"]) == (3, 0, False) and not got.get("warnings")
    assert main(["tag", str(path), "--infer", "scvi", "--heldout", "0.999", "--quiet"]) == 2
    assert "leaves none to train on" in capsys.readouterr().err
    assert main(["tag", str(path), "--infer", "cvi2", "--heldout", "0.1", "--quiet"]) == 2
    assert "--heldout applies to the stochastic algorithms" in capsys.readouterr().err


def test_fit_stream_stops_on_its_heldout_sample(tmp_path):
    tokens, offsets, _, _ = sample_hmm(300, 6)
    path = tmp_path / "text.txt"
    path.write_text("".join(" ".join(f"w{t}" for t in tokens[a:b]) + "\n" for a, b in zip(offsets[:-1], offsets[1:])))
    m = HMMTagger(n_states=3, infer="scvi", batch_size=20, random_state=2).fit_stream(path, "plain",
                                                                                     buffer_sentences=64)
    assert m.converged_ and STOCHASTIC_PATIENCE < m.n_iter_ < MAX_EPOCHS and m.heldout_tokens_ > 0
    assert m.stream_tokens_ + m.heldout_tokens_ == len(tokens)
    assert m.trace_[-1]["tokens_seen"] == m.n_iter_ * m.stream_tokens_
    assert [r["epoch"] for r in m.trace_ if "epoch" in r] == list(range(1, m.n_iter_ + 1))

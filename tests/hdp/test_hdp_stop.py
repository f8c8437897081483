"""The HDP-HMM's stopping rule (issue 19, section 2): ``n_iter`` is a cap, cvi / scvi / svi stop on convergence.

cvi and scvi with their split-merge rounds stop only at a round that changes nothing, once the objective has
settled after the first round of the schedule; svi stops where the fixed-length run's trace says the rule
holds; the beam sampler runs all its sweeps; the cap is a ConvergenceWarning.
"""

import json
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from induce import HDPHMMTagger
from induce.cli import main
from induce.corpus.corpus import as_corpus
from induce.infer.convergence import ConvergenceMonitor
from induce.taggers.hdp_hmm import MAX_ITER
from induce.taggers.synthetic import sample_zhang


@pytest.fixture(scope="module")
def theta_pos():
    return sample_zhang("pos", n_sequences=60, length=100, seed=1011)


def _objective(record):
    return record.get("predictive_log_likelihood", record.get("minibatch_log_likelihood"))


@pytest.mark.parametrize("infer", ["cvi", "scvi"])
def test_rounds_then_stop_at_a_round_that_changes_nothing(theta_pos, infer):
    model = HDPHMMTagger(truncation=8, infer=infer, beta=1.0, random_state=11).fit(theta_pos)
    cap = MAX_ITER[infer]
    assert model.converged_ and model.n_iter_ == len(model.trace_) < cap
    assert model.effective_states_ == 4 and not model.warnings_
    rounds = [r for r in model.trace_ if "move_trials" in r]
    # the first round comes from the schedule (every min(100, cap / 10) passes after the burn-in) ...
    assert rounds[0]["iteration"] == model.hyper_burn_in_ + min(100, cap // 10)
    # ... and the run ends on a round that accepted nothing
    last = model.trace_[-1]
    assert last in rounds and last["move_trials"] > 0 and not last["splits"] and not last["merges"]
    # the rule replayed: from the burn-in's end (cvi's adaptive burn-in ends at pass hyper_burn_in_ + 1, whose
    # rule has seen the pass before), its calm passes counted again after every round that changed the fit, and
    # its verdict waiting for the schedule's first round: it first says stop at the last pass
    monitor, verdicts = model._monitor(), []
    for r in model.trace_[model.hyper_burn_in_ - 1 if infer == "cvi" else 0:]:
        calm = monitor.update(_objective(r))
        if r.get("splits") or r.get("merges"):
            monitor.restart_streak()
            calm = False
        verdicts.append(calm and r["iteration"] > rounds[0]["iteration"])
    assert verdicts[-1] and not any(verdicts[:-1])


def test_svi_stops_where_the_fixed_length_trace_says(theta_pos):
    kw = dict(truncation=8, infer="svi", beta=1.0, random_state=3)
    stopped = HDPHMMTagger(**kw).fit(theta_pos)
    full = HDPHMMTagger(n_iter=stopped.n_iter_ + 20, tol=0, **kw).fit(theta_pos)
    assert stopped.converged_ and not full.converged_ and full.n_iter_ == stopped.n_iter_ + 20
    assert [_objective(r) for r in stopped.trace_] == [_objective(r) for r in full.trace_[:stopped.n_iter_]]
    monitor = ConvergenceMonitor(1e-4, 3, reference="best")
    first = next(i for i, r in enumerate(full.trace_, 1) if monitor.update(_objective(r)))
    assert first == stopped.n_iter_


def test_cap_is_a_convergence_warning_and_tol_zero_runs_it(theta_pos):
    with pytest.warns(ConvergenceWarning, match="not converged after 5 passes"):
        capped = HDPHMMTagger(truncation=8, n_iter=5, beta=1.0, hyper_burn_in=0).fit(theta_pos)
    assert capped.n_iter_ == 5 and not capped.converged_ and any("not converged" in w for w in capped.warnings_)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fixed = HDPHMMTagger(truncation=8, n_iter=12, tol=0, beta=1.0).fit(theta_pos)
    assert fixed.n_iter_ == len(fixed.trace_) == 12 and not fixed.converged_


def test_beam_runs_all_its_sweeps(theta_pos):
    assert MAX_ITER["beam"] == 3000
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = HDPHMMTagger(truncation=8, infer="beam", n_iter=15, beta=1.0).fit(theta_pos)
    assert model.n_iter_ == len(model.trace_) == 15 and not model.converged_


def test_a_start_that_never_breaks_says_so():
    """One word type: every state is alike, no pass rises above the first, the burn-in never ends."""
    corpus = as_corpus([["a"] * 20] * 10)
    with pytest.warns(UserWarning):
        model = HDPHMMTagger(truncation=4, n_iter=20, beta=1.0).fit(corpus)
    assert model.n_iter_ == 20 and not model.converged_ and model.hyper_burn_in_ == 20
    assert any("symmetric start never broke" in w for w in model.warnings_)
    assert any("the states collapsed" in w and "--truncation" in w for w in model.warnings_)


@pytest.mark.parametrize("infer", ["svi", "beam"])
def test_save_load_keeps_passes_and_convergence(theta_pos, tmp_path, infer):
    """(svi and beam keep no sticks; their files used to fail the loader's shape check.)"""
    n_iter = 15 if infer == "beam" else None
    model = HDPHMMTagger(truncation=8, infer=infer, n_iter=n_iter, beta=1.0, random_state=3).fit(theta_pos)
    model.save(tmp_path / "m.npz")
    back = HDPHMMTagger.load(tmp_path / "m.npz")
    assert (back.n_iter_, back.converged_, back.tol, back.n_iter) == (model.n_iter_, infer == "svi", None, n_iter)
    np.testing.assert_array_equal(back.predict(theta_pos)[0], model.predict(theta_pos)[0])


def test_cli_reports_the_stop(tmp_path):
    out = tmp_path / "res.json"
    base = ["tag", "demo", "--model", "hdp-hmm", "--infer", "svi", "--truncation", "8", "--quiet", "--json", str(out)]
    assert main(base) == 0
    res = json.loads(out.read_text())
    assert res["converged"] is True and res["iterations"] == len(res["trace"]) < MAX_ITER["svi"]
    assert main(base + ["--tol", "0", "--iterations", "4"]) == 0
    res = json.loads(out.read_text())
    assert (res["converged"], res["iterations"], len(res["trace"])) == (False, 4, 4)


def test_a_file_saved_before_the_stop_loads(theta_pos, tmp_path, monkeypatch):
    """Files without ``n_iter_`` / ``converged_`` (saved when every pass ran) take the trace's length."""
    model = HDPHMMTagger(truncation=8, n_iter=7, tol=0, beta=1.0).fit(theta_pos)
    monkeypatch.setattr(HDPHMMTagger, "_FITTED", tuple(f for f in HDPHMMTagger._FITTED
                                                       if f not in ("n_iter_", "converged_")))
    model.save(tmp_path / "old.npz")
    back = HDPHMMTagger.load(tmp_path / "old.npz")
    assert (back.n_iter_, back.converged_) == (7, False)


def test_hdp_loop_judges_before_the_record_and_a_changing_round_overrules_it():
    from types import SimpleNamespace

    from induce.algorithms.loop import HDPLoop

    data = SimpleNamespace(tokens=np.zeros(5, dtype=np.int32), offsets=np.array([0, 5]))
    values = [-10.0, -5.0, -4.0] + [-4.0] * 7

    def run(moved_at=(), stoppable=True, waits=False):
        loop = HDPLoop("cvi", 10, lambda: ConvergenceMonitor(1e-3, reference="progress"), data, None, np.arange(11),
                       coverage=0.99, burn_in=0)
        loop.waits, verdicts = (lambda: waits), []

        def settle(it, stop):
            verdicts.append(stop)
            return loop.entries(np.ones(3), 1.0, 2.0, merges=[[0, 1]] if it in moved_at else [])

        loop.run("predictive_log_likelihood", lambda it: values[it - 1], stoppable=stoppable, settle=settle)
        return loop, verdicts

    # progress rule: calm from pass 4, the third calm pass (6) stops; the verdict reaches settle before the record
    loop, verdicts = run()
    assert loop.last == len(loop.trace) == 6 and verdicts == [False] * 5 + [True]
    assert list(loop.trace[0]) == ["iteration", "predictive_log_likelihood", "seconds", "tokens_per_s",
                                   "effective_states", "gamma", "sigma", "merges"]
    # a round that changed the fit at pass 6 overrules the verdict: three calm passes more
    loop, verdicts = run(moved_at=(6,))
    assert loop.last == 9 and verdicts[5] and not verdicts[6]
    # a run that is not stoppable (beam) or waits for its first round goes to the cap
    loop, verdicts = run(stoppable=False)
    assert loop.last == 10 and not any(verdicts) and loop.monitor.passes == 0
    assert run(waits=True)[0].last == 10

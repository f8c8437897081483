"""The algorithm registry (:mod:`induce.algorithms`): every ``HMMTagger(infer=...)`` is registered, and an
algorithm run by hand on an encoded corpus gives the counts the estimator stores (the estimator adds nothing
to the fit but validation, encoding and the parameters)."""

import numpy as np
import pytest

from induce.algorithms import ALGORITHMS, Core, Loop, Priors, Sequences, get_algorithm, visit_order
from induce.corpus.demo import demo_corpus
from induce.errors import ConfigError
from induce.infer.convergence import ConvergenceMonitor
from induce.names import HMM_ALGORITHMS
from induce.taggers import HMMTagger
from induce.taggers.hmm import CLUSTER_ALGORITHMS, STOCHASTIC_ALGORITHMS

# short fits: the iteration cap and collapsed states are warned about
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"), pytest.mark.filterwarnings("ignore::UserWarning")]


def test_every_tagger_algorithm_is_registered_once():
    assert sorted(ALGORITHMS) == sorted(HMM_ALGORITHMS)
    assert CLUSTER_ALGORITHMS == ("em", "vi", "cvi2", "svi", "scvi")
    with pytest.raises(ConfigError, match="unknown HMM inference algorithm 'nope'"):
        get_algorithm("nope")


def test_visit_order_is_seeded():
    assert visit_order(5, "sequential", 3).tolist() == [0, 1, 2, 3, 4]
    a, b = visit_order(50, "shuffle", 3), visit_order(50, "shuffle", 3)
    assert sorted(a.tolist()) == list(range(50)) and a.tolist() == b.tolist()
    assert a.tolist() != visit_order(50, "shuffle", 4).tolist()


@pytest.mark.parametrize("infer", ["em", "cvi1", "cvi2", "cgs", "cvi3"])
def test_an_algorithm_run_by_hand_matches_the_estimator(infer):
    corpus = demo_corpus(40, seed=2)
    model = HMMTagger(n_states=4, infer=infer, n_iter=4, alpha=1.5, beta=1.1, learn_hyper=False,
                      random_state=5).fit(corpus)
    # the estimator's vocabulary is the words used, in corpus order: the demo corpus uses all of its words
    data = Sequences(corpus.tokens.astype(np.int32), corpus.offsets.astype(np.int64), len(corpus.vocab))
    seeds = np.random.default_rng(5).integers(0, 2**31 - 1, size=5)
    core = Core(4, np.zeros((0, 0), dtype=np.uint8), Priors(1.5, 1.1))
    loop = Loop(infer, 4, ConvergenceMonitor(model._tol(), reference="progress"), data, None, seeds)
    fitted = get_algorithm(infer).fit(core, data, loop, model._settings())
    assert np.array_equal(fitted.trans, model.transition_counts_)
    assert np.array_equal(fitted.emit, model.emission_counts_)
    assert fitted.n_iter == model.n_iter_ and len(fitted.trace) == len(model.trace_)
    assert (fitted.labels is None) == (infer == "em")
    assert infer not in STOCHASTIC_ALGORITHMS


def test_learned_priors_are_updated_in_the_core_and_stored():
    model = HMMTagger(n_states=4, infer="cvi2", n_iter=4, learn_hyper=True, hyper_burn_in=1,
                      random_state=1).fit(demo_corpus(40, seed=2))
    assert model.learned_hyper_ == ("alpha", "beta")
    assert [r["alpha"] for r in model.trace_][-1] == model.alpha_ != 1.0


def test_a_pass_returning_none_ends_the_loop_unrecorded():
    """``one_pass`` returning ``None`` (L-BFGS stationary in ``FeatureHMM``'s direct fit) ends ``Loop.run``: that
    pass leaves no record, ``last`` is the last recorded pass, the monitor saw only the recorded objectives."""
    corpus = demo_corpus(5, seed=2)
    data = Sequences(corpus.tokens.astype(np.int32), corpus.offsets.astype(np.int64), len(corpus.vocab))
    monitor = ConvergenceMonitor(0.0, reference="progress")
    loop = Loop("direct", 10, monitor, data, None, np.zeros(11, dtype=np.int64))
    core = Core(2, np.zeros((0, 0), dtype=np.uint8), Priors(1.0, 1.0))
    loop.run("log_posterior", lambda it: [-9.0, -5.0, -4.0, None, -1.0][it - 1], core)
    assert [r["log_posterior"] for r in loop.trace] == [-9.0, -5.0, -4.0] and loop.last == 3
    assert not monitor.converged


def test_series_loop_records_objectives_and_stops_on_the_monitor():
    from induce.algorithms.loop import SeriesLoop
    from induce.infer.series import FitResult

    values, seen = iter([-10.0, -5.0, -4.0, -4.0, -4.0, -4.0, -4.0]), []
    result = FitResult(None, None)
    loop = SeriesLoop("segment em", 7, ConvergenceMonitor(1e-6), result.trace, lambda it, f: seen.append((it, f)))
    loop.run("log_likelihood", lambda it: next(values))
    loop.finish(result)
    # the third unchanged pass after -4.0 first appears (pass 3) converges: passes 4, 5, 6
    assert result.trace == [-10.0, -5.0, -4.0, -4.0, -4.0, -4.0] and result.n_iter == 6 and result.converged
    assert seen == list(enumerate(result.trace)) and result.warnings == []
    result = FitResult(None, None)
    loop = SeriesLoop("segment vi", 5, ConvergenceMonitor(1e-6), result.trace)
    with pytest.warns(RuntimeWarning, match="NaN or infinite at pass 2"):
        loop.run("elbo", lambda it: [-3.0, float("nan"), -1.0][it - 1])
        loop.finish(result)
    assert result.n_iter == 2 and not result.converged


def test_below_reference_stops_at_the_first_value_under_tol_and_names_its_measure():
    monitor = ConvergenceMonitor(0.1, reference="below", measure="mean change of q per step")
    assert monitor.update(0.05) and monitor.converged  # the first pass may stop the run
    monitor = ConvergenceMonitor(0.1, reference="below", measure="mean change of q per step")
    assert not any(monitor.update(v) for v in (0.5, 0.3, 0.2))
    with pytest.warns(Warning, match=r"not converged after 3 passes \(mean change of q per step 0.2 not below tol=0.1\)"):
        assert len(monitor.finish("segment cvi1", 3, 3)) == 1


@pytest.mark.parametrize("reference", ["previous", "progress", "best", "below"])
def test_a_run_capped_before_its_first_pass_warns_under_every_rule(reference):
    # a zero cap leaves no objective: the cap warning must still be written (it formatted None once)
    monitor = ConvergenceMonitor(1e-4, reference=reference)
    with pytest.warns(Warning, match="not converged after 0 passes"):
        assert len(monitor.finish("pcfg em", 0, 0)) == 1

"""The one pass loop of the batch algorithms, text and series alike (:meth:`Loop.run`): progress bar, trace,
the :class:`~induce.infer.convergence.ConvergenceMonitor` that stops it, and the visiting order.  Configured per
task: :class:`Loop` (text: a record per pass with time and tagging scores, priors learned past their burn-in, a
non-finite objective an error) and :class:`SeriesLoop` (series: the trace is the list of objectives, a non-finite
one stops the run with a warning).  The minibatch algorithms' held-out stop is the same monitor, fed by
:func:`induce.algorithms.minibatch.run`."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ..errors import ConfigError
from ..infer import hdp
from ..infer.convergence import ConvergenceMonitor
from ..progress import passes

#: the trace keys that hold an algorithm's per-iteration objective (the stopping rule watches it)
OBJECTIVES = ("log_likelihood", "elbo", "log_posterior", "predictive_log_likelihood", "mean_abs_change",
              "changed_states")


def visit_order(n: int, order: str, seed) -> np.ndarray:
    """The order a pass visits ``n`` sequences in: ``sequential``, or ``shuffle`` (a permutation drawn from
    ``seed``)."""
    if order == "shuffle":
        return np.random.default_rng(int(seed)).permutation(n).astype(np.int64)
    return np.arange(n, dtype=np.int64)


class Loop:
    """Passes ``1..max_iter`` of one batch fit named ``name`` over ``data`` (gold tags ``gold`` or ``None``).

    Each pass :meth:`record` s its objective in ``trace`` (with the tagging scores against ``gold`` every
    ``eval_every`` passes and at the cap, and ``callback`` called with the record), then :meth:`step` s:
    learns the priors past their burn-in and feeds the objective to ``monitor``; a ``stoppable`` algorithm
    stops on its verdict.  ``seeds[it]`` seeds pass ``it``'s random choices (``seeds[0]``: the start).
    """

    def __init__(self, name: str, max_iter: int, monitor: ConvergenceMonitor, data, gold, seeds: np.ndarray, *,
                 order: str = "sequential", eval_every: int = 1, callback: Callable[[dict], None] | None = None,
                 verbose: bool = False, label: str = "", trace: list | None = None):
        self.name, self.max_iter, self.monitor = name, int(max_iter), monitor
        self.data, self.gold, self.seeds = data, gold, seeds
        self.order, self.eval_every, self.callback = order, eval_every, callback
        self.verbose, self.label = verbose, label
        self.trace = [] if trace is None else trace
        self.meter = None  # a dask run's cluster meter, shown on the progress bar
        self.last = 0  # the last pass run
        self.bar = None

    def __iter__(self):
        it = range(1, self.max_iter + 1)
        if self.verbose:
            from ..progress import ProgressBar

            it = ProgressBar(it, desc=f"{self.name}{self.label}", unit="it", dynamic_ncols=True)
        self.bar = it
        return iter(it)

    def visit(self, it: int) -> np.ndarray:
        """Pass ``it``'s order over the sentences (:func:`visit_order`)."""
        return visit_order(self.data.offsets.shape[0] - 1, self.order, self.seeds[it])

    def record(self, iteration, objective, name, seconds, states, **extra) -> None:
        """Trace pass ``iteration``: its objective under ``name``, time, throughput, ``extra``, and the tagging
        scores of ``states`` (each token's state, or ``None`` when there is no gold column)."""
        n_tokens = self.data.tokens.shape[0]
        rec = {"iteration": iteration, name: float(objective), "seconds": seconds,
               "tokens_per_s": n_tokens / seconds if seconds > 0 else float("inf")}
        rec.update(extra)
        if self.gold is not None and (iteration % self.eval_every == 0 or iteration == self.max_iter):
            from ..eval.tagging import tagging_report

            rec.update(tagging_report(states, self.gold, self.data.offsets))
        self.trace.append(rec)
        if hasattr(self.bar, "set_postfix"):
            shown = {name: f"{objective:.4g}", "tok/s": f"{rec['tokens_per_s']:.3g}"}
            if "m1" in rec:
                shown["M-1"] = f"{rec['m1']:.3f}"
            if self.meter is not None:
                shown.update(self.meter.postfix())
            self.bar.set_postfix(shown)
        if self.callback is not None:
            self.callback(rec)

    def step(self, iteration: int, core, stoppable: bool, labels: Callable[[], np.ndarray]) -> bool:
        """End of pass ``iteration``: learn the priors of ``core`` (``labels()``: each token's decoded state,
        called only when one is learned), feed the objective to the monitor; ``True`` stops the loop."""
        record, priors = self.trace[-1], core.priors
        if priors.learned:
            priors.update(iteration, self.data, core.K, labels())
            record["alpha"], record["beta"] = priors.alpha, np.asarray(priors.beta).tolist()
        objective = next(v for k, v in record.items() if k in OBJECTIVES)
        self.monitor.update(objective)
        if self.monitor.diverged:
            raise ConfigError(f"{self.name} diverged at iteration {iteration}: the objective is {objective}; "
                              "check the priors (alpha, beta) and the input")
        # no stop while learned hyperparameters still wait for the end of their burn-in
        done = (self.monitor.converged and stoppable
                and (not priors.learned or iteration > priors.burn_in + self.monitor.patience))
        if done or iteration == self.max_iter:
            self.close()
        self.last = iteration
        return done

    def close(self) -> None:
        """Close the progress bar (a run its stopping rule ended early)."""
        if hasattr(self.bar, "close"):
            self.bar.close()

    def run(self, name: str, one_pass: Callable, core=None, stoppable: bool = True,
            labels: Callable[[], np.ndarray] | None = None, settle: Callable[[int, bool], dict] | None = None) -> None:
        """The pass loop: for every pass ``it``, ``one_pass(it)`` (its objective, or ``(objective, extra
        trace entries)``) is timed, :meth:`record` ed under ``name`` (with ``labels()``, each token's state,
        when there is a gold column and ``labels``) and :meth:`step` ped; the loop ends at the cap, when ``step``
        says stop, or when ``one_pass`` returns ``None``: the algorithm ended by itself (L-BFGS at a stationary
        point, :class:`~induce.algorithms.features.FeatureHMM`), and that pass is not recorded.  ``settle(it,
        stop)``: the end of a pass that hangs on the stopping rule's verdict (the HDP-HMM's split-merge rounds,
        :class:`HDPLoop`), which then :meth:`judge` s the objective before the record; ``settle`` returns the
        pass's trace entries."""
        for it in self:
            t0 = time.perf_counter()
            out = one_pass(it)
            if out is None:
                self.close()
                break
            objective, extra = out if isinstance(out, tuple) else (out, {})
            if settle is not None:
                extra = settle(it, self.judge(it, objective, stoppable))
            self.record(it, objective, name, time.perf_counter() - t0,
                        labels() if self.gold is not None and labels is not None else None, **extra)
            if self.step(it, core, stoppable, labels):
                break


class SeriesLoop(Loop):
    """The series fits' passes named ``name`` (the progress bar of :func:`induce.progress.passes`, drawn inside
    :func:`induce.progress.bars`): the trace is the list of objectives, ``callback(iteration, objective)`` is
    called after every pass (iterations from 0), and the run stops once ``monitor`` converges or sees a
    non-finite objective."""

    def __init__(self, name: str, max_iter: int, monitor: ConvergenceMonitor, trace: list,
                 callback: Callable[[int, float], None] | None = None):
        super().__init__(name, max_iter, monitor, None, None, None, callback=callback, trace=trace)

    @classmethod
    def of(cls, fit, name: str, monotone: bool, result, state: dict) -> "SeriesLoop":
        """The loop of the series ``fit`` (its ``n_iter``, ``tol``, ``callback(iteration, objective, state)``)
        recording into ``result``; ``monotone``: the objective must not fall (the monitor reports a decrease)."""
        callback = None if fit.callback is None else lambda it, f: fit.callback(it, f, state)
        return cls(name, fit.n_iter, ConvergenceMonitor(fit.tol, monotone=monotone), result.trace, callback)

    def __iter__(self):
        return (it + 1 for it in passes(self.max_iter, self.name))

    def record(self, iteration, objective, *_, **__) -> None:
        """Append pass ``iteration``'s objective to the trace and call the callback."""
        self.trace.append(objective)
        self.last = iteration
        if self.callback is not None:
            self.callback(iteration - 1, objective)

    def step(self, iteration, *_) -> bool:
        """Feed the objective to the monitor; ``True`` (stop) once it converged or the objective is not finite."""
        return self.monitor.update(self.trace[-1])

    def finish(self, result) -> None:
        """Leave the passes run, the monitor's verdict and its end-of-run warnings (cap hit, objective decreased or
        not finite) in ``result`` (:class:`induce.infer.series.FitResult`)."""
        result.n_iter, result.converged = self.last, self.monitor.converged
        result.warnings = self.monitor.finish(self.name, self.last, self.max_iter)


#: ``hyper_burn_in=None`` with Dir(beta), cvi: the objective gain over pass 1 that ends the burn-in
SYMMETRY_BREAK_GAIN = 0.01


class HDPLoop(Loop):
    """The HDP-HMM's passes: a :class:`Loop` whose records hold the effective number of states (the fewest
    covering ``coverage`` of the tokens, thesis 5.5.1) and the concentrations, with the hyperparameters' burn-in
    (``burn_in`` passes, or ``None``: adaptive, until :meth:`symmetry_broken`), and whose stopping rule
    (``new_monitor()``) starts afresh every pass of the burn-in: the symmetric start is a plateau, so the
    progress it measures counts from the burn-in's end (``HDPHMMTagger``'s ``tol``).  The rule judges each pass
    before its record (:meth:`judge`; the algorithms pass :meth:`Loop.run` a ``settle``), so that the pass's
    split-merge round can hang on its verdict, and a round that changed the fit overrules it (:meth:`step`)."""

    def __init__(self, name: str, max_iter: int, new_monitor: Callable[[], ConvergenceMonitor], data, gold,
                 seeds: np.ndarray, *, coverage: float, burn_in: int | None, **kw):
        super().__init__(name, max_iter, new_monitor(), data, gold, seeds, **kw)
        self.new_monitor, self.coverage, self.burn_in = new_monitor, coverage, burn_in
        self.learn_from = None  # the adaptive burn-in's first learning pass (:meth:`symmetry_broken`)
        self.first_objective = None
        self.verdict = False  # the last pass's (:meth:`judge`)
        self.waits: Callable[[], bool] = lambda: False

    def past_burn_in(self, it: int) -> bool:
        """Whether pass ``it`` comes after the burn-in (adaptive: from the pass the symmetric start broke)."""
        if self.burn_in is None:
            return self.learn_from is not None and it >= self.learn_from
        return it > self.burn_in

    def learns(self, name: str, it: int, fixed: frozenset) -> bool:
        """Whether pass ``it`` updates hyperparameter ``name``: not ``fixed``, and past the burn-in."""
        return name not in fixed and self.past_burn_in(it)

    def symmetry_broken(self, it: int, objective: float) -> None:
        """Adaptive burn-in: learning starts at the first pass whose objective beats the first pass's by
        :data:`SYMMETRY_BREAK_GAIN` of its magnitude (see ``hyper_burn_in``)."""
        if it == 1:
            self.first_objective = objective
        if self.learn_from is None and objective - self.first_objective > SYMMETRY_BREAK_GAIN * abs(
                self.first_objective):
            self.learn_from = it

    def held_passes(self, all_fixed: bool) -> int:
        """Passes during which the burn-in held the hyperparameters (all passes run if it never ended)."""
        if all_fixed:
            return self.last
        if self.burn_in is not None:
            return min(self.burn_in, self.last)
        return self.last if self.learn_from is None else self.learn_from - 1

    def judge(self, it: int, objective: float, stoppable: bool) -> bool:
        """The verdict on pass ``it``'s ``objective``, before its record (:meth:`Loop.run` with ``settle``): the
        stopping rule (restarted until past the burn-in) says stop, unless ``waits()`` (the first split-merge round
        of the schedule, set by the algorithm), or the objective is not finite; never for a run that is not
        ``stoppable`` (its monitor is left unfed)."""
        self.verdict = False
        if stoppable:
            if not self.past_burn_in(it):
                self.monitor = self.new_monitor()
            calm = self.monitor.update(objective)
            self.verdict = self.monitor.diverged or (calm and not self.waits())
        return self.verdict

    def step(self, iteration: int, *_) -> bool:
        """End of pass ``iteration``: the verdict of :meth:`judge`, except that a fit this pass's split-merge round
        changed (``merges`` or ``splits`` in its record) has not converged: the monitor's calm passes count again,
        against the same reference (progress since the burn-in, or the best epoch).  ``True`` stops the loop."""
        record = self.trace[-1]
        moved = bool(record.get("merges") or record.get("splits"))
        if moved:
            self.monitor.restart_streak()
        done = self.verdict and not moved
        if done or iteration == self.max_iter:
            self.close()
        self.last = iteration
        return done

    def entries(self, usage: np.ndarray, gamma: float, sigma: float, **extra) -> dict:
        """A pass's HDP trace entries: the effective states of ``usage`` (expected tokens per state), ``gamma`` and
        ``sigma``, then ``extra``."""
        return {"effective_states": hdp.effective_states(usage, self.coverage), "gamma": gamma, "sigma": sigma,
                **extra}

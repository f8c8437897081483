"""svi and scvi written once, for every model (HMM, HSMM, their HDP forms) and emission family (thesis 3.7.2,
eq. 3.98-3.104; Johnson & Willsky 2014 eq. 10-12; paper 002 section 3.2).  Per minibatch ``B_m`` of a seeded
shuffle of the items (:func:`induce.infer.schedules.minibatches`):

1. ``rho_m = (tau + m + 1)^-kappa`` (eq. 3.104; ``m`` the minibatches done);
2. the local step over ``B_m`` under the parameters of :data:`LOCAL_RULE` -- svi ``exp E_q[log theta]``
   (``vi``, eq. 3.21-3.22), scvi the surrogate ``(N + a) / (N. + K a)`` (``cvi``, eq. 3.98-3.100) -- and the
   family's matching rows (``E_q log p(x | eta)`` resp. the collapsed predictive, eq. 3.96);
3. ``N <- (1 - rho_m) N + rho_m * scale * E[C^{B_m}]`` (eq. 3.103), ``scale`` the data over the minibatch, then
   the model's other global steps (the HDP sticks and concentrations, eq. 5.40).

:func:`step` does 1 and calls an :class:`Updater` for 2-3; :func:`run` is the one driver, for text and series:
it steps through an iterator of minibatches, with (for the text tagger) held-out records (eq. 3.108-3.109),
the held-out stopping rule, the prior updates at each epoch's end, atomic checkpoints and resumption.  The text
tagger's categorical fast path is its updater (:class:`induce.infer.stochastic_hmm.CountsUpdater`: gathered rows,
lockstep forward-backward, the factored count table) over :class:`~induce.infer.stochastic_hmm.GlobalCounts`,
in :mod:`induce.algorithms.stochastic`; a family with statistics arrays (:mod:`induce.emissions`) runs
:class:`StatisticsUpdater` in :func:`epoch`, one :func:`run` per epoch (the series fits: objective the epoch's
summed ``log Z``, stopping rule the fit's :class:`induce.algorithms.loop.SeriesLoop`).
"""

from __future__ import annotations

import itertools
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from ..checkpoint import CheckpointPolicy, StopRequest, load_checkpoint, save_checkpoint
from ..errors import ConfigError
from ..infer.convergence import ConvergenceMonitor
from ..infer.schedules import blend, minibatches, step_size
from ..modelfile import reading

#: the parameters of each minibatch algorithm's local step: ``vi`` (expected natural parameters, eq. 3.21-3.22)
#: or ``cvi`` (surrogate parameters, eq. 3.98-3.100); the single-sequence variants of paper 001 included
LOCAL_RULE = {"svi": "vi", "scvi": "cvi", "scvi3": "cvi", "scvi3-vanilla": "cvi", "svi-buffered": "vi",
              "svi-vanilla": "vi"}


def step(updater, counts, batch, m: int, tau: float, kappa: float) -> tuple[float, float, int]:
    """Minibatch number ``m`` (from 0): ``rho_m`` (eq. 3.104) and ``updater(counts, rho_m, batch)``, the local
    and global steps (eq. 3.103).  Returns ``(rho_m, the minibatch's log-likelihood, its size in tokens)``."""
    rho = step_size(m, tau, kappa)
    ll, size = updater(counts, rho, batch)
    return rho, ll, size


class Updater(ABC):
    """The updater protocol, ``updater(counts, rho, batch) -> (log-likelihood, tokens)``: :meth:`local`, the
    local step of a family, then :meth:`blend`, eq. 3.103 with the minibatch's ``scale`` (the data over the
    minibatch), then :meth:`after`."""

    def __call__(self, counts, rho: float, batch) -> tuple[float, int]:
        ll, stats, scale, tokens = self.local(counts, batch)
        self.blend(counts, rho, stats, scale)
        self.after(rho)
        return ll, tokens

    @abstractmethod
    def local(self, counts, batch):
        """``(log-likelihood, statistics, scale, tokens)`` of ``batch`` under the parameters of ``counts``."""

    def blend(self, counts, rho: float, stats, scale: float) -> None:
        """Eq. 3.103 on every global statistic: ``N <- (1 - rho) N + rho * scale * stats``."""
        for target, batch_stats in zip(counts, stats):
            blend(target, batch_stats, rho, scale)

    def after(self, rho: float) -> None:
        """Global updates beyond the statistics after a minibatch (none by default)."""


class StatisticsUpdater(Updater):
    """The updater of a series fit (:class:`induce.infer.series.SeriesFit`, :class:`induce.infer.series_hsmm.HSMMFit`
    and their HDP forms) over any emission family: ``counts`` is the tuple of its global statistics arrays
    (transitions, emissions[, durations]), the local step ``fit._minibatch_statistics(rule, state, batch)``, the
    scale all steps over the minibatch's steps, then ``fit._after_minibatch`` and ``fit.batch_callback``."""

    def __init__(self, fit, state: dict, sizes: np.ndarray):
        self.fit, self.state, self.sizes = fit, state, sizes
        self.rule = LOCAL_RULE[fit.infer]
        self.total = int(sizes.sum())

    def local(self, counts, batch):
        ll, stats = self.fit._minibatch_statistics(self.rule, self.state, batch)
        size = int(self.sizes[batch].sum())
        return ll, stats, self.total / size, size

    def after(self, rho: float) -> None:
        self.state["m"] += 1
        self.fit._after_minibatch(self.state, rho)
        if self.fit.batch_callback is not None:
            self.fit.batch_callback(self.state["m"], self.state)


def epoch(fit, state: dict, counts: tuple, sizes: np.ndarray) -> float:
    """One epoch of svi / scvi minibatches of ``fit.batch_size`` items (sizes ``sizes`` in steps) drawn with
    ``fit.rng``, steps ``fit.tau``, ``fit.kappa``: :func:`run` (no held-out set, no checkpoint) with a
    :class:`StatisticsUpdater`, its step sizes continuing from the ``state["m"]`` minibatches of earlier epochs.
    Returns the epoch's objective, the sum of the minibatches' ``log Z``."""
    updater = StatisticsUpdater(fit, state, np.asarray(sizes, dtype=np.int64))
    return run(counts, updater, minibatches(len(sizes), fit.batch_size, fit.rng), tau=fit.tau, kappa=fit.kappa,
               first_batch=state["m"]).log_likelihood


@dataclass
class RunResult:
    """What :func:`run` did: its trace, minibatches, tokens, training seconds, how it ended, the final priors and
    the sum of this call's minibatches' log-likelihoods (each under the parameters before its step)."""

    trace: list[dict] = field(default_factory=list)
    batches: int = 0
    tokens_seen: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    converged: bool = False  # the stopping rule fired (``monitor`` of :func:`run`)
    alpha: float = 0.0  # the priors the run ended with (learned ones: ``hyper`` of :func:`run`)
    beta: float = 0.0
    log_likelihood: float = 0.0


def saved_settings(checkpoint: str | None) -> dict:
    """The settings a checkpoint was made with (``{}`` when there is none to read; :func:`_resume` says why and
    checks its arrays)."""
    if not checkpoint or not Path(checkpoint).exists():
        return {}
    return dict(load_checkpoint(checkpoint, "stochastic_hmm")[0]["settings"])


def _resume(checkpoint: str | None, meta: dict, counts, updater, result: RunResult) -> None:
    """Reload ``checkpoint`` into ``counts``, the ``updater``'s state and ``result`` (minibatches done,
    tokens seen, training seconds, trace), after checking that it was made with the settings ``meta``."""
    if not checkpoint:
        raise ConfigError("--resume needs --checkpoint FILE")
    if not Path(checkpoint).exists():
        raise ConfigError(f"no checkpoint to resume from at {checkpoint}")
    saved, arrays = load_checkpoint(checkpoint, "stochastic_hmm", counts.checkpoint_schema)
    with reading(checkpoint, "checkpoint header"):
        for key, value in meta.items():
            if saved["settings"].get(key) != value:
                raise ConfigError(f"checkpoint {checkpoint} was made with {key}={saved['settings'].get(key)!r}, "
                                  f"this run has {key}={value!r}")
        result.batches = int(saved["batches"])
        result.tokens_seen = int(saved["tokens_seen"])
        result.seconds = float(saved["seconds"])
        result.trace = list(saved["trace"])
        counts.load({k[7:]: v for k, v in arrays.items() if k.startswith("counts.")})
        updater.load({k[8:]: v for k, v in arrays.items() if k.startswith("updater.")})


def _save(checkpoint: str, meta: dict, counts, updater, result: RunResult) -> None:
    """Write the counts, the updater's state, the trace and the progress of ``result`` atomically."""
    arrays = {f"counts.{k}": v for k, v in counts.arrays().items()}
    arrays.update({f"updater.{k}": v for k, v in updater.arrays().items()})
    save_checkpoint(checkpoint, "stochastic_hmm",
                    {"settings": meta, "batches": result.batches, "tokens_seen": result.tokens_seen,
                     "seconds": result.seconds, "trace": result.trace}, arrays)


class _Evaluation:
    """A trace record: minibatch, tokens seen, training and wall seconds, step size, the minibatch's
    per-token log-likelihood and the held-out per-token predictive log-likelihood (thesis eq.
    3.108-3.109, when there is a held-out set), with ``extra`` entries, passed to ``callback``."""

    def __init__(self, counts, heldout, alpha: float, beta: float, callback, wall0: float):
        self.counts, self.heldout, self.alpha, self.beta = counts, heldout, alpha, beta
        self.callback, self.wall0 = callback, wall0

    def __call__(self, result: RunResult, rho: float, batch_ll: float, batch_tokens: int,
                 epoch: int | None = None, **extra) -> None:
        rec = {"batch": result.batches, "tokens_seen": result.tokens_seen, "seconds": round(result.seconds, 4),
               "wall_seconds": round(time.perf_counter() - self.wall0, 4), "rho": rho}
        if epoch is not None:
            rec["epoch"] = epoch
        if batch_tokens:
            rec["minibatch_log_likelihood_per_token"] = batch_ll / batch_tokens
        if self.heldout is not None:
            rec["heldout_log_likelihood_per_token"] = self.counts.heldout_loglik(self.alpha, self.beta, *self.heldout)
        rec.update(extra)
        result.trace.append(rec)
        if self.callback is not None:
            self.callback(rec)


def _remaining(batches: Iterable, done: int, max_batches: int | None) -> Iterator:
    """The minibatches still to run: ``batches`` without the ``done`` ones, up to ``max_batches`` in all."""
    it: Iterator = iter(batches)
    if done:
        it = itertools.islice(it, done, None)
    if max_batches is not None:
        it = itertools.islice(it, max(0, max_batches - done))
    return it


def _progress_bar(done: int, max_batches: int | None, total_batches: int | None, desc: str):
    """A tqdm bar over minibatches whose total is where the run will stop (unknown: none)."""
    from ..progress import ProgressBar as tqdm

    bound = [n for n in (max_batches, total_batches) if n]
    return tqdm(total=min(bound) if bound else None, initial=done, desc=desc, unit="batch", dynamic_ncols=True)


def _step(counts, updater, batch, result: RunResult, tau: float, kappa: float,
          first: int) -> tuple[float, float, int]:
    """One minibatch (:func:`step`: ``rho_m`` with ``m = first +`` the minibatches done, the updater's local and
    global steps, thesis eq. 3.103-3.104) and its training time.  Returns ``(rho, log-likelihood, tokens)``."""
    t0 = time.perf_counter()
    rho, ll, ntok = step(updater, counts, batch, first + result.batches, tau, kappa)
    result.seconds += time.perf_counter() - t0
    result.batches += 1
    result.tokens_seen += ntok
    result.log_likelihood += ll
    return rho, ll, ntok


class _Run:
    """One :func:`run`'s state: the counts, the updater, the result so far, its checkpoint and its evaluation."""

    def __init__(self, counts, updater, result: RunResult, meta: dict, checkpoint: str | None,
                 policy: CheckpointPolicy, evaluate: _Evaluation, first: int):
        self.counts, self.updater, self.result, self.meta = counts, updater, result, meta
        self.checkpoint, self.policy, self.evaluate, self.first = checkpoint, policy, evaluate, first

    def write(self) -> None:
        """Checkpoint now (:func:`_save`), if the run has a checkpoint file."""
        if self.checkpoint:
            _save(self.checkpoint, self.meta, self.counts, self.updater, self.result)
            self.policy.written()

    def set_priors(self, a: float, b: float) -> None:
        """The priors the next local steps and held-out evaluations use."""
        self.result.alpha = self.updater.alpha = self.evaluate.alpha = a
        self.result.beta = self.updater.beta = self.evaluate.beta = b

    def show(self, bar) -> None:
        """One minibatch more on the progress ``bar``, with the last held-out score and a cluster's meter."""
        bar.update(1)
        shown = dict(self.updater.meter.postfix()) if hasattr(self.updater, "meter") else {}  # on a dask cluster
        trace = self.result.trace
        if trace and "heldout_log_likelihood_per_token" in trace[-1]:
            shown["heldout"] = f"{trace[-1]['heldout_log_likelihood_per_token']:.4f}"
        if shown:
            bar.set_postfix(shown)

    def steps(self, batches: Iterator, stop, bar, *, tau: float, kappa: float, heldout_every: int,
              epoch_tokens: int | None, monitor: ConvergenceMonitor | None, hyper, stop_after: int | None):
        """The minibatches of :func:`run` (``monitor``: ``None`` without a stopping rule); returns the last step's
        ``(rho, log-likelihood, tokens)`` and whether it was evaluated."""
        counts, updater, result = self.counts, self.updater, self.result
        rho, ll, ntok = 0.0, 0.0, 0
        evaluated_last = True
        owed = False  # a checkpoint due while a round of local steps was still open (see below)
        for batch in batches:
            rho, ll, ntok = _step(counts, updater, batch, result, tau, kappa, self.first)
            epoch_end = ((monitor is not None or hyper is not None) and bool(epoch_tokens) and ntok > 0
                         and result.tokens_seen % epoch_tokens == 0)
            evaluated_last = epoch_end or (heldout_every > 0 and result.batches % heldout_every == 0)
            if evaluated_last:
                ll = _settle(counts, updater, result, ll)
            boundary = _at_boundary(updater)
            if epoch_end and hyper is not None:
                self.set_priors(*hyper(counts, result.alpha, result.beta))
            if evaluated_last:
                priors = dict(alpha=result.alpha, beta=result.beta) if epoch_end and hyper is not None else {}
                self.evaluate(result, rho, ll, ntok, epoch=result.tokens_seen // epoch_tokens if epoch_end else None,
                              **priors)
            if bar is not None:
                self.show(bar)
            if epoch_end and monitor is not None and monitor.update(
                    result.trace[-1]["heldout_log_likelihood_per_token"]):
                result.converged = monitor.converged
                break
            if boundary and (stop.requested or (stop_after is not None and result.batches >= stop_after)):
                result.interrupted = True
                break  # (run settles the rounds in flight)
            owed = owed or bool(self.checkpoint) and self.policy.due(result.batches)
            if owed and boundary:
                ll = _settle(counts, updater, result, ll)
                self.write()
                owed = False
        return rho, ll, ntok, evaluated_last


def run(counts, updater, batches: Iterable, *, tau: float, kappa: float,
        heldout: tuple[np.ndarray, np.ndarray] | None = None, heldout_every: int = 0,
        alpha: float = 0.1, beta: float = 0.1, max_batches: int | None = None,
        checkpoint: str | None = None, checkpoint_every: int = 0, checkpoint_minutes: float = 0.0,
        resume: bool = False, meta: dict | None = None,
        callback: Callable[[dict], None] | None = None, progress: bool = False,
        stop_after: int | None = None, total_batches: int | None = None,
        epoch_tokens: int | None = None, monitor: ConvergenceMonitor | None = None,
        hyper: Callable[[object, float, float], tuple[float, float]] | None = None,
        first_batch: int = 0) -> RunResult:
    """Apply ``updater`` to ``counts`` for each minibatch of ``batches`` (an iterator that the
    same seed reproduces), with step sizes ``rho_m = (tau + m + 1)^-kappa`` (eq. 3.104; ``m`` from
    ``first_batch``, the minibatches earlier runs did over the same counts: :func:`epoch` runs one per epoch).
    ``counts`` are the updater's global statistics; a held-out set or a checkpoint asks them for
    ``heldout_loglik(alpha, beta, tokens, offsets)`` (eq. 3.108-3.109), ``arrays()``, ``load(arrays)`` and
    ``checkpoint_schema`` (the text tagger's :class:`induce.infer.stochastic_hmm.GlobalCounts`).

    Every ``heldout_every`` minibatches (and at the start and the end) the held-out per-token log-likelihood
    (3.108-3.109) is added to the trace against tokens seen and training seconds (held-out evaluation time
    excluded; ``wall_seconds`` includes it).  With ``checkpoint`` the counts, the updater's state, the trace and
    the number of minibatches done are written atomically every ``checkpoint_every`` minibatches /
    ``checkpoint_minutes`` minutes, at the end, and when SIGINT / SIGTERM arrives (the run then stops and returns
    ``interrupted=True``).  ``resume`` reloads the checkpoint (made with the settings ``meta``) and skips the
    minibatches already done, so an interrupted and resumed run ends with the same counts as an uninterrupted
    one.  ``total_batches`` is the progress bar's total, capped by ``max_batches``; ``stop_after`` stops (as if
    interrupted) after that many minibatches in total (tests use it).

    Epochs: every schedule visits each training token once an epoch and no minibatch spans two, so an epoch
    ends where the tokens seen reach a multiple of ``epoch_tokens``.  There the held-out log-likelihood is traced
    (with the record's ``epoch``) and fed to ``monitor`` (:class:`~induce.infer.convergence.ConvergenceMonitor`);
    the run stops when it says so (``converged``).  A resumed run replays the traced epochs into the monitor.

    An updater that runs rounds of local steps on a cluster (:func:`_settled`) is settled before every held-out
    evaluation and at the end; checkpoints, stops and ``stop_after`` wait for the end of its open round.

    ``hyper`` (empirical Bayes of the priors): at each epoch's end ``hyper(counts, alpha, beta)`` gives the priors
    the next epoch's local steps (and the held-out evaluation) use; the epoch's record holds them, and a resumed
    run takes them from its last such record.  ``alpha``, ``beta`` of the result are the final ones.  Steps:
    :func:`_resume`, :meth:`_Run.steps`, :func:`_step`, :class:`_Evaluation`, :func:`_save`.
    """
    meta = dict(meta or {})
    result = RunResult()
    if resume:
        _resume(checkpoint, meta, counts, updater, result)
    start_batch = result.batches
    state = _Run(counts, updater, result, meta, checkpoint, CheckpointPolicy(checkpoint_every, checkpoint_minutes),
                 _Evaluation(counts, heldout, alpha, beta, callback, time.perf_counter() - result.seconds),
                 first_batch)
    learned = [rec for rec in result.trace if "beta" in rec]  # a resumed run: the priors learned so far
    state.set_priors(*((learned[-1]["alpha"], learned[-1]["beta"]) if learned else (alpha, beta)))
    if start_batch == 0 and (heldout is not None and heldout_every > 0):
        state.evaluate(result, 0.0, 0.0, 0)
    stopping = monitor is not None and heldout is not None and bool(epoch_tokens)
    if stopping:
        for rec in result.trace:  # a resumed run: the epochs already done
            if "epoch" in rec:
                monitor.update(rec["heldout_log_likelihood_per_token"])
        result.converged = monitor.converged
    bar = _progress_bar(start_batch, max_batches, total_batches, meta.get("infer", "stochastic")) if progress else None
    with StopRequest() if checkpoint else _NoStop() as stop:
        rho, ll, ntok, evaluated_last = state.steps(
            iter(()) if result.converged else _remaining(batches, start_batch, max_batches), stop, bar, tau=tau,
            kappa=kappa, heldout_every=heldout_every, epoch_tokens=epoch_tokens, monitor=monitor if stopping else None,
            hyper=hyper, stop_after=stop_after)
    if bar is not None:
        bar.close()
    ll = _settle(counts, updater, result, ll)
    if not evaluated_last and not result.interrupted:
        state.evaluate(result, rho, ll, ntok)
    state.write()
    return result


def _settled(updater) -> bool:
    """Whether ``counts`` hold every minibatch the updater was given: always, but for an updater that runs rounds
    of local steps on a cluster (:class:`induce.distributed.rounds.WorkerRoundsUpdater`) while a round is open or
    in flight."""
    return getattr(updater, "settled", True)


def _at_boundary(updater) -> bool:
    """Whether no minibatch waits for its round to be submitted (always, but for an updater that runs rounds of
    local steps on a cluster inside a round): where checkpoints and stops may settle the run (:func:`_settle`)."""
    return getattr(updater, "between_rounds", True)


def _settle(counts, updater, result: RunResult, ll: float) -> float:
    """End an open round of local steps (:func:`_settled`) so that ``counts`` hold every minibatch: where the run
    reads the counts (held-out evaluation, the epoch's end, the end of the run).  Returns the last minibatch's
    log-likelihood (``ll`` when nothing was open); the time counts as training."""
    if _settled(updater):
        return ll
    t0 = time.perf_counter()
    ll = updater.settle(counts)
    result.seconds += time.perf_counter() - t0
    return ll


class _NoStop:
    """The stop request of a run without a checkpoint: never."""

    requested = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

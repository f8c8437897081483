"""The minibatch algorithms: ``svi`` / ``scvi`` over sentences (thesis eq. 3.98-3.104) and the single-sequence
``scvi3``, ``scvi3-vanilla``, ``svi-buffered``, ``svi-vanilla`` (paper 001; thesis 3.8.4), driven by
:func:`induce.algorithms.minibatch.run` with the held-out stopping rule and the checkpoints.

Without a held-out set (``data.heldout``) a seeded ``heldout_fraction`` of the sentences (at most
``heldout_max_tokens`` tokens; the single-sequence algorithms: the end of the sequence) is left out of training
to stop on; all of the data is decoded.
"""

from __future__ import annotations

import numpy as np

from ..base import resolve_batch_size
from ..corpus.corpus import gather_sentences
from ..errors import ConfigError
from ..infer import stochastic_hmm as stochastic
from ..infer.convergence import ConvergenceMonitor
from ..infer.schedules import minibatches
from ..names import SINGLE_SEQUENCE, STOCHASTIC
from .base import Algorithm, Fitted, register, worker_corpus
from . import minibatch
from .minibatch import LOCAL_RULE


class Minibatch(Algorithm):
    """Stochastic VI / CVI: global counts blended with each minibatch's scaled expected counts."""

    def fit(self, core, data, loop, opts) -> Fitted:
        init_seq, batch_seq, held_seq = np.random.SeedSequence(opts.random_state).spawn(3)
        heldout = data.heldout
        if self.name in SINGLE_SEQUENCE:
            N = int(data.tokens.shape[0])
            n_held = heldout_tail(opts, N) if heldout is None else 0
            if n_held:
                heldout = (data.tokens[N - n_held:], np.array([0, n_held], dtype=np.int64))
            n_tokens = N - n_held
            updater = stochastic.SubchainUpdater(self.name, core.priors.alpha, core.priors.beta,
                                                 data.tokens[:n_tokens], opts.subseq_length, opts.buffer, core.K)
            n_items = updater.n_sub
            schedule = _schedule(opts, n_items, batch_seq)
            batches = minibatches(n_items, schedule["batch_size"], schedule["rng"], schedule["n_epochs"])
        else:
            held = (stochastic.heldout_sentences(np.diff(data.offsets), opts.heldout_fraction,
                                                 opts.heldout_max_tokens, np.random.default_rng(held_seq))
                    if heldout is None else np.zeros(0, dtype=np.int64))
            if len(held):
                heldout = gather_sentences(data.tokens, data.offsets, held)
            train_ids = np.setdiff1d(np.arange(data.offsets.shape[0] - 1, dtype=np.int64), held)
            n_tokens = int(np.diff(data.offsets)[train_ids].sum())
            n_items = len(train_ids)
            schedule = _schedule(opts, n_items, batch_seq)
            updater, batches = self._sentences(core, data, opts, train_ids, held, schedule)
        counts = stochastic.GlobalCounts.exponential(np.random.default_rng(init_seq), core.K, data.W, n_tokens)
        _recipe(updater, counts, opts, init_seq, n_tokens)
        settings = _settings(self.name, core, int(data.W), n_tokens, schedule, opts, subseq_length=opts.subseq_length,
                             buffer=opts.buffer)
        return run(self.name, core, counts, updater, batches, heldout, settings, n_items, n_tokens, opts)

    def _sentences(self, core, data, opts, train_ids, held, schedule):
        """svi / scvi: the minibatch step and the minibatches, in this process or on ``opts.client``'s
        workers (minibatches as sentence indices)."""
        I, size = len(train_ids), schedule["batch_size"]
        if opts.client is not None:
            updater = cluster_updater(worker_corpus(opts.client, data, opts.vocab), self.name, core, opts, I)
            return updater, updater.batches(np.sort(train_ids[idx]) for idx in minibatches(
                I, size, schedule["rng"], schedule["n_epochs"]))
        updater = sentence_updater(self.name, core, I)
        tokens, offsets = (gather_sentences(data.tokens, data.offsets, train_ids) if len(held)
                           else (data.tokens, data.offsets))
        return updater, stochastic.sentence_batches(tokens, offsets, size, schedule["n_epochs"], schedule["rng"])


# one registered class per name (the registry sets the class's ``name``); svi and scvi also run on a dask client
for _name in STOCHASTIC + SINGLE_SEQUENCE:
    register(_name)(type(f"Minibatch[{_name}]", (Minibatch,), {"cluster": _name in STOCHASTIC}))


def sentence_updater(name: str, core, n_sentences: int):
    """The svi / scvi minibatch step in this process."""
    return stochastic.SentenceUpdater(name, core.priors.alpha, core.priors.beta, n_sentences, core.allowed)


def cluster_updater(shards, name: str, core, opts, n_sentences: int | None = None):
    """svi / scvi on the workers holding ``shards``: every minibatch's rows shipped out and back
    (:class:`induce.distributed.WorkerSentenceUpdater`, ``sync_every`` 1), or rounds of ``sync_every`` local steps
    merged by adding count deltas (:class:`induce.distributed.WorkerRoundsUpdater`)."""
    from ..distributed import WorkerRoundsUpdater, WorkerSentenceUpdater

    if opts.sync_every > 1:
        return WorkerRoundsUpdater(shards, name, core.priors.alpha, core.priors.beta, opts.sync_every, core.allowed,
                                   n_sentences=n_sentences, staleness=opts.staleness)
    return WorkerSentenceUpdater(shards, name, core.priors.alpha, core.priors.beta, core.allowed,
                                 n_sentences=n_sentences)


def _recipe(updater, counts, opts, init_seq, n_tokens: int) -> None:
    """A fresh run on workers that keep copies of the counts: how its initial ``counts`` were made
    (:class:`induce.distributed.rounds.Recipe`), so that the workers make theirs instead of receiving them, made
    now, before the run (:meth:`~induce.distributed.rounds.WorkerRoundsUpdater.prepare`), as ``counts`` were."""
    if hasattr(updater, "recipe") and not opts.resume:
        from ..distributed.rounds import Recipe

        updater.recipe = Recipe(init_seq, counts.n_states, counts.n_words, n_tokens)
        updater.prepare(counts)


def heldout_tail(opts, n_tokens: int) -> int:
    """Tokens at the end of one long sequence held out to stop on: ``heldout_fraction`` of them, at most
    ``heldout_max_tokens``."""
    n = min(int(round(opts.heldout_fraction * n_tokens)), int(opts.heldout_max_tokens))
    if n and n >= n_tokens:
        raise ConfigError(f"a held-out fraction of {opts.heldout_fraction:g} of a {n_tokens}-token sequence "
                          "leaves none to train on")
    return n


def _settings(name: str, core, n_words: int, n_tokens: int, schedule: dict, opts, **extra) -> dict:
    """The run's settings a checkpoint is made with (and a resumed run checked against); ``sync_every`` only with
    local rounds (older checkpoints stay valid)."""
    sync = {"sync_every": opts.sync_every} if opts.client is not None and opts.sync_every > 1 else {}
    return {"infer": name, "n_states": core.K, "n_words": n_words, "n_tokens": n_tokens, "alpha": core.priors.alpha,
            "beta": core.priors.beta, "batch_size": schedule["batch_size"], "tau": opts.tau, "kappa": opts.kappa,
            "random_state": opts.random_state, **sync, **extra}


def _schedule(opts, n_items: int, batch_seq, **extra) -> dict:
    """The minibatch schedule: ``batch_size`` (:func:`induce.base.resolve_batch_size`: default 100, the best of
    sizes 20, 100 and 500 on Figure 3.15's WSJ data for scvi, benchmarks/RESULTS.md; on a cluster the
    largest that keeps 500 minibatches in the run, at most ``opts.planned_epochs`` of them; a resumed run keeps
    its checkpoint's), the epoch cap ``n_epochs`` and the seeded ``rng``, with ``extra``."""
    saved = minibatch.saved_settings(opts.checkpoint).get("batch_size") if opts.resume else None
    size = resolve_batch_size(opts.batch_size, 100, n_items, saved, opts.planned_epochs, opts.client)
    return dict(batch_size=size, n_epochs=opts.max_epochs, rng=np.random.default_rng(batch_seq), **extra)


def run(name, core, counts, updater, batches, heldout, settings, n_items: int, epoch_tokens: int, opts) -> Fitted:
    """Drive :func:`induce.algorithms.minibatch.run` with the schedule, stopping rule and checkpoint options of
    ``opts`` (``patience``: the epochs the rule waits for a gain of more than ``tol`` of the best held-out
    log-likelihood); ``n_items`` sentences (or subsequences) of ``epoch_tokens`` tokens make one epoch.  The epochs
    are judged by the monitor when there is a held-out set and the run was not interrupted."""
    monitor = ConvergenceMonitor(opts.tol, opts.patience, reference="best")
    settings = {**settings, "heldout_tokens": len(heldout[0]) if heldout is not None else 0}
    size = settings["batch_size"]
    hyper = core.priors.epoch_update(LOCAL_RULE[name] == "vi") if core.priors.learned else None
    result = minibatch.run(counts, updater, batches, tau=opts.tau, kappa=opts.kappa, heldout=heldout,
                            heldout_every=opts.heldout_every, alpha=core.priors.alpha, beta=core.priors.beta,
                            max_batches=opts.max_batches, checkpoint=opts.checkpoint,
                            checkpoint_every=opts.checkpoint_every, checkpoint_minutes=opts.checkpoint_minutes,
                            resume=opts.resume, meta=settings, callback=opts.callback, progress=opts.verbose,
                            total_batches=-(-int(n_items) // size) * opts.max_epochs,
                            epoch_tokens=epoch_tokens, monitor=monitor, hyper=hyper)
    core.priors.alpha, core.priors.beta = result.alpha, result.beta
    epochs = int(result.tokens_seen // max(1, epoch_tokens))
    judged = heldout is not None and not result.interrupted  # else no stopping rule: every epoch of the cap ran
    return Fitted(counts.trans, counts.emissions(), None, epochs, opts.max_epochs, monitor if judged else None,
                  result.trace, getattr(updater, "meter", None),
                  {"interrupted_": result.interrupted, "n_batches_": result.batches,
                   "heldout_tokens_": settings["heldout_tokens"], "batch_size_": size})


def fit_stream(name: str, core, info, path, format: str, lowercase: bool, buffer_sentences: int, opts,
               shards=None) -> Fitted:
    """svi / scvi over the corpus at ``path`` streamed from disk (:mod:`induce.corpus.stream`), which
    :func:`~induce.corpus.stream.scan` described in ``info`` (vocabulary, training sentences and tokens, the
    held-out sample); with ``opts.client`` the workers keep their shards (``shards``, the
    :class:`~induce.distributed.WorkerCorpus` that :func:`~induce.distributed.shards.scan_read` made with
    ``info``) and are sent sentence indices."""
    from ..corpus import stream

    init_seq, batch_seq, _ = np.random.SeedSequence(opts.random_state).spawn(3)
    counts = stochastic.GlobalCounts.exponential(np.random.default_rng(init_seq), core.K, len(info.vocab),
                                                 info.n_tokens)
    schedule = _schedule(opts, info.n_sentences, batch_seq, buffer_sentences=buffer_sentences)
    if opts.client is not None:
        updater = cluster_updater(shards, name, core, opts)
        _recipe(updater, counts, opts, init_seq, info.n_tokens)
        batches = updater.batches(stream.sharded_batches(shards.sentence_bounds, **schedule))
    else:
        updater = sentence_updater(name, core, info.n_sentences)
        batches = stream.shuffled_minibatches(path, format, info.vocab, lowercase=lowercase,
                                              skip=info.heldout_ids, **schedule)
    heldout = (info.heldout_tokens, info.heldout_offsets) if len(info.heldout_tokens) else None
    settings = _settings(name, core, len(info.vocab), info.n_tokens, schedule, opts,
                         buffer_sentences=buffer_sentences, stream=str(path))
    return run(name, core, counts, updater, batches, heldout, settings, info.n_sentences, info.n_tokens, opts)

"""What every HMM inference algorithm takes and returns, and the registry that names them.

An algorithm is a class registered by name (``@register("cvi2")``, as the emission families are in
:mod:`induce.emissions`) whose :meth:`Algorithm.fit` takes

* the model core, :class:`Core`: the number of states ``K``, the tag-dictionary mask and the Dirichlet
  priors (:class:`induce.algorithms.priors.Priors`, learned or held);
* the encoded data, :class:`Sequences`: token ids in the model's vocabulary and the sentence offsets;
* the run's driver: :class:`induce.algorithms.loop.Loop` for the batch algorithms (progress, trace,
  convergence monitor, visiting order), the estimator's settings for the minibatch ones;

and returns a :class:`Fitted`: the expected (or sampled) counts the point parameters are made from, the
labels its local posteriors give (or ``None``: decode), the passes run and the monitor that judged them.
The estimator (:class:`induce.taggers.HMMTagger`) validates, encodes, picks the algorithm by ``infer``,
calls ``fit`` once and turns the counts into parameters; nothing here calls back into it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from ..infer import hmm_passes as passes
from ..infer.convergence import ConvergenceMonitor
from ..plugins import Registry
from .priors import Priors

ALGORITHMS = Registry("HMM inference algorithm")
register = ALGORITHMS.register
#: the HDP-HMM's algorithms (``HDPHMMTagger(infer=...)``: cvi, scvi, svi, beam)
HDP_ALGORITHMS = Registry("HDP-HMM inference algorithm")
register_hdp = HDP_ALGORITHMS.register


def get_algorithm(name: str) -> "Algorithm":
    """An instance of the algorithm registered as ``name`` (``ConfigError`` naming the known ones if none)."""
    return ALGORITHMS.create(name)


@dataclass
class Sequences:
    """The encoded corpus: ``tokens`` (int32 ids ``< W``) cut into sentences at ``offsets`` (int64, ``I + 1``);
    ``source`` is the file it was read from (:attr:`induce.corpus.corpus.Corpus.source`), for dask workers;
    ``heldout`` the minibatch algorithms' held-out ``(tokens, offsets)`` to stop on (``None``: part of these)."""
    tokens: np.ndarray
    offsets: np.ndarray
    W: int
    source: tuple[str, str, bool] | None = None
    heldout: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class Core:
    """The HMM's parameters as an algorithm sees them: ``K`` states, the ``(W, K)`` uint8 mask of a tag
    dictionary (``(0, 0)``: none) and the Dirichlet priors on the transition and emission rows."""
    K: int
    allowed: np.ndarray
    priors: Priors


@dataclass
class HDPCore:
    """The HDP-HMM as its algorithms see it (thesis eq. 5.4-5.9): the truncation ``K`` (the beam sampler: its
    initial states), the starting top-level and transition concentrations ``gamma`` and ``sigma``, the symmetric
    emission prior ``beta``, the hyperparameters held ``fixed`` (``fix_hyper``) and the emission prior cvi and scvi
    start from (:class:`induce.infer.hdp.EmissionPrior`: ``Dir(beta)`` or ``Dir(beta tau)``, changed in place)."""
    K: int
    gamma: float
    sigma: float
    beta: float
    fixed: frozenset = frozenset()
    emission: object = None


@dataclass
class Fitted:
    """An algorithm's result: ``trans`` ``(K+1, K)`` and ``emit`` ``(W, K)`` counts, the training labels of its
    local posteriors (``None``: decode them from the parameters), the passes (epochs) run out of ``cap``, and
    the ``monitor`` that judged convergence (``None``: no stopping rule, every pass ran)."""
    trans: np.ndarray
    emit: np.ndarray
    labels: np.ndarray | None
    n_iter: int
    cap: int
    monitor: ConvergenceMonitor | None = None
    trace: list = field(default_factory=list)
    meter: object = None  # a dask run's :class:`induce.distributed.cluster.Meter`
    extra: dict = field(default_factory=dict)  # fitted attributes particular to the algorithm


class Algorithm(ABC):
    """An HMM inference algorithm (subclasses are registered by name).  ``stoppable``: it stops on its
    monitor's verdict (cgs follows its annealing schedule for all ``n_iter`` sweeps, and cvi1, which traces
    the mean change of ``q`` rather than an objective, runs all ``n_iter`` passes); ``cluster``: its E-steps
    run on a dask client."""

    name = ""
    stoppable = False
    cluster = False

    @abstractmethod
    def fit(self, core: Core, data: Sequences, loop, opts) -> Fitted:
        """Run the passes over ``data`` under ``loop`` (trace, monitor, stop) and return the parameters."""


def random_start(core: Core, data: Sequences, seed: int, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Random local posteriors, the batch algorithms' common start (thesis footnote 5): per-sentence
    transition statistics ``(I, K+1, K)`` and token posteriors ``(N, K)``."""
    return passes.random_start(data.tokens, data.offsets, core.K, seed, core.allowed, dtype)


def worker_corpus(client, data: Sequences, vocab):
    """The training corpus on the workers of ``client`` (:meth:`induce.distributed.WorkerCorpus.of`): read
    by them from its file when it was read from one (``fit`` given a path, or a corpus of
    :func:`~induce.corpus.formats.load_corpus` as the command line reads it), else shipped once (in-memory
    data: the only way)."""
    from ..distributed import WorkerCorpus

    return WorkerCorpus.of(client, data.tokens, data.offsets, data.source, vocab)

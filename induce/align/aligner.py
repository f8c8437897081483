"""``WordAligner``: IBM Model 1 / HMM word alignment in both directions, symmetrised.

scikit-learn conventions: hyperparameters in ``__init__`` (``get_params`` /
``set_params`` from :class:`sklearn.base.BaseEstimator`), :meth:`fit` returns
``self``, learned state in attributes ending in ``_``.  Links are 0-based
``(i, j)`` = (source position, target position) as in Pharaoh files.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from operator import itemgetter
from typing import Iterable, Sequence

import numpy as np
from ..progress import ProgressBar as tqdm

from .. import modelfile
from ..base import AnyOf, Boolean, InduceEstimator, Integer, Items, NotFittedError, Options, Real, Seed
from ..corpus.vocab import Vocabulary
from ..errors import ConfigError
from ..resources import alignment_bytes, check_memory, sentence_label
from ..kernels.align import links_to_matrix, posteriors_to_matrix
from ..modelfile import Field
from .direction import Bitext, DirectionParams, TrainConfig, encode_side, n_passes, train_direction
from .symmetrize import METHODS, matrices_to_links, symmetrize_corpus

from ..names import ALIGN_DECODERS as DECODERS, ALIGN_DIRECTIONAL as DIRECTIONAL, ALIGN_HMM_CVI as HMM_CVI
from ..names import ALIGN_INFERENCE as INFERENCE, ALIGN_MODELS as MODELS, ALIGN_SUPPORTS as SUPPORTS

Pair = tuple[Sequence[str], Sequence[str]]
#: priors used when not given (and where learned priors start): docs/experiments/alignment.md, "The prior"
from ..names import ALIGN_DEFAULT_ALPHA as DEFAULT_ALPHA
DEFAULT_JUMP_ALPHA = 0.1
#: jump buckets: the HMM's (Och & Ney 2003 use classes of width; 7 as GIZA++'s) and eflomal's (src/eflomal.c)
DEFAULT_MAX_JUMP, GIBBS_MAX_JUMP = 7, 1023
#: pass caps and relative tolerance of the stopping rule (docs/experiments/alignment.md, "Convergence"): at 1e-2
#: cvi stops after 5-8 passes per stage with the AER of the published 5 + 5 passes; smaller tolerances run
#: longer and align worse on the small gold sets (the HMM overfits); no run came near 50 passes
from ..names import ALIGN_MAX_ITER as MAX_ITER, ALIGN_MAX_ITER_IBM1 as MAX_ITER_IBM1, ALIGN_TOL as TOL


@dataclass(frozen=True)
class PairSource:
    """Where a bitext comes from: the pairs of :func:`induce.corpus.parallel.read_parallel` (``src``, ``tgt``;
    ``tgt`` ``None`` for one ``source ||| target`` file), lowercased and accent-folded with ``lowercase``
    (:func:`~induce.align.normalize.normalize_tokens`); training uses the pairs with no side longer than
    ``max_length``.  The command line reads its input so, and with a client the workers read their shards
    of the same files the same way (:mod:`induce.distributed.align`)."""

    src: str
    tgt: str | None = None
    lowercase: bool = False
    max_length: int | None = None

    def pairs(self) -> list[Pair]:
        """Every pair, normalised as ``lowercase`` says."""
        from ..corpus.parallel import read_parallel
        from .normalize import normalize_tokens

        pairs = list(read_parallel(self.src, self.tgt))
        return [(normalize_tokens(s), normalize_tokens(t)) for s, t in pairs] if self.lowercase else pairs

    def kept(self, pairs: Sequence[Pair]) -> list[int]:
        """Indices of the pairs used for training: no side longer than ``max_length``."""
        n = self.max_length
        return [k for k, (s, t) in enumerate(pairs) if n is None or (len(s) <= n and len(t) <= n)]


class WordAligner(InduceEstimator):
    """Word aligner trained without supervision on a sentence-aligned bitext.

    Parameters
    ----------
    model : ``"ibm1"``, ``"hmm"`` (Vogel et al. 1996, NULL states of Och & Ney 2003) or ``"fertility"``
        (the HMM with a Dirichlet-multinomial fertility per source word; ``infer="gibbs"``, or ``"cvi"``: collapsed
        variational inference of the same model, :class:`~induce.align.gibbs.CollapsedCVITrainer`).
    infer : ``"em"`` (GIZA++ pipeline), ``"vi"`` (Riley & Gildea 2012), ``"cvi"`` (thesis ch. 3) or ``"gibbs"``
        (collapsed Gibbs sampling, eflomal's recipe: :mod:`induce.align.gibbs`; ``n_iter``, ``tol`` and
        ``learn_hyper`` do not apply, ``gibbs_passes`` sets the passes).
    n_iter : maximum passes of the final model.
    n_iter_ibm1 : maximum Model 1 passes that initialise the HMM (``model="hmm"`` only).
    tol : each stage stops once the relative change of its objective stays below ``tol``
        for 3 passes (:mod:`induce.align.direction`); ``0`` runs all passes.
    alpha : symmetric Dirichlet prior of the translation tables; ``None``: 1e-4, or learned
        with ``learn_hyper``.  The thesis uses 0.1,
        but with the prior spread over the whole target vocabulary (``prior_support=
        "vocabulary"``; about 40k French words on the Hansards) that adds some 4,000
        pseudo-counts to every row and swamps rare words; 1e-4 gives the lowest AER
        with ``vi``/``cvi`` on every gold set we measured (docs/experiments/alignment.md, "The prior").
    prior_support : ``"vocabulary"`` (the Dirichlet of a table row spans the whole target
        vocabulary) or ``"cooccur"`` (only the target words that co-occur with its source word).
    jump_alpha : Dirichlet prior of the jump-width distribution (``vi``/``cvi``); ``None``: 0.1,
        or learned with ``learn_hyper``.
    learn_hyper : learn the priors left at ``None`` (``vi``/``cvi``) by empirical Bayes on the
        decoded alignment after every pass (:mod:`induce.align.direction`); the values each
        direction ended with are ``alpha_`` / ``jump_alpha_`` (dicts by direction).
    null_prob : ``p0``, the probability of moving to a NULL state (Och & Ney 2003).
    max_jump : jumps are bucketed to ``[-max_jump, max_jump]``; ``None``: 7, and with ``gibbs`` eflomal's 1023 (its
        jump buckets are not spread over the positions they cover, so a narrow range pulls links to far positions:
        de-en AER 65 at 7 against 47 at 100 in one direction; docs/experiments/alignment.md, "Gibbs").
    samplers : ``gibbs``: independent chains whose link marginals are averaged.
    gibbs_samples : ``gibbs``: sweeps per chain, after its stages, whose conditionals are averaged.
    gibbs_passes : ``gibbs``: passes per stage (IBM-1, HMM, fertility up to ``model``); ``None``: eflomal's rule
        from the number of pairs (:func:`induce.align.gibbs.gibbs_schedule`).
    n_jobs : ``gibbs``: threads running the chains (at most ``samplers``); the links and marginals are those of
        one thread for the same ``random_state``.
    hmm_cvi : ``"cvi1"`` (per target position, thesis sec. 3.4) or ``"cvi2"`` (per sentence pair, sec. 3.5);
        cvi1 is ahead on Hansards at every size, cvi2 on the small gold sets and twice as fast
        (docs/experiments/alignment.md, "Gibbs").
    symmetrize : one of ``intersection``, ``union``, ``grow-diag``, ``grow-diag-final``,
        ``grow-diag-final-and`` (both directions are trained), or ``forward`` / ``reverse``
        (one direction only).
    decode : ``"viterbi"`` or ``"posterior"`` (links whose posterior exceeds ``posterior_threshold``); with
        ``gibbs`` the training pairs (:meth:`fit_align`, :meth:`align_training`) are decoded from the averaged
        link marginals: their argmax per target word, or those above the threshold.
    random_state : seed of the CVI visiting order and of the Gibbs chains.
    verbose : show a tqdm progress bar (sentence pairs per second).
    client : a ``dask.distributed.Client``: ``em`` / ``vi`` map their E-steps over shards of the pairs on its
        workers (:mod:`induce.distributed.align`); ``None``: in this process.  With ``fit(pairs, source)``
        the workers read their shards of the files; pairs given in memory only can be shipped, once.
    """

    _parameter_constraints = {
        "model": Options(*MODELS), "infer": Options(*INFERENCE), "n_iter": Integer(1), "n_iter_ibm1": Integer(0),
        "tol": Real(0.0), "alpha": AnyOf(Options(None), Real(0.0, min_open=True)), "prior_support": Options(*SUPPORTS),
        "jump_alpha": AnyOf(Options(None), Real(0.0, min_open=True)), "learn_hyper": Boolean(),
        "null_prob": Real(0.0, 1.0, max_open=True), "max_jump": AnyOf(Options(None), Integer(1)),
        "hmm_cvi": Options(*HMM_CVI),
        "samplers": Integer(1), "gibbs_samples": Integer(1), "gibbs_passes": AnyOf(Options(None), Items(Integer(1))),
        "n_jobs": Integer(1),
        "symmetrize": Options(*METHODS, *DIRECTIONAL), "decode": Options(*DECODERS),
        "posterior_threshold": Real(0.0, 1.0), "random_state": Seed(), "verbose": Boolean(),
    }

    def __init__(self, model: str = "hmm", infer: str = "cvi", n_iter: int = MAX_ITER, n_iter_ibm1: int = MAX_ITER_IBM1,
                 tol: float = TOL, alpha: float | None = None, prior_support: str = "vocabulary",
                 jump_alpha: float | None = None, learn_hyper: bool = False, null_prob: float = 0.2,
                 max_jump: int | None = None,
                 samplers: int = 3, gibbs_samples: int = 1, gibbs_passes: Sequence[int] | None = None, n_jobs: int = 1,
                 hmm_cvi: str = "cvi1", symmetrize: str = "grow-diag-final-and", decode: str = "viterbi",
                 posterior_threshold: float = 0.5, random_state: int | None = None, verbose: bool = False,
                 client=None):
        self.model = model
        self.infer = infer
        self.n_iter = n_iter
        self.n_iter_ibm1 = n_iter_ibm1
        self.tol = tol
        self.alpha = alpha
        self.prior_support = prior_support
        self.jump_alpha = jump_alpha
        self.learn_hyper = learn_hyper
        self.null_prob = null_prob
        self.max_jump = max_jump
        self.samplers = samplers
        self.gibbs_samples = gibbs_samples
        self.gibbs_passes = gibbs_passes
        self.n_jobs = n_jobs
        self.hmm_cvi = hmm_cvi
        self.symmetrize = symmetrize
        self.decode = decode
        self.posterior_threshold = posterior_threshold
        self.random_state = random_state
        self.verbose = verbose
        self.client = client

    def _config(self) -> TrainConfig:
        if self.model == "fertility" and self.infer not in ("gibbs", "cvi"):
            raise ConfigError("model='fertility' is trained with infer='gibbs' or 'cvi' only")
        gibbs = self.infer == "gibbs"
        learn = tuple(name for name in ("alpha", "jump_alpha")[:2 if self.model == "hmm" else 1]
                      if self.learn_hyper and self.infer not in ("em", "gibbs") and self.model != "fertility"
                      and getattr(self, name) is None)
        return TrainConfig(model=self.model, infer=self.infer, n_iter=self.n_iter,
                           n_iter_ibm1=self.n_iter_ibm1, tol=0.0 if gibbs else self.tol, learn=learn,
                           samplers=self.samplers, n_samples=self.gibbs_samples, workers=self.n_jobs,
                           gibbs_passes=None if self.gibbs_passes is None else tuple(self.gibbs_passes),
                           alpha=DEFAULT_ALPHA if self.alpha is None else self.alpha,
                           jump_alpha=DEFAULT_JUMP_ALPHA if self.jump_alpha is None else self.jump_alpha,
                           null_prob=self.null_prob, max_jump=self._max_jump(), hmm_cvi=self.hmm_cvi,
                           prior_support=self.prior_support)

    def _max_jump(self) -> int:
        if self.max_jump is not None:
            return self.max_jump
        return GIBBS_MAX_JUMP if self.infer == "gibbs" or self.model == "fertility" else DEFAULT_MAX_JUMP

    # ------------------------------------------------------------- training
    def fit(self, pairs: Iterable[Pair], source: PairSource | None = None) -> "WordAligner":
        """Train the direction(s) required by ``symmetrize`` on ``(source, target)`` token lists.

        ``source``: the files ``pairs`` are the kept pairs of (:class:`PairSource`); with ``client`` the
        workers then read their shards from them, else (token lists in memory) the client ships each worker
        its pairs once."""
        if self.client is not None and self.infer in ("cvi", "gibbs"):
            raise ConfigError(f"on a cluster the aligner runs infer='em' or 'vi', not {self.infer}")
        pairs = list(pairs)
        directions = [d for d in DIRECTIONAL if self.symmetrize in (d, *METHODS)]
        src_len, tgt_len = [len(s) for s, _ in pairs], [len(t) for _, t in pairs]
        check_memory(alignment_bytes(src_len, tgt_len, len(directions)), "the alignment lattices",
                     sentence_label(np.multiply(src_len, tgt_len)).replace("words", "cells"))
        self.src_vocab_, self.tgt_vocab_ = Vocabulary(), Vocabulary()
        bitext = self._encode(pairs, grow=True)
        config = self._config()
        rng = np.random.default_rng(self.random_state)
        start = time.perf_counter()
        total = n_passes(config, bitext.n_pairs) * bitext.n_pairs * len(directions)
        trainer = {}
        if self.client is not None:  # the E-steps on the workers (induce.distributed.align)
            from functools import partial

            from ..distributed.align import ClusterTrainer, Meter, read_pairs

            self.cluster_meter_ = Meter()
            shards = read_pairs(self.client, source, self.src_vocab_, self.tgt_vocab_) if source else None
            trainer = {d: {"trainer": partial(ClusterTrainer, self.client, meter=self.cluster_meter_, pairs=shards,
                                              swapped=d == "reverse")} for d in DIRECTIONAL}
        with tqdm(total=total, unit="pair", unit_scale=True, desc=f"align {self.model}/{self.infer}",
                  disable=not self.verbose) as bar:
            self.forward_ = self.reverse_ = None
            if "forward" in directions:
                self.forward_ = train_direction(bitext, len(self.src_vocab_), len(self.tgt_vocab_), config, rng,
                                                bar.update, **trainer.get("forward", {}))
            if "reverse" in directions:
                self.reverse_ = train_direction(bitext.swapped(), len(self.tgt_vocab_), len(self.src_vocab_), config,
                                                rng, bar.update, **trainer.get("reverse", {}))
        self.fit_seconds_ = time.perf_counter() - start
        self.n_pairs_ = bitext.n_pairs
        self._fit_bitext = bitext
        self._end_stages(config)
        return self

    def _end_stages(self, config: TrainConfig) -> None:
        """``n_iter_`` / ``n_iter_ibm1_`` (most passes of a direction), ``converged_`` (every stage of every
        direction), the priors used (``alpha_``, ``jump_alpha_``, ``learned_hyper_``) and the stages' warnings."""
        self._start_run()
        trained = {name: getattr(self, f"{name}_") for name in DIRECTIONAL if getattr(self, f"{name}_") is not None}
        passes = {"ibm1": [0], "final": [0]}
        converged = True
        for name, params in trained.items():
            for stage, monitor, n, cap in params.stages:
                self._end_iterations(monitor, f"align {name} {stage} {self.infer}", n, cap)
                converged &= self.converged_
                passes["ibm1" if stage.startswith("ibm1") and self.model != "ibm1" else "final"].append(n)
        self.n_iter_, self.n_iter_ibm1_, self.converged_ = max(passes["final"]), max(passes["ibm1"]), converged
        self.alpha_ = {name: p.alpha for name, p in trained.items()}
        self.jump_alpha_ = {name: p.jump_alpha for name, p in trained.items()}
        self.learned_hyper_ = config.learn

    def _encode(self, pairs: Sequence[Pair], grow: bool) -> Bitext:
        src_tok, src_off = encode_side(map(itemgetter(0), pairs), self.src_vocab_, grow)
        tgt_tok, tgt_off = encode_side(map(itemgetter(1), pairs), self.tgt_vocab_, grow)
        return Bitext(src_tok, src_off, tgt_tok, tgt_off)

    # ------------------------------------------------------------- decoding
    def _link_matrix(self, params: DirectionParams, bitext: Bitext, reverse: bool, training: bool) -> np.ndarray:
        directed = bitext.swapped() if reverse else bitext
        if self.decode == "viterbi":
            return links_to_matrix(bitext.src_off, bitext.tgt_off, params.viterbi(directed, training), reverse)
        post, cell_off = params.posteriors(directed, training)
        return posteriors_to_matrix(bitext.src_off, bitext.tgt_off, cell_off, post, self.posterior_threshold, reverse)

    def align(self, pairs: Iterable[Pair]) -> list[list[tuple[int, int]]]:
        """Sorted 0-based links ``(i, j)`` of every pair; words unseen in training align only by NULL odds."""
        if not hasattr(self, "forward_"):
            raise NotFittedError.of(self)
        return self._decode(self._encode(list(pairs), grow=False), training=False)

    def align_training(self) -> list[list[tuple[int, int]]]:
        """Links of the pairs :meth:`fit` trained on: with ``infer="gibbs"`` decoded from the chains' averaged link
        marginals (``decode``, ``posterior_threshold``, ``symmetrize`` as set now), else as :meth:`align`."""
        if getattr(self, "_fit_bitext", None) is None:
            raise ConfigError("align_training() needs the pairs of fit() in this process")
        return self._decode(self._fit_bitext, training=True)

    def _decode(self, bitext: Bitext, training: bool) -> list[list[tuple[int, int]]]:
        if self.symmetrize == "forward":
            flat = self._link_matrix(self.forward_, bitext, False, training)
        elif self.symmetrize == "reverse":
            flat = self._link_matrix(self.reverse_, bitext, True, training)
        else:
            flat = symmetrize_corpus(bitext.src_off, bitext.tgt_off,
                                     self._link_matrix(self.forward_, bitext, False, training),
                                     self._link_matrix(self.reverse_, bitext, True, training), self.symmetrize)
        return matrices_to_links(bitext.src_off, bitext.tgt_off, flat)

    def fit_align(self, pairs: Iterable[Pair], source: PairSource | None = None) -> list[list[tuple[int, int]]]:
        """:meth:`fit`, then the links of the same pairs (:meth:`align_training`)."""
        return self.fit(pairs, source).align_training()

    # ---------------------------------------------------------- persistence
    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """Arrays of each saved direction over ``S`` source and ``T`` target words.

        The forward table is a CSR matrix of ``S + 1`` rows (row 0 = NULL,
        ``row_ptr`` of ``S + 2`` offsets into ``nnz`` target columns); its
        ``values`` hold the ``nnz`` entries, one fallback per row and one for
        unknown words; ``weights`` are the ``2 J + 1`` jump widths of
        ``max_jump = J``.  The reverse direction swaps ``S`` and ``T``.
        """
        dims = {"S": len(header["src_vocab"]["items"]), "T": len(header["tgt_vocab"]["items"])}
        fields = []
        for name, info in header["directions"].items():
            if name not in DIRECTIONAL or info["model"] not in ("ibm1", "hmm"):
                raise ValueError(f"unknown direction {name!r} / model {info['model']!r}")
            jump, null = info["max_jump"], info["null_prob"]
            if not isinstance(jump, int) or jump < 0 or not isinstance(null, (int, float)) or not 0 <= null <= 1:
                raise ValueError(f"{name}: max_jump must be an integer >= 0 and null_prob in [0, 1]; "
                                 f"got {jump!r}, {null!r}")
            rows, cols = ("S", "T") if name == "forward" else ("T", "S")
            nnz, dims[f"J_{name}"] = f"nnz_{name}", jump
            fields += [Field(f"{name}_row_ptr", "i8", (f"{rows}+2",), bound=f"{nnz}+1", increasing=True),
                       Field(f"{name}_cols", "i4", (nnz,), bound=cols),
                       Field(f"{name}_values", "f8", (f"{nnz}+{rows}+2",), nonnegative=True),
                       Field(f"{name}_weights", "f8", (f"2*J_{name}+1",), nonnegative=True)]
        return modelfile.Schema(fields, dims)

    def save(self, path: str | os.PathLike) -> None:
        """Write the fitted model as one ``.npz`` (arrays + a JSON header; no pickle), atomically."""
        meta = {
            "params": {k: v for k, v in self.get_params().items() if k != "client"},  # (a client is not saved)
            "src_vocab": self.src_vocab_.to_json(),
            "tgt_vocab": self.tgt_vocab_.to_json(),
            "n_pairs": self.n_pairs_,
            "fit_seconds": self.fit_seconds_,
            "directions": {},
        }
        arrays = {}
        for name in DIRECTIONAL:
            params: DirectionParams | None = getattr(self, f"{name}_")
            if params is None:
                continue
            meta["directions"][name] = {"model": params.model, "null_prob": params.null_prob,
                                        "max_jump": params.max_jump, "history": params.history,
                                        "alpha": params.alpha, "jump_alpha": params.jump_alpha}
            for key in ("row_ptr", "cols", "values", "weights"):
                arrays[f"{name}_{key}"] = getattr(params, key)
        modelfile.save(path, "WordAligner", meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "WordAligner":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        meta, arrays = modelfile.load(path, "WordAligner", cls._schema)
        with modelfile.reading(path, "header"):
            aligner = cls._from_params(meta["params"])
            for name in DIRECTIONAL:
                info = meta["directions"].get(name)
                params = None if info is None else DirectionParams(
                    row_ptr=arrays[f"{name}_row_ptr"], cols=arrays[f"{name}_cols"],
                    values=arrays[f"{name}_values"], weights=arrays[f"{name}_weights"], **info)
                setattr(aligner, f"{name}_", params)
            aligner.src_vocab_ = Vocabulary.from_json(meta["src_vocab"])
            aligner.tgt_vocab_ = Vocabulary.from_json(meta["tgt_vocab"])
            aligner.n_pairs_ = meta["n_pairs"]
            aligner.fit_seconds_ = meta["fit_seconds"]
            trained = {name: getattr(aligner, f"{name}_") for name in DIRECTIONAL if getattr(aligner, f"{name}_")}
            aligner.alpha_ = {name: p.alpha for name, p in trained.items()}
            aligner.jump_alpha_ = {name: p.jump_alpha for name, p in trained.items()}
        return aligner

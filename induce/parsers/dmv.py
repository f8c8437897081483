"""The Dependency Model with Valence (Klein & Manning 2004) with EM, VI and CVI.

Parameters (categorical rows over the last axis, symmetric Dirichlet prior
``alpha`` on each row):

* ``root_[T]``  -- P_root(tag);
* ``stop_[T, 2, 2, 2]`` -- P_stop(STOP | CONTINUE | head, direction (0 left, 1 right),
  valence (0 = no dependent yet on that side, 1 = some));
* ``attach_[T, 2, T]`` -- P_choose(dependent | head, direction).

Inference (thesis ch. 4, the DMV instance of the PCFG updates; one split-head
inside-outside program in :mod:`induce.kernels.dmv`):

* ``em``  -- batch E-step with ``C / C.`` (eq. 4.5-4.10);
* ``vi``  -- batch E-step with ``exp(psi(C + a)) / exp(psi(C. + K a))`` (eq. 4.12);
* ``cvi`` -- per sentence: subtract its expected counts, inside-outside with
  ``(C^{\\i} + a) / (C^{\\i}_. + K a)``, add back (eq. 4.24).

Initialisation: ``init="harmonic"`` (the default, Klein & Manning's harmonic
pseudo-counts, :func:`induce.kernels.dmv.harmonic_counts`, normalised) or
``"random"`` (rows drawn from Dirichlet(1) with ``random_state``).  Every
algorithm starts from one batch E-step under those parameters.  Decoding uses
the MLE for ``em`` and the posterior mean ``(C + a) / (C. + K a)`` otherwise.

Stopping: ``n_iter`` is a cap; a run stops once the relative change of its
per-pass objective (the log-likelihood ``sum_i log P(x^i)`` under the
parameters the pass used: MLE for ``em``, the sub-normalised VI parameters for
``vi``, the collapsed surrogates for ``cvi``) stays below ``tol`` for 3 passes
(:class:`induce.infer.convergence.ConvergenceMonitor`).  On the WSJ10 sample
(555 sentences) that takes about 120 (em), 115 (vi) and 46 (cvi) passes at
``tol=1e-6`` (docs/experiments/grammar_defaults.md).

Universal rules (``rules="auto"``, the default; Naseem, Chen, Barzilay & Johnson 2010): when the corpus
has a tag column :mod:`induce.parsers.dmv_rules` reads (UPOS, universal, CoNLL 2007 CPOS or PTB tags),
every E-step (em, vi, and cvi's per-sentence surrogates) computes the posterior-regularised
``q(z) ∝ p(z) exp(lambda f(z))``, ``f`` the number of arcs obeying a head -> dependent rule; the
counts of ``q`` feed the usual updates, and ``lambda`` takes one projected dual-ascent step per pass
towards ``E_q[f] / N >= rule_share`` (0.85), bounded by ``RULE_MAX_LAMBDA``
(:meth:`_Counts.step_rules`).  Decoding uses ``p``.  On the nine UD treebanks at <= 10 words this
lifts directed accuracy from 11-38% to 42-73% (docs/experiments/grammar_ud.md).

Learned priors (``learn_hyper``, vi and cvi): one symmetric Dirichlet
concentration per rule family, ``alpha_ = {"root", "stop", "attach"}``.  The
families are different kinds of distribution -- one row over the tags (root),
binary stop decisions that are close to deterministic for most (head,
direction, valence), sparse rows over the dependent tags (attach) -- so one
shared value would fit none of them; within a family the rows are alike
(every head tag has the same kind of row).  After ``hyper_burn_in`` passes each
is re-estimated after every pass by empirical Bayes
(:func:`induce.infer.hyper.fit_symmetric_dirichlet`) from the counts of the
Viterbi trees under the current parameters (:func:`tree_counts`), as the HMM
tagger does with its decoded states (docs/experiments/grammar_defaults.md,
"Learned priors").

Collapse checks after fitting (:func:`collapse_warnings`): a non-finite
objective, or Viterbi trees that are (almost) all flat -- every word a
dependent of the sentence's root word -- or all chains of adjacent words in
one direction.  Each becomes one line in ``warnings_`` and a :class:`~induce.infer.convergence.FitWarning`.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Callable

import numpy as np
from ..progress import ProgressBar as tqdm

from .. import modelfile
from ..base import AnyOf, Boolean, InduceEstimator, Integer, NotFittedError, Options, Real, Seed
from ..infer.convergence import TOL, ConvergenceMonitor, FitWarning
from ..infer.estimators import params_from_counts
from ..infer.hyper import fit_symmetric_dirichlet
from ..kernels import dmv as kdmv
from ..modelfile import Field
from ..corpus.corpus import as_corpus
from ..resources import check_memory, corpus_source, dmv_bytes, sentence_label
from .dmv_rules import token_classes
from .params import UNK, column, encode_with

ALGORITHMS = ("em", "vi", "cvi")
RULES = ("auto", "none")
#: Expected share of arcs obeying the universal rules that the posteriors must reach (Naseem et al. 2010).
RULE_SHARE = 0.85
#: Step of the projected dual ascent on the rule constraint's multiplier, per pass.
RULE_STEP = 5.0
#: Bound on the multiplier: the dual of a slack penalised by RULE_MAX_LAMBDA per unit (Ganchev et al. 2010,
#: sec. 2.2), so that a share the model cannot reach (em's zeroed rows) leaves a finite bias.
RULE_MAX_LAMBDA = 10.0
#: the rule families, each with its own learned concentration
FAMILIES = ("root", "stop", "attach")
#: the prior used when none is given (and where learned priors start)
DEFAULT_ALPHA = 1.0
from ..names import DMV_INITS as INITS
#: Pass cap: above the ~120 passes em needs on WSJ10 at ``tol=1e-6``.
MAX_ITER = 500
#: Collapse thresholds: share of (non-root) words of sentences with >= 3 words that are
#: dependents of the root word (flat trees), or attached to an adjacent word in the
#: corpus' dominant direction (chains).
FLAT_SHARE = 0.9
CHAIN_SHARE = 0.95


class DMVParser(InduceEstimator):
    """Unsupervised projective dependency parser (DMV).

    Parameters
    ----------
    infer : ``"em"``, ``"vi"`` or ``"cvi"`` (default; thesis section 4.5.2).
    alpha : symmetric Dirichlet hyperparameter (used by ``vi``/``cvi`` and the decoding mean);
        ``None``: 1, or learned per rule family with ``learn_hyper``.
    learn_hyper : learn the concentrations when ``alpha`` is ``None`` (vi, cvi; see the module docstring).
    hyper_burn_in : passes before the first empirical Bayes update.
    n_iter : maximum number of passes over the corpus.
    tol : relative change of the objective below which (3 passes in a row) the run has
        converged; ``0`` runs exactly ``n_iter`` passes.
    init : ``"harmonic"`` (default) or ``"random"``.
    tag_column : the tag column the model reads (``None``: the word tokens).
    random_state : seed of random initialisation and of CVI's sentence order.
    rules : ``"auto"`` (default): constrain the posteriors with the universal rules of
        :mod:`induce.parsers.dmv_rules` when the corpus has a tag column they read; ``"none"``.
    rule_share : the share of arcs that must obey the rules in expectation (posterior regularisation).
    """

    _parameter_constraints = {
        "infer": Options(*ALGORITHMS), "alpha": AnyOf(Options(None), Real(0.0, min_open=True)), "n_iter": Integer(0),
        "tol": Real(0.0), "init": Options(*INITS), "random_state": Seed(), "verbose": Boolean(),
        "learn_hyper": Boolean(), "hyper_burn_in": Integer(0), "rules": Options(*RULES),
        "rule_share": Real(0.0, 1.0),
    }

    def __init__(self, infer: str = "cvi", alpha: float | None = None, n_iter: int = MAX_ITER, tol: float = TOL,
                 init: str = "harmonic", tag_column: str | None = None, random_state: int | None = None,
                 verbose: bool = False, learn_hyper: bool = False, hyper_burn_in: int = 0, rules: str = "auto",
                 rule_share: float = RULE_SHARE):
        self.infer = infer
        self.alpha = alpha
        self.learn_hyper = learn_hyper
        self.hyper_burn_in = hyper_burn_in
        self.n_iter = n_iter
        self.tol = tol
        self.init = init
        self.tag_column = tag_column
        self.random_state = random_state
        self.verbose = verbose
        self.rules = rules
        self.rule_share = rule_share

    # -------------------------------------------------------------------- fit
    def _ids(self, X) -> tuple[np.ndarray, np.ndarray]:
        if not hasattr(self, "tags_"):
            raise NotFittedError.of(self)
        corpus = as_corpus(X)
        ids, vocab = column(corpus, self.tag_column)
        return encode_with(self.tags_, vocab, ids), corpus.offsets

    def fit(self, X, y=None, callback: Callable[["DMVParser", int], None] | None = None) -> "DMVParser":
        """Fit the DMV to the (tag) sequences of ``X`` (a Corpus or lists of tokens).

        Sets ``n_iter_`` (passes run), ``converged_``, ``history_``, ``warnings_``,
        ``alpha_`` (the concentration of each family), ``learned_hyper_``, ``rule_column_``
        (the tag column the universal rules read, ``None`` without) and ``rule_lambda_``
        (the rule constraint's final multiplier).
        """
        start = DEFAULT_ALPHA if self.alpha is None else float(self.alpha)
        self.alpha_ = {family: start for family in FAMILIES}
        learns = bool(self.learn_hyper) and self.alpha is None and self.infer != "em"
        self.learned_hyper_ = FAMILIES if learns else ()
        corpus = as_corpus(X)
        corpus = corpus.subset(np.nonzero(corpus.lengths > 0)[0])
        check_memory(dmv_bytes(corpus.lengths), "the DMV charts", sentence_label(corpus.lengths, corpus_source(corpus)))
        ids, vocab = column(corpus, self.tag_column)
        self.tags_ = [s for s in vocab.itos if s != UNK] + [UNK]
        tags = encode_with(self.tags_, vocab, ids)
        offsets = corpus.offsets
        rng = np.random.default_rng(self.random_state)
        state = _Counts(len(self.tags_), tags, offsets, self._rule_classes(corpus))
        theta0 = self._initial_params(state, rng)
        self.history_: list[dict] = []
        t0 = time.perf_counter()
        ll = state.estep(*theta0)
        self.history_.append({"iteration": 0, "seconds": time.perf_counter() - t0, "log_likelihood": ll,
                              **state.step_rules(self.rule_share)})
        self._set_params(state)
        monitor = ConvergenceMonitor(self.tol, monotone=self.infer == "em" and state.rules is None)
        monitor.update(ll)
        self.n_iter_ = 0
        bar = tqdm(range(1, self.n_iter + 1), desc=f"dmv {self.infer}", disable=not self.verbose, leave=False)
        for it in bar:
            # no stop while learned priors still wait for the end of their burn-in
            if monitor.diverged or monitor.converged and (
                    not self.learned_hyper_ or it > self.hyper_burn_in + monitor.patience + 1):
                break
            t0 = time.perf_counter()
            if self.infer == "cvi":
                ll = state.cvi_pass(rng.permutation(len(offsets) - 1), self._priors())
            else:
                ll = state.estep(*state.params(self.infer, self._priors()))
            self.history_.append({"iteration": it, "seconds": time.perf_counter() - t0, "log_likelihood": ll,
                                  **state.step_rules(self.rule_share)})
            bar.set_postfix(ll=f"{ll:.1f}")
            self._set_params(state)
            if self.learned_hyper_ and it > self.hyper_burn_in:
                self._update_hyper(tags, offsets)
                self.history_[-1]["alpha"] = dict(self.alpha_)
            self.n_iter_ = it
            if callback is not None:
                callback(self, it)
            monitor.update(ll)
        bar.close()
        self.rule_lambda_ = state.rule_lambda
        self.converged_ = monitor.converged
        self.warnings_ = monitor.finish(f"dmv {self.infer}", self.n_iter_, self.n_iter)
        if not monitor.diverged:
            self.warnings_ += collapse_warnings(self.predict_flat(corpus), offsets)
        return self

    def _rule_classes(self, corpus) -> tuple | None:
        """``(classes, R)`` of the universal rules for ``corpus`` (:func:`~induce.parsers.dmv_rules.token_classes`);
        sets ``rule_column_`` (the tag column read, ``None`` without rules)."""
        found = token_classes(corpus) if self.rules == "auto" else None
        self.rule_column_ = None if found is None else found[0]
        return None if found is None else found[1:]

    def _initial_params(self, state: "_Counts", rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.init == "harmonic":
            kdmv.harmonic_counts(state.tags, state.offsets, state.root, state.stop, state.attach)
            return state.params("em", DEFAULT_ALPHA)  # (the MLE ignores the prior)
        return tuple(_dirichlet_rows(rng, a.shape) for a in (state.root, state.stop, state.attach))

    def _priors(self) -> np.ndarray:
        """The concentrations of the root, stop and attach rows (:data:`FAMILIES`), as the kernels take them."""
        return np.array([self.alpha_[family] for family in FAMILIES])

    def _update_hyper(self, tags: np.ndarray, offsets: np.ndarray) -> None:
        """Empirical Bayes step: each family's concentration maximising the evidence of the Viterbi trees' counts."""
        heads = np.zeros(len(tags), dtype=np.int32)
        kdmv.viterbi_pass(tags, offsets, self.root_, self.stop_, self.attach_, heads)
        for family, counts in zip(FAMILIES, tree_counts(tags, heads, offsets, len(self.tags_))):
            self.alpha_[family] = fit_symmetric_dirichlet(counts, self.alpha_[family])

    def _set_params(self, state: "_Counts") -> None:
        self.root_, self.stop_, self.attach_ = state.params("em" if self.infer == "em" else "cvi", self._priors())
        self.counts_ = {"root": state.root.copy(), "stop": state.stop.copy(), "attach": state.attach.copy()}

    # -------------------------------------------------------------- decoding
    def predict(self, X) -> list[np.ndarray]:
        """Per sentence, the Viterbi head of each token (int32 arrays; 1-based, 0 = root)."""
        corpus = as_corpus(X)
        return corpus.split(self.predict_flat(corpus))

    def predict_flat(self, X) -> np.ndarray:
        """The Viterbi heads as one int32 array aligned with the tokens of ``X`` (1-based within each sentence)."""
        tags, offsets = self._ids(X)
        heads = np.zeros(len(tags), dtype=np.int32)
        kdmv.viterbi_pass(tags, offsets, self.root_, self.stop_, self.attach_, heads)
        return heads

    def parse(self, X) -> list[list[int]]:
        """Viterbi heads per sentence, as lists (:meth:`predict` as arrays)."""
        return [heads.tolist() for heads in self.predict(X)]

    def log_likelihood(self, X) -> np.ndarray:
        """``log P(x^i)`` per sentence (sum over all projective trees)."""
        tags, offsets = self._ids(X)
        out = np.zeros(len(offsets) - 1)
        kdmv.log_likelihood_pass(tags, offsets, self.root_, self.stop_, self.attach_, out)
        return out

    def score(self, X, y=None) -> float:
        """Mean log-likelihood per token (nats; the sum over trees, :meth:`log_likelihood`, per word), as every
        induce estimator's ``score``; ``y`` is ignored."""
        corpus = as_corpus(X)
        return float(self.log_likelihood(corpus).sum() / max(1, corpus.n_tokens))

    # -------------------------------------------------------------- save/load
    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """``T`` tags: ``root (T,)``, ``stop (T, 2, 2, 2)``, ``attach (T, 2, T)`` and their counts.

        The parameters are distributions over their last axis (root over tags)
        except under ``vi``, whose parameters are sub-normalised (thesis eq. 3.21).
        """
        vi = header["params"]["infer"] == "vi"
        shapes = {"root": ("T",), "stop": ("T", 2, 2, 2), "attach": ("T", 2, "T")}
        params = [Field(k, "f8", shape, nonnegative=True, stochastic_axis=None if vi else len(shape) - 1)
                  for k, shape in shapes.items()]
        counts = [Field(f"counts_{k}", "f8", shape, nonnegative=True) for k, shape in shapes.items()]
        return modelfile.Schema(params + counts, {"T": len(header["tags"])})

    def save(self, path) -> None:
        modelfile.save(path, "DMVParser", {"params": self.get_params(), "tags": self.tags_, "history": self.history_,
                                           "converged": self.converged_, "warnings": self.warnings_,
                                           "alpha": self.alpha_, "learned_hyper": list(self.learned_hyper_),
                                           "rule_column": self.rule_column_, "rule_lambda": self.rule_lambda_},
                       {"root": self.root_, "stop": self.stop_, "attach": self.attach_,
                        **{f"counts_{k}": v for k, v in self.counts_.items()}})

    @classmethod
    def load(cls, path) -> "DMVParser":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        meta, arrays = modelfile.load(path, "DMVParser", cls._schema)
        with modelfile.reading(path, "header"):
            model = cls._from_params(meta["params"])
            model.tags_, model.history_ = list(meta["tags"]), meta["history"]
            if UNK not in model.tags_:
                raise ValueError(f"the tag list lacks {UNK!r}")
        model.root_, model.stop_, model.attach_ = arrays["root"], arrays["stop"], arrays["attach"]
        model.counts_ = {k: arrays[f"counts_{k}"] for k in ("root", "stop", "attach")}
        model.n_iter_ = len(model.history_) - 1
        model.converged_ = meta.get("converged", False)
        model.warnings_ = meta.get("warnings", [])
        alpha = DEFAULT_ALPHA if model.alpha is None else model.alpha
        model.alpha_ = {family: float(meta.get("alpha", {}).get(family, alpha)) for family in FAMILIES}
        model.learned_hyper_ = tuple(meta.get("learned_hyper", ()))
        model.rule_column_, model.rule_lambda_ = meta.get("rule_column"), float(meta.get("rule_lambda", 0.0))
        return model


def collapse_warnings(heads: np.ndarray, offsets: np.ndarray) -> list[str]:
    """Lines describing degenerate Viterbi trees (flat or chains), also issued as :class:`FitWarning`.

    Over sentences of at least 3 words, with ``r`` the root word of each: *flat* when
    at least ``FLAT_SHARE`` of the other words have head ``r``; *chain* when at least
    ``CHAIN_SHARE`` of them have head ``i - 1`` (left-branching) or ``i + 1``
    (right-branching), whichever is more frequent.  ``heads`` are 1-based, 0 = root.
    """
    lengths = np.diff(offsets)
    sentence = np.repeat(np.arange(len(lengths)), lengths)
    keep = (lengths >= 3)[sentence] & (heads != 0)
    if not keep.any():
        return []
    position = np.arange(len(heads)) - offsets[sentence] + 1
    root_word = np.zeros(len(lengths), dtype=np.int64)
    roots = np.flatnonzero(heads == 0)
    root_word[sentence[roots]] = position[roots]
    flat = np.mean(heads[keep] == root_word[sentence[keep]])
    chain = max(np.mean(heads[keep] == position[keep] - 1), np.mean(heads[keep] == position[keep] + 1))
    messages = []
    if flat >= FLAT_SHARE:
        messages.append(f"dmv collapsed: {flat:.0%} of the words are dependents of their sentence's root word (flat trees)")
    if chain >= CHAIN_SHARE:
        messages.append(f"dmv collapsed: {chain:.0%} of the words attach to their neighbour in one direction (chains)")
    for message in messages:
        warnings.warn(message, FitWarning, stacklevel=3)
    return messages


def tree_counts(tags: np.ndarray, heads: np.ndarray, offsets: np.ndarray,
                n_tags: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts ``root (T,)``, ``stop (T, 2, 2, 2)``, ``attach (T, 2, T)`` of the DMV decisions of one tree per sentence.

    ``heads`` are 1-based within the sentence (0 = root).  A head with ``k``
    dependents on side ``d`` makes (Klein & Manning 2004) one CONTINUE at valence
    0 when ``k > 0``, ``k - 1`` CONTINUEs at valence 1, then one STOP at valence 0
    (``k = 0``) or 1, and draws the ``k`` dependents' tags from ``attach[h, d]``.
    """
    lengths = np.diff(offsets)
    start = np.repeat(offsets[:-1], lengths)
    dependent = np.flatnonzero(heads > 0)
    head = start[dependent] + heads[dependent] - 1
    side = (dependent > head).astype(np.int64)  # LEFT 0, RIGHT 1
    root = np.bincount(tags[heads == 0], minlength=n_tags).astype(np.float64)
    attach = np.zeros((n_tags, 2, n_tags))
    np.add.at(attach, (tags[head], side, tags[dependent]), 1.0)
    k = np.zeros((len(tags), 2))
    np.add.at(k, (head, side), 1.0)
    stop = np.zeros((n_tags, 2, 2, 2))
    for d in (kdmv.LEFT, kdmv.RIGHT):
        np.add.at(stop[:, d, 0, kdmv.CONT], tags, k[:, d] > 0)
        np.add.at(stop[:, d, 1, kdmv.CONT], tags, np.maximum(k[:, d] - 1, 0))
        np.add.at(stop[:, d, 0, kdmv.STOP], tags, k[:, d] == 0)
        np.add.at(stop[:, d, 1, kdmv.STOP], tags, k[:, d] > 0)
    return root, stop, attach


def _dirichlet_rows(rng, shape) -> np.ndarray:
    x = rng.gamma(1.0, size=shape)
    return x / x.sum(axis=-1, keepdims=True)


class _Counts:
    """Tag-indexed expected count tables, and per-position counts for CVI."""

    def __init__(self, n_tags: int, tags: np.ndarray, offsets: np.ndarray, rules: tuple | None = None):
        self.tags, self.offsets = tags, offsets
        # universal rules: per-token classes, rule matrix, and the constraint's multiplier lambda
        self.rules = rules
        self.ucls, self.rule_matrix = rules if rules is not None else (np.zeros(len(tags), np.int32), np.zeros((1, 1)))
        self.rule_lambda = 0.0
        lengths = np.diff(offsets)
        self.sq_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths * lengths, out=self.sq_offsets[1:])
        self.root = np.zeros(n_tags)
        self.stop = np.zeros((n_tags, 2, 2, 2))
        self.attach = np.zeros((n_tags, 2, n_tags))
        self.attach_totals = np.zeros((n_tags, 2))
        self.root_total = np.zeros(1)

    def params(self, estimator: str, priors):
        """Parameters of the root, stop and attach tables under their priors (one value, or one per family)."""
        priors = np.broadcast_to(np.asarray(priors, dtype=np.float64), (3,))
        return tuple(params_from_counts(estimator, c, p) for c, p in zip((self.root, self.stop, self.attach), priors))

    def estep(self, root_p, stop_p, attach_p) -> float:
        """Expected counts under fixed parameters (biased by the rules' multiplier); keeps the per-position counts."""
        n_tok = len(self.tags)
        pos_root, pos_stop, pos_att = np.zeros(n_tok), np.zeros((n_tok, 2, 2, 2)), np.zeros(self.sq_offsets[-1])
        ll = kdmv.position_counts_pass(self.tags, self.offsets, self.sq_offsets, root_p, stop_p, attach_p,
                                       pos_root, pos_stop, pos_att, self.ucls, self.rule_matrix,
                                       math.exp(self.rule_lambda))
        for table in (self.root, self.stop, self.attach, self.attach_totals, self.root_total):
            table[...] = 0.0
        kdmv.tables_from_positions(self.tags, self.offsets, self.sq_offsets, pos_root, pos_stop, pos_att,
                                   self.root, self.stop, self.attach, self.attach_totals, self.root_total)
        self.pos = (pos_root, pos_stop, pos_att)
        return ll

    def cvi_pass(self, order: np.ndarray, priors) -> float:
        priors = np.array(np.broadcast_to(np.asarray(priors, dtype=np.float64), (3,)))
        return kdmv.cvi_pass(self.tags, self.offsets, self.sq_offsets, order, self.root, self.stop, self.attach,
                             self.attach_totals, self.root_total, *self.pos, priors, self.ucls, self.rule_matrix,
                             math.exp(self.rule_lambda))

    def step_rules(self, share: float) -> dict:
        """Projected dual ascent on the rule constraint ``E_q[f] / N >= share`` (Ganchev et al. 2010, eq. 7):
        ``lambda <- clip(lambda + RULE_STEP (share - E_q[f] / N), 0, RULE_MAX_LAMBDA)`` from the last pass's counts;
        returns the trace fields ``rule_share`` (the share reached) and ``rule_lambda`` (the new multiplier)."""
        if self.rules is None:
            return {}
        reached = kdmv.rule_arcs(self.ucls, self.offsets, self.sq_offsets, self.pos[0], self.pos[2],
                                 self.rule_matrix) / len(self.tags)
        self.rule_lambda = min(max(0.0, self.rule_lambda + RULE_STEP * (share - reached)), RULE_MAX_LAMBDA)
        return {"rule_share": reached, "rule_lambda": self.rule_lambda}

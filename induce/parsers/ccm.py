"""The constituent-context model (Klein & Manning 2002) with EM, VI and CVI.

Model (K&M 2002, eq. 1; chart in :mod:`induce.kernels.ccm`): a sentence of tags
and a binary bracketing ``B`` drawn uniformly; every span ``[i, j)`` is a
constituent or a distituent of ``B`` and generates its yield (the tag
subsequence) and its context (the tags just outside, ``<s>`` / ``</s>`` at the
sentence edges) from the constituent or the distituent multinomials; the
``n + 1`` empty spans are distituents of every tree (K&M 2002, Figure 2).  Yields
and contexts are the items seen in training plus one unknown item each.

Priors: symmetric Dirichlets, ``constituent_prior`` (``a_c``) on both
constituent multinomials and ``distituent_prior`` (``a_d``) on both distituent
ones.  K&M smooth by adding pseudo-counts to every yield and context, 2 as a
constituent and 8 as a distituent ("a small number of pseudo-counts ... with a
heavier weight on distituents", K&M 2002 section 3): that is the posterior mean
``(C + a) / (C. + V a)`` under these priors with ``a = (2, 8)``, the defaults.

Inference:

* ``em``  -- batch E-step, then the smoothed estimate ``(C + a) / (C. + V a)``
  (K&M's; it is the MAP estimate under ``Dir(a + 1)``, so the objective that
  cannot decrease is ``log P(S) + sum a log theta``, which is what ``history_``
  records; with ``a = 0`` it is the likelihood);
* ``vi``  -- batch E-step with ``exp(psi(C + a) - psi(C. + V a))`` (thesis eq.
  3.21-3.22); ``history_`` records the ELBO ``log Z~ - KL(q(theta) || p(theta))``;
* ``cvi`` -- per sentence: subtract its expected counts, recompute its span
  posteriors under ``(C^{\\i} + a) / (C^{\\i}. + V a)``, add back (thesis eq.
  3.49-3.50); ``history_`` records the sum of the surrogate log-probabilities.

Initialisation (``init``): the counts of a tree distribution without
parameters, K&M's start -- ``"split"`` (default: every span splits at a
uniformly chosen point, K&M 2002's "split-uniform" trees) or ``"tree"``
(uniform over binary trees) -- then the algorithm's parameters from them.

Decoding (``decode``): ``"viterbi"`` (the most probable bracketing) or
``"mbr"`` (the bracketing with the most expected constituents).  Stopping as
the DMV: ``n_iter`` is a cap, ``tol`` the relative change held for 3 passes.
"""

from __future__ import annotations

import time

import numpy as np
from nltk import Tree
from ..progress import ProgressBar as tqdm

from ..base import Boolean, InduceEstimator, Integer, NotFittedError, Options, Real, Seed
from ..corpus.corpus import as_corpus
from ..infer.convergence import ConvergenceMonitor
from ..infer.estimators import cvi_params, dirichlet_kl, vi_params
from ..kernels import ccm as kccm
from .params import column

ALGORITHMS = ("em", "vi", "cvi")
INITS = ("split", "tree")
DECODERS = ("viterbi", "mbr")
#: K&M 2002's pseudo-counts: constituent 2, distituent 8
CONSTITUENT_PRIOR, DISTITUENT_PRIOR = 2.0, 8.0
MAX_ITER = 200
TOL = 1e-6


class SpanTable:
    """Yield and context ids of every span of every sentence: the ``n (n + 1) / 2`` non-empty spans in
    :func:`induce.kernels.ccm.tri` order, then the ``n + 1`` empty ones.

    ``yields`` / ``contexts`` map byte keys to ids, id 0 being the unknown item;
    with ``grow`` new items get new ids, otherwise they map to 0.
    """

    def __init__(self, tags: np.ndarray, offsets: np.ndarray, n_tags: int, yields: dict, contexts: dict,
                 grow: bool):
        self.lengths = np.diff(offsets).astype(np.int64)
        self.soff = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum((self.lengths + 1) * (self.lengths + 2) // 2, out=self.soff[1:])
        self.yid = np.zeros(self.soff[-1], dtype=np.int64)
        self.cid = np.zeros(self.soff[-1], dtype=np.int64)
        edge = np.array([n_tags], dtype=np.int32)
        t = 0
        for s in range(len(self.lengths)):
            seq = tags[offsets[s]:offsets[s + 1]].astype(np.int32)
            padded = np.concatenate([edge, seq, edge + 1]).tobytes()
            words, n = seq.tobytes(), len(seq)
            spans = [(i, j) for i in range(n) for j in range(i + 1, n + 1)] + [(i, i) for i in range(n + 1)]
            for i, j in spans:
                self.yid[t] = _lookup(yields, words[4 * i:4 * j], grow)
                self.cid[t] = _lookup(contexts, padded[4 * i:4 * i + 4] + padded[4 * j + 4:4 * j + 8], grow)
                t += 1


def _lookup(table: dict, key: bytes, grow: bool) -> int:
    found = table.get(key)
    if found is None:
        if not grow:
            return 0
        found = table[key] = len(table) + 1
    return found


class CCMParser(InduceEstimator):
    """Unsupervised binary bracketing of tag sequences (constituent-context model).

    Parameters
    ----------
    infer : ``"em"`` (default, K&M's), ``"vi"`` or ``"cvi"``.
    constituent_prior, distituent_prior : Dirichlet pseudo-counts of the constituent and distituent
        multinomials (K&M's 2 and 8).
    n_iter : maximum passes; tol : relative change below which (3 passes) the run stops.
    init : ``"split"`` or ``"tree"`` (module docstring); decode : ``"viterbi"`` or ``"mbr"``.
    tag_column : the tag column read (``None``: the words).
    random_state : seed of CVI's sentence order.
    """

    _parameter_constraints = {
        "infer": Options(*ALGORITHMS), "constituent_prior": Real(0.0, min_open=True),
        "distituent_prior": Real(0.0, min_open=True), "n_iter": Integer(0), "tol": Real(0.0),
        "init": Options(*INITS), "decode": Options(*DECODERS), "random_state": Seed(), "verbose": Boolean(),
    }

    def __init__(self, infer: str = "em", constituent_prior: float = CONSTITUENT_PRIOR,
                 distituent_prior: float = DISTITUENT_PRIOR, n_iter: int = MAX_ITER, tol: float = TOL,
                 init: str = "split", decode: str = "viterbi", tag_column: str | None = None,
                 random_state: int | None = None, verbose: bool = False):
        self.infer = infer
        self.constituent_prior = constituent_prior
        self.distituent_prior = distituent_prior
        self.n_iter = n_iter
        self.tol = tol
        self.init = init
        self.decode = decode
        self.tag_column = tag_column
        self.random_state = random_state
        self.verbose = verbose

    # -------------------------------------------------------------------- fit
    def _table(self, X, grow: bool) -> SpanTable:
        corpus = as_corpus(X)
        ids, vocab = column(corpus, self.tag_column)
        if grow:
            self.tags_ = list(vocab.itos)
            self.yields_, self.contexts_ = {}, {}
        elif not hasattr(self, "tags_"):
            raise NotFittedError.of(self)
        tags = tag_ids(ids, vocab, self.tags_, unseen=len(self.tags_) + 2)  # past the two boundary symbols
        return SpanTable(tags, corpus.offsets, len(self.tags_), self.yields_, self.contexts_, grow)

    def fit(self, X, y=None) -> "CCMParser":
        """Fit to the (tag) sequences of ``X``; sets ``history_``, ``n_iter_``, ``converged_``, ``warnings_``."""
        corpus = as_corpus(X)
        corpus = corpus.subset(np.nonzero(corpus.lengths > 0)[0])
        table = self._table(corpus, grow=True)
        state = SpanCounts(table, len(self.yields_) + 1, len(self.contexts_) + 1)
        state.initial(self.init)
        rng = np.random.default_rng(self.random_state)
        priors = np.array([self.constituent_prior, self.distituent_prior], dtype=np.float64)
        monitor = ConvergenceMonitor(self.tol, monotone=self.infer != "cvi")
        self.history_, self.n_iter_ = [], 0
        bar = tqdm(range(1, self.n_iter + 1), desc=f"ccm {self.infer}", disable=not self.verbose, leave=False)
        for it in bar:
            t0 = time.perf_counter()
            if self.infer == "cvi":
                objective = state.cvi_pass(rng.permutation(len(table.lengths)), priors)
            else:
                objective = state.batch_pass(self.infer, priors)
            self.history_.append({"iteration": it, "seconds": time.perf_counter() - t0, "objective": objective})
            bar.set_postfix(objective=f"{objective:.1f}")
            self.n_iter_ = it
            if monitor.update(objective) or monitor.diverged:
                break
        bar.close()
        self.logs_ = state.logs("em" if self.infer == "em" else "cvi", priors)
        self.counts_ = state.tables()
        self.converged_ = monitor.converged
        self.warnings_ = monitor.finish(f"ccm {self.infer}", self.n_iter_, self.n_iter)
        return self

    # -------------------------------------------------------------- decoding
    def predict_spans(self, X) -> list[np.ndarray]:
        """Per sentence, its ``2n - 1`` constituent spans ``(i, j)`` (preorder rows of an int array)."""
        table = self._table(X, grow=False)
        toff = np.zeros(len(table.lengths) + 1, dtype=np.int64)
        np.cumsum(np.maximum(2 * table.lengths - 1, 0), out=toff[1:])
        left, right = np.zeros(toff[-1], dtype=np.int64), np.zeros(toff[-1], dtype=np.int64)
        kccm.decode_pass(table.yid, table.cid, table.soff, table.lengths, toff, *self.logs_,
                         self.decode == "mbr", left, right)
        return [np.stack([left[a:b], right[a:b]], axis=1) for a, b in zip(toff[:-1], toff[1:])]

    def parse(self, X) -> list[Tree]:
        """The decoded bracketing of each sentence as an ``nltk.Tree`` (nodes ``X``, preterminals the tags
        read, or ``X`` when the model reads words)."""
        corpus = as_corpus(X)
        trees = []
        for s, spans in enumerate(self.predict_spans(corpus)):
            words = corpus.words(s)
            tags = corpus.tag_strings(self.tag_column, s) if self.tag_column else ["X"] * len(words)
            trees.append(spans_to_tree(spans, words, tags))
        return trees

    def log_likelihood(self, X) -> np.ndarray:
        """``log P(S)`` per sentence under the fitted (point) parameters."""
        table = self._table(X, grow=False)
        out = np.zeros(len(table.lengths))
        kccm.log_likelihood_pass(table.yid, table.cid, table.soff, table.lengths, *self.logs_, out)
        return out

    def score(self, X, y=None) -> float:
        return float(self.log_likelihood(X).sum())


def tag_ids(ids: np.ndarray, vocab, tags: list[str], unseen: int) -> np.ndarray:
    """The token tag ids ``ids`` (over ``vocab``) as ids of the fitted symbol table ``tags``; tags the table
    lacks get ``unseen``."""
    index = {s: i for i, s in enumerate(tags)}
    lut = np.fromiter((index.get(s, unseen) for s in vocab.itos), dtype=np.int32, count=len(vocab))
    return lut[ids] if len(ids) else np.zeros(0, dtype=np.int32)


def spans_to_tree(spans: np.ndarray, words: list[str], tags: list[str]) -> Tree:
    """The binary ``nltk.Tree`` whose constituents are ``spans`` (rows ``(i, j)``, the whole sentence first)."""
    if len(words) == 0:
        return Tree("X", [])
    split = {}
    for i, j in spans.tolist():
        split.setdefault(i, []).append(j)

    def build(i: int, j: int) -> Tree:
        if j - i == 1:
            return Tree(tags[i], [words[i]])
        k = max(e for e in split[i] if e < j)
        return Tree("X", [build(i, k), build(k, j)])

    tree = build(0, len(words))
    return tree if len(words) > 1 else Tree("X", [tree])


class SpanCounts:
    """Expected count tables (constituent / distituent yields and contexts) and the span posteriors."""

    def __init__(self, table: SpanTable, n_yields: int, n_contexts: int):
        self.table = table
        self.cy, self.dy = np.zeros(n_yields), np.zeros(n_yields)
        self.cx, self.dx = np.zeros(n_contexts), np.zeros(n_contexts)
        self.totals = np.zeros(2)
        self.post = np.zeros(table.soff[-1])

    def tables(self) -> dict:
        return {"constituent_yield": self.cy.copy(), "distituent_yield": self.dy.copy(),
                "constituent_context": self.cx.copy(), "distituent_context": self.dx.copy()}

    def _reset(self) -> None:
        for a in (self.cy, self.dy, self.cx, self.dx, self.totals):
            a[...] = 0.0

    def initial(self, init: str) -> None:
        """Counts of the parameter-free start: split-uniform or uniform-tree span posteriors."""
        kccm.start_pass(self.table.soff, self.table.lengths, init == "split", self.post)
        self.recount()

    def recount(self) -> None:
        """The count tables of the current span posteriors."""
        self._reset()
        t = self.table
        kccm.counts_pass(t.yid, t.cid, t.soff, self.post, self.cy, self.dy, self.cx, self.dx, self.totals)

    def rows(self, priors: np.ndarray) -> list[tuple[np.ndarray, float]]:
        """The four count tables ``(cy, dy, cx, dx)``, each with its prior (``a_c``, ``a_d``, ``a_c``, ``a_d``)."""
        return list(zip((self.cy, self.dy, self.cx, self.dx), (priors[0], priors[1], priors[0], priors[1])))

    def logs(self, estimator: str, priors: np.ndarray) -> tuple[np.ndarray, ...]:
        """Log parameters ``(lcy, ldy, lcx, ldx)``: posterior means (em's smoothed estimate, cvi) or vi's weights."""
        make = vi_params if estimator == "vi" else cvi_params
        return tuple(np.log(make(c, a)) for c, a in self.rows(priors))

    def batch_pass(self, estimator: str, priors: np.ndarray) -> float:
        """One em / vi iteration: parameters from the counts, then a batch E-step; returns the objective."""
        logs = self.logs(estimator, priors)
        if estimator == "em":
            penalty = sum(a * float(np.sum(lg)) for (_, a), lg in zip(self.rows(priors), logs))
        else:
            penalty = -sum(dirichlet_kl(c + a, a) for c, a in self.rows(priors))
        self._reset()
        t = self.table
        ll = kccm.estep_pass(t.yid, t.cid, t.soff, t.lengths, *logs, self.post, self.cy, self.dy, self.cx,
                             self.dx, self.totals)
        return ll + penalty

    def cvi_pass(self, order: np.ndarray, priors: np.ndarray) -> float:
        t = self.table
        return kccm.cvi_pass(order, t.yid, t.cid, t.soff, t.lengths, self.post, self.cy, self.dy, self.cx,
                             self.dx, self.totals, priors)

"""DMV+CCM: the product of the DMV and the CCM (Klein & Manning 2004), trained by EM.

Each dependency tree ``D`` of a sentence is scored by ``P_DMV(D) P_CCM(S, B)``
with ``B`` the binary bracketing of a head-outward derivation of ``D``
(``order``: ``"right-first"``, the default, ``"left-first"`` or ``"any"``
interleaving; :mod:`induce.kernels.dmv_ccm`).  On WSJ10 right-first brackets
best (K&M F1 70.3, directed 43.5) and left-first attaches best (47.2, 61.5;
docs/experiments/ccm.md).  The E-step is exact over
that product: one chart over headed spans gives the DMV's expected root, stop
and attachment counts and the CCM's span posteriors under the product; the
M-step re-estimates each model from its own counts (the DMV by maximum
likelihood as its ``em``, the CCM with K&M's pseudo-counts as
:class:`~induce.parsers.ccm.CCMParser`).  Since the product is a function of
normalised multinomials with fixed per-tree exponents, this EM cannot decrease
``log sum_D P_DMV P_CCM + sum a log theta_CCM``, which ``history_`` records.

Initialisation: the DMV from K&M's harmonic counts, the CCM from the
split-uniform tree distribution, as each model starts alone.  Decoding: the
best tree under the product gives both the heads and the bracketing.  The
chart is the DMV's O(n^5) one, so this suits sentences of up to a few dozen
words (WSJ10 in about a second per pass).
"""

from __future__ import annotations

import time

import numpy as np
from ..progress import ProgressBar as tqdm

from ..base import Boolean, InduceEstimator, Integer, Options, Real
from ..corpus.corpus import as_corpus
from ..infer.convergence import ConvergenceMonitor
from ..infer.estimators import em_params
from ..kernels import ccm as kccm
from ..kernels import dmv as kdmv
from ..kernels import dmv_ccm as kprod
from .ccm import CONSTITUENT_PRIOR, DISTITUENT_PRIOR, CCMParser, SpanCounts, spans_to_tree, tag_ids

#: ``right-first``: a head takes its right dependents, then its left ones (one bracketing per dependency
#: tree); ``left-first`` the reverse; ``any``: every interleaving, i.e. every binary bracketing consistent
#: with the dependency tree (the sum runs over both)
ORDERS = {"right-first": kprod.RIGHT_FIRST, "left-first": kprod.LEFT_FIRST, "any": kprod.ANY}
MAX_ITER = 100
TOL = 1e-6


class DMVCCMParser(InduceEstimator):
    """Dependency trees and bracketings from the DMV x CCM product model (EM).

    Parameters
    ----------
    order : the attachment orders whose bracketings count (:data:`ORDERS`, module docstring).
    constituent_prior, distituent_prior : the CCM's pseudo-counts (K&M's 2 and 8).
    n_iter : maximum passes; tol : relative change below which (3 passes) the run stops.
    tag_column : the tag column read (``None``: the words).
    """

    _parameter_constraints = {
        "order": Options(*ORDERS), "constituent_prior": Real(0.0, min_open=True), "distituent_prior": Real(0.0, min_open=True),
        "n_iter": Integer(0), "tol": Real(0.0), "verbose": Boolean(),
    }

    def __init__(self, order: str = "right-first", constituent_prior: float = CONSTITUENT_PRIOR, distituent_prior: float = DISTITUENT_PRIOR,
                 n_iter: int = MAX_ITER, tol: float = TOL, tag_column: str | None = None,
                 verbose: bool = False):
        self.order = order
        self.constituent_prior = constituent_prior
        self.distituent_prior = distituent_prior
        self.n_iter = n_iter
        self.tol = tol
        self.tag_column = tag_column
        self.verbose = verbose

    def _ccm(self) -> CCMParser:
        return CCMParser(constituent_prior=self.constituent_prior, distituent_prior=self.distituent_prior,
                         tag_column=self.tag_column)

    def _tags(self, corpus) -> np.ndarray:
        """The tag ids of the CCM's symbol table (unseen tags share one id past the table)."""
        from .params import column

        ids, vocab = column(corpus, self.tag_column)
        return tag_ids(ids, vocab, self.ccm_.tags_, unseen=len(self.ccm_.tags_))

    def fit(self, X, y=None) -> "DMVCCMParser":
        """Fit both models to the (tag) sequences of ``X``; sets ``history_``, ``n_iter_``, ``converged_``."""
        corpus = as_corpus(X)
        corpus = corpus.subset(np.nonzero(corpus.lengths > 0)[0])
        self.ccm_ = self._ccm()
        table = self.ccm_._table(corpus, grow=True)
        tags, offsets = self._tags(corpus), corpus.offsets
        n_tags = len(self.ccm_.tags_) + 1
        ccm = SpanCounts(table, len(self.ccm_.yields_) + 1, len(self.ccm_.contexts_) + 1)
        ccm.initial("split")
        dmv = [np.zeros(n_tags), np.zeros((n_tags, 2, 2, 2)), np.zeros((n_tags, 2, n_tags))]
        kdmv.harmonic_counts(tags, offsets, *dmv)
        priors = np.array([self.constituent_prior, self.distituent_prior])
        monitor = ConvergenceMonitor(self.tol, monotone=True)
        self.history_, self.n_iter_ = [], 0
        for it in tqdm(range(1, self.n_iter + 1), desc="dmv+ccm em", disable=not self.verbose, leave=False):
            t0 = time.perf_counter()
            self.dmv_ = tuple(em_params(c) for c in dmv)
            logs = ccm.logs("em", priors)
            penalty = sum(a * float(np.sum(lg)) for (_, a), lg in zip(ccm.rows(priors), logs))
            for c in dmv:
                c[...] = 0.0
            ccm.post[...] = 0.0
            objective = penalty + kprod.product_pass(tags, offsets, table.yid, table.cid, table.soff, *logs,
                                                     *self.dmv_, False, ORDERS[self.order], *dmv, ccm.post, np.zeros(len(tags), np.int32))
            ccm.recount()
            self.history_.append({"iteration": it, "seconds": time.perf_counter() - t0, "objective": objective})
            self.n_iter_ = it
            if monitor.update(objective):
                break
        self.dmv_ = tuple(em_params(c) for c in dmv)
        self.ccm_.logs_ = ccm.logs("em", priors)
        self.converged_ = monitor.converged
        self.warnings_ = monitor.finish("dmv+ccm em", self.n_iter_, self.n_iter)
        return self

    def _best(self, X):
        corpus = as_corpus(X)
        table = self.ccm_._table(corpus, grow=False)
        tags = self._tags(corpus)
        heads, post = np.zeros(len(tags), dtype=np.int32), np.zeros(table.soff[-1])
        n_tags = len(self.ccm_.tags_) + 1
        scratch = (np.zeros(n_tags), np.zeros((n_tags, 2, 2, 2)), np.zeros((n_tags, 2, n_tags)))
        kprod.product_pass(tags, corpus.offsets, table.yid, table.cid, table.soff, *self.ccm_.logs_, *self.dmv_,
                           True, ORDERS[self.order], *scratch, post, heads)
        return corpus, table, heads, post

    def predict_flat(self, X) -> np.ndarray:
        """The best product tree's heads, one int32 array over the tokens (1-based in the sentence, 0 = root)."""
        return self._best(X)[2]

    def parse_both(self, X):
        """``(heads per sentence, nltk.Tree per sentence)`` of the best tree under the product."""
        corpus, table, heads, post = self._best(X)
        trees = []
        for s in range(corpus.n_sentences):
            n = int(table.lengths[s])
            block = post[table.soff[s]:table.soff[s + 1]]
            spans = np.array([(i, j) for i in range(n) for j in range(i + 1, n + 1) if block[kccm.tri(i, j, n)] > 0.5])
            words = corpus.words(s)
            tags = corpus.tag_strings(self.tag_column, s) if self.tag_column else ["X"] * len(words)
            trees.append(spans_to_tree(spans, words, tags))
        return corpus.split(heads), trees

    def parse(self, X):
        """The bracketings of the best product trees (``nltk.Tree``)."""
        return self.parse_both(X)[1]

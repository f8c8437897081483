"""Treebank PCFGs with latent annotations (PCFG-LA) trained by EM, VI or CVI (thesis section 4.5.3).

Every symbol ``A`` of the binarised treebank grammar (:mod:`.treebank`) is split
into ``H`` latent subtypes ``A[0..H-1]`` (Matsuzaki et al. 2005); the rules are
``A[a] -> B[b] C[c]``, ``A[a] -> w`` and ``ROOT -> A[a]``, each ``A[a]`` one
categorical over the annotated versions of the unsplit rules ``R_A`` seen in
the treebank (``|R_A| H^2`` binary plus the lexical outcomes).

Training (the tree skeletons are observed, :mod:`induce.kernels.latent_tree`):

* the starting point ``theta0`` (thesis section 4.5.3): the relative-frequency
  treebank PCFG split evenly into subtypes, each parameter times
  ``1 + init_noise * U(-1, 1)`` (1%), renormalised; its expected counts
  ``C0`` start every algorithm;
* ``em``  -- ``theta = C / C_A.`` then a batch E-step (eq. 4.5-4.10);
* ``vi``  -- ``theta = exp(psi(C + a)) / exp(psi(C_A. + |R_A| a))`` then a batch E-step (eq. 4.12);
* ``cvi`` -- per tree: subtract its expected annotated counts, run inside-outside
  with ``(C^{\\t} + a) / (C^{\\t}_A. + |R_A| a)``, add the new counts back
  (eq. 4.24 on annotated rules).

Passes stop when the relative change of the training log-likelihood falls
below ``tol`` (from pass ``min_iter`` on) or after ``n_iter`` passes.  The fitted parameters are the MLE
for ``em`` and the posterior mean ``(C + a) / (C_A. + |R_A| a)`` for ``vi`` and
``cvi``.  With a development treebank and a list of priors, ``fit`` trains one
grammar per ``alpha`` and keeps the one with the best dev F1 (thesis: alpha in
{1, 0.1, 0.01, 0.001} on the dev set).

Parsing (:mod:`induce.kernels.latent_chart`): a coarse pass with the unsplit
relative-frequency grammar computes the posterior of every item ``(i, j, A)``;
items below ``prune`` are removed, and the split grammar is parsed on what is
left (coarse-to-fine, Petrov & Klein 2007) by max-rule-sum (default) or
Viterbi over annotated derivations.  Memory: CVI keeps every tree's per-node
expected counts, ``H^3`` float32 per binary node.
"""

from __future__ import annotations

import copy
import hashlib
import math
import time
from typing import NamedTuple, Sequence

import numpy as np
from nltk import Tree
from ..progress import ProgressBar as tqdm

from .. import modelfile
from ..base import AnyOf, Boolean, InduceEstimator, Integer, Items, Options, Real, Seed
from ..corpus.corpus import Corpus
from ..errors import ConfigError
from ..resources import check_memory, corpus_source, latent_chart_bytes, sentence_label
from ..infer.estimators import params_from_counts
from ..kernels import latent_chart as lc
from ..kernels import latent_tree as lt
from ..kernels.inside_outside import NODE_COLS
from ..modelfile import Field
from .treebank import PARENT_MARK, UNARY_JOIN, Lexicon, binarize, debinarize
from .trees import nodes_to_tree

ALGORITHMS = ("em", "vi", "cvi")
from ..names import LATENT_PCFG_DECODERS as DECODERS
#: the dev-set grid of thesis section 4.5.3
PRIOR_GRID = (1.0, 0.1, 0.01, 0.001)


class CoarsePruning(NamedTuple):
    """Result of the coarse (unsplit grammar) pass over a list of sentences: ``key`` fingerprints the
    coarse grammar, ``prune`` and the sentences; ``charts[s] = (Z, items)``, the scaled sentence
    probability and the flat chart indices of the items kept for the fine pass."""

    key: str
    charts: list[tuple[float, np.ndarray]]


def as_trees(X, what: str = "training data") -> list[Tree]:
    """Gold trees of a :class:`Corpus` read from a treebank, or a list of ``nltk.Tree``."""
    if isinstance(X, Corpus):
        if X.sentences is None or any(s.tree is None for s in X.sentences):
            raise ConfigError(f"{what}: PCFG-LA training needs a treebank (bracketed trees, e.g. PTB .mrg)")
        return [s.tree for s in X.sentences]
    trees = list(X)
    if not all(isinstance(t, Tree) for t in trees):
        raise ConfigError(f"{what}: expected nltk.Tree objects or a treebank corpus")
    return trees


def as_sentences(X) -> tuple[list[list[str]], list[list[str]] | None]:
    """Words (and gold POS tags, when present) of a Corpus, a list of trees or a list of token lists."""
    if isinstance(X, Corpus):
        words = [X.words(i) for i in range(X.n_sentences)]
        column = next((c for c in ("pos", "xpos") if c in X.tags), None)  # PTB tags (CoNLL-U: XPOS)
        tags = [X.tag_strings(column, i) for i in range(X.n_sentences)] if column else None
        return words, tags
    items = list(X)
    if items and isinstance(items[0], Tree):
        pairs = [t.pos() for t in items]
        return [[w for w, _ in p] for p in pairs], [[t for _, t in p] for p in pairs]
    return [list(s) for s in items], None


class LatentPCFGParser(InduceEstimator):
    """PCFG-LA treebank parser trained with ``em``, ``vi`` or ``cvi``.

    Parameters
    ----------
    n_subtypes : ``H``, latent subtypes per symbol (1 = the plain treebank PCFG).
    infer : ``"em"``, ``"vi"`` or ``"cvi"``.
    alpha : Dirichlet hyperparameter (vi/cvi), or a sequence of values to choose from on ``dev`` in :meth:`fit`.
    n_iter : at most this many passes; ``tol`` : stop when the log-likelihood changes by less (relative),
        checked from pass ``min_iter`` on (the nearly symmetric split start changes slowly at first).
    horizontal, vertical : markovisation orders of the binarisation (:func:`.treebank.binarize`).
    min_count : training words seen fewer times become unknown-word signatures.
    init_noise : relative perturbation of the split parameters (0.01 = 1%).
    prune : coarse posterior below which chart items are pruned.
    decode : ``"max-rule-sum"`` or ``"viterbi"``.
    random_state : seed of the perturbation and of CVI's tree order.
    """

    _parameter_constraints = {
        "n_subtypes": Integer(1), "infer": Options(*ALGORITHMS),
        "alpha": AnyOf(Real(0.0, min_open=True), Items(Real(0.0, min_open=True))), "n_iter": Integer(0),
        "tol": Real(0.0), "min_iter": Integer(0), "horizontal": Integer(0), "vertical": Integer(1),
        "min_count": Integer(0), "init_noise": Real(0.0), "prune": Real(0.0), "decode": Options(*DECODERS),
        "random_state": Seed(), "verbose": Boolean(),
    }

    def __init__(self, n_subtypes: int = 2, infer: str = "em", alpha: float | Sequence[float] = 1.0,
                 n_iter: int = 100, tol: float = 1e-4, min_iter: int = 20, horizontal: int = 1, vertical: int = 1,
                 min_count: int = 2,
                 init_noise: float = 0.01, prune: float = 1e-4, decode: str = "max-rule-sum",
                 random_state: int | None = 0, verbose: bool = False):
        self.n_subtypes = n_subtypes
        self.infer = infer
        self.alpha = alpha
        self.n_iter = n_iter
        self.tol = tol
        self.min_iter = min_iter
        self.horizontal = horizontal
        self.vertical = vertical
        self.min_count = min_count
        self.init_noise = init_noise
        self.prune = prune
        self.decode = decode
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ validation
    def _priors(self) -> list[float]:
        """The candidate priors: ``alpha``, or each of a sequence of them."""
        return [float(p) for p in (self.alpha if isinstance(self.alpha, (list, tuple)) else [self.alpha])]

    # ------------------------------------------------------------ the grammar
    def _read_treebank(self, trees: list[Tree]) -> tuple[np.ndarray, np.ndarray]:
        """Rule inventory, lexicon and node arrays (:mod:`induce.kernels.latent_tree`) of the training trees."""
        self.lexicon_ = Lexicon.from_sentences([t.leaves() for t in trees], self.min_count)
        symbols: dict[str, int] = {}
        terminals: dict[str, int] = {}
        bin_rules: dict[tuple[int, int, int], int] = {}
        lex_rules: dict[tuple[int, int], int] = {}
        rows: list[tuple[int, int, int, int, int]] = []
        offsets = [0]
        slots = [0, 0]

        def sym(label: str) -> int:
            return symbols.setdefault(label, len(symbols))

        for tree in trees:
            cnf = binarize(tree, self.horizontal, self.vertical)
            terms = iter(self.lexicon_.terminals(tree.leaves()))
            base = len(rows)

            def visit(node) -> int:
                me = len(rows)
                rows.append((0, 0, 0, 0, 0))
                a = sym(node.label())
                if isinstance(node[0], str):
                    w = terminals.setdefault(next(terms), len(terminals))
                    rule = lex_rules.setdefault((a, w), len(lex_rules))
                    rows[me] = (a, rule, -1, -1, slots[1])
                    slots[1] += 1
                    return me
                left = visit(node[0]) - base
                right = visit(node[1]) - base
                b, c = rows[base + left][0], rows[base + right][0]
                rule = bin_rules.setdefault((a, b, c), len(bin_rules))
                rows[me] = (a, rule, left, right, slots[0])
                slots[0] += 1
                return me

            visit(cnf)
            offsets.append(len(rows))
        self.symbols_ = list(symbols)
        self.terminals_ = list(terminals)
        self.bin_rules_ = np.array(list(bin_rules), dtype=np.int32).reshape(-1, 3)
        self.lex_rules_ = np.array(list(lex_rules), dtype=np.int32).reshape(-1, 2)
        nodes = np.array(rows, dtype=np.int32).reshape(-1, lt.TREE_COLS)
        return nodes, np.array(offsets, dtype=np.int64)

    def _index(self) -> None:
        """Derived lookup tables of the fitted grammar (rules by parent / left child / word)."""
        n_sym = len(self.symbols_)
        bin_parent = self.bin_rules_[:, 0]
        lex_parent = self.lex_rules_[:, 0]
        self._groups = [(np.nonzero(bin_parent == a)[0], np.nonzero(lex_parent == a)[0]) for a in range(n_sym)]
        order = np.argsort(self.bin_rules_[:, 1], kind="stable").astype(np.int32)
        self._left_rules = order
        self._left_off = np.zeros(n_sym + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.bin_rules_[:, 1], minlength=n_sym), out=self._left_off[1:])
        self._tindex = {w: i for i, w in enumerate(self.terminals_)}
        worder = np.argsort(self.lex_rules_[:, 1], kind="stable")
        self._lex_by_word = worder
        self._word_off = np.zeros(len(self.terminals_) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.lex_rules_[:, 1], minlength=len(self.terminals_)), out=self._word_off[1:])
        self._signature_rules = np.array([l for l, (_, w) in enumerate(self.lex_rules_)
                                          if self.terminals_[w].startswith("UNK")], dtype=np.int64)
        self._pos_of = np.array([s.split(PARENT_MARK, 1)[0].split(UNARY_JOIN)[-1] for s in self.symbols_])
        self._root_syms = np.nonzero(self._root_mask)[0]

    def _estimate(self, estimator: str, bin_c, lex_c, root_c, prior: float):
        """Annotated rule probabilities from counts: one categorical per ``A[a]`` over its annotated
        outcomes (``params_from_counts`` per row, thesis eq. 3.13 / 3.21 / 3.49 forms)."""
        h = root_c.shape[1]
        bin_p = np.zeros_like(bin_c)
        lex_p = np.zeros_like(lex_c)
        for rb, rl in self._groups:
            if len(rb) == 0 and len(rl) == 0:
                continue
            rows = np.concatenate([bin_c[rb].transpose(1, 0, 2, 3).reshape(h, -1), lex_c[rl].T], axis=1)
            p = params_from_counts(estimator, rows, prior)
            nb = len(rb) * h * h
            bin_p[rb] = p[:, :nb].reshape(h, len(rb), h, h).transpose(1, 0, 2, 3)
            lex_p[rl] = p[:, nb:].T
        root_p = np.zeros_like(root_c)
        rs = self._root_syms
        root_p[rs] = params_from_counts(estimator, root_c[rs].reshape(1, -1), prior).reshape(len(rs), h)
        return bin_p, lex_p, root_p

    # -------------------------------------------------------------------- fit
    def fit(self, X, y=None, dev=None) -> "LatentPCFGParser":
        """Train on the treebank ``X`` (a treebank Corpus or a list of ``nltk.Tree``).

        ``dev`` (same kinds): with several priors, the grammar with the best
        labeled F1 on ``dev`` is kept (``dev_scores_`` lists every candidate).
        """
        priors = self._priors()
        trees = [t for t in as_trees(X) if t.leaves()]
        if not trees:
            raise ConfigError("training data: no trees")
        dev_trees = as_trees(dev, "dev data") if dev is not None else None
        if len(priors) > 1 and dev_trees is None:
            raise ConfigError("several priors need a dev treebank to choose from")
        nodes, offsets = self._read_treebank(trees)
        self._root_mask = np.zeros(len(self.symbols_), dtype=bool)
        self._root_mask[nodes[offsets[:-1], 0]] = True
        self._index()
        self.dev_scores_: list[dict] = []
        best = None
        dev_pruning = None
        for prior in priors:
            self._train(nodes, offsets, prior)
            if dev_trees is not None:
                from ..eval.brackets import bracket_scores

                if dev_pruning is None:  # the unsplit grammar is the same for every prior
                    dev_pruning = self.coarse_pruning(dev_trees)
                f1 = bracket_scores(self.parse(dev_trees, pruning=dev_pruning), dev_trees)["f1"]
                self.dev_scores_.append({"alpha": prior, "f1": f1})
                if best is None or f1 > best[0]:
                    best = (f1, self._fitted())
            elif best is None:
                best = (None, self._fitted())
        for key, value in best[1].items():
            setattr(self, key, value)
        return self

    def _fitted(self) -> dict:
        keys = ("alpha_", "bin_p_", "lex_p_", "root_p_", "history_", "n_iter_", "coarse_bin_", "coarse_lex_",
                "coarse_root_", "train_seconds_")
        return {k: copy.copy(getattr(self, k)) for k in keys}

    def _train(self, nodes: np.ndarray, offsets: np.ndarray, prior: float) -> None:
        h = self.n_subtypes
        n_rules, n_lex, n_sym = len(self.bin_rules_), len(self.lex_rules_), len(self.symbols_)
        n_trees = len(offsets) - 1
        rng = np.random.default_rng(self.random_state)
        t_start = time.perf_counter()
        # the unsplit treebank PCFG: relative frequencies (also the coarse grammar of parsing)
        binary = nodes[:, 2] >= 0
        ones = (np.bincount(nodes[binary, 1], minlength=n_rules).astype(float).reshape(-1, 1, 1, 1),
                np.bincount(nodes[~binary, 1], minlength=n_lex).astype(float).reshape(-1, 1),
                np.bincount(nodes[offsets[:-1], 0], minlength=n_sym).astype(float).reshape(-1, 1))
        self.coarse_bin_, self.coarse_lex_, self.coarse_root_ = self._estimate("em", *ones, 1.0)
        # theta0: split evenly, 1% noise, renormalised (thesis section 4.5.3)
        def noisy(shape):
            return 1.0 + self.init_noise * rng.uniform(-1.0, 1.0, shape)

        theta = self._estimate(
            "em",
            np.repeat(np.repeat(np.repeat(self.coarse_bin_, h, 1), h, 2), h, 3) * noisy((n_rules, h, h, h)),
            np.repeat(self.coarse_lex_, h, 1) * noisy((n_lex, h)),
            np.repeat(self.coarse_root_, h, 1) * noisy((n_sym, h)), 1.0)
        groups_n = np.array([len(rb) * h * h + len(rl) for rb, rl in self._groups], dtype=np.int64)
        cvi = self.infer == "cvi"
        n_bin_nodes = int(binary.sum())
        store = (np.zeros((n_bin_nodes if cvi else 0, h, h, h), dtype=np.float32),
                 np.zeros((len(nodes) - n_bin_nodes if cvi else 0, h), dtype=np.float32),
                 np.zeros((n_trees if cvi else 0, h), dtype=np.float32))
        counts = (np.zeros((n_rules, h, h, h)), np.zeros((n_lex, h)), np.zeros((n_sym, h)))
        ll = lt.estep_trees(nodes, offsets, *theta, *counts, *store)
        history = [{"iteration": 0, "log_likelihood": ll, "seconds": time.perf_counter() - t_start}]
        totals = np.zeros((n_sym, h))
        root_total = np.zeros(1)
        if cvi:
            counts = (np.zeros((n_rules, h, h, h)), np.zeros((n_lex, h)), np.zeros((n_sym, h)))
            lt.stored_counts(nodes, offsets, self.bin_rules_[:, 0], self.lex_rules_[:, 0], *counts, totals,
                             root_total, *store)
        bar = tqdm(range(1, self.n_iter + 1), desc=f"pcfg-la H={h} {self.infer}", disable=not self.verbose,
                   leave=False)
        iterations = 0
        for it in bar:
            t0 = time.perf_counter()
            prev = ll
            if cvi:
                ll = lt.cvi_trees(nodes, offsets, rng.permutation(n_trees), self.bin_rules_[:, 0],
                                  self.lex_rules_[:, 0], *counts, totals, root_total, groups_n,
                                  len(self._root_syms) * h, prior, *store)
            else:
                theta = self._estimate(self.infer, *counts, prior)
                counts = (np.zeros((n_rules, h, h, h)), np.zeros((n_lex, h)), np.zeros((n_sym, h)))
                ll = lt.estep_trees(nodes, offsets, *theta, *counts, *store)
            iterations = it
            history.append({"iteration": it, "log_likelihood": ll, "seconds": time.perf_counter() - t0})
            bar.set_postfix({"log_likelihood": f"{ll:.1f}"})
            if it >= self.min_iter and abs(ll - prev) <= self.tol * abs(prev):
                break
        self.bin_p_, self.lex_p_, self.root_p_ = self._estimate("em" if self.infer == "em" else "cvi",
                                                                *counts, prior)
        self.alpha_ = prior
        self.history_ = history
        self.n_iter_ = iterations
        self.train_seconds_ = time.perf_counter() - t_start

    # ------------------------------------------------------------------ parse
    def _emissions(self, ids: list[int], lex_p: np.ndarray, tags: list[str] | None) -> np.ndarray:
        """``e[i, A, a]`` = theta(A[a] -> x_i), rows scaled to sum 1.  A terminal the grammar never
        emits gets the summed probability of the unknown-word signatures; gold ``tags`` (when given)
        keep the symbols whose POS matches (a word never seen with its tag also gets the signatures'
        probabilities; if still no symbol matches, the tag is ignored)."""
        n, h = len(ids), lex_p.shape[1]
        e = np.zeros((n, len(self.symbols_), h))
        for i, w in enumerate(ids):
            rules = self._lex_by_word[self._word_off[w]:self._word_off[w + 1]] if w >= 0 else []
            if len(rules) == 0:
                rules = self._signature_rules
            np.add.at(e[i], self.lex_rules_[rules, 0], lex_p[rules])
            if tags is not None:
                keep = self._pos_of == tags[i]
                if not (e[i][keep] > 0).any():  # a known word never seen with this tag: unknown-word classes
                    np.add.at(e[i], self.lex_rules_[self._signature_rules, 0], lex_p[self._signature_rules])
                if (e[i][keep] > 0).any():
                    e[i][~keep] = 0.0
            total = e[i].sum()
            if total > 0.0:
                e[i] /= total
            else:
                e[i] = 1.0
        return e

    def _coarse_chart(self, ids: list[int], tags: list[str] | None) -> tuple:
        """The unsplit treebank PCFG's full chart of one sentence: ``(e, idx, inside, outside, z, live, apps)``."""
        n = len(ids)
        e = self._emissions(ids, self.coarse_lex_, tags)
        allowed = np.ones((n + 1, n + 1, len(self.symbols_)), dtype=bool)
        idx, inside, live, apps, _ = lc.chart_inside(e, allowed, self.bin_rules_, self._left_off, self._left_rules,
                                                     self.coarse_bin_, 1.0, False)
        outside, z = lc.chart_outside(idx, inside, apps, self.coarse_bin_, 1.0, self.coarse_root_)
        return e, idx, inside, outside, z, live, apps

    def _prune_one(self, ids: list[int], tags: list[str] | None) -> tuple[float, np.ndarray]:
        """``(Z, items)`` of the coarse pass: the sentence's scaled probability under the unsplit grammar and
        the flat indices into the ``(n+1, n+1, S)`` chart of the items whose posterior reaches ``prune``."""
        _, idx, inside, outside, z, _, _ = self._coarse_chart(ids, tags)
        if z <= 0.0:
            return z, np.zeros(0, dtype=np.int64)
        return z, np.flatnonzero(lc.item_posteriors(idx, inside, outside, z) >= self.prune)

    def _ids(self, words: list[str]) -> list[int]:
        return [self._tindex.get(t, -1) for t in self.lexicon_.terminals(words)]

    def parse_one(self, words: list[str], tags: list[str] | None = None,
                  pruned: tuple[float, np.ndarray] | None = None) -> Tree:
        """The tree of one tokenized sentence (coarse-to-fine, then ``decode``); ``pruned`` = ``(Z, items)``
        of the coarse pass when already computed (:meth:`coarse_pruning`)."""
        n = len(words)
        if n == 0:
            return Tree(self.symbols_[int(np.argmax(self.coarse_root_[:, 0]))], [])
        ids = self._ids(words)
        rules = (self.bin_rules_, self._left_off, self._left_rules)
        coarse = None
        if pruned is None:
            coarse = self._coarse_chart(ids, tags)
            z = coarse[4]
        else:
            z, items = pruned
        if z <= 0.0:
            return self._flat_tree(words, self._emissions(ids, self.coarse_lex_, tags))
        if coarse is None:
            allowed = np.zeros((n + 1, n + 1, len(self.symbols_)), dtype=bool)
            allowed.flat[items] = True
        else:
            allowed = lc.item_posteriors(*coarse[1:5]) >= self.prune
        nodes = np.zeros((2 * n - 1, NODE_COLS), dtype=np.int32)
        scale = math.exp(-math.log(z) / (n - 1)) if n > 1 else 1.0
        fine = (self._emissions(ids, self.lex_p_, tags), allowed, *rules, self.bin_p_, scale)
        ok = False
        if self.decode == "viterbi":
            f_idx, f_in, _, f_apps, back = lc.chart_inside(*fine, True)
            ok = lc.viterbi_trace(f_idx, f_in, back, f_apps, self.bin_rules_, self.root_p_, nodes) > 0.0
        else:
            f_idx, f_in, f_live, f_apps, _ = lc.chart_inside(*fine, False)
            f_out, fz = lc.chart_outside(f_idx, f_in, f_apps, self.bin_p_, scale, self.root_p_)
            if fz > 0.0 and math.isfinite(fz):
                ok = lc.max_rule_sum(f_idx, f_in, f_out, fz, f_live, f_apps, self.bin_rules_, self.bin_p_, scale,
                                     self.root_p_, nodes) > -math.inf
        if not ok:  # the split grammar lost every pruned parse: decode with the coarse chart
            _, idx, inside, outside, z, live, apps = coarse if coarse is not None else self._coarse_chart(ids, tags)
            lc.max_rule_sum(idx, inside, outside, z, live, apps, self.bin_rules_, self.coarse_bin_, 1.0,
                            self.coarse_root_, nodes)
        return debinarize(nodes_to_tree(nodes, list(words), self.symbols_))

    def _flat_tree(self, words: list[str], e: np.ndarray) -> Tree:
        """Fallback when the treebank grammar cannot derive the sentence: the most frequent root label
        over the most probable preterminal of each word."""
        root = self.symbols_[int(np.argmax(self.coarse_root_[:, 0]))]
        kids = [Tree(self.symbols_[int(np.argmax(e[i, :, 0]))], [w]) for i, w in enumerate(words)]
        return debinarize(Tree(root, kids))

    def _coarse_key(self, words: list[list[str]], tags: list[list[str]] | None) -> str:
        """Fingerprint of what the coarse pass depends on: the unsplit grammar, its lexicon, ``prune`` and the
        input sentences (grammars trained on the same treebank share it whatever ``H`` and ``infer``)."""
        digest = hashlib.sha1()
        for array in (self.bin_rules_, self.lex_rules_, self.coarse_bin_, self.coarse_lex_, self.coarse_root_):
            digest.update(np.ascontiguousarray(array).tobytes())
        for strings in (self.symbols_, self.terminals_, sorted(self.lexicon_.known), [repr(self.prune)],
                        [" ".join(w) for w in words], [" ".join(t) for t in tags] if tags is not None else ["-"]):
            digest.update("\x00".join(strings).encode("utf-8") + b"\x01")
        return digest.hexdigest()

    @staticmethod
    def _sentences(X, use_tags: bool) -> tuple[list[list[str]], list[list[str]] | None]:
        """Words of ``X`` and, with ``use_tags``, its gold POS tags (``None`` otherwise)."""
        words, tags = as_sentences(X)
        if use_tags and tags is None:
            raise ConfigError("use_tags: the input has no POS tags")
        return words, tags if use_tags else None

    def coarse_pruning(self, X, use_tags: bool = False) -> CoarsePruning:
        """The coarse pass of :meth:`parse` for every sentence of ``X``, to be reused by every grammar trained
        on the same treebank (``parse(X, pruning=...)``; the parses are the same as without it)."""
        words, tags = self._sentences(X, use_tags)
        bar = tqdm(range(len(words)), desc="coarse pass", disable=not self.verbose, leave=False)
        charts = [self._prune_one(self._ids(words[i]), tags[i] if tags is not None else None) if words[i]
                  else (0.0, np.zeros(0, dtype=np.int64)) for i in bar]
        return CoarsePruning(self._coarse_key(words, tags), charts)

    def parse(self, X, use_tags: bool = False, pruning: CoarsePruning | None = None) -> list[Tree]:
        """Trees of the sentences of ``X`` (Corpus, list of trees or of token lists); ``use_tags`` restricts
        preterminals to the gold POS tags of the input; ``pruning`` (:meth:`coarse_pruning` of the same
        ``X`` and ``use_tags``, possibly by another grammar of the same treebank) skips the coarse pass."""
        words, tags = self._sentences(X, use_tags)
        if pruning is not None and pruning.key != self._coarse_key(words, tags):
            raise ConfigError("pruning: computed for other sentences or another treebank grammar")
        lengths = [len(w) for w in words]
        check_memory(latent_chart_bytes(lengths, len(self.symbols_)), "the PCFG-LA parse charts",
                     sentence_label(lengths, corpus_source(X)))
        bar = tqdm(range(len(words)), desc="parsing", disable=not self.verbose, leave=False)
        return [self.parse_one(words[i], tags[i] if tags is not None else None,
                               pruning.charts[i] if pruning is not None else None) for i in bar]

    # -------------------------------------------------------------- save/load
    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """``S`` symbols, ``V`` terminals, ``H`` subtypes; ``R`` binary and ``L`` lexical rules.

        ``bin_rules (R, 3)`` (parent, left, right) and ``lex_rules (L, 2)``
        (parent, word) index the symbols and terminals; the annotated rule
        weights are ``(R, H, H, H)``, ``(L, H)`` and ``(S, H)`` and the unsplit
        grammar of the coarse pass has ``H = 1``.  ``decode`` and ``prune``,
        used when parsing, must be valid.
        """
        params = header["params"]
        prune = params["prune"]  # the parse-time options, the others only matter to fit
        if params["decode"] not in DECODERS or not isinstance(prune, (int, float)) or not 0 <= prune <= 1:
            raise ValueError(f"decode must be one of {DECODERS} and prune in [0, 1]; "
                             f"got {params['decode']!r}, {prune!r}")
        dims = {"S": len(header["symbols"]), "V": len(header["terminals"]), "H": int(params["n_subtypes"])}
        weights = {"bin": ("R", "H", "H", "H"), "lex": ("L", "H"), "root": ("S", "H")}
        return modelfile.Schema((
            Field("bin_rules", "i4", ("R", 3), bound=("S", "S", "S")),
            Field("lex_rules", "i4", ("L", 2), bound=("S", "V")),
            *(Field(f"{k}_p", "f8", shape, nonnegative=True) for k, shape in weights.items()),
            *(Field(f"coarse_{k}", "f8", tuple(1 if d == "H" else d for d in shape), nonnegative=True)
              for k, shape in weights.items()),
            Field("root_mask", "?", ("S",)),
        ), dims)

    def save(self, path) -> None:
        modelfile.save(path, "LatentPCFGParser",
                       {"params": self.get_params(), "symbols": self.symbols_, "terminals": self.terminals_,
                        "known_words": sorted(self.lexicon_.known), "history": self.history_,
                        "alpha_": self.alpha_, "n_iter_": self.n_iter_, "dev_scores": self.dev_scores_,
                        "train_seconds": self.train_seconds_},
                       {"bin_rules": self.bin_rules_, "lex_rules": self.lex_rules_, "bin_p": self.bin_p_,
                        "lex_p": self.lex_p_, "root_p": self.root_p_, "coarse_bin": self.coarse_bin_,
                        "coarse_lex": self.coarse_lex_, "coarse_root": self.coarse_root_,
                        "root_mask": self._root_mask})

    @classmethod
    def load(cls, path) -> "LatentPCFGParser":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        meta, arrays = modelfile.load(path, "LatentPCFGParser", cls._schema)
        with modelfile.reading(path, "header"):
            model = cls._from_params(meta["params"])
            model.symbols_, model.terminals_ = list(meta["symbols"]), list(meta["terminals"])
            model.lexicon_ = Lexicon(set(meta["known_words"]))
            model.history_, model.n_iter_ = meta["history"], meta["n_iter_"]
            model.alpha_ = meta["alpha_"] if "alpha_" in meta else meta["prior_"]  # files before the rename
            model.dev_scores_, model.train_seconds_ = meta["dev_scores"], meta["train_seconds"]
            model.bin_rules_, model.lex_rules_ = arrays["bin_rules"], arrays["lex_rules"]
            model.bin_p_, model.lex_p_, model.root_p_ = arrays["bin_p"], arrays["lex_p"], arrays["root_p"]
            model.coarse_bin_, model.coarse_lex_ = arrays["coarse_bin"], arrays["coarse_lex"]
            model.coarse_root_, model._root_mask = arrays["coarse_root"], arrays["root_mask"]
            model._index()  # reads the symbol and terminal strings of the header
        return model


__all__ = ["CoarsePruning", "LatentPCFGParser", "PRIOR_GRID"]

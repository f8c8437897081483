"""PCFG induction with inside-outside EM, VI, CVI and collapsed blocked Metropolis-Hastings.

All four algorithms share the kernels of :mod:`induce.kernels.inside_outside`
and differ only in how parameters are formed from counts and when counts change
(thesis ch. 4):

* ``em``  -- batch E-step with ``theta* = E[C] / E[C.]`` (eq. 4.5-4.10);
* ``vi``  -- batch E-step with ``exp(psi(E[C] + a)) / exp(psi(E[C.] + |R_A| a))`` (eq. 4.12);
* ``cvi`` -- per sentence: subtract its expected counts, run inside-outside with
  ``(E[C^{\\i}] + a) / (E[C^{\\i}_.] + |R_A| a)``, add the new counts (eq. 4.24);
* ``mh``  -- per sentence: remove its tree, propose a tree from
  ``p(z | x, theta^H)`` (eq. 4.15-4.16) by inside-chart sampling, accept with
  the exact collapsed probability (eq. 4.14) (Johnson, Griffiths & Goldwater 2007).

Every algorithm starts from the same random parameters ``theta0`` (the grammar's
weights times ``1 + init_noise * U(0, 1)``, renormalised): the first em/vi
E-step uses ``theta0``; cvi seeds its per-sentence counts with a batch E-step
under ``theta0`` and mh with one tree per sentence sampled under ``theta0``
(iteration 0 of ``history_``).  With ``n_iter=0`` em/vi keep ``theta0``.  The fitted rule probabilities ``rules_``/``emissions_`` are the
MLE for ``em`` and the posterior mean ``(C + a) / (C. + |R_A| a)`` for the
Bayesian algorithms (the mean of VI's ``q(theta)``; CVI's and MH's predictive).

Stopping: ``n_iter`` is a cap; em, vi and cvi stop once the relative change of
the per-pass objective (``sum_i log P(x^i)`` under the parameters the pass used:
the MLE for ``em``, VI's sub-normalised parameters, CVI's collapsed surrogates)
stays below ``tol`` for 3 passes (:class:`induce.infer.convergence.ConvergenceMonitor`;
EM's never decreases, thesis section 3.3).  ``mh`` has no such objective and runs
all ``n_iter`` sweeps.  Cap and tolerance: docs/experiments/grammar_defaults.md.

Learned prior (``learn_hyper``; vi, cvi, mh): the one concentration ``alpha_`` of
every ``theta_A`` (each row is the same kind of distribution, over a
nonterminal's ``|R_A|`` allowed rules) is re-estimated after every pass past
``hyper_burn_in`` by empirical Bayes (:func:`induce.infer.hyper.fit_symmetric_dirichlet`
with ``K_A = |R_A|``) from the rule counts of one tree per sentence: the Viterbi
trees under the current parameters (vi, cvi; as the HMM tagger uses its decoded
states) or the sampler's current trees (mh).  On by default for cvi only
(:data:`LEARNS_BY_DEFAULT`).  Record: docs/experiments/grammar_defaults.md, "Learned priors".

Memory: ``cvi`` stores each sentence's expected binary counts (``N^3`` floats per
sentence) and per-token terminal counts (``N`` per token).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
from ..progress import ProgressBar as tqdm

from .. import modelfile
from ..base import AnyOf, Boolean, InduceEstimator, Integer, NotFittedError, Options, Real, Seed
from ..corpus.corpus import Corpus
from ..infer.convergence import ConvergenceMonitor
from ..infer.hyper import fit_symmetric_dirichlet
from ..kernels import inside_outside as io
from .grammar import Grammar, full_grammar, read_grammar
from ..modelfile import Field
from ..corpus.corpus import as_corpus
from ..resources import check_memory, corpus_source, pcfg_bytes, sentence_label
from .params import UNK, column, encode_with, masked_params
from .trees import nodes_to_tree

from ..names import PCFG_ALGORITHMS as ALGORITHMS
#: Pass cap and relative tolerance of the stopping rule (docs/experiments/grammar_defaults.md).
MAX_ITER = 300
#: the prior used when none is given (and where a learned prior starts)
DEFAULT_ALPHA = 1.0
#: algorithms that learn the prior when ``learn_hyper`` is left at None: on the PCFG benchmark (5 seeds) cvi
#: with the learned prior reaches F1 47.0 against 35.3 at alpha 1, vi falls (docs/experiments/grammar_defaults.md)
LEARNS_BY_DEFAULT = ("cvi",)
TOL = 1e-4


class PCFGInducer(InduceEstimator):
    """Unsupervised PCFG (CNF) trained by ``em``, ``vi``, ``cvi`` or ``mh``.

    Parameters
    ----------
    n_nonterminals : size of the generated fully connected grammar (ignored with ``grammar``).
    grammar : a :class:`Grammar` or the path of a rule file fixing the rules (and initial weights).
    infer : ``"em"``, ``"vi"``, ``"cvi"`` or ``"mh"``.
    alpha : symmetric Dirichlet hyperparameter on every ``theta_A``; ``None``: 1, or learned with ``learn_hyper``.
    learn_hyper : learn ``alpha`` when it is ``None`` (vi, cvi, mh; see the module docstring);
        ``None`` (default): only for the algorithms of :data:`LEARNS_BY_DEFAULT` (cvi).
    hyper_burn_in : passes before the first empirical Bayes update.
    n_iter : maximum passes over the corpus (``mh``: the number of sweeps).
    tol : relative change of the objective below which (3 passes in a row) em, vi and cvi
        have converged; ``0`` runs exactly ``n_iter`` passes.
    tag_column : read this tag column instead of the word tokens.
    init_noise : multiplicative noise of the initial parameters.
    random_state : seed of the initial parameters and of the sentence order / sampler.
    """

    _parameter_constraints = {
        "n_nonterminals": Integer(1), "infer": Options(*ALGORITHMS), "alpha": AnyOf(Options(None), Real(0.0, min_open=True)),
        "n_iter": Integer(0), "tol": Real(0.0), "init_noise": Real(0.0), "random_state": Seed(), "verbose": Boolean(),
        "learn_hyper": AnyOf(Options(None), Boolean()), "hyper_burn_in": Integer(0),
    }

    def __init__(self, n_nonterminals: int = 10, grammar: Grammar | str | None = None, infer: str = "em",
                 alpha: float | None = None, n_iter: int = MAX_ITER, tol: float = TOL, tag_column: str | None = None,
                 init_noise: float = 1.0, random_state: int | None = None, verbose: bool = False,
                 learn_hyper: bool | None = None, hyper_burn_in: int = 0):
        self.n_nonterminals = n_nonterminals
        self.grammar = grammar
        self.infer = infer
        self.alpha = alpha
        self.n_iter = n_iter
        self.tol = tol
        self.tag_column = tag_column
        self.init_noise = init_noise
        self.random_state = random_state
        self.verbose = verbose
        self.learn_hyper = learn_hyper
        self.hyper_burn_in = hyper_burn_in

    # ------------------------------------------------------------------ setup
    def _base_grammar(self, vocab_items: list[str]) -> Grammar:
        """The generated grammar over the corpus vocabulary, or the given one; plus an ``UNK`` terminal
        (allowed in generated grammars, without rules in given ones)."""
        if self.grammar is None:
            return full_grammar(self.n_nonterminals, [w for w in vocab_items if w != UNK] + [UNK])
        grammar = self.grammar if isinstance(self.grammar, Grammar) else read_grammar(self.grammar)
        if UNK in grammar.terminals:
            return grammar
        return grammar.with_terminals(grammar.terminals + [UNK], allow_new=False)

    def _ids(self, X) -> tuple[np.ndarray, np.ndarray, Corpus]:
        if not hasattr(self, "grammar_"):
            raise NotFittedError.of(self)
        corpus = as_corpus(X)
        ids, vocab = column(corpus, self.tag_column)
        return encode_with(self.grammar_.terminals, vocab, ids), corpus.offsets, corpus

    def _kernel_tables(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        binary, emit = self.grammar_.split_rows(rows)
        return np.ascontiguousarray(binary.transpose(1, 2, 0)), np.ascontiguousarray(emit)

    # -------------------------------------------------------------------- fit
    def fit(self, X, y=None, callback: Callable[["PCFGInducer", int], None] | None = None) -> "PCFGInducer":
        """Induce the grammar from the sentences of ``X`` (a Corpus or lists of tokens).

        Sets ``n_iter_`` (passes run), ``converged_``, ``history_``, ``warnings_``,
        ``alpha_`` (the prior used at the end) and ``learned_hyper_``.
        """
        self.alpha_ = DEFAULT_ALPHA if self.alpha is None else float(self.alpha)
        wanted = self.infer in LEARNS_BY_DEFAULT if self.learn_hyper is None else bool(self.learn_hyper)
        learns = wanted and self.alpha is None and self.infer != "em"
        self.learned_hyper_ = ("alpha",) if learns else ()
        corpus = as_corpus(X)
        corpus = corpus.subset(np.nonzero(corpus.lengths > 0)[0])
        ids, vocab = column(corpus, self.tag_column)
        self.grammar_ = self._base_grammar(list(vocab.itos))
        check_memory(pcfg_bytes(corpus.lengths, self.grammar_.n_nonterminals, self.infer == "cvi"),
                     "the PCFG charts", sentence_label(corpus.lengths, corpus_source(corpus)))
        tokens, offsets = encode_with(self.grammar_.terminals, vocab, ids), corpus.offsets
        rng = np.random.default_rng(self.random_state)
        g = self.grammar_
        mask_rows = g.mask_rows
        weights = g.rows(g.binary, g.emit) * mask_rows * (1.0 + self.init_noise * rng.random(mask_rows.shape))
        theta0 = weights / weights.sum(1, keepdims=True)
        self._state = _State(g, tokens, offsets, self.alpha_)
        self.history_: list[dict] = []
        start = time.perf_counter()
        init = self._state.initialise(self.infer, theta0, *self._kernel_tables(theta0), rng)
        self.history_.append({"iteration": 0, "seconds": time.perf_counter() - start, **init})
        self._set_params(theta0 if self.infer in ("em", "vi") else None)
        self._start_run()
        monitor = ConvergenceMonitor(0.0 if self.infer == "mh" else self.tol, monotone=self.infer == "em")
        bar = tqdm(range(1, self.n_iter + 1), desc=f"pcfg {self.infer}", disable=not self.verbose, leave=False)
        for it in bar:
            t0 = time.perf_counter()
            key, value = self._state.step(self.infer, self, rng)
            self.history_.append({"iteration": it, "seconds": time.perf_counter() - t0, key: value})
            bar.set_postfix({key: f"{value:.2f}"})
            self._set_params()
            if self.learned_hyper_ and it > self.hyper_burn_in:
                self._update_hyper()
                self.history_[-1]["alpha"] = self.alpha_
            self.n_iter_ = it
            if callback is not None:
                callback(self, it)
            if key == "log_likelihood" and monitor.update(value) or monitor.diverged:
                break
        bar.close()
        self._end_iterations(monitor, f"pcfg {self.infer}", self.n_iter_, self.n_iter)
        self.acceptance_rate_ = self._state.acceptance_rate()
        del self._state
        return self

    def _update_hyper(self) -> None:
        """Empirical Bayes step: ``alpha_`` maximising the evidence of one tree per sentence (module docstring)."""
        state, g = self._state, self.grammar_
        if self.infer == "mh":
            counts = state.count_rows()
        else:
            bin_counts, emit_counts, totals = (np.zeros_like(a)
                                               for a in (state.bin_counts, state.emit_counts, state.totals))
            nodes, tree_offsets, _ = self._nodes(state.tokens, state.offsets, sample=False)
            io.trees_to_counts(state.tokens, state.offsets, nodes, tree_offsets, bin_counts, emit_counts, totals)
            counts = g.rows(bin_counts.transpose(2, 0, 1), emit_counts)
        self.alpha_ = fit_symmetric_dirichlet(counts, self.alpha_, outcomes=g.mask_rows.sum(1))
        state.prior = self.alpha_
        self._set_params()

    def _set_params(self, rows: np.ndarray | None = None) -> None:
        """Fitted rows from the counts (or the given initial rows, before any E-step)."""
        counts = self._state.count_rows()
        if rows is None:
            rows = masked_params("em" if self.infer == "em" else "cvi", counts, self.grammar_.mask_rows, self.alpha_)
        self.counts_ = counts
        self.rules_, self.emissions_ = self.grammar_.split_rows(rows)

    def params_for(self, estimator: str) -> np.ndarray:
        """Current rows under ``estimator`` (``em``/``vi``/``cvi``), as fed to the E-step."""
        return masked_params(estimator, self._state.count_rows(), self.grammar_.mask_rows, self.alpha_)

    # -------------------------------------------------------------- inference
    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        return self._kernel_tables(self.grammar_.rows(self.rules_, self.emissions_))

    def log_likelihood(self, X) -> np.ndarray:
        """``log P(x^i)`` per sentence under the fitted rule probabilities (inside algorithm)."""
        tokens, offsets, _ = self._ids(X)
        out = np.zeros(len(offsets) - 1)
        io.log_likelihood_pass(tokens, offsets, *self._tables(), 0, out)
        return out

    def perplexity(self, X) -> float:
        """Per-word perplexity ``exp(-sum_i log P(x^i) / #words)``."""
        ll = self.log_likelihood(X)
        return float(np.exp(-ll.sum() / max(as_corpus(X).n_tokens, 1)))

    def _nodes(self, tokens: np.ndarray, offsets: np.ndarray, sample: bool, random_state=None):
        """One tree per sentence (Viterbi, or sampled from ``p(z | x, theta)``) as kernel nodes:
        ``(nodes, tree_offsets, Viterbi log scores)``."""
        lengths = np.diff(offsets)
        tree_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(np.maximum(2 * lengths - 1, 0), out=tree_offsets[1:])
        nodes = np.zeros((tree_offsets[-1], io.NODE_COLS), dtype=np.int32)
        rules, emit = self._tables()
        scores = np.zeros(len(lengths))
        if sample:
            uniforms = np.random.default_rng(random_state).random(len(tokens))
            io.sample_pass(tokens, offsets, rules, emit, 0, uniforms, nodes, tree_offsets)
        else:
            io.viterbi_pass(tokens, offsets, rules, emit, 0, nodes, tree_offsets, scores)
        return nodes, tree_offsets, scores

    def _trees(self, X, sample: bool, random_state=None) -> tuple[list, np.ndarray]:
        tokens, offsets, corpus = self._ids(X)
        nodes, tree_offsets, scores = self._nodes(tokens, offsets, sample, random_state)
        ids, vocab = column(corpus, None)
        trees = [nodes_to_tree(nodes[tree_offsets[i]:tree_offsets[i + 1]],
                               vocab.decode(ids[offsets[i]:offsets[i + 1]]), self.grammar_.nonterminals)
                 for i in range(len(offsets) - 1)]
        return trees, scores

    def parse(self, X) -> list:
        """Viterbi trees (``nltk.Tree``, leaves are the corpus words)."""
        return self._trees(X, sample=False)[0]

    def viterbi_scores(self, X) -> np.ndarray:
        """``log max_z P(x^i, z)`` per sentence."""
        return self._trees(X, sample=False)[1]

    def sample(self, X, random_state=None) -> list:
        """One tree per sentence drawn from ``p(z | x, theta)``."""
        return self._trees(X, sample=True, random_state=random_state)[0]

    # -------------------------------------------------------------- save/load
    @staticmethod
    def _schema(header: dict) -> modelfile.Schema:
        """``N`` nonterminals (at least the start symbol), ``V`` terminals (with ``<unk>``).

        ``rules (N, N, N)``, ``emissions (N, V)``, the masks of the rules the
        grammar allows, and the counts as one row ``[rules[A].ravel(), emissions[A]]``
        per nonterminal.
        """
        N, terminals = len(header["nonterminals"]), header["terminals"]
        if N < 1 or UNK not in terminals:
            raise ValueError(f"a grammar needs a start symbol and the terminal {UNK!r}")
        return modelfile.Schema((
            Field("rules", "f8", ("N", "N", "N"), nonnegative=True),
            Field("emissions", "f8", ("N", "V"), nonnegative=True),
            Field("counts", "f8", ("N", "N*N+V"), nonnegative=True),
            Field("binary_mask", "?", ("N", "N", "N")),
            Field("emit_mask", "?", ("N", "V")),
        ), {"N": N, "V": len(terminals)})

    def save(self, path) -> None:
        g = self.grammar_
        modelfile.save(path, "PCFGInducer",
                       {"params": self._header_params(), "nonterminals": g.nonterminals, "terminals": g.terminals,
                        "history": self.history_, "acceptance_rate": self.acceptance_rate_,
                        "converged": self.converged_, "warnings": self.warnings_, "alpha": self.alpha_,
                        "learned_hyper": list(self.learned_hyper_)},
                       {"rules": self.rules_, "emissions": self.emissions_, "counts": self.counts_,
                        "binary_mask": g.binary_mask, "emit_mask": g.emit_mask})

    @classmethod
    def load(cls, path) -> "PCFGInducer":
        """Read a model written by :meth:`save`; ``ModelFormatError`` unless it passes :meth:`_schema`."""
        meta, arrays = modelfile.load(path, "PCFGInducer", cls._schema)
        with modelfile.reading(path, "header"):
            params = dict(meta["params"])
            params["grammar"] = None
            model = cls._from_params(params)
            model.grammar_ = Grammar(list(meta["nonterminals"]), list(meta["terminals"]), arrays["rules"],
                                     arrays["emissions"], arrays["binary_mask"], arrays["emit_mask"])
            model.history_, model.acceptance_rate_ = meta["history"], meta["acceptance_rate"]
        model.rules_, model.emissions_, model.counts_ = arrays["rules"], arrays["emissions"], arrays["counts"]
        model.n_iter_ = len(model.history_) - 1
        model.converged_ = meta.get("converged", False)
        model.warnings_ = meta.get("warnings", [])
        model.alpha_ = float(meta.get("alpha", DEFAULT_ALPHA if model.alpha is None else model.alpha))
        model.learned_hyper_ = tuple(meta.get("learned_hyper", ()))
        return model

    def _header_params(self) -> dict:
        """The hyperparameters as a model file stores them (a Grammar object is not stored: its rules are)."""
        grammar = self.grammar if isinstance(self.grammar, (str, type(None))) else "<Grammar>"
        return {"n_nonterminals": self.n_nonterminals, "grammar": str(grammar) if grammar else None,
                "infer": self.infer, "alpha": self.alpha, "n_iter": self.n_iter, "tol": self.tol,
                "tag_column": self.tag_column,
                "init_noise": self.init_noise, "random_state": self.random_state, "verbose": self.verbose,
                "learn_hyper": self.learn_hyper, "hyper_burn_in": self.hyper_burn_in}


class _State:
    """Count tables of one fit and the per-algorithm pass over them."""

    def __init__(self, grammar: Grammar, tokens: np.ndarray, offsets: np.ndarray, prior: float):
        n = grammar.n_nonterminals
        self.grammar = grammar
        self.tokens, self.offsets, self.prior = tokens, offsets, prior
        self.n_sentences = len(offsets) - 1
        self.bin_mask = np.ascontiguousarray(grammar.binary_mask.transpose(1, 2, 0))
        self.emit_mask = np.ascontiguousarray(grammar.emit_mask)
        self.n_outcomes = grammar.n_outcomes.astype(np.int64)
        self.bin_counts = np.zeros((n, n, n))
        self.emit_counts = np.zeros((n, len(grammar.terminals)))
        self.totals = np.zeros(n)
        self.proposals = 0
        self.accepted = 0
        self.next_rows: np.ndarray | None = None

    def count_rows(self) -> np.ndarray:
        return self.grammar.rows(self.bin_counts.transpose(2, 0, 1), self.emit_counts)

    def _estep(self, rules, emit, per_sentence: bool) -> float:
        n = self.grammar.n_nonterminals
        slabs = self.n_sentences if per_sentence else 1
        bin_out = np.zeros((slabs, n, n, n))
        pos = np.zeros((len(self.tokens), n))
        ll = io.estep_pass(self.tokens, self.offsets, rules, emit, 0, bin_out, pos)
        self.bin_counts = bin_out.sum(0)
        self.emit_counts = np.zeros_like(self.emit_counts)
        np.add.at(self.emit_counts.T, self.tokens, pos)
        self.totals = self.bin_counts.sum((0, 1)) + self.emit_counts.sum(1)
        if per_sentence:
            self.sent_bin, self.sent_pos = bin_out, pos
        return ll

    def initialise(self, infer: str, theta0: np.ndarray, rules, emit, rng) -> dict:
        """em/vi start their first E-step from ``theta0``; cvi seeds its per-sentence counts with a
        batch E-step under ``theta0``; mh samples one tree per sentence under ``theta0``."""
        if infer in ("em", "vi"):
            self.next_rows = theta0
            return {}
        if infer == "cvi":
            return {"log_likelihood": self._estep(rules, emit, per_sentence=True)}
        lengths = np.diff(self.offsets)
        self.tree_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(2 * lengths - 1, out=self.tree_offsets[1:])
        self.trees = np.zeros((self.tree_offsets[-1], io.NODE_COLS), dtype=np.int32)
        io.sample_pass(self.tokens, self.offsets, rules, emit, 0, rng.random(len(self.tokens)),
                       self.trees, self.tree_offsets)
        io.trees_to_counts(self.tokens, self.offsets, self.trees, self.tree_offsets,
                           self.bin_counts, self.emit_counts, self.totals)
        return {}

    def step(self, infer: str, model: PCFGInducer, rng) -> tuple[str, float]:
        """One pass; returns ``("log_likelihood", sum_i log P(x^i | parameters used))``,
        or ``("accepted", number of accepted proposals)`` for ``mh``."""
        if infer in ("em", "vi"):
            rows = self.next_rows if self.next_rows is not None else model.params_for(infer)
            self.next_rows = None
            return "log_likelihood", self._estep(*model._kernel_tables(rows), per_sentence=False)
        order = rng.permutation(self.n_sentences)
        if infer == "cvi":
            return "log_likelihood", io.cvi_pass(self.tokens, self.offsets, order, 0, self.bin_counts, self.emit_counts, self.totals,
                               self.sent_bin, self.sent_pos, self.bin_mask, self.emit_mask, self.n_outcomes,
                               self.prior)
        accepted = io.mh_pass(self.tokens, self.offsets, order, 0, self.bin_counts, self.emit_counts, self.totals,
                              self.trees, self.tree_offsets, self.bin_mask, self.emit_mask, self.n_outcomes,
                              self.prior, rng.random(len(self.tokens)))
        self.proposals += self.n_sentences
        self.accepted += accepted
        return "accepted", float(accepted)

    def acceptance_rate(self) -> float | None:
        return self.accepted / self.proposals if self.proposals else None

"""PCFG grammars in Chomsky normal form: rule files, transforms, generated grammars.

A :class:`Grammar` holds dense tables over ``N`` nonterminals (index 0 is the
start symbol) and ``V`` terminals: ``binary[A, B, C]`` = theta(A -> B C),
``emit[A, w]`` = theta(A -> w), and boolean masks of the rules that exist
(``R_A`` of thesis eq. 4.2; the Dirichlet prior spreads over these only).

Rule files have one rule per line, ``LHS -> RHS... [weight]`` (weight 1 when
omitted; ``#`` starts a comment; terminals may be quoted).  A symbol is a
nonterminal iff it is the left-hand side of some rule; the first left-hand side
is the start symbol.  Weights are normalised per left-hand side.  Rules outside
CNF are transformed (the scheme, applied in this order):

1. **terminals inside longer right-hand sides** ``A -> B w`` become a fresh
   preterminal ``_T:w -> w`` (probability 1);
2. **binarisation** (right-factored): ``A -> X1 X2 ... Xm`` becomes
   ``A -> X1 A|<X2.....Xm>`` with the rule's weight, and
   ``A|<Xi.....Xm> -> Xi A|<Xi+1.....Xm>`` ... ``A|<Xm-1.Xm> -> Xm-1 Xm`` with
   probability 1 (an intermediate symbol has a single rule, so string and tree
   probabilities are unchanged);
3. **unary rules** ``A -> B`` between nonterminals are folded away with the
   unary closure ``U* = (I - U)^{-1}``: ``theta'(A -> beta) = sum_B U*[A, B]
   theta(B -> beta)`` for every non-unary ``beta``.  The string distribution is
   unchanged; derivations lose their unary nodes.  Rules of ``U`` must not form
   a cycle of probability 1.

Output trees drop the ``|<...>`` and ``_T:`` helper nodes (:mod:`.trees`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_write
from ..corpus.read_lines import iter_lines
from ..errors import CorpusFormatError

ARROW = "->"


@dataclass
class Grammar:
    nonterminals: list[str]
    terminals: list[str]
    binary: np.ndarray
    emit: np.ndarray
    binary_mask: np.ndarray
    emit_mask: np.ndarray

    @property
    def n_nonterminals(self) -> int:
        return len(self.nonterminals)

    @property
    def n_outcomes(self) -> np.ndarray:
        """``|R_A|`` for every nonterminal."""
        return self.binary_mask.reshape(self.n_nonterminals, -1).sum(1) + self.emit_mask.sum(1)

    def rows(self, binary: np.ndarray, emit: np.ndarray) -> np.ndarray:
        """Tables as one categorical row per nonterminal: ``[binary[A].ravel(), emit[A]]``."""
        return np.concatenate([binary.reshape(self.n_nonterminals, -1), emit], axis=1)

    def split_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = self.n_nonterminals
        return rows[:, : n * n].reshape(n, n, n), rows[:, n * n :]

    @property
    def mask_rows(self) -> np.ndarray:
        return self.rows(self.binary_mask, self.emit_mask)

    def with_terminals(self, terminals: list[str], allow_new: bool) -> "Grammar":
        """The grammar over ``terminals`` (new ones get no rules unless ``allow_new``)."""
        old = {w: i for i, w in enumerate(self.terminals)}
        emit = np.zeros((self.n_nonterminals, len(terminals)))
        mask = np.zeros(emit.shape, dtype=bool)
        for j, w in enumerate(terminals):
            if w in old:
                emit[:, j] = self.emit[:, old[w]]
                mask[:, j] = self.emit_mask[:, old[w]]
            elif allow_new:
                emit[:, j] = 1.0
                mask[:, j] = True
        return Grammar(self.nonterminals, list(terminals), self.binary, emit, self.binary_mask, mask)


def full_grammar(n_nonterminals: int, terminals: list[str]) -> Grammar:
    """Every ``A -> B C`` and every ``A -> w`` over ``N`` nonterminals ``S, X1, ...`` (uniform weights)."""
    if n_nonterminals < 1:
        raise ValueError("a grammar needs at least one nonterminal")
    n, v = n_nonterminals, len(terminals)
    names = ["S"] + [f"X{i}" for i in range(1, n)]
    return Grammar(names, list(terminals), np.ones((n, n, n)), np.ones((n, v)),
                   np.ones((n, n, n), dtype=bool), np.ones((n, v), dtype=bool))


def _parse_line(raw: str, path: str, lineno: int) -> tuple[str, list[str], float] | None:
    line = raw.split("#", 1)[0].strip()
    if not line:
        return None
    parts = line.split()
    if len(parts) < 3 or parts[1] != ARROW:
        raise CorpusFormatError(path, lineno, raw.rstrip("\n"), "a rule 'LHS -> RHS... [weight]'")
    rhs = parts[2:]
    weight = 1.0
    if len(rhs) >= 2:
        try:
            weight = float(rhs[-1])
            rhs = rhs[:-1]
        except ValueError:
            weight = 1.0
    if weight < 0 or not np.isfinite(weight):
        raise CorpusFormatError(path, lineno, raw.rstrip("\n"), "a finite non-negative rule weight")
    return parts[0], [s.strip("'\"") if s[0] in "'\"" else s for s in rhs], weight


def read_grammar(path: str | Path) -> Grammar:
    """Read a rule file and transform it to CNF (see the module docstring)."""
    path = str(path)
    rules: list[tuple[str, list[str], float, int, str]] = []
    for lineno, raw in iter_lines(path, require_text=False):  # strict UTF-8, NUL bytes refused, at file:line
        parsed = _parse_line(raw, path, lineno)
        if parsed is not None:
            rules.append((*parsed, lineno, raw))
    if not rules:
        raise CorpusFormatError(path, None, None, "at least one rule 'LHS -> RHS... [weight]'")
    lhs_set = {r[0] for r in rules}
    totals: dict[str, float] = {}
    for lhs, _, w, _, _ in rules:
        totals[lhs] = totals.get(lhs, 0.0) + w
    cnf: dict[tuple[str, tuple[str, ...]], float] = {}
    order: list[str] = [rules[0][0]]

    def add(lhs: str, rhs: tuple[str, ...], p: float) -> None:
        if lhs not in order:
            order.append(lhs)
        helper = lhs.startswith("_T:") or lhs not in lhs_set
        cnf[(lhs, rhs)] = 1.0 if helper else cnf.get((lhs, rhs), 0.0) + p

    for lhs, rhs, w, lineno, raw in rules:
        if totals[lhs] <= 0:
            raise CorpusFormatError(path, lineno, raw, f"a positive total weight for the rules of {lhs}")
        p = w / totals[lhs]
        if len(rhs) == 1:
            add(lhs, (rhs[0],), p)
            continue
        syms = []
        for sym in rhs:
            if sym in lhs_set:
                syms.append(sym)
            else:
                add(f"_T:{sym}", (sym,), 1.0)
                syms.append(f"_T:{sym}")
        head = lhs
        while len(syms) > 2:
            rest = f"{lhs}|<{'.'.join(syms[1:])}>"
            add(head, (syms[0], rest), p)
            head, syms, p = rest, syms[1:], 1.0
        add(head, tuple(syms), p)
    nts = order + sorted(s for s in lhs_set if s not in order)
    index = {s: i for i, s in enumerate(nts)}
    terminals = sorted({rhs[0] for (_, rhs) in cnf if len(rhs) == 1 and rhs[0] not in index})
    tindex = {w: i for i, w in enumerate(terminals)}
    n, v = len(nts), len(terminals)
    binary = np.zeros((n, n, n))
    emit = np.zeros((n, v))
    unary = np.zeros((n, n))
    for (lhs, rhs), p in cnf.items():
        a = index[lhs]
        if len(rhs) == 2:
            binary[a, index[rhs[0]], index[rhs[1]]] += p
        elif rhs[0] in index:
            unary[a, index[rhs[0]]] += p
        else:
            emit[a, tindex[rhs[0]]] += p
    if unary.any():
        binary, emit = _fold_unaries(unary, binary, emit, path)
    return Grammar(nts, terminals, binary, emit, binary > 0, emit > 0)


def _fold_unaries(unary: np.ndarray, binary: np.ndarray, emit: np.ndarray, path: str):
    """Fold unary rules into the rules below them with ``U* = (I - U)^{-1}``."""
    n = unary.shape[0]
    if np.max(np.abs(np.linalg.eigvals(unary))) >= 1.0 - 1e-12:
        raise CorpusFormatError(path, None, None, "unary rules without a cycle of probability 1")
    closure = np.linalg.solve(np.eye(n) - unary, np.eye(n))
    return np.einsum("ab,bcd->acd", closure, binary), closure @ emit


def write_grammar(path: str | Path, grammar: Grammar, min_prob: float = 0.0) -> None:
    """Write the CNF rules with probability ``> min_prob`` as ``LHS -> RHS prob`` lines."""
    nts, terms = grammar.nonterminals, grammar.terminals
    with atomic_write(path) as out:
        for a in range(grammar.n_nonterminals):
            for b, c in zip(*np.nonzero(grammar.binary_mask[a])):
                p = grammar.binary[a, b, c]
                if p > min_prob:
                    out.write(f"{nts[a]} -> {nts[b]} {nts[c]} {p:.6g}\n")
            for w in np.nonzero(grammar.emit_mask[a])[0]:
                p = grammar.emit[a, w]
                if p > min_prob:
                    out.write(f"{nts[a]} -> {terms[w]} {p:.6g}\n")


def to_nltk(grammar: Grammar):
    """The grammar as an ``nltk.PCFG`` (rows renormalised), e.g. for NLTK's chart parsers."""
    from nltk.grammar import PCFG, Nonterminal, ProbabilisticProduction

    rows = grammar.rows(grammar.binary, grammar.emit)
    rows = rows / rows.sum(1, keepdims=True)
    binary, emit = grammar.split_rows(rows)
    syms = [Nonterminal(s) for s in grammar.nonterminals]
    prods = []
    for a in range(grammar.n_nonterminals):
        for b, c in zip(*np.nonzero(binary[a])):
            prods.append(ProbabilisticProduction(syms[a], [syms[b], syms[c]], prob=float(binary[a, b, c])))
        for w in np.nonzero(emit[a])[0]:
            prods.append(ProbabilisticProduction(syms[a], [grammar.terminals[w]], prob=float(emit[a, w])))
    return PCFG(syms[0], prods)

"""Strings generated from a known PCFG (the stand-in for the Sesotho data of thesis 4.5.1).

:func:`generate` runs the PCFG's generative process top-down (thesis 4.2:
start with ``S``, expand every nonterminal by a rule drawn from ``theta_A``
until only terminals remain) in a compiled kernel; derivations longer than
``max_length`` words are redrawn.  :func:`sparse_grammar` builds the random
sparse grammar of the recovery experiment.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .grammar import Grammar


@njit(cache=True)
def _generate(cum_rows, n_nt, n_strings, max_length, seed, tokens, lengths):
    """Fill ``tokens[s, :lengths[s]]``; row ``A`` of ``cum_rows`` is the CDF over ``[B*N + C | N*N + w]``."""
    np.random.seed(seed)
    stack = np.empty(max_length + 1, dtype=np.int64)
    s = 0
    while s < n_strings:
        top = 1
        stack[0] = 0
        n = 0
        ok = True
        while top > 0:
            top -= 1
            a = stack[top]
            r = np.searchsorted(cum_rows[a], np.random.random() * cum_rows[a, -1], side="right")
            if r >= n_nt * n_nt:
                if n >= max_length:
                    ok = False
                    break
                tokens[s, n] = r - n_nt * n_nt
                n += 1
            else:
                if top + 2 + n > max_length + 1:
                    ok = False
                    break
                stack[top] = r % n_nt
                stack[top + 1] = r // n_nt
                top += 2
        if ok:
            lengths[s] = n
            s += 1


def generate(grammar: Grammar, n_strings: int, max_length: int = 20, seed: int = 0) -> list[list[str]]:
    """``n_strings`` yields of derivations from ``grammar`` (at most ``max_length`` words each)."""
    rows = grammar.rows(grammar.binary, grammar.emit)
    cum = np.cumsum(rows / rows.sum(1, keepdims=True), axis=1)
    tokens = np.zeros((n_strings, max_length), dtype=np.int64)
    lengths = np.zeros(n_strings, dtype=np.int64)
    _generate(cum, grammar.n_nonterminals, n_strings, max_length, seed, tokens, lengths)
    return [[grammar.terminals[w] for w in tokens[s, : lengths[s]]] for s in range(n_strings)]


def sparse_grammar(n_nonterminals: int, n_terminals: int, rules_per_nt: int, words_per_nt: int,
                   stop_prob: float = 0.6, seed: int = 0) -> Grammar:
    """A random sparse CNF grammar: each nonterminal has ``rules_per_nt`` binary rules and
    ``words_per_nt`` terminal rules; terminal rules carry ``stop_prob`` of its mass (``S`` has
    none, so every string has at least two words).  The rule set of the induction
    experiment is the true binary rules plus *every* terminal for every nonterminal."""
    rng = np.random.default_rng(seed)
    n, v = n_nonterminals, n_terminals
    binary = np.zeros((n, n, n))
    emit = np.zeros((n, v))
    for a in range(n):
        picks = rng.choice(n * n, size=rules_per_nt, replace=False)
        w = rng.dirichlet(np.ones(rules_per_nt))
        binary[a].flat[picks] = w * (1.0 if a == 0 else 1.0 - stop_prob)
        if a:
            emit[a, rng.choice(v, size=words_per_nt, replace=False)] = stop_prob * rng.dirichlet(np.ones(words_per_nt))
    names = ["S"] + [f"X{i}" for i in range(1, n)]
    return Grammar(names, [f"w{i}" for i in range(v)], binary, emit, binary > 0, emit > 0)

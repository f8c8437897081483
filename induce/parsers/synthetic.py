"""Strings generated from a known PCFG (the stand-in for the Sesotho data of thesis 4.5.1), and from a known DMV.

:func:`generate` runs the PCFG's generative process top-down (thesis 4.2:
start with ``S``, expand every nonterminal by a rule drawn from ``theta_A``
until only terminals remain) in a compiled kernel; derivations longer than
``max_length`` words are redrawn.  :func:`sparse_grammar` builds the random
sparse grammar of the recovery experiment.  :func:`generate_dmv` runs the DMV's generative process (Klein &
Manning 2004) and returns the tag sequences with their trees.
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


@njit(cache=True)
def _generate_dmv(cum_root, cum_stop, cum_attach, n_sentences, max_length, seed, tags, heads, lengths):
    """Fill ``tags[s, :lengths[s]]`` and 1-based ``heads`` (0 = root); ``cum_*`` are the CDFs of the DMV rows.

    Nodes are generated breadth first (each head draws its left, then its right
    dependents outward, continuing with ``P_stop(CONT | h, d, v)``); an in-order
    walk (left dependents farthest first, the head, right dependents nearest
    first) gives the word order.  Trees of more than ``max_length`` words are redrawn.
    """
    np.random.seed(seed)
    node_tag = np.empty(max_length, dtype=np.int64)
    parent = np.empty(max_length, dtype=np.int64)
    first = np.empty(max_length, dtype=np.int64)
    n_side = np.empty((max_length, 2), dtype=np.int64)
    children = np.empty(max_length, dtype=np.int64)
    position = np.empty(max_length, dtype=np.int64)
    stack = np.empty(2 * max_length + 2, dtype=np.int64)
    s = 0
    while s < n_sentences:
        node_tag[0] = np.searchsorted(cum_root, np.random.random() * cum_root[-1], side="right")
        parent[0] = -1
        n_nodes = 1
        n_children = 0
        ok = True
        x = 0
        while x < n_nodes and ok:
            t = node_tag[x]
            first[x] = n_children
            for d in range(2):
                v = 0
                n_side[x, d] = 0
                while np.random.random() * cum_stop[t, d, v, -1] >= cum_stop[t, d, v, 0]:  # CONTINUE
                    if n_nodes >= max_length:
                        ok = False
                        break
                    row = cum_attach[t, d]
                    node_tag[n_nodes] = np.searchsorted(row, np.random.random() * row[-1], side="right")
                    parent[n_nodes] = x
                    children[n_children] = n_nodes
                    n_children += 1
                    n_nodes += 1
                    n_side[x, d] += 1
                    v = 1
                if not ok:
                    break
            x += 1
        if not ok:
            continue
        top = 1
        stack[0] = 0
        counter = 0
        while top > 0:
            top -= 1
            item = stack[top]
            if item < 0:
                position[-item - 1] = counter
                counter += 1
                continue
            lo, n_left, n_right = first[item], n_side[item, 0], n_side[item, 1]
            for k in range(n_right - 1, -1, -1):  # right dependents: nearest popped first
                stack[top] = children[lo + n_left + k]
                top += 1
            stack[top] = -item - 1
            top += 1
            for k in range(n_left):  # left dependents: farthest popped first
                stack[top] = children[lo + k]
                top += 1
        for x in range(n_nodes):
            tags[s, position[x]] = node_tag[x]
            heads[s, position[x]] = 0 if parent[x] < 0 else position[parent[x]] + 1
        lengths[s] = n_nodes
        s += 1


def generate_dmv(root: np.ndarray, stop: np.ndarray, attach: np.ndarray, n_sentences: int, max_length: int = 15,
                 seed: int = 0) -> tuple[list[list[int]], list[list[int]]]:
    """``n_sentences`` tag sequences (tag ids) and their 1-based heads drawn from the DMV with parameters
    ``root (T,)``, ``stop (T, 2, 2, 2)`` (last axis STOP, CONTINUE) and ``attach (T, 2, T)``; at most
    ``max_length`` words each."""
    tags = np.zeros((n_sentences, max_length), dtype=np.int64)
    heads = np.zeros((n_sentences, max_length), dtype=np.int64)
    lengths = np.zeros(n_sentences, dtype=np.int64)
    _generate_dmv(np.cumsum(root), np.cumsum(stop, axis=-1), np.cumsum(attach, axis=-1), n_sentences, max_length,
                  seed, tags, heads, lengths)
    return ([tags[s, :lengths[s]].tolist() for s in range(n_sentences)],
            [heads[s, :lengths[s]].tolist() for s in range(n_sentences)])

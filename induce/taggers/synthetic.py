"""Synthetic sequence data with a known number of states (thesis 5.5.1).

* :func:`sample_hmm` -- sequences from a given HMM, gold column ``state``;
* :data:`THETA_POS`, :data:`THETA_NEG`, :data:`PHI` -- the diagonally dominant
  and the cycled 4-state HMMs with the shared 8-symbol emissions of thesis eq.
  5.69-5.70 (Zhang et al. 2016);
* :func:`sample_beal_grammar` -- the regular grammar of Beal et al. (2002):
  substrings of ``(abc)*``, ``(acb)*`` and ``(a*b*)*`` (seven states).
"""

from __future__ import annotations

import numpy as np

from ..corpus.corpus import Corpus
from ..corpus.sentence import Sentence

# thesis eq. 5.69
THETA_POS = np.array([[0.99, 0.01, 0, 0], [0, 0.99, 0.01, 0], [0, 0, 0.99, 0.01], [0.01, 0, 0, 0.99]])
THETA_NEG = np.array([[0.01, 0.99, 0, 0], [0, 0.01, 0.99, 0], [0, 0, 0.01, 0.99], [0.99, 0, 0, 0.01]])
# thesis eq. 5.70, with its second row corrected.  As printed, that row is
# (1 1 1 0 0 0 1 1) / 3, which sums to 5/3 and so is not a distribution.  The other
# three rows each emit three symbols, {6,7,0}, {2,3,4} and {4,5,6}, and each
# shares one symbol with the next row (cyclically).  The row that completes
# this pattern, and the only one that also makes the 1/3 factor right, is
# {0,1,2} = (1 1 1 0 0 0 0 0) / 3.
PHI = np.array([[1, 0, 0, 0, 0, 0, 1, 1], [1, 1, 1, 0, 0, 0, 0, 0],
                [0, 0, 1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 0]], dtype=np.float64) / 3.0


def _corpus(sequences, states) -> Corpus:
    sents = [Sentence([str(w) for w in x], {"state": [f"S{s}" for s in z]}) for x, z in zip(sequences, states)]
    return Corpus.from_sentences(sents)


def sample_hmm(start: np.ndarray, trans: np.ndarray, emit: np.ndarray, n_sequences: int, length: int,
               seed: int) -> Corpus:
    """``n_sequences`` sequences of ``length`` symbols from the HMM (``emit``: states x symbols)."""
    rng = np.random.default_rng(seed)
    K, V = emit.shape
    cum_t = np.cumsum(trans / trans.sum(axis=1, keepdims=True), axis=1)
    cum_e = np.cumsum(emit / emit.sum(axis=1, keepdims=True), axis=1)
    xs, zs = [], []
    for _ in range(n_sequences):
        z = np.empty(length, dtype=np.int64)
        z[0] = rng.choice(K, p=start)
        for t in range(1, length):
            z[t] = min(np.searchsorted(cum_t[z[t - 1]], rng.random(), side="right"), K - 1)
        u = rng.random(length)
        x = np.minimum((u[:, None] > cum_e[z]).sum(axis=1), V - 1)
        xs.append([f"o{w}" for w in x])
        zs.append(z)
    return _corpus(xs, zs)


def sample_zhang(kind: str, n_sequences: int = 100, length: int = 100, seed: int = 0) -> Corpus:
    """Data from ``theta_pos`` or ``theta_neg`` (``kind`` = ``pos``/``neg``) with ``phi`` (eq. 5.69-5.70)."""
    trans = {"pos": THETA_POS, "neg": THETA_NEG}[kind]
    return sample_hmm(np.full(4, 0.25), trans, PHI, n_sequences, length, seed)


def sample_beal_grammar(n_sequences: int = 100, length: int = 100, seed: int = 0) -> Corpus:
    """Beal et al. (2002): each sequence a substring of ``(abc)*``, ``(acb)*`` or ``(a*b*)*`` (uniform types).

    Gold states: positions in the cycle for the first two types (three states
    each) and one self-transitioning state for the third, seven in all.
    """
    rng = np.random.default_rng(seed)
    xs, zs = [], []
    for _ in range(n_sequences):
        kind = rng.integers(3)
        if kind < 2:
            cycle = "abc" if kind == 0 else "acb"
            off = int(rng.integers(3))
            pos = (off + np.arange(length)) % 3
            xs.append([cycle[p] for p in pos])
            zs.append(3 * kind + pos)
        else:
            xs.append(list(np.where(rng.random(length) < 0.5, "a", "b")))
            zs.append(np.full(length, 6))
    return _corpus(xs, zs)

"""The Dirichlet priors of an HMM fit and their empirical Bayes updates (:mod:`induce.infer.hyper`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from ..infer import hmm_passes as passes
from ..infer.hyper import fit_row_dirichlets, fit_symmetric_dirichlet, fit_symmetric_dirichlet_vb


@dataclass
class Priors:
    """``alpha`` on the transition rows (start row included) and ``beta`` on the emission rows (a ``(K,)``
    array: row ``k`` ~ ``Dir(beta_k)``); ``learned`` names those re-estimated after ``burn_in`` passes; MAP
    estimation keeps them at ``floor`` = 1 or above (the Dirichlet's mode in the interior)."""
    alpha: float
    beta: float | np.ndarray
    learned: tuple[str, ...] = ()
    floor: float = 0.0
    burn_in: int = 0

    def update(self, iteration: int, data, K: int, labels: np.ndarray) -> None:
        """Empirical Bayes step: the symmetric Dirichlet concentrations maximising the evidence.

        The evidence (:func:`induce.infer.hyper.log_evidence`) is that of the
        counts of the decoded assignment ``labels`` (each token's most probable
        state): transitions (K+1 rows, start row included) and emissions (K rows
        over the W words).  The Dirichlet-multinomial evidence is defined for
        the counts of one assignment; plugging in *expected* counts instead
        averages many assignments into rows that look smoother than any one of
        them and drives the emission concentration up (on ptb-sample, K=45,
        after 100 cvi2 passes at alpha 1, beta 0.01: beta 0.084 from the
        expected counts, 0.015 from the decoded ones), which on this task
        collapses the states (docs/experiments/defaults.md).  Sampled
        assignments (``cgs``) are used as they are, as in Goldwater & Griffiths
        (2007).  Nothing is learned before pass ``burn_in``.

        With a per-state ``beta`` each emission row has its own concentration,
        the maximiser of its own row's evidence
        (:func:`induce.infer.hyper.fit_row_dirichlets`), capped at the pooled
        (symmetric) estimate: closed-class states learn a smaller beta_k than the
        pooled one, the open-class ones keep it.
        """
        if iteration <= self.burn_in:
            return
        trans = np.zeros((K + 1, K), dtype=np.int64)
        emit = np.zeros((data.W, K), dtype=np.int64)
        passes.hard_counts(data.tokens, data.offsets, np.ascontiguousarray(labels, dtype=np.int32), data.W, K,
                           trans, emit)
        if "alpha" in self.learned:
            self.alpha = max(self.floor, fit_symmetric_dirichlet(trans, self.alpha))
        if "beta" not in self.learned:
            return
        rows = sparse.csr_matrix(emit.T)  # states by words, positive entries only
        if np.ndim(self.beta):
            # per state: row k ~ Dir(beta_k), each at most the pooled (symmetric) estimate: a small
            # state of words seen once each wants beta_k -> inf, flattens, loses its tokens and dies
            # (docs/experiments/defaults.md, "Per-state emission concentrations")
            pooled = fit_symmetric_dirichlet(rows, float(self.beta.max()))
            self.beta = fit_row_dirichlets(rows, self.beta, cap=pooled)
        else:
            self.beta = max(self.floor, fit_symmetric_dirichlet(rows, self.beta))

    def epoch_update(self, mean_field: bool):
        """The minibatch algorithms' step at an epoch's end, from the global counts (every epoch, from the
        first): ``(counts, alpha, beta) -> (alpha, beta)`` for :func:`induce.algorithms.minibatch.run`.
        Mean-field VI (svi, svi-buffered, svi-vanilla): the ELBO's own hyperparameter update with ``q`` held
        (:func:`induce.infer.hyper.fit_symmetric_dirichlet_vb`); the collapsed ones (scvi, scvi3,
        scvi3-vanilla), whose objective is the Dirichlet-multinomial evidence of the expected counts: Minka's
        maximiser of that evidence (:func:`induce.infer.hyper.fit_symmetric_dirichlet`).  Transitions: the
        ``K+1`` rows (start row included) over ``K`` states; emissions: the ``K`` state rows over the ``W``
        words."""
        if mean_field:
            def fit(n, a):
                return fit_symmetric_dirichlet_vb(n, a, a)
        else:
            fit = fit_symmetric_dirichlet
        learned = self.learned

        def step(counts, alpha, beta):
            if "alpha" in learned:
                alpha = fit(counts.trans, alpha)
            if "beta" in learned:
                beta = fit(counts.emissions().T, beta)
            return alpha, beta

        return step

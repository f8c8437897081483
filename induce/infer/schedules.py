"""Update schedules shared by the stochastic algorithms (SVI, SCVI, their HDP forms): the Robbins-Monro step
size, the blend of thesis eq. 3.103, the initial counts and the minibatches.  How svi and scvi use them is in
:mod:`induce.algorithms.minibatch`; for SVI the blended ``N`` are the natural parameters minus the prior, for SCVI
the stochastic expected counts the surrogate parameters are formed from.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError, check_float


def step_size(m: int, tau: float, kappa: float) -> float:
    """Robbins-Monro step ``rho_m = (tau + m) ** -kappa`` for update number ``m >= 0``.

    With ``tau = 0`` the first step (``m = 0``) would be infinite, so steps are
    counted from one: ``rho = (tau + m + 1) ** -kappa``, and ``rho <= 1`` always.
    """
    return float(min(1.0, (tau + m + 1.0) ** (-kappa)))


def check_schedule(tau: float, kappa: float, batch_size: int | None) -> None:
    """Validate step-size options at the boundary with a clear message."""
    if not 0.5 <= kappa <= 1.0:
        raise ConfigError(f"kappa must be in [0.5, 1] (Robbins-Monro), got {kappa}")
    check_float("tau", tau, 0.0)
    if batch_size is not None and batch_size < 1:  # None: chosen by the estimator
        raise ConfigError(f"minibatch size must be at least 1, got {batch_size}")


def blend(N: np.ndarray, batch_counts: np.ndarray, rho: float, scale: float) -> None:
    """In place: ``N <- (1 - rho) N + rho * scale * batch_counts`` (thesis eq. 3.103).

    ``scale`` is the corpus size over the minibatch size (``I / |B|``, or tokens
    over minibatch tokens), so that ``scale * batch_counts`` is an unbiased
    estimate of whole-corpus counts.
    """
    N *= 1.0 - rho
    N += (rho * scale) * batch_counts


def exponential_init(rng: np.random.Generator, shape: tuple[int, ...], mean: float) -> np.ndarray:
    """Initial global counts drawn from an exponential distribution with the given mean.

    Thesis eq. 3.106-3.107: transition counts with mean ``I*T / K**2`` and
    emission counts with mean ``I*T / (K*W)``.
    """
    return rng.exponential(mean, size=shape)


def minibatches(n_items: int, batch_size: int, rng: np.random.Generator, n_epochs: int = 1):
    """Yield index arrays of a seeded shuffle of ``range(n_items)``, epoch after epoch.

    Each epoch is a fresh permutation cut into consecutive batches of
    ``batch_size`` (the last one may be shorter).
    """
    for _ in range(n_epochs):
        order = rng.permutation(n_items)
        for lo in range(0, n_items, batch_size):
            yield order[lo:lo + batch_size]

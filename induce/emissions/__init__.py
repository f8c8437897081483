"""Conjugate exponential-family emission families for HMMs (thesis section 3.7).

``get_family("gaussian" | "diag-gaussian" | "poisson" | "categorical", **hyperparameters)``;
see :mod:`induce.emissions.base` for the interface a new family implements.
"""

from .base import FAMILIES, EmissionFamily, get_family, register
from .categorical import Categorical
from .diag_gaussian import DiagGaussian
from .gaussian import Gaussian
from .poisson import Poisson

__all__ = ["FAMILIES", "EmissionFamily", "get_family", "register", "Categorical", "DiagGaussian", "Gaussian", "Poisson"]

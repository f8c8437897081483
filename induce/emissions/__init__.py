"""Conjugate exponential-family emission families for HMMs (thesis section 3.7).

``get_family("gaussian" | "diag-gaussian" | "poisson" | "categorical", **hyperparameters)``;
see :mod:`induce.emissions.base` for the interface a new family implements.  A new family is one
module in this package with a class decorated by :func:`register`: :func:`family_names` (and so
``get_family`` and ``induce segment --emission``) discovers it.
"""

from .base import FAMILIES, EmissionFamily, family_names, get_family, register
from .categorical import Categorical
from .diag_gaussian import DiagGaussian
from .gaussian import Gaussian
from .poisson import Poisson

__all__ = ["FAMILIES", "EmissionFamily", "family_names", "get_family", "register",
           "Categorical", "DiagGaussian", "Gaussian", "Poisson"]

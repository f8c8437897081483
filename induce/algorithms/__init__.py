"""HMM inference algorithms as objects, one module each, registered by name (docs/architecture.md).

``get_algorithm("cvi2").fit(core, data, loop, opts)``: see :mod:`induce.algorithms.base` for what an algorithm
takes and returns.  A new algorithm is one module in this package with an :class:`Algorithm` subclass
decorated by :func:`register`, imported below.
"""

from .base import ALGORITHMS, HDP_ALGORITHMS, Algorithm, Core, Fitted, HDPCore, Sequences, get_algorithm, register
from .loop import Loop, visit_order
from .priors import Priors
# each registers its algorithms
from . import beam, cgs, cvi1, cvi2, cvi3, em_vi, hdp_cvi, hdp_scvi, hdp_svi, stochastic  # noqa: F401

__all__ = ["ALGORITHMS", "HDP_ALGORITHMS", "Algorithm", "Core", "Fitted", "HDPCore", "Loop", "Priors", "Sequences", "get_algorithm",
           "register", "visit_order"]

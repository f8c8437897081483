"""Word alignment: IBM Model 1 and the HMM alignment model with EM, VI and CVI.

``WordAligner`` trains both directions and symmetrises them; ``normalize``
holds the Hansards text normalisation; ``symmetrize`` the heuristics.
"""

from .aligner import WordAligner
from .normalize import normalize_text, normalize_tokens
from .symmetrize import METHODS as SYMMETRIZATIONS, symmetrize

__all__ = ["WordAligner", "normalize_text", "normalize_tokens", "symmetrize", "SYMMETRIZATIONS"]

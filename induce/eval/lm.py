"""Predictive likelihood of held-out text.

Input log-probabilities are natural logarithms (nats), one per sentence:
``log p(sentence)``.  With N tokens in total::

    log_likelihood_per_token = (1/N) * sum_s log p(s)        (nats)
    perplexity               = exp(-log_likelihood_per_token)
                             = 2 ** (bits per token)

Whether an end-of-sentence event is part of N is the caller's convention; pass
the number of predicted events.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InduceError


def perplexity(sentence_logprobs, n_tokens: int) -> dict:
    """Per-token log-likelihood (nats), perplexity, bits per token and the total
    log-likelihood of the given per-sentence natural-log probabilities."""
    logprobs = np.asarray(sentence_logprobs, dtype=np.float64)
    if n_tokens <= 0:
        raise InduceError(f"perplexity needs a positive token count; got {n_tokens}")
    if np.any(np.isnan(logprobs)) or np.any(logprobs > 0):
        raise InduceError("sentence log-probabilities must be natural logs <= 0 and not NaN")
    total = float(logprobs.sum())
    per_token = total / n_tokens
    return {
        "log_likelihood": total,
        "tokens": int(n_tokens),
        "log_likelihood_per_token": per_token,
        "bits_per_token": -per_token / math.log(2.0),
        "perplexity": math.exp(-per_token),
    }

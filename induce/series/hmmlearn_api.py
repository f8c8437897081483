"""hmmlearn's calling conventions for the segmenters (docs/hmmlearn.md).

hmmlearn stacks the sequences in one ``(sum(lengths), d)`` array and passes ``lengths``; induce's own
form is a list of ``(T, d)`` arrays.  Both are accepted by every method below (:class:`SequenceInput`,
shared by :class:`~induce.series.HMMSegmenter` and :class:`~induce.series.hsmm.HSMMSegmenter`):

* ``X`` one array (``lengths`` or not): results per step come back as one array over all rows
  (``predict``: ``(n,)``; ``predict_proba``: ``(n, K)``), as hmmlearn returns them;
* ``X`` a list of arrays: one result per sequence, a list (induce's form).

``fit(X, y)`` and ``score(X, y)``: the second positional argument is scikit-learn's ``y`` (ignored,
so that ``Pipeline`` works) unless it can only be hmmlearn's positional ``lengths`` -- positive integers
summing to the rows of ``X`` and fewer of them than rows (a per-step target has as many entries as rows).
``score`` is induce's mean log-likelihood **per step** (hmmlearn's is the total: ``score_samples``
and ``log_likelihood`` give the total).  ``decode``, ``aic`` and ``bic`` are hmmlearn's, on the point model
each estimator decodes with (its ``_n_parameters`` and ``_path_log_probs``).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError


def _rows(X) -> int | None:
    """Rows of ``X`` when it is one array (2-D, or 1-D of numbers: one column), else None (a list, or a 1-D
    object array of sequences), as :func:`~induce.series.segmenter.as_sequences` decides."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) not in (1, 2) or (len(shape) == 1 and getattr(X, "dtype", None) == object):
        return None
    return int(shape[0])


def _as_lengths(lengths, n_rows: int | None) -> np.ndarray:
    """``lengths`` checked: positive integers summing to the rows of one stacked array."""
    if n_rows is None:
        raise ConfigError("lengths= splits one stacked (n, d) array; X is a list of sequences already")
    values = np.asarray(lengths)
    if values.ndim != 1 or values.size == 0 or values.dtype.kind not in "iu" or np.any(values <= 0):
        raise ConfigError(f"lengths must be positive integers; got {np.asarray(lengths).tolist()!r:.80}")
    if int(values.sum()) != n_rows:
        raise ConfigError(f"lengths sum to {int(values.sum())}, but X has {n_rows} rows")
    return values


def _looks_like_lengths(y, n_rows: int | None) -> bool:
    """Whether a second positional argument can only be hmmlearn's ``lengths`` (see the module docstring)."""
    if y is None or n_rows is None:
        return False
    values = np.asarray(y)
    return (values.ndim == 1 and 0 < values.size < n_rows and values.dtype.kind in "iu"
            and bool(np.all(values > 0)) and int(values.sum()) == n_rows)


class SequenceInput:
    """``lengths=`` and the one-array / list-of-arrays result shapes (the module docstring); the estimator
    supplies ``_sequences(list)`` (checks against the fit), ``_paths(seqs, decode)``, ``_posteriors(seqs)``,
    ``_log_likelihoods(seqs)`` and ``_path_log_probs(seqs, paths)`` (per sequence: ``log p(x)`` and
    ``log p(x, z)``), ``_emission_point()`` and ``_n_parameters()``."""

    def _split(self, X, lengths=None) -> tuple[list, bool]:
        """``(sequences, stacked)``: ``X`` cut at ``lengths``, and whether results should be stacked."""
        n_rows = _rows(X)
        if lengths is None:
            return ([X] if n_rows is not None else list(X)), n_rows is not None
        cuts = np.cumsum(_as_lengths(lengths, n_rows))[:-1]
        return np.split(np.asarray(X), cuts), True

    def _resolve(self, X, y, lengths):
        """hmmlearn's positional ``lengths`` in the place of scikit-learn's ``y`` (module docstring)."""
        if lengths is None and _looks_like_lengths(y, _rows(X)):
            return y
        return lengths

    def _fit_sequences(self, X, y=None, lengths=None) -> list:
        """The training sequences of ``fit(X, y, lengths)``."""
        return self._split(X, self._resolve(X, y, lengths))[0]

    @staticmethod
    def _stack(per_sequence: list, stacked: bool):
        return np.concatenate(per_sequence) if stacked else per_sequence

    def predict(self, X, lengths=None, decode: str = "viterbi"):
        """State of every step: the Viterbi path, or (``decode="posterior"``) ``argmax_k q(z_t = k)``; one
        array over all rows for one array ``X``, a list of paths for a list."""
        if decode not in ("viterbi", "posterior"):
            raise ConfigError(f"decode must be 'viterbi' or 'posterior', got {decode!r}")
        seqs, stacked = self._split(X, lengths)
        return self._stack(self._paths(self._sequences(seqs), decode), stacked)

    def predict_proba(self, X, lengths=None):
        """Posterior state marginals ``q(z_t)``: ``(n, K)`` for one array ``X``, a list of ``(T, K)``."""
        seqs, stacked = self._split(X, lengths)
        return self._stack(self._posteriors(self._sequences(seqs)), stacked)

    def score_samples(self, X, lengths=None):
        """hmmlearn's ``(log p(X), posteriors)``: the total log-likelihood and :meth:`predict_proba`."""
        seqs, stacked = self._split(X, lengths)
        seqs = self._sequences(seqs)
        return float(sum(self._log_likelihoods(seqs))), self._stack(self._posteriors(seqs), stacked)

    def log_likelihood(self, X, lengths=None) -> float:
        """Total ``log p(X)`` over the sequences (forward messages)."""
        return float(sum(self._log_likelihoods(self._sequences(self._split(X, lengths)[0]))))

    def score(self, X, y=None, context=None, lengths=None) -> float:
        """Mean log-likelihood per step of ``X`` (every induce estimator's ``score``; ``y`` ignored); with
        ``context`` (one prefix per sequence) the conditional ``[log p(context + X) - log p(context)] / |X|``
        (held-out continuation)."""
        seqs = self._sequences(self._split(X, self._resolve(X, y, lengths))[0])
        n = sum(x.shape[0] for x in seqs)
        if context is None:
            return self.log_likelihood(seqs) / n
        ctx = self._sequences(self._split(context)[0])
        if len(ctx) != len(seqs):
            raise ConfigError(f"context has {len(ctx)} sequences, X has {len(seqs)}")
        joined = [np.vstack([c, x]) for c, x in zip(ctx, seqs)]
        return (self.log_likelihood(joined) - self.log_likelihood(ctx)) / n

    def decode(self, X, lengths=None, algorithm: str = "viterbi"):
        """hmmlearn's ``(log-probability, states)``: ``viterbi``: the joint log-probability ``log p(X, Z)`` of
        the Viterbi path ``Z`` and the path; ``map``: ``log p(X)`` and the per-step posterior argmax."""
        if algorithm not in ("viterbi", "map"):
            raise ConfigError(f"algorithm must be 'viterbi' or 'map', got {algorithm!r}")
        seqs, stacked = self._split(X, lengths)
        seqs = self._sequences(seqs)
        if algorithm == "map":
            return float(sum(self._log_likelihoods(seqs))), self._stack(self._paths(seqs, "posterior"), stacked)
        paths = self._paths(seqs, "viterbi")
        return float(sum(self._path_log_probs(seqs, paths))), self._stack(paths, stacked)

    def _emission_parameters(self) -> int:
        """Free emission parameters of the point model, as hmmlearn's ``_get_n_fit_scalars_per_param`` counts
        them: a symmetric covariance ``d(d+1)/2`` per state, a probability vector one fewer than its size."""
        point, K = self._emission_point(), int(self.n_states)
        count = 0
        for name, value in point.items():
            per_state = value[0]
            if name == "covars":
                d = per_state.shape[0]
                count += K * d * (d + 1) // 2
            elif name == "probs":
                count += K * (per_state.size - 1)
            else:
                count += K * per_state.size
        return count

    def aic(self, X, lengths=None) -> float:
        """Akaike information criterion ``-2 log p(X) + 2 p`` (p: the free parameters, ``_n_parameters``)."""
        return -2.0 * self.log_likelihood(X, lengths) + 2.0 * self._n_parameters()

    def bic(self, X, lengths=None) -> float:
        """Bayesian information criterion ``-2 log p(X) + p log n`` (n: the rows of ``X``)."""
        n = sum(x.shape[0] for x in self._sequences(self._split(X, lengths)[0]))
        return -2.0 * self.log_likelihood(X, lengths) + self._n_parameters() * np.log(n)

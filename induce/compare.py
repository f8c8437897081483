"""Head-to-head comparison of HMM tagger inference algorithms on one corpus (docs/experiments/compare.md).

:func:`compare` fits one :class:`~induce.taggers.HMMTagger` per (algorithm, seed)
with the same model settings, and returns every run (final metrics, time,
per-iteration trace) and a summary: the mean and sample standard deviation over
seeds of every metric.  The metrics are those of :func:`induce.eval.tagging.tagging_report`
(thesis 3.8.2) against the gold column, plus, for every algorithm alike, the
per-token predictive log-likelihood of the corpus from the fitted counts
(thesis eq. 3.108), so that algorithms whose own objectives differ (EM's
likelihood, VI's bound, CVI's predictive) are scored on one footing.
"""

from __future__ import annotations

import time
import warnings
from typing import Callable, Sequence

import numpy as np

from .corpus.corpus import Corpus
from .errors import ConfigError

DEFAULT_ALGORITHMS = ("em", "vi", "cvi2", "cgs")
#: run fields that are bookkeeping, not metrics to summarise
_NOT_SUMMARISED = {"infer", "emission", "label", "seed", "trace"}


def family_algorithms(emission: str) -> tuple[str, ...]:
    """The inference algorithms an emission family of :class:`~induce.taggers.HMMTagger` trains with."""
    from .taggers.hmm import ALGORITHMS
    from .taggers.hmm_features import FEATURE_INFER
    from .taggers.hmm_vectors import VECTOR_ALGORITHMS

    families = {"categorical": tuple(ALGORITHMS), "features": FEATURE_INFER, "embeddings": tuple(VECTOR_ALGORITHMS)}
    if emission not in families:
        raise ConfigError(f"unknown emission family {emission!r}; expected some of {', '.join(families)}")
    return families[emission]


def contestants(infer: Sequence[str], emission: Sequence[str]) -> list[tuple[str, str, str]]:
    """``(label, emission, algorithm)`` of every pair of an emission family and an algorithm of ``infer`` it
    trains with; the label is the algorithm's name for the categorical family, else ``family/algorithm``.
    ``ConfigError`` for a family none of ``infer`` trains."""
    out = []
    for family in emission:
        mine = [a for a in infer if a in family_algorithms(family)]
        if not mine:
            raise ConfigError(f"emission {family!r} trains with {', '.join(family_algorithms(family))}; none of "
                              f"the algorithms {', '.join(infer)} does: add one to --infer")
        out += [(a if family == "categorical" else f"{family}/{a}", family, a) for a in mine]
    return out


def _mean_sd(values: Sequence[float]) -> dict:
    """Mean and sample standard deviation (ddof = 1; 0 for a single value)."""
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "sd": float(arr.std(ddof=1)) if arr.size > 1 else 0.0, "n": int(arr.size)}


def summarise(runs: list[dict]) -> dict:
    """Per contestant (its ``label``, else its algorithm; in first-seen order), per numeric run field: ``{"mean",
    "sd", "n"}`` over its runs."""
    summary: dict[str, dict] = {}
    for infer in dict.fromkeys(r.get("label", r["infer"]) for r in runs):
        mine = [r for r in runs if r.get("label", r["infer"]) == infer]
        keys = dict.fromkeys(k for r in mine for k, v in r.items()
                             if k not in _NOT_SUMMARISED and isinstance(v, (int, float)) and not isinstance(v, bool))
        summary[infer] = {k: _mean_sd([r[k] for r in mine if k in r]) for k in keys}
    return summary


def compare(corpus: Corpus, infer: Sequence[str] = DEFAULT_ALGORITHMS, seeds: int | Sequence[int] = 3, *,
            gold_column: str | None = None, n_states: int = 45, n_iter: int | None = None,
            alpha: float | None = None, beta: float | None = None, eval_every: int = 1, verbose: bool = False,
            callback: Callable[[dict], None] | None = None, emission: Sequence[str] = ("categorical",),
            **tagger_params) -> dict:
    """Fit ``HMMTagger(infer=a, emission=e, random_state=s, ...)`` for every emission family ``e``, algorithm
    ``a`` of ``infer`` that trains it (:func:`contestants`; the categorical family: every one) and seed ``s``.

    ``seeds``: a count ``N`` (seeds ``0 .. N-1``) or the seeds themselves.  With a
    ``gold_column`` the trace scores the tagging every ``eval_every`` iterations and
    each run carries its final metrics.  ``n_iter``, ``alpha`` and ``beta`` left at
    ``None`` keep the tagger's defaults (a cap with a convergence test; learned
    priors), so every algorithm runs as ``induce tag`` runs it.  ``tagger_params`` go to every
    :class:`~induce.taggers.HMMTagger` unchanged (each family reads its own: ``features``, ``feature_l2``,
    ``embeddings``, ...).  ``callback`` is called with each
    finished run.  Returns ``{"summary": {label: {field: {"mean", "sd", "n"}}},
    "runs": [{"label", "infer", "emission", "seed", "seconds", "log_likelihood_per_token",
    "predictive_log_likelihood_per_token" (categorical), "states_used", metrics..., "trace"}], settings...}``;
    ``log_likelihood_per_token`` is :meth:`HMMTagger.score <induce.taggers.hmm_decode.HMMDecoding.score>` (word-vector emissions: a density).
    """
    from .eval.tagging import tagging_report
    from .taggers import HMMTagger
    from .taggers.hmm import ALGORITHMS

    infer, emission = list(infer), list(emission)
    unknown = [a for a in infer if a not in ALGORITHMS]
    if not infer or unknown:
        raise ConfigError(f"unknown inference algorithm(s) {', '.join(unknown) or '(none given)'}; "
                          f"expected some of {', '.join(ALGORITHMS)}")
    pairs = contestants(infer, emission)
    seed_list = list(range(seeds)) if isinstance(seeds, (int, np.integer)) else [int(s) for s in seeds]
    if not seed_list:
        raise ConfigError("compare needs at least one seed")
    if gold_column is not None and gold_column not in corpus.tags:
        raise ConfigError(f"gold column {gold_column!r} not in the corpus; it has {sorted(corpus.tags) or 'no tags'}")
    runs = []
    jobs = [(c, s) for c in pairs for s in seed_list]
    if verbose:
        from tqdm import tqdm

        jobs = tqdm(jobs, desc="compare", unit="run", dynamic_ncols=True)
    given = {k: v for k, v in (("alpha", alpha), ("beta", beta)) if v is not None} | tagger_params
    for _, family, algorithm in pairs:  # compile the numba kernels first, so that no run's time includes it
        with warnings.catch_warnings():  # a one-pass fit on two sentences: its "not converged" is no news
            warnings.simplefilter("ignore")
            HMMTagger(n_states=n_states, infer=algorithm, emission=family, n_iter=1, **given).fit(corpus.head(2))
    for (label, family, algorithm), seed in jobs:
        if hasattr(jobs, "set_postfix"):
            jobs.set_postfix({"run": label, "seed": seed})
        model = HMMTagger(n_states=n_states, infer=algorithm, emission=family, random_state=seed,
                          eval_column=gold_column, eval_every=max(1, eval_every), **given,
                          **({"n_iter": n_iter} if n_iter else {}))
        start = time.perf_counter()
        model.fit(corpus)
        seconds = time.perf_counter() - start
        run = {"label": label, "infer": algorithm, "emission": family, "seed": seed, "seconds": seconds,
               "log_likelihood_per_token": model.score(corpus)}
        if family == "categorical":
            run["predictive_log_likelihood_per_token"] = model.predictive_log_likelihood(corpus)
        if gold_column is not None:
            states = getattr(model, "labels_", None)
            states = model.predict_flat(corpus) if states is None else states
            report = tagging_report(states, corpus.tags[gold_column], corpus.offsets)
            run["states_used"] = report.pop("states")
            run.update({k: v for k, v in report.items() if k not in ("tokens", "tags")})
        run["trace"] = model.trace_
        runs.append(run)
        if callback is not None:
            callback(run)
    return {"command": "compare", "input": corpus.name, "infer": ",".join(infer), "emission": ",".join(emission),
            "seeds": seed_list,
            "states": n_states, "iterations": n_iter, "alpha": alpha, "beta": beta, "gold_column": gold_column,
            "sentences": corpus.n_sentences, "tokens": corpus.n_tokens, **tagger_params,
            "summary": summarise(runs), "runs": runs}

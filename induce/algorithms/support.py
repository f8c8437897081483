"""Which inference algorithm runs with which emission family and model: one declarative table.

Each :class:`Row` names a model (``hmm``, ``hdp-hmm``, ``hsmm``, ``hdp-hsmm``) and an algorithm, the emission
families it runs with and through which commands (``tag``: the text estimators, ``segment``: the series
estimators; ``tag --emission embeddings`` is the series engine over word vectors, Gaussian families), the tests
that fit those combinations, and for every other cell a one-line reason.  :func:`check` is what the command line
asks before any work (``induce: error: <reason>``, status 2); :func:`markdown` writes the table of
docs/architecture.md (a test checks that the page shows it).  A new combination is one entry in a row's ``runs``;
a new algorithm or model one row.

The table names algorithms; the classes stay in one registry per engine, because a name means a different ``fit``
there: ``ALGORITHMS`` (the text HMM), ``HDP_ALGORITHMS`` (the text HDP-HMM: ``svi`` is both),
:data:`induce.algorithms.series_collapsed.COLLAPSED` (the series HMM's ``cvi1`` / ``cgs``, which run over whole
sequences with a family's compiled predictive, not over the text engine's count tables).  One registry for all
would need the model in every key for no gain: each estimator asks its own, and this table is the one place
that says which name runs where.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the emission families of the table's columns (``induce.emissions``, and the text HMM's log-linear ``features``)
FAMILIES = ("categorical", "features", "gaussian", "diag-gaussian", "poisson")
MODELS = ("hmm", "hdp-hmm", "hsmm", "hdp-hsmm")
COMMANDS = ("tag", "segment")

_BOTH, _TAG, _SEGMENT = ("tag", "segment"), ("tag",), ("segment",)
#: the series engine's families (``segment``), and those ``tag --emission embeddings`` also runs
_SERIES = {"categorical": _SEGMENT, "gaussian": _SEGMENT, "diag-gaussian": _SEGMENT, "poisson": _SEGMENT}
_ENGINES = {"categorical": _BOTH, "gaussian": _BOTH, "diag-gaussian": _BOTH, "poisson": _SEGMENT}

_FEATURES = ("the log-linear (features) emissions train with --infer em only (EM with an L-BFGS M-step, or "
             "--feature-fit direct); the variational and collapsed algorithms need a conjugate emission prior")
_TEXT_ONLY = ("--infer {algorithm} runs on the text HMM's categorical counts only (induce tag): the series engine "
              "has no sweep for it yet")
_NO_SERIES_PREDICTIVE = ("the series engine's collapsed sweeps integrate the emissions through a compiled posterior "
                         "predictive, which its categorical family does not have yet; induce tag runs --infer "
                         "{algorithm} on text")
_NOT_VECTORS = ("--emission embeddings (the word-vector HMM) runs --infer em, vi, cvi2, svi or scvi; the collapsed "
                "Gaussian sweeps run in induce segment")
_CATEGORICAL_HSMM = "semi-Markov tagging (induce tag --model hsmm) takes categorical emissions"
_NO_TEXT_HDP_HSMM = "the HDP-HSMM is not implemented for text (induce tag); it runs on series (induce segment)"


@dataclass(frozen=True)
class Row:
    """``algorithm`` of ``model``: ``runs`` maps a family to the commands that run it, ``tests`` names the tests
    that fit it, ``reasons`` says why any other cell does not run (by family; ``"*"``: the rest)."""
    model: str
    algorithm: str
    runs: dict
    reasons: dict = field(default_factory=dict)
    tests: str = ""


TABLE = (
    Row("hmm", "em", {**_ENGINES, "features": _TAG}, {},
        "tests/hmm/test_tagger.py, tests/series/test_series_inference.py, tests/emissions/test_features.py"),
    *(Row("hmm", name, _ENGINES, {"features": _FEATURES},
          "tests/hmm/test_tagger.py, tests/series/test_series_inference.py") for name in ("vi", "cvi2")),
    *(Row("hmm", name, _ENGINES, {"features": _FEATURES},
          "tests/infer/test_stochastic_hmm.py, tests/series/test_series_inference.py") for name in ("svi", "scvi")),
    *(Row("hmm", name, {"categorical": _TAG, "gaussian": _SEGMENT, "diag-gaussian": _SEGMENT, "poisson": _SEGMENT},
          {"features": _FEATURES, "categorical": _NO_SERIES_PREDICTIVE, "gaussian": _NOT_VECTORS,
           "diag-gaussian": _NOT_VECTORS},
          "tests/hmm/test_tagger.py, tests/infer/test_pass_signatures.py, tests/series/test_collapsed_series.py")
      for name in ("cvi1", "cgs")),
    Row("hmm", "cvi3", {"categorical": _TAG}, {"features": _FEATURES, "*": _TEXT_ONLY},
        "tests/hmm/test_tagger.py, tests/infer/test_pass_signatures.py"),
    *(Row("hmm", name, {"categorical": _TAG}, {"features": _FEATURES, "*": _TEXT_ONLY},
          "tests/infer/test_subchain.py") for name in ("scvi3", "scvi3-vanilla", "svi-buffered", "svi-vanilla")),
    *(Row("hdp-hmm", name, {"categorical": _BOTH, "gaussian": _SEGMENT, "diag-gaussian": _SEGMENT,
                            "poisson": _SEGMENT},
          {"features": "the HDP-HMM tagger takes categorical emissions (--emission features runs with --model hmm)"},
          "tests/hdp, tests/series/test_series_inference.py") for name in ("cvi", "scvi", "svi")),
    Row("hdp-hmm", "beam", {"categorical": _TAG},
        {"features": "the HDP-HMM tagger takes categorical emissions (--emission features runs with --model hmm)",
         "*": "the beam sampler is written for the text HDP-HMM's categorical counts only (induce tag)"},
        "tests/hdp/test_baselines.py"),
    *(Row("hsmm", name, {**_SERIES, "categorical": _BOTH}, {"features": _CATEGORICAL_HSMM},
          "tests/hsmm/test_fit.py, tests/hsmm/test_tagger_hsmm.py") for name in ("em", "vi")),
    *(Row("hsmm", name, {**_SERIES, "categorical": _BOTH}, {"features": _CATEGORICAL_HSMM},
          "tests/hsmm/test_fit.py, tests/hsmm/test_svi_cvi.py, tests/hsmm/test_tagger_hsmm.py")
      for name in ("svi", "cvi2", "scvi")),
    *(Row("hdp-hsmm", name, _SERIES, {"features": _NO_TEXT_HDP_HSMM, "*": _NO_TEXT_HDP_HSMM},
          "tests/hsmm/test_hdp_hsmm.py") for name in ("vi", "svi", "cvi2", "scvi")),
    Row("hdp-hsmm", "em", {}, {"*": "the HDP-HSMM is fitted by vi, svi, cvi2 or scvi; it has no em"},
        "tests/hsmm/test_hdp_hsmm.py"),
)


def row(model: str, algorithm: str) -> Row | None:
    """The table's row of ``algorithm`` under ``model`` (``None``: the model has no such algorithm)."""
    return next((r for r in TABLE if r.model == model and r.algorithm == algorithm), None)


def algorithms(model: str, family: str, command: str) -> tuple[str, ...]:
    """The algorithms ``command`` runs for ``model`` with the ``family`` emissions, in the table's order."""
    return tuple(r.algorithm for r in TABLE if r.model == model and command in r.runs.get(family, ()))


def reason(model: str, algorithm: str, family: str, command: str) -> str | None:
    """Why ``command`` cannot run ``algorithm`` of ``model`` with the ``family`` emissions (``None``: it can)."""
    r = row(model, algorithm)
    if r is not None and command in r.runs.get(family, ()):
        return None
    text = _template(r, family)
    if text is not None:
        return text.format(model=model, algorithm=algorithm, family=family, command=command)
    known = algorithms(model, family, command)
    if not known:
        return f"induce {command} runs no --model {model} algorithm with {family} emissions"
    return f"--model {model} runs --infer {', '.join(known)} with {family} emissions (induce {command}), not {algorithm}"


def _template(r: Row | None, family: str) -> str | None:
    """The row's reason for the ``family`` column, unformatted (``None``: none given)."""
    return None if r is None else r.reasons.get(family, r.reasons.get("*"))


def check(model: str, algorithm: str, family: str, command: str) -> None:
    """Raise :class:`~induce.errors.ConfigError` with :func:`reason` when the combination does not run."""
    why = reason(model, algorithm, family, command)
    if why is not None:
        from ..errors import ConfigError

        raise ConfigError(why)


def markdown() -> str:
    """The algorithm x family table of each model as Markdown: a cell says through which commands it runs, or
    "no" with its reason in a footnote list under the table; a cell that runs through one command only and has
    a reason of its own for the other names it too ("segment; tag: no (2)")."""
    out = []
    for model in MODELS:
        out += [f"### {model}", "", "| algorithm | " + " | ".join(FAMILIES) + " | tests |",
                "|---" * (len(FAMILIES) + 2) + "|"]
        notes: list[str] = []
        for r in (r for r in TABLE if r.model == model):
            cells = [_cell(r, family, notes) for family in FAMILIES]
            out.append(f"| {r.algorithm} | " + " | ".join(cells) + f" | {r.tests} |")
        out += [""] + [f"{i}. {n}" for i, n in enumerate(notes, 1)] + [""]
    return "\n".join(out)


def _cell(r: Row, family: str, notes: list[str]) -> str:
    """The ``family`` cell of row ``r``; a reason it shows is numbered in ``notes`` (added when new)."""
    runs = r.runs.get(family, ())
    if runs and family not in r.reasons:
        return " + ".join(runs)
    note = (_template(r, family) or "").replace("--infer {algorithm}", "it").format(model=r.model)
    note = note or reason(r.model, r.algorithm, family, "segment")
    if note not in notes:
        notes.append(note)
    if not runs:
        return f"no ({notes.index(note) + 1})"
    missing = " + ".join(c for c in COMMANDS if c not in runs)
    return " + ".join(runs) + f"; {missing}: no ({notes.index(note) + 1})"

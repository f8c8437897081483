"""Which inference algorithm runs with which emission family and model: one declarative table.

Each :class:`Row` names a model (``hmm``, ``hdp-hmm``, ``hsmm``, ``hdp-hsmm``) and an algorithm, the emission
families it runs with and through which commands (``tag``: the text estimators, ``segment``: the series
estimators; ``tag --emission embeddings`` is the series engine over word vectors, Gaussian families), the tests
that fit those combinations, and for every other cell a one-line reason.  :func:`check` is what the command line
asks before any work (``induce: error: <reason>``, status 2); :func:`markdown` writes the table of
docs/architecture.md (a test checks that the page shows it).  A new combination is one entry in a row's ``runs``;
a new algorithm or model one row.
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
_NO_TEXT_HSMM = "semi-Markov tagging (induce tag --model {model}) is not implemented yet; use induce segment"


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
    *(Row("hmm", name, {"categorical": _TAG}, {"features": _FEATURES, "*": _TEXT_ONLY},
          "tests/hmm/test_tagger.py, tests/infer/test_pass_signatures.py") for name in ("cvi1", "cgs", "cvi3")),
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
    *(Row("hsmm", name, _SERIES, {"features": _NO_TEXT_HSMM, "*": _NO_TEXT_HSMM},
          "tests/hsmm/test_fit.py, tests/hsmm/test_svi_cvi.py") for name in ("em", "vi", "svi", "cvi2", "scvi")),
    *(Row("hdp-hsmm", name, _SERIES, {"features": _NO_TEXT_HSMM, "*": _NO_TEXT_HSMM},
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
    "no" with its reason in a footnote list under the table."""
    out = []
    for model in MODELS:
        rows = [r for r in TABLE if r.model == model]
        out += [f"#### {model}", "", "| algorithm | " + " | ".join(FAMILIES) + " | tests |",
                "|---" * (len(FAMILIES) + 2) + "|"]
        notes: list[str] = []
        for r in rows:
            cells = []
            for family in FAMILIES:
                if r.runs.get(family):
                    cells.append(" + ".join(r.runs[family]))
                    continue
                note = (_template(r, family) or "").replace("--infer {algorithm}", "it").format(model=model)
                note = note or reason(model, r.algorithm, family, "segment")
                if note not in notes:
                    notes.append(note)
                cells.append(f"no ({notes.index(note) + 1})")
            out.append(f"| {r.algorithm} | " + " | ".join(cells) + f" | {r.tests} |")
        out += [""] + [f"{i}. {n}" for i, n in enumerate(notes, 1)] + [""]
    return "\n".join(out)

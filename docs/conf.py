"""Sphinx configuration of the induce documentation site (docs/index.rst says why Sphinx).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` from the repository root.
Warnings are errors, and ``nitpicky`` makes every reference to an ``induce`` object that does not
resolve a warning, so a broken reference in a docstring fails the build; references to other
packages (numpy, scipy, dask, nltk, ...) are not checked (no network at build time).
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))          # the induce of this checkout, installed or not
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import induce  # noqa: E402
import apigen  # noqa: E402

apigen.load_lazy_exports()

project = "induce"
author = "The induce developers"
copyright = "2026, The induce developers"
release = induce.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "apigen",
    "clihelp",
    "induce_figures",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated/*.txt"]
root_doc = "index"

# ---------------------------------------------------------------- references
nitpicky = True
nitpick_ignore_regex = [
    # other packages' objects and Python builtins: not checked (no intersphinx, no network)
    (r"py:.*", r"(?!induce\b).*"),
    # numpydoc turns the free-text first line of a "name : description" parameter into a type
    (r"py:class", r".*\s.*"),
    # private objects (not documented): private base classes named by show-inheritance, private methods
    (r"py:.*", r"induce\.(\w+\.)*_\w+"),
]

# ---------------------------------------------------------------- autodoc / numpydoc
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    # scikit-learn's metadata-routing setters, generated on every estimator
    "exclude-members": ",".join(f"set_{m}_request" for m in (
        "fit", "partial_fit", "predict", "predict_proba", "predict_log_proba", "decision_function", "score",
        "split", "transform", "inverse_transform")),
}
autodoc_member_order = "bysource"
autodoc_typehints = "none"          # the signatures show them; numpydoc's sections say what they mean
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set = set()

# ---------------------------------------------------------------- markdown (docs/experiments/*.md)
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]

# ---------------------------------------------------------------- html
html_theme = "alabaster"
html_title = f"induce {release}"
html_static_path: list = []
html_theme_options = {
    "description": "Unsupervised structure learning with collapsed variational inference",
    "fixed_sidebar": True,
}

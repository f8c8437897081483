"""The API reference's module lists: the public pages name their modules by hand (``docs/api/*.rst``);
``api/internals.rst`` is generated at build time with every other module of ``induce``, so every
``:mod:``/``:func:`` reference into an internal module resolves, and a new module is documented
without anyone editing the docs.
"""

from __future__ import annotations

import re
from pathlib import Path

API = Path(__file__).resolve().parents[1] / "api"
INTERNALS = API / "internals.rst"
_AUTOMODULE = re.compile(r"^\.\. automodule:: (\S+)", re.M)
#: never imported for the docs: running it starts the command line
SKIP = {"induce.__main__"}


def public_modules() -> list[str]:
    """The modules the hand-written API pages document (``.. automodule::`` in ``docs/api/*.rst``)."""
    return [m for page in sorted(API.glob("*.rst")) if page != INTERNALS
            for m in _AUTOMODULE.findall(page.read_text(encoding="utf-8"))]


def all_modules() -> list[str]:
    """Every module and package of ``induce``, sorted by name: its ``.py`` files, namespace packages
    (folders without ``__init__.py``, which ``pkgutil.walk_packages`` does not enter) included."""
    import induce

    root = Path(induce.__file__).resolve().parent
    names = set()
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(n for n in names if n not in SKIP)


def internal_modules() -> list[str]:
    public = set(public_modules())
    return [m for m in all_modules() if m not in public]


def load_lazy_exports() -> None:
    """Resolve the names that public packages load on first use (PEP 562 ``__getattr__``, e.g.
    :mod:`induce.distributed`) into their namespaces, where autodoc looks for a module's members.
    ``induce`` itself is left lazy: its page lists its names as aliases."""
    from importlib import import_module

    for name in public_modules():
        module = import_module(name)
        if name != "induce" and hasattr(module, "__getattr__"):
            for export in getattr(module, "__all__", ()):
                setattr(module, export, getattr(module, export))


def _shadowed(name: str) -> bool:
    """Whether the package above module ``name`` exports an object of the same name (``induce.align.symmetrize``
    the function hides the module): the module is then documented without a reference target."""
    import inspect
    from importlib import import_module

    parent, _, leaf = name.rpartition(".")
    value = getattr(import_module(parent), leaf, None) if parent else None
    return value is not None and not inspect.ismodule(value)


def write_internals(app=None) -> None:
    """Write ``api/internals.rst`` (only when its text changes, so incremental builds stay incremental)."""
    lines = ["Internals", "=========", "",
             "Every other module of induce, generated from the docstrings: the kernels, the inference",
             "loops, the command line.  Not a stable API; documented so that the references of the public",
             "pages (and of the code) resolve.", ""]
    for name in internal_modules():
        lines += [name, "-" * len(name), "", f".. automodule:: {name}"]
        if _shadowed(name):
            lines.append("   :no-index:")
        lines.append("")
    text = "\n".join(lines)
    if not INTERNALS.exists() or INTERNALS.read_text(encoding="utf-8") != text:
        INTERNALS.write_text(text, encoding="utf-8")


def setup(app):
    app.connect("builder-inited", write_internals)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

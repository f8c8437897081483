"""Registries of named classes: emission families, duration families.

A new family is one module with a class decorated ``@REGISTRY.register("name")``;
``REGISTRY.create("name", ...)`` builds one, and an unknown name is a
:class:`~induce.errors.ConfigError` listing the known ones.
"""

from __future__ import annotations

from .errors import ConfigError


class Registry(dict):
    """``name -> class`` for one kind of pluggable class (``kind`` names it in errors)."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def register(self, name: str):
        """Class decorator: store the class under ``name`` (and set its ``name`` attribute)."""

        def deco(cls):
            cls.name = name
            self[name] = cls
            return cls

        return deco

    def create(self, name: str, *args, **kw):
        """An instance of the class registered as ``name``."""
        if name not in self:
            raise ConfigError(f"unknown {self.kind} {name!r}; expected one of {sorted(self)}")
        return self[name](*args, **kw)

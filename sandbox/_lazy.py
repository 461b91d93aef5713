"""Modules imported on first use, for features only some runs need.

A synchronous run without async callables never touches anyio, yet importing it (and its
``lowlevel`` module) costs milliseconds of every process's first run. :func:`lazy_module` gives
a stand-in that imports the real module, and the submodules named with it, the first time one
of its attributes is read; the import system's own lock makes that safe from any thread.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

__all__ = ["lazy_module"]


class _LazyModule(types.ModuleType):
    """Forwards attribute reads to the module it imports on the first read."""

    def __init__(self, name: str, submodules: tuple[str, ...]) -> None:
        super().__init__(name)
        self._lazy_submodules = submodules

    def __getattr__(self, attr: str) -> Any:
        # only reached for attributes the stand-in itself lacks: everything of the real module
        module = importlib.import_module(self.__name__)
        for sub in self._lazy_submodules:
            importlib.import_module(f"{self.__name__}.{sub}")
        value = getattr(module, attr)
        setattr(self, attr, value)  # the next read finds it here, without this call
        return value


def lazy_module(name: str, *submodules: str) -> types.ModuleType:
    """A stand-in for module ``name`` that imports it (and ``name.sub`` for each of
    ``submodules``) when one of its attributes is first read."""
    return _LazyModule(name, submodules)

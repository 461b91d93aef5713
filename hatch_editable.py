"""The import hook of an editable install: ``quickjail.sandbox``, ``.bridge`` and ``.runtime``
found in the checkout's top-level folders.

The repository keeps the three floors beside ``quickjail/`` (the design's layout) and the wheel
puts them inside it; an editable install must give the same names without copying files and
without putting the checkout on ``sys.path`` (that would make ``sandbox``, ``tests`` and the rest
importable as top-level names). hatch's editable mode maps ``quickjail`` alone; this finder maps
the three floors. ``hatch_build.py`` ships this file in the editable wheel as
``_quickjail_editable.py`` with a ``.pth`` line that calls :func:`install` with the checkout's
folders.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["FloorFinder", "install"]


class FloorFinder:
    """A meta-path finder for a fixed set of packages, each at a folder of its own."""

    def __init__(self, packages: dict[str, str]) -> None:
        self.packages = dict(packages)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """The spec of ``fullname`` when it is one of the mapped packages, else ``None``."""
        folder = self.packages.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, Path(folder) / "__init__.py", submodule_search_locations=[folder]
        )


def install(packages: dict[str, str]) -> None:
    """Append a :class:`FloorFinder` for ``packages`` to ``sys.meta_path`` (once)."""
    if not any(isinstance(f, FloorFinder) for f in sys.meta_path):
        sys.meta_path.append(FloorFinder(packages))

"""Bridge factories for ``quickjail stress`` (``--bridge tests.stress_bridges:NAME``).

``unsafe`` is deliberately broken: its ``readFile`` joins the program's path onto its root and
opens it, so ``/abs/path`` and ``../`` reach any file on the host. ``readonly`` is the
project's own :class:`bridge.ReadOnlyDir`. Each factory makes a fresh temporary root with a
file in it, removed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any

from quickjail import bridge

__all__ = ["readonly", "unsafe"]


def _root() -> str:
    root = tempfile.mkdtemp(prefix="quickjail-stress-root-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    with open(os.path.join(root, "notes.txt"), "w", encoding="utf-8") as f:
        f.write("hello from the allowed root\n")
    return root


def unsafe() -> dict[str, Any]:
    """A ``readFile(path)`` that does not confine paths to its root (the bug under test)."""
    root = _root()

    def readFile(path: str) -> str:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            return f.read(1 << 20)

    return {"imports": {"fs": {"readFile": readFile}}, "memory_limit_bytes": 32 * 2**20}


def readonly() -> dict[str, Any]:
    """The project's traversal-proof :class:`bridge.ReadOnlyDir` over a fresh root."""
    return {"imports": {"fs": bridge.ReadOnlyDir(_root())}, "memory_limit_bytes": 32 * 2**20}

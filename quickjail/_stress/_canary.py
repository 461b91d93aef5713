"""The canary: a file holding a random secret, planted outside every ReadOnlyDir root.

A bridged function that reads a path it was not meant to reach gives the secret away, and
the runner looks for it in everything a run produced. :func:`plant_canary` also lists the
path tricks the fuzz phase aims at the canary (and at well-known host files).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["Canary", "plant_canary"]


@dataclass(slots=True)
class Canary:
    """A planted canary (or none, when no place outside the roots could be found).

    Attributes:
        directory: The fresh temporary directory holding the file, or None.
        secret: The text in the file; a run whose output holds it read the file.
        tricks: Paths to try on the bridged functions, the canary's among them.
    """

    directory: str | None
    secret: str
    tricks: list[str]

    @property
    def file(self) -> str | None:
        """The canary file's path, or None when none was planted."""
        return None if self.directory is None else os.path.join(self.directory, "CANARY")

    def close(self) -> None:
        """Remove the canary's directory."""
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


_PATH_TRICKS: Final = (
    "../../etc/passwd",
    "/etc/passwd",
    "a\0b",
    "%2e%2e/%2e%2e/etc/passwd",
    "..",
    "../",
    "./..",
    "..\\..\\etc\\passwd",
    "//etc/passwd",
    "/proc/self/environ",
    "/proc/self/cmdline",
    "file:///etc/passwd",
    "~/.ssh/id_rsa",
    "C:\\Windows\\win.ini",
    "....//....//etc/passwd",
    "..%2f..%2fetc%2fpasswd",
    "a/../../b",
    ".",
    "/",
    "",
    " ",
    "\\\\?\\C:\\",
    "..;/",
    "\u2025/\u2025/etc/passwd",
    "\uff0e\uff0e/\uff0e\uff0e/etc/passwd",
    "%00",
    "\n",
    "x" * 5000,
)


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath(
            [os.path.realpath(path), os.path.realpath(root)]
        ) == os.path.realpath(root)
    except ValueError:
        return False


def plant_canary(roots: Sequence[str]) -> Canary:
    """Plant the canary in a fresh directory under the first place outside every root.

    The system's other temporary directories come after the usual ones, so a CI job whose
    temporary directory, HOME and checkout all sit under one bridged root still gets a canary.
    """
    secret = f"QUICKJAIL-CANARY-{secrets.token_hex(16)}"
    tricks = list(_PATH_TRICKS)
    candidates = [
        tempfile.gettempdir(),
        os.path.expanduser("~"),
        os.getcwd(),
        "/var/tmp",
        "/dev/shm",
        "/tmp",
    ]
    for base in candidates:
        if any(_inside(base, r) for r in roots):
            continue
        try:
            directory = tempfile.mkdtemp(prefix="quickjail-stress-", dir=base)
        except OSError:
            continue
        file = os.path.join(directory, "CANARY")
        with open(file, "w", encoding="utf-8") as f:
            f.write(secret)
        rel = file.lstrip("/")
        tricks += [
            file,
            "file://" + file,
            "../" * 32 + rel,
            "./" + "../" * 32 + rel,
            "%2e%2e/" * 32 + rel,
            "..\\" * 32 + rel.replace("/", "\\"),
            os.path.relpath(file, os.getcwd()),
        ]
        for root in roots:
            tricks += [os.path.relpath(file, root), "./" + os.path.relpath(file, root)]
        return Canary(directory, secret, list(dict.fromkeys(tricks)))
    return Canary(None, secret, tricks)

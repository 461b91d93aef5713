"""Virtual paths of a thread's files, and safe names for stored attachments.

Thread files live in the database, not on a disk, so "traversal" means aliasing: every file must
have exactly one spelling. A path is ``/``-separated and relative to the thread's root; one
leading ``/`` names that root explicitly (``/attachments/a.png`` and ``attachments/a.png`` are the
same file, stored as the former). Refused: empty paths, empty, ``.`` or ``..`` segments,
NUL and other control characters, backslashes, lone surrogates, drive letters (``C:``), ``//``
prefixes and over-long paths.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from .errors import ThreadPathError

__all__ = ["ATTACHMENTS_DIR", "attachment_name", "normalize_dir", "normalize_path"]

ATTACHMENTS_DIR: Final = "/attachments"
_MAX_PATH: Final = 1024
_MAX_NAME: Final = 120
_MAX_EXT: Final = 16
_BAD_CHARS_RE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\\\ud800-\udfff]")
_DRIVE_RE: Final = re.compile(r"^[A-Za-z]:")
_UNSAFE_NAME_RE: Final = re.compile(r"[^A-Za-z0-9._-]+")


def _show(path: str) -> str:
    return repr(path[:80] + ("..." if len(path) > 80 else ""))


def _segments(path: object) -> list[str]:
    if not isinstance(path, str):
        raise ThreadPathError(f"a thread path must be a str, got {type(path).__name__}")
    if len(path) > _MAX_PATH:
        raise ThreadPathError(f"thread path longer than {_MAX_PATH} characters: {_show(path)}")
    if "\x00" in path:
        raise ThreadPathError(f"thread path contains NUL: {_show(path)}")
    if "\\" in path:
        raise ThreadPathError(f"thread path contains a backslash (use '/'): {_show(path)}")
    if _BAD_CHARS_RE.search(path):
        raise ThreadPathError(f"thread path contains a control character: {_show(path)}")
    if path.startswith("//"):
        raise ThreadPathError(f"absolute host-style paths are not allowed: {_show(path)}")
    body = path[1:] if path.startswith("/") else path
    if _DRIVE_RE.match(body):
        raise ThreadPathError(f"drive-letter paths are not allowed: {_show(path)}")
    if not body:
        return []
    parts = body.split("/")
    for part in parts:
        if part == "..":
            raise ThreadPathError(f"'..' is not allowed in thread paths: {_show(path)}")
        if part in ("", "."):
            raise ThreadPathError(f"empty or '.' segment in thread path: {_show(path)}")
    return parts


def normalize_path(path: object) -> str:
    """Return the canonical ``/a/b`` form of a file path.

    Raises:
        ThreadPathError: The path is refused (see the module docstring).
    """
    parts = _segments(path)
    if not parts:
        raise ThreadPathError("a file path must name a file, not the root")
    return "/" + "/".join(parts)


def normalize_dir(path: object) -> str:
    """Return the canonical form of a directory path: ``/`` for the root, else ``/a/b``.

    ``""``, ``"."`` and ``"/"`` name the root; one trailing ``/`` is allowed.
    """
    if path in ("", ".", "/"):
        return "/"
    if isinstance(path, str) and path.endswith("/"):
        path = path[:-1]
    return "/" + "/".join(_segments(path))


def attachment_name(name: str) -> str:
    """Make a safe, short file name from a name a tool suggested.

    Keeps only the last path component, strips accents (NFKD), replaces anything outside
    ``[A-Za-z0-9._-]`` with ``_``, drops leading dots and caps the length (keeping the
    extension). Never empty.
    """
    base = re.split(r"[/\\]", name)[-1] if isinstance(name, str) else ""
    base = "".join(c for c in unicodedata.normalize("NFKD", base) if not unicodedata.combining(c))
    base = _UNSAFE_NAME_RE.sub("_", base).lstrip(".")
    if not base.strip("_"):
        return "attachment"
    if len(base) > _MAX_NAME:
        stem, dot, ext = base.rpartition(".")
        if dot and 0 < len(ext) <= _MAX_EXT and stem:
            base = f"{stem[: _MAX_NAME - len(ext) - 1]}.{ext}"
        else:
            base = base[:_MAX_NAME]
    return base

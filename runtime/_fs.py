"""The thread's files: a read-only ``fs`` capability for sandboxed code, and ref checks.

:func:`check_attachment_refs` accepts an :class:`AttachmentRef` a tool returns only when its
path resolves inside the thread's files to an existing file of the stated size (and MIME type,
when the file has one recorded), id and name: a reference to ``../../etc/passwd``, to nothing,
or with a made-up id is refused.

The capability has the same shape as ``bridge.ReadOnlyDir``: ``readFile(path, encoding?)``,
``readdir(path?)`` and ``stat(path)``, over the files stored in the database instead of a host
directory. Refusals are ``bridge.FsError`` (a ``HostError``): their messages name only the
virtual path, so the program sees them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from quickjail.bridge import FsError

from ._paths import normalize_dir, normalize_path
from ._result import AttachmentRef
from ._validation import issue
from .errors import ThreadFileNotFoundError, ThreadPathError, ValidationIssue

if TYPE_CHECKING:
    from ._state import ThreadState

__all__ = ["MAX_ATTACHMENTS", "ThreadFiles", "check_attachment_refs"]

MAX_ATTACHMENTS: Final = 256
_TEXT_ENCODINGS: Final = frozenset({"utf8", "utf-8"})


async def check_attachment_refs(
    state: ThreadState | None, refs: Sequence[AttachmentRef]
) -> tuple[list[AttachmentRef], list[ValidationIssue]]:
    """Check references against the thread's files; return them canonical, or the issues.

    Args:
        state: The thread the references must point into (``None``: no thread, so every
            reference is refused).
        refs: The references a tool returned.

    Returns:
        ``(refs with canonical paths, [])`` when all are valid, else ``([], issues)`` with
        one ``{"path": ["attachments", i], "message": ...}`` per bad reference.
    """
    issues: list[ValidationIssue] = []
    out: list[AttachmentRef] = []
    if len(refs) > MAX_ATTACHMENTS:
        message = f"{len(refs)} attachments; at most MAX_ATTACHMENTS={MAX_ATTACHMENTS}"
        return [], [issue(["attachments"], message)]
    for index, ref in enumerate(refs):
        where = ("attachments", index)
        if state is None:
            issues.append(issue(where, "an AttachmentRef needs a thread"))
            continue
        try:
            canonical = normalize_path(ref.path)
        except ThreadPathError as exc:
            issues.append(issue(where, f"not a thread file path: {exc}"))
            continue
        core = state._core
        info = await core.store.stat(core.thread_id, canonical)
        if info is None or info.is_dir:
            issues.append(issue(where, f"no such thread file: {canonical!r}"))
        elif info.size != ref.size:
            message = f"{canonical!r} has {info.size} bytes, the reference says {ref.size}"
            issues.append(issue(where, message))
        elif info.mime_type is not None and info.mime_type != ref.mime_type:
            message = f"{canonical!r} is {info.mime_type}, the reference says {ref.mime_type}"
            issues.append(issue(where, message))
        elif info.id != ref.id:
            message = f"{canonical!r} has id {info.id!r}, the reference says {_shown(ref.id)}"
            issues.append(issue(where, message))
        elif ref.name != canonical.rsplit("/", 1)[-1]:
            name = canonical.rsplit("/", 1)[-1]
            message = f"{canonical!r} is named {name!r}, the reference says {_shown(ref.name)}"
            issues.append(issue(where, message))
        else:
            out.append(ref if canonical == ref.path else ref.model_copy(update={"path": canonical}))
    return ([], issues) if issues else (out, [])


def _shown(text: str) -> str:
    """A value a tool made up, quoted and cut short for a message."""
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


def _refusal(code: str, exc: Exception) -> FsError:
    return FsError(code, f"{code}: {exc}")


class ThreadFiles:
    """A ``bridge.Capability``: the ``fs`` module over one thread's files."""

    __slots__ = ("_state",)

    def __init__(self, state: ThreadState) -> None:
        self._state = state

    def exports(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """``readFile``, ``readdir`` and ``stat``, each an async host function."""
        return {"readFile": self.read_file, "readdir": self.readdir, "stat": self.stat}

    async def read_file(self, path: str, encoding: str | int | None = None) -> bytes | str:
        if type(encoding) is int:
            encoding = None  # the index paths.map(fs.readFile) passes, as in ReadOnlyDir
        if encoding is not None and (
            not isinstance(encoding, str) or encoding.lower() not in _TEXT_ENCODINGS
        ):
            raise _refusal("EINVAL", ThreadPathError(f"unsupported encoding {encoding!r}"))
        try:
            data = await self._state.read_file(path)
        except ThreadPathError as exc:
            raise _refusal("EINVAL", exc) from None
        except ThreadFileNotFoundError as exc:
            raise _refusal("ENOENT", exc) from None
        if encoding is None:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _refusal("EINVAL", ThreadPathError(f"{path!r} is not valid UTF-8")) from None

    async def readdir(self, path: str = ".") -> list[str]:
        core = self._state._core
        try:
            directory = normalize_dir(path)
        except ThreadPathError as exc:
            raise _refusal("EINVAL", exc) from None
        infos = await core.store.list_files(core.thread_id, directory)
        if not infos and directory != "/":
            raise _refusal("ENOENT", ThreadFileNotFoundError(f"no such directory: {directory!r}"))
        prefix = "/" if directory == "/" else directory + "/"
        return sorted({info.path[len(prefix) :].split("/", 1)[0] for info in infos})

    async def stat(self, path: str) -> dict[str, Any]:
        core = self._state._core
        try:
            canonical = normalize_dir(path)
        except ThreadPathError as exc:
            raise _refusal("EINVAL", exc) from None
        info = await core.store.stat(core.thread_id, canonical)
        if info is None:
            raise _refusal("ENOENT", ThreadFileNotFoundError(f"no such file: {canonical!r}"))
        kind = "directory" if info.is_dir else "file"
        return {"type": kind, "size": info.size, "mtime_ms": info.updated_at * 1000}

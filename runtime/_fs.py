"""The thread's files as a read-only ``fs`` module for sandboxed code.

Same shape as ``bridge.ReadOnlyDir``: ``readFile(path, encoding?)``, ``readdir(path?)`` and
``stat(path)``, over the files stored in the database instead of a host directory. Errors carry a
``js_message`` (naming only the virtual path) so the sandbox shows it to the program.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from ._errors import ThreadFileNotFoundError, ThreadPathError, ToolRuntimeError
from ._paths import normalize_dir

if TYPE_CHECKING:
    from ._state import ThreadState

__all__ = ["thread_fs"]

_TEXT_ENCODINGS: Final = frozenset({"utf8", "utf-8"})


def _visible(exc: ToolRuntimeError, code: str) -> ToolRuntimeError:
    """Mark an error as safe to show inside the sandbox (the message names virtual paths only)."""
    exc.js_message = f"{code}: {exc}"  # type: ignore[attr-defined]
    exc.js_name = "Error"  # type: ignore[attr-defined]
    return exc


def thread_fs(state: ThreadState) -> dict[str, Callable[..., Awaitable[Any]]]:
    """Build the ``fs`` module's functions over ``state``'s thread files."""
    core = state._core

    async def read_file(path: str, encoding: str | None = None) -> bytes | str:
        if encoding is not None and (
            not isinstance(encoding, str) or encoding.lower() not in _TEXT_ENCODINGS
        ):
            raise _visible(ThreadPathError(f"unsupported encoding {encoding!r}"), "EINVAL")
        try:
            data = await state.read_file(path)
        except ThreadPathError as exc:
            raise _visible(exc, "EINVAL") from None
        except ThreadFileNotFoundError as exc:
            raise _visible(exc, "ENOENT") from None
        if encoding is None:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _visible(ThreadPathError(f"{path!r} is not valid UTF-8"), "EINVAL") from None

    async def readdir(path: str = ".") -> list[str]:
        try:
            directory = normalize_dir(path)
        except ThreadPathError as exc:
            raise _visible(exc, "EINVAL") from None
        infos = await core.store.list_files(core.thread_id, directory)
        if not infos and directory != "/":
            missing = ThreadFileNotFoundError(f"no such directory: {directory!r}")
            raise _visible(missing, "ENOENT")
        prefix = "/" if directory == "/" else directory + "/"
        return sorted({info.path[len(prefix) :].split("/", 1)[0] for info in infos})

    async def stat(path: str) -> dict[str, Any]:
        try:
            canonical = normalize_dir(path)
        except ThreadPathError as exc:
            raise _visible(exc, "EINVAL") from None
        info = await core.store.stat(core.thread_id, canonical)
        if info is None:
            raise _visible(ThreadFileNotFoundError(f"no such file: {canonical!r}"), "ENOENT")
        kind = "directory" if info.is_dir else "file"
        return {"type": kind, "size": info.size, "mtime_ms": info.updated_at * 1000}

    return {"readFile": read_file, "readdir": readdir, "stat": stat}

"""Read-only, traversal-proof filesystem capability for sandboxed JavaScript.

:class:`ReadOnlyDir` exposes ``readFile``, ``readdir`` and ``stat`` over one host directory
so that sandboxed code can ``import { readFile, readdir, stat } from "fs"``. Every argument
comes from untrusted code, so nothing the caller says is trusted:

* Paths are *virtual*: relative to the root, ``/``-separated. Absolute paths, ``..``
  segments, NUL and other control characters, backslashes, Windows drive prefixes, lone
  surrogates and over-long paths are refused before any system call. No URL or percent
  decoding happens (``%2e%2e`` is an ordinary file name).
* The root is opened once as a directory fd. Each path is resolved one component at a
  time with ``openat``-style calls (``dir_fd=``) and ``O_NOFOLLOW``, so a symbolic link
  anywhere in the path is refused, including one swapped in by another process after an
  earlier check. **Symbolic links are refused entirely**, even ones pointing inside the
  root: that rule is simple to state and to enforce. ``readdir`` still lists their names.
* ``readFile`` opens the final component with ``O_NONBLOCK`` (a FIFO cannot block the
  host), accepts only regular files (checked with ``fstat`` on the opened fd), refuses
  files above ``max_file_bytes`` before reading, and reads at most one byte more than the
  cap, so a file that grows while being read cannot exceed it.
* Error messages (:class:`FsError`) name only the virtual path (``repr``-escaped and
  truncated), never the host root or an ``OSError``'s text.

Linux is the target: ``O_NOFOLLOW``, ``O_DIRECTORY`` and ``dir_fd`` support are required.
Known limit: a directory that another *host* process renames out of the tree while a call
is walking through it is followed, as with any fd-based walk; the sandboxed program
itself cannot rename anything.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat as stat_mod
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Final, Self

from quickjail.bridge._errors import HostError

__all__ = ["FsError", "ReadOnlyDir"]

_ROOT_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY

_READ_CHUNK: Final = 1 << 20
_SHOW_CHARS: Final = 80
_MAX_ENCODING_CHARS: Final = 32
_TEXT_ENCODINGS: Final = frozenset({"utf8", "utf-8"})

_CONTROL: Final = r"[\x00-\x1f\x7f-\x9f]"
_SURROGATE: Final = r"[\ud800-\udfff]"
_DRIVE: Final = r"[A-Za-z]:"


@functools.cache
def _regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled on first use: compiling these at import cost about a millisecond of
    every process's first run, and most runs never touch a directory."""
    return re.compile(pattern)


class FsError(HostError):
    """A refusal or failure of a filesystem capability call.

    ``str(e)`` is safe to show to the sandboxed program: it names only the virtual path the
    program supplied (escaped and truncated), never a host path or an OS error's text.

    Attributes:
        code: Node-style error code such as ``"ENOENT"``, ``"EINVAL"``, ``"ELOOP"``,
            ``"EISDIR"``, ``"ENOTDIR"``, ``"EFBIG"``, ``"E2BIG"``, ``"EACCES"``,
            ``"ENAMETOOLONG"`` or ``"EBADF"``.
        message: The full message, identical to ``str(e)``.
    """

    def __init__(self, code: str, message: str) -> None:
        """Create the error.

        Args:
            code: Node-style error code.
            message: Full, sandbox-safe message.
        """
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        """Return the sandbox-safe message."""
        return self.message


def _show(value: object) -> str:
    """Render a caller-supplied value for an error message: escaped, bounded, type-only if odd.

    Args:
        value: The value the sandboxed caller passed.

    Returns:
        ``repr`` of a (truncated) string, or ``<type name>`` for anything else.
    """
    if type(value) is not str:
        return f"<{type(value).__name__}>"
    if len(value) <= _SHOW_CHARS:
        return repr(value)
    return f"{value[:_SHOW_CHARS]!r}... ({len(value)} chars)"


def _refuse(code: str, reason: str, op: str, path: object) -> FsError:
    """Build an :class:`FsError` in Node's ``CODE: reason, op 'path'`` style.

    Args:
        code: Error code.
        reason: Short human-readable reason (must not contain host paths).
        op: Name of the operation as seen from JavaScript.
        path: The virtual path the caller supplied.

    Returns:
        The error, ready to raise.
    """
    return FsError(code, f"{code}: {reason}, {op} {_show(path)}")


def _from_os_error(exc: OSError, op: str, path: str) -> FsError:
    """Translate an ``OSError`` without leaking its text (which may contain host paths).

    Args:
        exc: The error raised by a system call.
        op: Name of the operation as seen from JavaScript.
        path: The virtual path the caller supplied.

    Returns:
        An equivalent sandbox-safe :class:`FsError`.
    """
    num = exc.errno
    if num == errno.ELOOP:
        return _refuse("ELOOP", "symbolic links are not followed", op, path)
    if num is None:
        return _refuse("EIO", "i/o error", op, path)
    code = errno.errorcode.get(num, "EIO")
    return _refuse(code, os.strerror(num).lower(), op, path)


def _is_symlink_at(dir_fd: int, name: str) -> bool:
    """Report whether ``name`` in ``dir_fd`` is currently a symlink (used for messages only).

    Args:
        dir_fd: Directory to look in.
        name: A single path component.

    Returns:
        True if it is a symbolic link right now; False if not or if it cannot be examined.
    """
    try:
        return stat_mod.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _kind(mode: int) -> str:
    """Describe a file type for error messages.

    Args:
        mode: ``st_mode`` of the file.

    Returns:
        A short name such as ``"FIFO"`` or ``"socket"``.
    """
    if stat_mod.S_ISFIFO(mode):
        return "FIFO"
    if stat_mod.S_ISSOCK(mode):
        return "socket"
    if stat_mod.S_ISCHR(mode) or stat_mod.S_ISBLK(mode):
        return "device"
    return "special file"


class ReadOnlyDir:
    """Read-only view of one host directory, safe to hand to untrusted code.

    The public camelCase/lowercase methods are the functions exposed to JavaScript (see
    :meth:`exports`). All of them may be called concurrently from several threads: every
    lookup is relative to the root directory fd and opens its own fds. The only shared
    state is the root fd and a small use count that keeps :meth:`close` from closing it
    (and letting its number be reused) while calls are still in flight.

    Example:
        >>> with ReadOnlyDir("/srv/data") as fs:          # doctest: +SKIP
        ...     fs.readFile("docs/readme.txt", "utf8")
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_file_bytes: int = 16 * 2**20,
        max_path_length: int = 1024,
        max_entries: int = 10_000,
    ) -> None:
        """Open ``root`` as the directory this capability exposes.

        Args:
            root: Host directory to expose. Chosen by the host developer, so it may be (or
                go through) a symlink; nothing below it may.
            max_file_bytes: Largest file ``readFile`` returns; larger ones raise ``EFBIG``.
            max_path_length: Longest virtual path accepted, in characters.
            max_entries: Most entries ``readdir`` scans; more raise ``E2BIG``.

        Raises:
            ValueError: If ``root`` does not exist, is not a directory or cannot be opened,
                or a limit is not a suitable int. (Host-facing: may show the host path.)
            TypeError: If ``root`` is not a str path.
            RuntimeError: If the platform lacks ``dir_fd`` support.
        """
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._users = 0
        self._closed = False
        for name, value, minimum in (
            ("max_file_bytes", max_file_bytes, 0),
            ("max_path_length", max_path_length, 1),
            ("max_entries", max_entries, 0),
        ):
            if type(value) is not int or value < minimum:
                raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
        if not (
            os.open in os.supports_dir_fd
            and os.stat in os.supports_dir_fd
            and os.scandir in os.supports_fd
        ):
            raise RuntimeError("ReadOnlyDir needs dir_fd support (openat/fstatat/fdopendir)")
        root_path = os.fspath(root)
        if not isinstance(root_path, str):
            raise TypeError(f"root must be a str path, got {type(root_path).__name__}")
        try:
            fd = os.open(root_path, _ROOT_FLAGS)
        except OSError as exc:
            reason = exc.strerror or "cannot open"
            raise ValueError(
                f"ReadOnlyDir root {root_path!r} is not a usable directory: {reason}"
            ) from exc
        self._fd = fd
        self._root = os.path.realpath(root_path)
        self._max_file_bytes = max_file_bytes
        self._max_path_length = max_path_length
        self._max_entries = max_entries

    @property
    def root(self) -> str:
        """The host directory this capability exposes (for the host; never shown to JS).

        Raises:
            FsError: ``EBADF`` once the capability is closed.
        """
        if self._closed:
            raise FsError("EBADF", "EBADF: the directory capability is closed")
        return self._root

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the root directory fd. Idempotent.

        Calls already in progress finish normally (the fd is closed when the last one
        returns); calls made afterwards raise :class:`FsError` ``EBADF``.
        """
        with self._lock:
            self._closed = True
            fd = self._fd if self._users == 0 else None
            if fd is not None:
                self._fd = None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> Self:
        """Return self; the root fd is closed on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the root fd."""
        self.close()

    def __del__(self) -> None:
        """Close the root fd if the owner forgot to (no warning, never raises)."""
        fd = getattr(self, "_fd", None)
        if fd is not None:
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass

    def __repr__(self) -> str:
        """Describe the object without revealing the host path."""
        state = "closed" if self._closed else "open"
        return f"<ReadOnlyDir {state}>"

    def _acquire(self, op: str, path: object) -> int:
        """Take a use of the root fd, refusing if closed.

        Args:
            op: Operation name, for the error message.
            path: Caller's path, for the error message.

        Returns:
            The root directory fd, valid until the matching :meth:`_release`.

        Raises:
            FsError: ``EBADF`` if :meth:`close` has been called.
        """
        with self._lock:
            if self._closed or self._fd is None:
                raise _refuse("EBADF", "filesystem capability is closed", op, path)
            self._users += 1
            return self._fd

    def _release(self) -> None:
        """Return a use of the root fd, closing it if :meth:`close` is waiting on us."""
        with self._lock:
            self._users -= 1
            fd = self._fd if self._closed and self._users == 0 else None
            if fd is not None:
                self._fd = None
        if fd is not None:
            os.close(fd)

    # ------------------------------------------------------------------ exposed API

    def exports(self) -> dict[str, Callable[..., object]]:
        """Return the functions to expose to JavaScript's ``"fs"`` module.

        Returns:
            ``{"readFile": ..., "readdir": ..., "stat": ...}`` as bound methods.
        """
        return {"readFile": self.readFile, "readdir": self.readdir, "stat": self.stat}

    def readFile(self, path: str, encoding: str | int | None = None) -> bytes | str:
        """Read a regular file.

        In JS it returns a Promise, like every host function, so ``paths.map(fs.readFile)``
        works: the index ``map`` passes second counts as no encoding.

        Args:
            path: Virtual path of the file.
            encoding: ``None`` (or an int, the index ``Array.prototype.map`` passes) for
                bytes, or ``"utf8"`` / ``"utf-8"`` (any case) for text.

        Returns:
            The file's contents, as bytes or as a str.

        Raises:
            FsError: ``EINVAL`` for a malformed path, bad encoding or undecodable text;
                ``ENOENT``/``ENOTDIR`` if missing; ``ELOOP`` for a symlink anywhere in the
                path; ``EISDIR`` for a directory; ``EACCES`` for a FIFO, socket or device;
                ``EFBIG`` above ``max_file_bytes``; ``EBADF`` after :meth:`close`.
        """
        op = "readFile"
        text = self._want_text(encoding, op, path)
        parts, must_be_dir = self._parse(path, op)
        if not parts:
            raise _refuse("EISDIR", "illegal operation on a directory", op, path)
        root_fd = self._acquire(op, path)
        try:
            data = self._read(root_fd, parts, must_be_dir, op, path)
        finally:
            self._release()
        if not text:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _refuse("EINVAL", "file is not valid UTF-8", op, path) from None

    def readdir(self, path: str = ".") -> list[str]:
        """List a directory.

        Names that are not valid Unicode (undecodable bytes) are omitted: they could not be
        passed back to this API anyway. Symlinks are listed, though they cannot be opened.

        Args:
            path: Virtual path of the directory (``"."`` is the root).

        Returns:
            Entry names, sorted by code point, without ``"."`` and ``".."``.

        Raises:
            FsError: ``EINVAL`` for a malformed path; ``ENOENT``/``ENOTDIR`` if missing or
                not a directory; ``ELOOP`` for a symlink in the path; ``E2BIG`` for more
                than ``max_entries`` entries; ``EBADF`` after :meth:`close`.
        """
        op = "readdir"
        parts, _ = self._parse(path, op)
        root_fd = self._acquire(op, path)
        try:
            dir_fd = self._open_dir(root_fd, parts, op, path)
            try:
                names = self._list(dir_fd, op, path)
            finally:
                os.close(dir_fd)
        finally:
            self._release()
        names.sort()
        return names

    def stat(self, path: str) -> dict[str, object]:
        """Describe a file or directory without following symlinks.

        Args:
            path: Virtual path (``"."`` is the root).

        Returns:
            ``{"type": "file" | "directory" | "other", "size": int, "mtime_ms": float}``.

        Raises:
            FsError: ``EINVAL`` for a malformed path; ``ENOENT``/``ENOTDIR`` if missing;
                ``ELOOP`` for a symlink anywhere in the path, including the last component;
                ``EBADF`` after :meth:`close`.
        """
        op = "stat"
        parts, must_be_dir = self._parse(path, op)
        root_fd = self._acquire(op, path)
        try:
            if not parts:
                info = os.fstat(root_fd)
            else:
                parent = self._open_dir(root_fd, parts[:-1], op, path)
                try:
                    info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
                except OSError as exc:
                    raise _from_os_error(exc, op, path) from None
                finally:
                    os.close(parent)
        finally:
            self._release()
        mode = info.st_mode
        if stat_mod.S_ISLNK(mode):
            raise _refuse("ELOOP", "symbolic links are not followed", op, path)
        if stat_mod.S_ISDIR(mode):
            kind = "directory"
        elif must_be_dir:
            raise _refuse("ENOTDIR", "not a directory", op, path)
        elif stat_mod.S_ISREG(mode):
            kind = "file"
        else:
            kind = "other"
        return {"type": kind, "size": info.st_size, "mtime_ms": info.st_mtime_ns / 1_000_000}

    # ------------------------------------------------------------------ internals

    def _parse(self, path: object, op: str) -> tuple[list[str], bool]:
        """Validate a virtual path and split it into components.

        Args:
            path: Whatever the sandboxed caller passed.
            op: Operation name, for error messages.

        Returns:
            ``(components, must_be_dir)``: the non-empty, non-``"."`` components (empty list
            means the root), and whether the path ended in ``/`` or ``/.``.

        Raises:
            FsError: ``EINVAL`` (or ``ENAMETOOLONG``) if the path is refused.
        """
        if type(path) is not str:
            raise FsError("EINVAL", f"EINVAL: path must be a string, got {_show(path)}, {op}")
        if not path:
            raise _refuse("EINVAL", "path must not be empty", op, path)
        if len(path) > self._max_path_length:
            raise _refuse(
                "ENAMETOOLONG", f"path longer than {self._max_path_length} characters", op, path
            )
        if "\x00" in path:
            raise _refuse("EINVAL", "path contains a NUL character", op, path)
        if "\\" in path:
            raise _refuse("EINVAL", "backslash is not allowed in paths (use '/')", op, path)
        if _regex(_CONTROL).search(path):
            raise _refuse("EINVAL", "path contains a control character", op, path)
        if _regex(_SURROGATE).search(path):
            raise _refuse("EINVAL", "path is not valid Unicode (lone surrogate)", op, path)
        if path.startswith("/"):
            raise _refuse("EINVAL", "absolute paths are not allowed", op, path)
        if _regex(_DRIVE).match(path):
            raise _refuse("EINVAL", "drive-letter paths are not allowed", op, path)
        raw = path.split("/")
        if ".." in raw:
            raise _refuse("EINVAL", "'..' is not allowed in paths", op, path)
        parts = [seg for seg in raw if seg not in ("", ".")]
        return parts, raw[-1] in ("", ".")

    @staticmethod
    def _want_text(encoding: object, op: str, path: object) -> bool:
        """Validate ``readFile``'s encoding argument.

        Args:
            encoding: Whatever the sandboxed caller passed.
            op: Operation name, for error messages.
            path: Caller's path, for error messages.

        Returns:
            True to decode as UTF-8, False to return bytes.

        Raises:
            FsError: ``EINVAL`` naming the accepted encodings.
        """
        if encoding is None or type(encoding) is int:
            return False
        if (
            type(encoding) is str
            and len(encoding) <= _MAX_ENCODING_CHARS
            and encoding.lower() in _TEXT_ENCODINGS
        ):
            return True
        raise _refuse(
            "EINVAL",
            f"unsupported encoding {_show(encoding)} (accepted: none for bytes, 'utf8', 'utf-8')",
            op,
            path,
        )

    @staticmethod
    def _open_dir(root_fd: int, parts: list[str], op: str, path: str) -> int:
        """Open a directory below the root, one component at a time, refusing symlinks.

        Args:
            root_fd: The root directory fd.
            parts: Validated components (empty means the root itself).
            op: Operation name, for error messages.
            path: Caller's path, for error messages.

        Returns:
            A new fd for the directory (its own open file description); caller closes it.

        Raises:
            FsError: ``ENOENT``, ``ENOTDIR``, ``ELOOP`` or another translated OS error.
        """
        if not parts:
            try:
                return os.open(".", _DIR_FLAGS, dir_fd=root_fd)
            except OSError as exc:
                raise _from_os_error(exc, op, path) from None
        fd = -1
        try:
            for name in parts:
                parent = root_fd if fd < 0 else fd
                try:
                    new_fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
                except OSError as exc:
                    # O_DIRECTORY|O_NOFOLLOW reports a symlink as ENOTDIR; say what it is.
                    if exc.errno == errno.ENOTDIR and _is_symlink_at(parent, name):
                        raise _refuse(
                            "ELOOP", "symbolic links are not followed", op, path
                        ) from None
                    raise _from_os_error(exc, op, path) from None
                old_fd, fd = fd, new_fd
                if old_fd >= 0:
                    os.close(old_fd)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return fd

    def _read(self, root_fd: int, parts: list[str], must_be_dir: bool, op: str, path: str) -> bytes:
        """Open and read the regular file at ``parts``, enforcing the size cap.

        Args:
            root_fd: The root directory fd.
            parts: Validated, non-empty components.
            must_be_dir: Whether the path had a trailing ``/``.
            op: Operation name, for error messages.
            path: Caller's path, for error messages.

        Returns:
            The file's bytes.

        Raises:
            FsError: On any refusal or OS error.
        """
        parent = self._open_dir(root_fd, parts[:-1], op, path)
        try:
            name = parts[-1]
            # Pre-check without opening: gives precise errors and avoids opening device
            # nodes in the common case. The fstat on the opened fd below is authoritative.
            try:
                pre = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except OSError as exc:
                raise _from_os_error(exc, op, path) from None
            self._check_regular(pre, must_be_dir, op, path)
            try:
                fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
            except OSError as exc:
                raise _from_os_error(exc, op, path) from None
        finally:
            os.close(parent)
        try:
            self._check_regular(os.fstat(fd), must_be_dir, op, path)
            chunks: list[bytes] = []
            remaining = self._max_file_bytes + 1
            while remaining > 0:
                chunk = os.read(fd, min(remaining, _READ_CHUNK))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
        except OSError as exc:
            raise _from_os_error(exc, op, path) from None
        finally:
            os.close(fd)
        if remaining <= 0:
            raise _refuse("EFBIG", f"file grew larger than {self._max_file_bytes} bytes", op, path)
        return b"".join(chunks)

    def _check_regular(self, info: os.stat_result, must_be_dir: bool, op: str, path: str) -> None:
        """Refuse anything but a regular file within the size cap.

        Args:
            info: ``lstat``/``fstat`` result of the final component.
            must_be_dir: Whether the path had a trailing ``/``.
            op: Operation name, for error messages.
            path: Caller's path, for error messages.

        Raises:
            FsError: ``ELOOP``, ``EISDIR``, ``ENOTDIR``, ``EACCES`` or ``EFBIG``.
        """
        mode = info.st_mode
        if stat_mod.S_ISLNK(mode):
            raise _refuse("ELOOP", "symbolic links are not followed", op, path)
        if stat_mod.S_ISDIR(mode):
            raise _refuse("EISDIR", "illegal operation on a directory", op, path)
        if must_be_dir:
            raise _refuse("ENOTDIR", "not a directory", op, path)
        if not stat_mod.S_ISREG(mode):
            raise _refuse("EACCES", f"not a regular file ({_kind(mode)})", op, path)
        if info.st_size > self._max_file_bytes:
            raise _refuse("EFBIG", f"file is larger than {self._max_file_bytes} bytes", op, path)

    def _list(self, dir_fd: int, op: str, path: str) -> list[str]:
        """Collect entry names of an open directory, bounded by ``max_entries``.

        Args:
            dir_fd: An fd for the directory, private to this call.
            op: Operation name, for error messages.
            path: Caller's path, for error messages.

        Returns:
            Unsorted entry names (undecodable names omitted).

        Raises:
            FsError: ``E2BIG`` if there are too many entries, or a translated OS error.
        """
        names: list[str] = []
        seen = 0
        try:
            with os.scandir(dir_fd) as entries:
                for entry in entries:
                    seen += 1
                    if seen > self._max_entries:
                        raise _refuse(
                            "E2BIG",
                            f"directory has more than {self._max_entries} entries",
                            op,
                            path,
                        )
                    if not _regex(_SURROGATE).search(entry.name):
                        names.append(entry.name)
        except OSError as exc:
            raise _from_os_error(exc, op, path) from None
        return names

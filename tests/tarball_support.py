"""Test trees from pinned Debian source tarballs: downloaded once, checked by hash, unpacked safely.

The conformance suites the tests run (web-platform-tests from Node's tarballs, test262's
``intl402`` from SpiderMonkey's) are not copied into the repo: each comes from source tarballs
of Debian's pool, pinned by pool path, size and sha256
(:class:`quickjail.sandbox._debian_source.Source`) and fetched with the shared pinned-download
helper (:func:`quickjail.sandbox._debian_source.fetch_source`: from the mirror apt uses, or
``$QUICKJAIL_DEBIAN_MIRROR``) into ``$QUICKJAIL_CACHE_DIR`` (else the user cache dir), once;
the hash is checked on every use. ``tests/`` is on ``sys.path`` because its ``conftest.py`` is.

A tree may be made of several tarballs' members. Only the wanted members are unpacked (a
prefix ending in ``/`` is a folder, any other an exact file), each checked first: a regular
file or a folder (no links, devices or FIFOs), a relative name without ``..``, within a count
and a byte budget per tarball; anything else refuses the whole tree. The tree is unpacked into a
staging folder and moved in whole, so a cut-short unpack is never taken for a done one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from quickjail.sandbox._debian_source import Source, fetch_source
from quickjail.sandbox._engine import cache_dir

__all__ = ["UnpackError", "pinned_tree", "unpack"]


class UnpackError(RuntimeError):
    """The pinned tarball could not be had, or a member of it is not one we unpack."""


def _safe_name(tarball: Path, name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise UnpackError(f"{tarball.name}: member {name!r} is not a relative path")
    return path


def _wanted(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name.startswith(p) if p.endswith("/") else name == p for p in prefixes)


def _unpack_one(
    tarball: Path, top: str, prefixes: tuple[str, ...], staging: Path, limits: tuple[int, int]
) -> None:
    count = total = 0
    wanted = tuple(f"{top}/{p}" for p in prefixes)
    with tarfile.open(tarball, mode="r|*") as tar:  # one pass over the stream
        for member in tar:
            if not _wanted(member.name, wanted):
                continue
            rel = _safe_name(tarball, member.name[len(top) + 1 :])
            count += 1
            total += max(member.size, 0)
            if count > limits[0] or total > limits[1]:
                raise UnpackError(f"{tarball.name}: more than {limits[0]} members or bytes")
            out = staging.joinpath(*rel.parts)
            if member.isdir():
                out.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                out.parent.mkdir(parents=True, exist_ok=True)
                data = tar.extractfile(member)
                if data is None:
                    raise UnpackError(f"{tarball.name}: member {member.name!r} has no data")
                out.write_bytes(data.read(member.size))
            else:
                raise UnpackError(
                    f"{tarball.name}: member {member.name!r} is a link or a special file"
                )
    if count == 0:
        raise UnpackError(f"{tarball.name}: nothing under {', '.join(prefixes)}")


def unpack(
    parts: Sequence[tuple[Path, str, tuple[str, ...]]],
    target: Path,
    *,
    max_members: int,
    max_bytes: int,
) -> None:
    """Unpack, for each ``(tarball, top, prefixes)``, the members ``top/prefix`` into ``target``
    as ``prefix`` (all of them staged, then moved in whole).

    Raises:
        UnpackError: a wanted member is a link, a special file or an escaping name, a tarball
            has more than ``max_members`` of them or ``max_bytes`` in all, or none at all (then
            nothing is left behind).
    """
    staging = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for tarball, top, prefixes in parts:
            _unpack_one(tarball, top, prefixes, staging, (max_members, max_bytes))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)


def pinned_tree(
    folder: str,
    sources: Sequence[tuple[Source, str, tuple[str, ...]]],
    *,
    cache: Path | None = None,
    layout: int = 1,
    max_members: int = 20_000,
    max_bytes: int = 256 * 2**20,
) -> Path:
    """The folder holding, from each ``(tarball, top, prefixes)`` of ``sources``, the members
    under the prefixes (in the tarball's layout below its ``top`` folder), under the cache's
    ``folder``: downloaded and unpacked the first time, each tarball verified each time. Bump
    ``layout`` when what is unpacked changes, so cached trees are remade."""
    base = (cache or cache_dir()) / folder
    # fetch_source raises on a wrong size or hash
    parts = [(fetch_source(src, base), top, prefixes) for src, top, prefixes in sources]
    key = repr((layout, tuple((src.sha256, prefixes) for src, _, prefixes in sources)))
    target = base / f"tree-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    marker = target / ".quickjail-unpacked"
    if not marker.exists():
        unpack(parts, target, max_members=max_members, max_bytes=max_bytes)
        marker.write_text(" ".join(src.sha256 for src, _, _ in sources))
    return target

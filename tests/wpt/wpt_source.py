"""The web-platform-tests the suite runs: Node's vendored copy, from one pinned Debian tarball.

Debian's ``nodejs`` source package carries the WPT directories Node runs (their upstream
commits in ``test/fixtures/wpt/versions.json``). The tarball is pinned here, by pool path,
size and sha256, and fetched with the release tooling's pinned-download helper
(:func:`release._musl_python.fetch_source`: from the mirror apt uses, or
``$QUICKJAIL_DEBIAN_MIRROR``) into ``$QUICKJAIL_CACHE_DIR`` (else the user cache dir, as the
compiled guest), once; it is checked on every use.

Which tarball: trixie's (Debian 13, stable) ``20.19.2+dfsg``. A stable release's orig tarball
stays in the pool for the release's life, where sid's moves with every upload; its harness
(``test/common/wpt.js``) is also the one for the Node 20 that ``rates.py`` compares against.
If the pool drops it, ``QUICKJAIL_DEBIAN_MIRROR=https://snapshot.debian.org/archive/debian/
20250801T000000Z`` serves the same file (the hash decides, not the mirror).

Only members under the wanted prefixes are unpacked, each checked first: a regular file or a
folder (no links, devices or FIFOs), a relative name without ``..``, within a count and a byte
budget; anything else refuses the whole tarball. The tree is unpacked into a staging folder
and moved in whole, so a cut-short unpack is never taken for a done one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from quickjail.sandbox._engine import cache_dir
from release._musl_python import Source, fetch_source

__all__ = [
    "NODE_HARNESS_PREFIXES",
    "NODE_TARBALL",
    "WPT_PREFIX",
    "WptSourceError",
    "node_tree",
    "wpt_root",
]

NODE_TARBALL = Source(
    "n/nodejs/nodejs_20.19.2+dfsg.orig.tar.xz",
    19886184,
    "5e5559381ad031d245a8efa403458abbb73755f74c3e6380f185a4dd342b7949",
)
_TOP = "node-v20.19.2"
WPT_PREFIX = "test/fixtures/wpt/"
# Node's own WPT runner, for rates.py's Node column (test/common is what it requires)
NODE_HARNESS_PREFIXES = ("test/common/", "test/wpt/", "test/fixtures/wpt/")
_MAX_MEMBERS = 20_000
_MAX_BYTES = 256 * 2**20
_LAYOUT = 1  # bump when what is unpacked changes: cached trees are remade


class WptSourceError(RuntimeError):
    """The pinned tarball could not be had, or a member of it is not one we unpack."""


def _safe_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise WptSourceError(f"{NODE_TARBALL.name}: member {name!r} is not a relative path")
    return path


def _unpack(tarball: Path, prefixes: tuple[str, ...], target: Path) -> None:
    """Unpack the members under ``_TOP/prefix`` into ``target`` (staged, then moved)."""
    staging = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    count = total = 0
    wanted = tuple(f"{_TOP}/{p}" for p in prefixes)
    with tarfile.open(tarball, mode="r|xz") as tar:  # one pass over the stream
        for member in tar:
            if not member.name.startswith(wanted):
                continue
            rel = _safe_name(member.name[len(_TOP) + 1 :])
            count += 1
            total += max(member.size, 0)
            if count > _MAX_MEMBERS or total > _MAX_BYTES:
                raise WptSourceError(f"{tarball.name}: more than {_MAX_MEMBERS} members or bytes")
            out = staging.joinpath(*rel.parts)
            if member.isdir():
                out.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                out.parent.mkdir(parents=True, exist_ok=True)
                data = tar.extractfile(member)
                if data is None:
                    raise WptSourceError(f"{tarball.name}: member {member.name!r} has no data")
                out.write_bytes(data.read(member.size))
            else:
                raise WptSourceError(
                    f"{tarball.name}: member {member.name!r} is a link or a special file"
                )
    if count == 0:
        raise WptSourceError(f"{tarball.name}: nothing under {', '.join(prefixes)}")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)


def node_tree(prefixes: tuple[str, ...] = (WPT_PREFIX,), cache: Path | None = None) -> Path:
    """The folder holding the tarball's members under ``prefixes`` (its ``test/...`` layout),
    downloaded and unpacked the first time, verified each time."""
    base = (cache or cache_dir()) / "wpt"
    tarball = fetch_source(NODE_TARBALL, base)  # raises on a wrong size or hash
    key = hashlib.sha256(repr((_LAYOUT, NODE_TARBALL.sha256, prefixes)).encode()).hexdigest()
    target = base / f"tree-{key[:16]}"
    marker = target / ".quickjail-unpacked"
    if not marker.exists():
        _unpack(tarball, prefixes, target)
        marker.write_text(NODE_TARBALL.sha256)
    return target


def wpt_root(cache: Path | None = None) -> Path:
    """The WPT root (``resources/testharness.js`` is under it)."""
    return node_tree((WPT_PREFIX,), cache) / WPT_PREFIX.rstrip("/")

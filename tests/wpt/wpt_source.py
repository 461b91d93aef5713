"""The web-platform-tests the suite runs: Node's vendored copy, from pinned Debian tarballs.

Debian's ``nodejs`` source package carries the WPT directories Node runs (their upstream
commits in ``test/fixtures/wpt/versions.json``). The tarballs are pinned here, by pool path,
size and sha256, and fetched with the shared pinned-download helper
(:func:`quickjail.sandbox._debian_source.fetch_source`: from the mirror apt uses, or
``$QUICKJAIL_DEBIAN_MIRROR``) into ``$QUICKJAIL_CACHE_DIR`` (else the user cache dir, as the
compiled guest), once; each is checked on every use.

Which tarballs: trixie's (Debian 13, stable) ``20.19.2+dfsg`` for everything but
``compression/``, which Node 20 does not vendor: that one comes from sid's ``22.22.2+dfsg``
(:data:`NODE22_TARBALL`), unpacked into the same tree. A stable release's orig tarball stays
in the pool for the release's life, where sid's moves with every upload; trixie's harness
(``test/common/wpt.js``) is also the one for the Node 20 that ``rates.py`` compares against.
If the pool drops one, snapshot.debian.org serves the same file (the hash decides, not the
mirror): ``QUICKJAIL_DEBIAN_MIRROR=https://snapshot.debian.org/archive/debian/20250801T000000Z``
for trixie's; for sid's, a timestamp at which the archive held ``nodejs``
``22.22.2+dfsg+~cs22.19.15`` (snapshot.debian.org's page for the source package ``nodejs``
lists them) in ``https://snapshot.debian.org/archive/debian/<timestamp>``.

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

from quickjail.sandbox._debian_source import Source, fetch_source
from quickjail.sandbox._engine import cache_dir

__all__ = [
    "NODE22_TARBALL",
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
# sid's: the first Node whose vendored WPT has compression/
NODE22_TARBALL = Source(
    "n/nodejs/nodejs_22.22.2+dfsg+~cs22.19.15.orig.tar.xz",
    23112104,
    "f1a6dfca7ffe7f9f42942274adf9f0a12733977a4744a53f41b20836907c449b",
)
_TOP22 = "node-v22.22.2"
WPT_PREFIX = "test/fixtures/wpt/"
# the WPT directories taken from Node 22's tarball rather than Node 20's
NODE22_WPT_PREFIXES = (f"{WPT_PREFIX}compression/",)
# Node's own WPT runner, for rates.py's Node column (test/common is what it requires)
NODE_HARNESS_PREFIXES = ("test/common/", "test/wpt/", "test/fixtures/wpt/")
_MAX_MEMBERS = 20_000
_MAX_BYTES = 256 * 2**20
_LAYOUT = 1  # bump when what is unpacked changes: cached trees are remade


class WptSourceError(RuntimeError):
    """The pinned tarball could not be had, or a member of it is not one we unpack."""


def _safe_name(tarball: Path, name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise WptSourceError(f"{tarball.name}: member {name!r} is not a relative path")
    return path


def _unpack(parts: tuple[tuple[Path, str, tuple[str, ...]], ...], target: Path) -> None:
    """Unpack, for each ``(tarball, top, prefixes)``, the members under ``top/prefix`` into
    ``target`` (staged, then moved)."""
    staging = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for tarball, top, prefixes in parts:
        _unpack_one(tarball, top, prefixes, staging)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)


def _unpack_one(tarball: Path, top: str, prefixes: tuple[str, ...], staging: Path) -> None:
    count = total = 0
    wanted = tuple(f"{top}/{p}" for p in prefixes)
    with tarfile.open(tarball, mode="r|xz") as tar:  # one pass over the stream
        for member in tar:
            if not member.name.startswith(wanted):
                continue
            rel = _safe_name(tarball, member.name[len(top) + 1 :])
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


def _tree(sources: tuple[tuple[Source, str, tuple[str, ...]], ...], cache: Path | None) -> Path:
    """The folder holding, from each ``(tarball, top, prefixes)``, the members under the
    prefixes (the tarballs' ``test/...`` layout), downloaded and unpacked the first time,
    verified each time."""
    base = (cache or cache_dir()) / "wpt"
    # fetch_source raises on a wrong size or hash
    parts = tuple((fetch_source(src, base), top, prefixes) for src, top, prefixes in sources)
    spec = (_LAYOUT, tuple((src.sha256, prefixes) for src, _, prefixes in sources))
    key = hashlib.sha256(repr(spec).encode()).hexdigest()
    target = base / f"tree-{key[:16]}"
    marker = target / ".quickjail-unpacked"
    if not marker.exists():
        _unpack(parts, target)
        marker.write_text(" ".join(src.sha256 for src, _, _ in sources))
    return target


def node_tree(prefixes: tuple[str, ...] = (WPT_PREFIX,), cache: Path | None = None) -> Path:
    """The folder holding Node 20's tarball's members under ``prefixes`` (its ``test/...``
    layout), downloaded and unpacked the first time, verified each time."""
    return _tree(((NODE_TARBALL, _TOP, prefixes),), cache)


def wpt_root(cache: Path | None = None) -> Path:
    """The WPT root (``resources/testharness.js`` is under it): Node 20's vendored WPT with
    :data:`NODE22_WPT_PREFIXES` from Node 22's (Node 20's has none of them)."""
    sources = (
        (NODE_TARBALL, _TOP, (WPT_PREFIX,)),
        (NODE22_TARBALL, _TOP22, NODE22_WPT_PREFIXES),
    )
    return _tree(sources, cache) / WPT_PREFIX.rstrip("/")

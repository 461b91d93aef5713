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

The tarball and the unpacking (only the wanted members, each checked, staged then moved in
whole) are ``tarball_support``'s, shared with test262's ``intl402`` (``tests/intl402``).
"""

from __future__ import annotations

from pathlib import Path

from tarball_support import UnpackError, pinned_tree, unpack

from release._musl_python import Source

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
WptSourceError = UnpackError
"""What a tarball that cannot be had or unpacked raises (``tarball_support``'s error)."""


def _unpack(tarball: Path, prefixes: tuple[str, ...], target: Path) -> None:
    """Unpack the members under ``_TOP/prefix`` into ``target`` (staged, then moved)."""
    unpack(((tarball, _TOP, prefixes),), target, max_members=_MAX_MEMBERS, max_bytes=_MAX_BYTES)


def node_tree(prefixes: tuple[str, ...] = (WPT_PREFIX,), cache: Path | None = None) -> Path:
    """The folder holding the tarball's members under ``prefixes`` (its ``test/...`` layout),
    downloaded and unpacked the first time, verified each time."""
    sources = ((NODE_TARBALL, _TOP, prefixes),)
    return pinned_tree("wpt", sources, cache=cache, max_members=_MAX_MEMBERS, max_bytes=_MAX_BYTES)


def wpt_root(cache: Path | None = None) -> Path:
    """The WPT root (``resources/testharness.js`` is under it)."""
    return node_tree((WPT_PREFIX,), cache) / WPT_PREFIX.rstrip("/")

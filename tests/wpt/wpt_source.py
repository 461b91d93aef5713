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

The tarballs and the unpacking (only the wanted members, each checked, staged then moved in
whole) are ``tarball_support``'s, shared with test262's ``intl402`` (``tests/intl402``).
"""

from __future__ import annotations

from pathlib import Path

from tarball_support import UnpackError, pinned_tree, unpack

from quickjail.sandbox._debian_source import Source

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
WptSourceError = UnpackError
"""What a tarball that cannot be had or unpacked raises (``tarball_support``'s error)."""


def _unpack(parts: tuple[tuple[Path, str, tuple[str, ...]], ...], target: Path) -> None:
    """Unpack, for each ``(tarball, top, prefixes)``, the members under ``top/prefix`` into
    ``target`` (staged, then moved)."""
    unpack(parts, target, max_members=_MAX_MEMBERS, max_bytes=_MAX_BYTES)


def _tree(sources: tuple[tuple[Source, str, tuple[str, ...]], ...], cache: Path | None) -> Path:
    return pinned_tree("wpt", sources, cache=cache, max_members=_MAX_MEMBERS, max_bytes=_MAX_BYTES)


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

"""test262's ``intl402`` tests, from SpiderMonkey's import in one pinned Debian tarball.

No package registry carries test262; SpiderMonkey's source carries a full import of it (its
upstream commit in ``js/src/tests/test262/GIT-INFO``), and Debian's ``mozjs128`` source package
is that source. The tarball is pinned here by pool path, size and sha256 and fetched and
unpacked by ``tarball_support`` (the helper the WPT tree uses: only the wanted members, each
checked, staged then moved in whole) into ``$QUICKJAIL_CACHE_DIR/test262``, once.

Which tarball: trixie's (Debian 13, stable) ``128.14.0``, whose import is test262 commit
``79e9b39f3a576154b1bc39f9dbd95d25addc4ebf`` (2024-04-14). Only the import's root
``shell.js`` (test262's ``assert.js``, ``sta.js``, ``propertyHelper.js``, ``compareArray.js``
and SpiderMonkey's ``test262-host.js``), its ``GIT-INFO``, ``LICENSE`` and ``jstests.list``
(the raw tests) and the ``intl402`` folder are unpacked: about 13 MB of the 157 MB tarball,
whose ``xz`` stream is still read whole once (~40 s). SpiderMonkey's import folds each test's
``includes`` into the ``shell.js`` of the folders that need them and adds a ``// |reftest|``
line and a closing ``reportCompare(0, 0);`` (``t262_harness`` runs them so).
"""

from __future__ import annotations

from pathlib import Path

from tarball_support import pinned_tree

from quickjail.sandbox._debian_source import Source

__all__ = ["GIT_COMMIT", "MOZJS_TARBALL", "PREFIXES", "t262_root"]

MOZJS_TARBALL = Source(
    "m/mozjs128/mozjs128_128.14.0.orig.tar.xz",
    157263392,
    "41cca35149710ce45fbabc5fefcf86a01fdf833fdb783941964fca3a55fb72dd",
)
GIT_COMMIT = "79e9b39f3a576154b1bc39f9dbd95d25addc4ebf"
_TOP = "firefox-128.14.0"
_BASE = "js/src/tests/test262/"
PREFIXES = tuple(
    _BASE + name for name in ("shell.js", "GIT-INFO", "LICENSE", "jstests.list", "intl402/")
)


def t262_root(cache: Path | None = None) -> Path:
    """The import's root (``shell.js`` and ``intl402/`` are under it)."""
    sources = ((MOZJS_TARBALL, _TOP, PREFIXES),)
    tree = pinned_tree("test262", sources, cache=cache, max_members=8_000, max_bytes=64 * 2**20)
    return tree / _BASE.rstrip("/")

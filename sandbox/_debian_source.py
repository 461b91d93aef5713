"""Pinned source tarballs from Debian's pool: the one download helper the guest build
(zlib, :mod:`sandbox._build`), the release tooling (:mod:`release._musl_python`) and the
web-platform-tests of ``tests/wpt`` share.

A :class:`Source` names a tarball by its pool path, size and SHA-256; :func:`fetch_source`
downloads it once from the Debian mirror apt uses (``$QUICKJAIL_DEBIAN_MIRROR`` overrides it;
Debian's CDN on a machine that is not Debian), stops reading at the pinned size, and checks
size and hash on every use. The mirror is never trusted: the hash decides. Standard library
only, so the build loads this file by path (build environments lack the package's
dependencies).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEBIAN_CDN", "PinnedSourceError", "Source", "debian_mirror", "fetch_source"]

DEBIAN_CDN = "https://deb.debian.org/debian"
_APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))


class PinnedSourceError(RuntimeError):
    """A pinned tarball could not be downloaded, or what arrived is not the pinned file."""


@dataclass(frozen=True)
class Source:
    """One source tarball of Debian's pool.

    Attributes:
        pool: its path under the mirror's ``pool/main/``.
        size: its size in bytes (a download is cut there).
        sha256: its hash, checked before anything is unpacked.
    """

    pool: str
    size: int
    sha256: str

    @property
    def name(self) -> str:
        """The tarball's file name."""
        return self.pool.rsplit("/", 1)[1]


def debian_mirror() -> str:
    """The Debian mirror apt is set up with (``$QUICKJAIL_DEBIAN_MIRROR`` overrides it), else
    Debian's own CDN (on a machine that is not Debian: every file is checked by its hash)."""
    env = os.environ.get("QUICKJAIL_DEBIAN_MIRROR")
    if env:
        return env.rstrip("/")
    listed = sorted(_APT_SOURCES[1].glob("*")) if _APT_SOURCES[1].is_dir() else []
    files = [_APT_SOURCES[0], *listed]
    for file in files:
        text = file.read_text(encoding="utf-8", errors="replace") if file.is_file() else ""
        for uri in re.findall(r"(?:^URIs:|^deb(?:-src)?\s.*?)\s*(https?://\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return str(uri.rstrip("/"))
    return DEBIAN_CDN


def fetch_source(source: Source, into: Path) -> Path:
    """The tarball, downloaded once into ``into`` and checked by size and hash every time."""
    into.mkdir(parents=True, exist_ok=True)
    path = into / source.name
    if not path.exists():
        url = f"{debian_mirror()}/pool/main/{source.pool}"
        print(f"quickjail: downloading {url}", file=sys.stderr, flush=True)
        partial = path.with_suffix(".partial")
        with urllib.request.urlopen(url, timeout=60) as response, partial.open("wb") as out:
            got = 0
            while chunk := response.read(1 << 20):
                got += len(chunk)
                if got > source.size:
                    raise PinnedSourceError(f"{url}: larger than the pinned {source.size} bytes")
                out.write(chunk)
        partial.replace(path)
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    if path.stat().st_size != source.size or digest.hexdigest() != source.sha256:
        path.unlink()
        raise PinnedSourceError(f"{source.name}: not the pinned file (sha256 {digest.hexdigest()})")
    return path

"""Hot pages: the guest memory pages every run writes, made private before the guest runs.

A fresh instance maps the guest's memory image copy-on-write. Most pages a run writes are read
first, so each costs two faults, and the second replaces a read-only mapping, which Linux must
flush from every core running a thread of this process: with guests on two threads, those
interrupts took over a third of the CPU time of small runs (``benchmarks/README.md``, *Fresh
runs and threads*). Populating these pages for writing before the guest runs
(``_host/prefault.c``) makes their copies while nothing maps them.

Which pages is learned, not built in: one run in :data:`SAMPLE_EVERY` runs without the prefault,
and when it ends, ``/proc/self/pagemap`` tells which pages of its memory hold private copies
(present, exclusive, not the file's). The hot set is what the last :data:`WINDOW` sampled runs
all wrote. What bounds it, whatever a guest does: a sample of more than :data:`MAX_PAGES` pages
is not used, so an instance never populates more than that (a page the run then does not
write costs one private page until the store is freed); and a window of samples forgets a run
that wrote much or little. Linux only; without ``MADV_POPULATE_WRITE`` (before 5.14) or a
readable pagemap, nothing is prefaulted.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import struct
import sys
import threading
from collections import deque
from typing import Any, Final

__all__ = ["MAX_PAGES", "SAMPLE_EVERY", "WINDOW", "HotPages"]

SAMPLE_EVERY: Final = 64
"""One run in this many is sampled (runs without the prefault) once the set is known."""
MAX_PAGES: Final = 64
"""A sample that wrote more pages is not used: the most pages an instance populates."""
WINDOW: Final = 4
"""The hot set is what the last this many usable samples all wrote."""
_MIN_SAMPLES: Final = 2  # samples before any prefault
_EAGER: Final = 4  # the first runs are all sampled
_PRESENT: Final = 1 << 63
_FILE: Final = 1 << 61  # a file page (the image's own) or shared
_EXCLUSIVE: Final = 1 << 56  # mapped by this mapping alone
_WRITTEN_MASK: Final = _PRESENT | _FILE | _EXCLUSIVE
_WRITTEN: Final = _PRESENT | _EXCLUSIVE


class HotPages:
    """The hot set of one engine's instances (they share the memory image) and the calls
    that use and learn it; thread-safe."""

    def __init__(self, prefault: Any, page_size: int) -> None:
        """``prefault``: the host library's ``qj_prefault``, or None where it cannot work."""
        self._prefault = prefault
        self._page = page_size
        self._pagemap: int | None = None
        self._pid = os.getpid()  # /proc/self at open: a forked child must open its own
        self._lock = threading.Lock()
        self._count = itertools.count()
        self._samples: deque[frozenset[int]] = deque(maxlen=WINDOW)
        self._hot: tuple[Any, int] | None = None  # the set: a ctypes uint32 array, ascending
        self._span = 0  # bytes of memory an instance starts with: where hot pages can be
        if prefault is not None and sys.platform.startswith("linux"):
            self._open_pagemap()

    @property
    def pages(self) -> frozenset[int]:
        """The current hot set (page indices); empty until enough runs were sampled."""
        hot = self._hot
        return frozenset(hot[0][: hot[1]]) if hot is not None else frozenset()

    def start(self, base: int, size: int) -> bool:
        """A fresh instance's memory is at ``base``, ``size`` bytes, and its guest has not run:
        populate the hot set, or tell the caller to sample this run (True: call :meth:`learn`
        once it ends, before its store is freed)."""
        prefault = self._prefault
        if prefault is None:
            return False
        self._span = size
        k = next(self._count)
        if k < _EAGER or k % SAMPLE_EVERY == 0:
            return True
        hot = self._hot
        if hot is not None and prefault(base, size, *hot) != 0:
            self._prefault = None  # the system has no MADV_POPULATE_WRITE
        return False

    def learn(self, base: int, size: int) -> None:
        """A sampled run ended (its memory still mapped, ``size`` bytes now): take the pages it
        wrote in the memory it started with into the set."""
        fd = self._pagemap
        if fd is None or self._prefault is None:
            return
        if os.getpid() != self._pid:
            fd = self._reopen()
            if fd is None:
                return
        page = self._page
        n = min(size, self._span) // page  # what it grew to holds no hot page
        try:
            raw = os.pread(fd, n * 8, base // page * 8)
        except OSError:
            return
        if len(raw) != n * 8:
            return
        written = [
            i for i, e in enumerate(struct.unpack(f"{n}Q", raw)) if e & _WRITTEN_MASK == _WRITTEN
        ]
        if len(written) > MAX_PAGES:
            return
        with self._lock:
            self._samples.append(frozenset(written))
            if len(self._samples) < _MIN_SAMPLES:
                return
            hot = sorted(frozenset.intersection(*self._samples))
            self._hot = ((ctypes.c_uint32 * len(hot))(*hot), len(hot)) if hot else None

    def _open_pagemap(self) -> None:
        """Open this process's page map; without one, nothing is prefaulted."""
        try:
            self._pagemap = os.open("/proc/self/pagemap", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._prefault = None

    def _reopen(self) -> int | None:
        """This process's own pagemap, after a fork (the inherited one is the parent's)."""
        with self._lock:
            if os.getpid() != self._pid:
                old, self._pagemap = self._pagemap, None
                if old is not None:
                    os.close(old)
                self._open_pagemap()
                self._pid = os.getpid()
                self._samples.clear()
                self._hot = None
            return self._pagemap

    def close(self) -> None:
        """Stop prefaulting and close the pagemap (idempotent)."""
        self._prefault = None
        fd, self._pagemap = self._pagemap, None
        if fd is not None:
            os.close(fd)

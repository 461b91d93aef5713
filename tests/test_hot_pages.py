"""The pages every run writes are learned from sampled runs and made private before a guest
runs (sandbox/_prefault.py, _host/prefault.c): what is learned is read from the kernel's page
map, bounded whatever a guest writes, and populating changes no result."""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from quickjail.sandbox import _hostlib, _prefault
from quickjail.sandbox._prefault import MAX_PAGES, SAMPLE_EVERY, WINDOW, HotPages

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="hot pages: Linux (/proc/self/pagemap)"
)

PAGE = mmap.PAGESIZE
GENEROUS = 120.0  # seconds: a bound no loaded machine reaches


def _address(m: mmap.mmap) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(m))


def _private(base: int, pages: int) -> set[int]:
    """Pages of ``[base, base + pages)`` holding a private copy (present, exclusive, no file)."""
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        raw = os.pread(fd, pages * 8, base // PAGE * 8)
    finally:
        os.close(fd)
    mask = (1 << 63) | (1 << 61) | (1 << 56)
    want = (1 << 63) | (1 << 56)
    return {i for i, e in enumerate(struct.unpack(f"{pages}Q", raw)) if e & mask == want}


@pytest.fixture
def hot() -> Iterator[HotPages]:
    h = HotPages(_hostlib.prefault(), PAGE)
    yield h
    h.close()
    h.close()  # idempotent


def _anon(pages: int) -> mmap.mmap:
    """Private anonymous memory (a shared mapping's pages are never exclusive)."""
    return mmap.mmap(-1, pages * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


def _sample(hot: HotPages, written: set[int], pages: int = 128) -> None:
    """A sampled run that writes ``written`` (page indices) of a ``pages``-page memory and
    reads every other page (the zero page), learned when it ends; runs that are not sampled
    (their memory prefaulted) are skipped, as an instance would run them."""
    for _ in range(SAMPLE_EVERY + 1):
        m = _anon(pages)
        try:
            base = _address(m)
            if not hot.start(base, pages * PAGE):
                continue
            for i in range(pages):
                if i in written:
                    m[i * PAGE] = 1
                else:
                    _ = m[i * PAGE]
            hot.learn(base, pages * PAGE)
            return
        finally:
            m.close()
    raise AssertionError("no run was sampled")


def test_the_hot_set_is_what_the_last_samples_all_wrote(hot: HotPages) -> None:
    _sample(hot, {1, 2, 3, 9})
    assert hot.pages == frozenset(), "one sample is not enough"
    _sample(hot, {2, 3, 9, 40})
    assert hot.pages == {2, 3, 9}
    _sample(hot, {2, 3})
    assert hot.pages == {2, 3}
    for _ in range(WINDOW):  # a window later, the narrow sample is forgotten
        _sample(hot, {2, 3, 9, 50})
    assert hot.pages == {2, 3, 9, 50}


def test_a_sample_of_more_than_max_pages_is_not_used(hot: HotPages) -> None:
    many = set(range(MAX_PAGES + 1))
    for _ in range(WINDOW + 1):
        _sample(hot, many, pages=MAX_PAGES + 16)
    assert hot.pages == frozenset()
    _sample(hot, {4, 5})
    _sample(hot, {4, 5})
    _sample(hot, many, pages=MAX_PAGES + 16)  # ignored: the set stays what small runs wrote
    assert hot.pages == {4, 5}


def test_only_the_memory_an_instance_starts_with_is_read(hot: HotPages) -> None:
    m = _anon(64)
    try:
        base = _address(m)
        for _ in range(2):
            hot.start(base, 16 * PAGE)  # the instance started with 16 pages, then grew
            m[3 * PAGE] = 1
            m[20 * PAGE] = 1
            hot.learn(base, 64 * PAGE)
        assert hot.pages == {3}
    finally:
        m.close()


def test_start_populates_the_hot_pages_of_a_copy_on_write_image_for_writing(
    hot: HotPages,
) -> None:
    # the guest's memory is a private mapping of an image file, as wasmtime maps it
    _sample(hot, {2, 3, 7})
    _sample(hot, {2, 3, 7})
    assert hot.pages == {2, 3, 7}
    for _ in range(SAMPLE_EVERY + 1):  # until a run that is not a sample
        with tempfile.TemporaryFile() as f:
            f.write(b"\x01" * (16 * PAGE))
            f.flush()
            m = mmap.mmap(f.fileno(), 16 * PAGE, flags=mmap.MAP_PRIVATE)
            try:
                base = _address(m)
                assert _private(base, 16) == set()
                if hot.start(base, 16 * PAGE):
                    continue  # one in SAMPLE_EVERY
                assert _private(base, 16) == {2, 3, 7}
                assert m[2 * PAGE] == 1 and m[8 * PAGE] == 1, "the image's bytes are kept"
                return
            finally:
                m.close()
    raise AssertionError("every run was sampled")


def test_once_learned_one_run_in_sample_every_is_sampled(hot: HotPages) -> None:
    _sample(hot, {1})
    _sample(hot, {1})
    m = _anon(4)
    try:
        for _ in range(_prefault._EAGER):  # past the first runs, which are all sampled
            hot.start(_address(m), 4 * PAGE)
        sampled = sum(hot.start(_address(m), 4 * PAGE) for _ in range(SAMPLE_EVERY * 4))
    finally:
        m.close()
    assert sampled == 4


def test_without_populate_write_the_prefault_stops() -> None:
    calls: list[Any] = []

    def refuse(*args: Any) -> int:
        calls.append(args)
        return -1  # as on a kernel before 5.14

    h = HotPages(refuse, PAGE)
    try:
        _sample(h, {1})
        _sample(h, {1})
        assert h.pages == {1}
        m = _anon(4)
        try:
            started = [h.start(_address(m), 4 * PAGE) for _ in range(SAMPLE_EVERY * 2)]
        finally:
            m.close()
        assert len(calls) == 1, "tried once, then never again"
        assert not any(started[started.index(False) :]), "and no run is sampled any more"
    finally:
        h.close()


_PROCESS = """
import json, sys
import quickjail
from quickjail.sandbox._engine import get_engine
from quickjail.sandbox import _prefault
big = "const a = new Uint8Array(2 ** 21); a.fill(7); export default a[12345]"
sizes = []
for _ in range(_prefault._EAGER + _prefault.WINDOW + 2):
    r = quickjail.run_code_sync(big)
    assert (r.status, r.result) == ("success", 7), r
sizes.append(len(get_engine().hot_pages.pages))
for i in range(2 * _prefault.SAMPLE_EVERY + 8):
    r = quickjail.run_code_sync(f"export default [{i}, 'x'.repeat(3)]")
    assert (r.status, r.result) == ("success", [i, "xxx"]), r
sizes.append(len(get_engine().hot_pages.pages))
print(json.dumps(sizes))
"""


def test_runs_that_write_much_teach_nothing_and_small_runs_learn_a_bounded_set() -> None:
    # a process of its own: the hot set depends on every run its engine made
    out = subprocess.run(
        [sys.executable, "-c", _PROCESS], capture_output=True, text=True, timeout=GENEROUS
    )
    assert out.returncode == 0, out.stderr
    after_big, after_small = json.loads(out.stdout)
    assert after_big == 0, "a run that writes more than MAX_PAGES pages is not learned"
    assert 0 < after_small <= MAX_PAGES

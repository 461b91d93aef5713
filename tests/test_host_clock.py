"""The guest's clock is answered in C (sandbox/_host/clock.c), with no Python on the way, and
that C writes only inside the calling guest's own memory."""

from __future__ import annotations

import ctypes
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import quickjail
from quickjail.sandbox import _build, _capi, _hostlib, _native
from quickjail.sandbox._abi import WASI_EBADF
from quickjail.sandbox._run import DETERMINISTIC_EPOCH_NS
from quickjail.sandbox.errors import GuestBuildError

READS = 10_000
LOOP = f"for (let i = 0; i < {READS}; i++) {{ Date.now(); performance.now(); }}"


@pytest.fixture
def python_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Count every call of what the Python clock import used: the host's clocks and the
    instance's checked memory access (any thread)."""
    calls: Counter[str] = Counter()
    lock = threading.Lock()

    def counting(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with lock:
                calls[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(time, "time_ns", counting("time_ns", time.time_ns))
    monkeypatch.setattr(time, "monotonic_ns", counting("monotonic_ns", time.monotonic_ns))
    for name in ("write", "check_span"):
        method = getattr(_native.NativeInstance, name)
        monkeypatch.setattr(_native.NativeInstance, name, counting(name, method))
    yield calls


@pytest.mark.parametrize("deterministic", [False, True], ids=["real", "deterministic"])
def test_clock_reads_make_no_python_call(python_calls: Counter[str], deterministic: bool) -> None:
    # a run reading both clocks 10,000 times calls Python exactly as often as one reading them
    # once: the host's clocks only for the run header, guest memory only for the run's data
    once = quickjail.run_code_sync(
        "export default [Date.now(), performance.now()]",
        language="javascript",
        deterministic=deterministic,
    )
    assert once.status == "success", once.error
    baseline = dict(python_calls)
    python_calls.clear()
    many = quickjail.run_code_sync(
        f"const a = Date.now(); {LOOP}\nexport default [a, Date.now()]",
        language="javascript",
        deterministic=deterministic,
    )
    assert many.status == "success", many.error
    assert dict(python_calls) == baseline
    assert sum(baseline.values()) < 10, baseline


def test_real_clock_reads_are_the_hosts_wall_clock() -> None:
    before_ms = time.time_ns() // 1_000_000
    r = quickjail.run_code_sync(
        f"const a = Date.now(); {LOOP}\nexport default [a, Date.now()]", language="javascript"
    )
    after_ms = time.time_ns() // 1_000_000
    assert r.status == "success", r.error
    first, last = r.result
    assert before_ms <= first <= last <= after_ms


def test_deterministic_clock_advances_a_millisecond_per_read() -> None:
    r = quickjail.run_code_sync(
        f"const a = Date.now(), p = performance.now(); {LOOP}\n"
        "export default [a, p, Date.now() - a, performance.now() - p]",
        language="javascript",
        deterministic=True,
    )
    assert r.status == "success", r.error
    # read 1 is a, read 2 is p (the run's origin is the deterministic start); the loop reads
    # 2 × READS times, then Date.now() and performance.now() once each
    assert r.result == [
        DETERMINISTIC_EPOCH_NS // 1_000_000 + 1,
        2,
        2 * READS + 2,
        2 * READS + 2,
    ]


def test_a_missing_host_library_is_an_install_error_naming_make_guest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_hostlib, "_GUEST_DIR", tmp_path)
    monkeypatch.setattr(_hostlib, "_lib", None)
    with pytest.raises(GuestBuildError, match="make guest"):
        _hostlib.clock_time_get()


def test_the_build_and_the_loader_agree_on_the_library() -> None:
    assert _build.HOST_LIBRARY.name == _hostlib.LIBRARY_NAME
    assert _build.HOST_LIBRARY.exists()
    assert _build.HOST_DIR / "clock.c" in _build.host_sources()


def test_any_change_to_the_host_library_source_makes_it_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "_host"
    shutil.copytree(_build.HOST_DIR, copy)
    monkeypatch.setattr(_build, "HOST_DIR", copy)
    before = _build.host_inputs_hash()
    guest = _build.inputs_hash()
    for path in sorted(copy.iterdir()):
        data = path.read_bytes()
        path.write_bytes(data + b"\n")
        assert _build.host_inputs_hash() != before, path.name
        path.write_bytes(data)
    assert _build.host_inputs_hash() == before
    (copy / "new.c").write_text("")
    assert _build.host_inputs_hash() != before
    assert _build.inputs_hash() == guest  # the guest does not depend on it


# The C function itself, on a private copy of the library (its own globals), with wasmtime's
# functions played by ctypes callbacks over a fake memory: a guest cannot name a bad offset
# through the public API (its libc passes a stack address), a compromised one could.

_CallerContext = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_GetData = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
_MemData = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_MemSize = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p)
MEMORY = 4096
_CONTEXT = 0x1000  # what the fake caller's context is; never dereferenced by the C


class FakeStore:
    """A private copy of the library, bound to one fake store: its clock and its memory."""

    def __init__(self, tmp_path: Path) -> None:
        private = tmp_path / "libclock-copy.so"
        shutil.copy(_build.HOST_LIBRARY, private)
        self.lib = ctypes.CDLL(str(private))
        self.memory = (ctypes.c_uint8 * MEMORY)()
        self.clock: _hostlib.StoreData | None = _hostlib.StoreData()
        self.clock.memory.store_id = 1
        self.callbacks = (
            _CallerContext(lambda caller: _CONTEXT if caller else None),
            _GetData(lambda ctx: ctypes.addressof(self.clock) if self.clock else None),
            _MemData(lambda ctx, mem: ctypes.addressof(self.memory)),
            _MemSize(lambda ctx, mem: MEMORY),
        )
        self.lib.qj_host_init.argtypes = (ctypes.c_void_p,) * 4
        self.lib.qj_host_init.restype = ctypes.c_int
        addrs = [ctypes.cast(cb, ctypes.c_void_p) for cb in self.callbacks]
        assert self.lib.qj_host_init(*addrs) == 0
        self.fn = self.lib.qj_clock_time_get
        self.fn.argtypes = (
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.POINTER(_capi.ValRaw),
            ctypes.c_size_t,
        )
        self.fn.restype = ctypes.c_void_p

    def call(self, clock_id: int, out: int, n: int = 3) -> int:
        args = (_capi.ValRaw * 3)()
        args[0].i32 = clock_id
        args[1].i64 = 1
        args[2].i32 = out - 2**32 if out >= 2**31 else out
        assert self.fn(None, 1, args, n) is None  # never a trap
        return int(args[0].i32)

    def u64(self, at: int) -> int:
        return int.from_bytes(bytes(self.memory[at : at + 8]), "little")


@pytest.fixture
def store(tmp_path: Path) -> FakeStore:
    return FakeStore(tmp_path)


def test_host_clock_writes_only_inside_the_callers_memory(store: FakeStore) -> None:
    assert store.clock is not None
    store.clock.mode = _hostlib.MODE_ZERO
    ctypes.memset(store.memory, 0xAA, MEMORY)
    for out in (MEMORY - 7, MEMORY - 1, MEMORY, MEMORY + 8, 2**31, 2**32 - 8, 2**32 - 1):
        assert store.call(0, out) == WASI_EBADF, out
    assert bytes(store.memory) == b"\xaa" * MEMORY
    assert store.call(0, MEMORY - 8) == 0
    assert bytes(store.memory) == b"\xaa" * (MEMORY - 8) + bytes(8)
    assert store.call(1, 0) == 0
    assert bytes(store.memory[:8]) == bytes(8)
    assert store.call(0, 0, n=2) == WASI_EBADF  # not clock_time_get's shape: nothing read


def test_host_clock_without_a_clock_or_a_memory_answers_ebadf(store: FakeStore) -> None:
    assert store.clock is not None
    store.clock.memory.store_id = 0  # the instance's memory is not known yet
    assert store.call(0, 0) == WASI_EBADF
    store.clock = None  # a store with no data (the engine's probe)
    assert store.call(0, 0) == WASI_EBADF
    assert bytes(store.memory[:8]) == bytes(8)


def test_host_clock_modes_match_the_python_clock_they_replace(store: FakeStore) -> None:
    clock = store.clock
    assert clock is not None
    clock.mode = _hostlib.MODE_DETERMINISTIC
    clock.base_ns = DETERMINISTIC_EPOCH_NS
    clock.virtual_ns = 5_000_000
    got = []
    for clock_id in (0, 1, 2, -1):
        assert store.call(clock_id, 16) == 0
        got.append(store.u64(16))
    base = DETERMINISTIC_EPOCH_NS + 5_000_000
    assert got == [base + k * 1_000_000 for k in (1, 2, 3, 4)]
    # a read with a bad pointer still counts, as it did in Python
    assert store.call(0, MEMORY) == WASI_EBADF
    assert store.call(0, 16) == 0 and store.u64(16) == base + 6_000_000
    clock.virtual_ns = 2**64 - 1  # saturates: the clock stands still at its end, never wraps
    assert store.call(0, 16) == 0 and store.u64(16) == 2**64 - 1
    assert store.call(0, 16) == 0 and store.u64(16) == 2**64 - 1

    clock.mode = _hostlib.MODE_REAL
    clock.virtual_ns = 0
    mono = time.monotonic_ns
    for clock_id, host in ((0, time.time_ns), (1, mono), (3, mono), (-1, mono)):
        lo = host()
        assert store.call(clock_id, 24) == 0
        assert lo <= store.u64(24) <= host(), clock_id
    # a resumed run's monotonic clock goes on from its pause: virtual_ns shifts it, not realtime
    clock.virtual_ns = 10**12
    lo = mono()
    assert store.call(1, 24) == 0 and lo + 10**12 <= store.u64(24) <= mono() + 10**12
    lo = time.time_ns()
    assert store.call(0, 24) == 0 and lo <= store.u64(24) <= time.time_ns()
    assert clock.reads == 8  # real reads count nothing

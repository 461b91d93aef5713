"""The TypeScript strip cache is bounded in bytes and safe to share between threads (issue 11)."""

from __future__ import annotations

import threading

import pytest

from quickjail.sandbox import _program
from quickjail.sandbox._typescript import strip_types


def test_the_strip_cache_keeps_at_most_its_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    budget = 1 << 20
    cache = _program._StripCache(budget)
    monkeypatch.setattr(_program, "_strip_cache", cache)
    sources = [f"let a{i}: number = {i};\n" + "// filler\n" * 6000 for i in range(40)]
    for source in sources:  # 40 x (60 KiB source + 60 KiB JavaScript), over 4 MiB in all
        assert _program._strip(source, "m.ts") == strip_types(source, filename="m.ts")
        assert 0 < cache.size <= budget
    # The most recent entries are kept (the stripped text is returned from the cache).
    assert cache.get(sources[-1], "m.ts") is _program._strip(sources[-1], "m.ts")
    assert cache.get(sources[0], "m.ts") is None
    # An entry over a quarter of the budget is not kept at all.
    huge = "let z: number = 1;\n" + "//" * (budget // 8)  # source and JavaScript: 512 KiB
    _program._strip(huge, "m.ts")
    assert cache.get(huge, "m.ts") is None and cache.size <= budget


def test_the_process_strip_cache_is_bounded_in_bytes() -> None:
    assert isinstance(_program._strip_cache, _program._StripCache)
    assert _program.STRIP_CACHE_BYTES <= 64 * 2**20
    assert _program._strip_cache.size <= _program.STRIP_CACHE_BYTES


def test_the_strip_cache_is_consistent_under_threads() -> None:
    cache = _program._StripCache(64 * 1024)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(2000):
                source = f"s{(i * 7 + offset) % 300}" + "x" * 200
                cache.put(source, "f", source.upper())
                found = cache.get(source, "f")
                assert found is None or found == source.upper()
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert 0 < cache.size <= 64 * 1024
    assert cache.size == sum(cost for _, cost in cache._entries.values())

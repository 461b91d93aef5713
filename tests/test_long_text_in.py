"""Long strings from the host reach the guest intact: they travel as UTF-8 blobs and QuickJS
scans each for a non-ASCII byte 8 bytes a step (patch 0010), so every length and every
position of a non-ASCII character relative to those steps must give the same string."""

from __future__ import annotations

import pytest

from quickjail.sandbox import run_code_sync
from quickjail.sandbox._values import TEXT_BLOB_MIN

ECHO = "export function main(s) { return [s.length, s]; }"


def _utf16_length(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


@pytest.mark.parametrize("char", ["é", "€", "😀"], ids=["latin1", "bmp", "astral"])
@pytest.mark.parametrize("extra", range(9))
def test_a_long_string_arrives_intact_wherever_its_non_ascii_character_sits(
    char: str, extra: int
) -> None:
    n = TEXT_BLOB_MIN + extra
    for at in (0, 7, 8, n // 2, n - 9, n - 8, n - 1):
        s = "a" * at + char + "b" * (n - at - 1)
        r = run_code_sync(ECHO, execute={"fn": "main", "args": [s]}, language="javascript")
        assert r.status == "success", r.error
        assert r.result == [_utf16_length(s), s], (char, n, at)


@pytest.mark.parametrize("extra", range(9))
def test_a_long_ascii_string_arrives_intact_at_every_length(extra: int) -> None:
    s = "".join(chr(32 + i % 95) for i in range(TEXT_BLOB_MIN + extra))
    r = run_code_sync(ECHO, execute={"fn": "main", "args": [s]}, language="javascript")
    assert (r.status, r.result) == ("success", [len(s), s]), r.error

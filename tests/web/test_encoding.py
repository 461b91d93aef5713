"""TextEncoder and TextDecoder behave as WHATWG Encoding says (UTF-8), through the public API.

The other encodings TextDecoder has are tests/web/test_encoding_legacy.py's.
"""

from __future__ import annotations

import json

import pytest

from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


def decode(data: bytes, label: str = "utf-8", options: str = "{}") -> object:
    return js(
        f"const d = new TextDecoder({json.dumps(label)}, {options});"
        f"try {{ d.decode(new Uint8Array({list(data)})) }} catch (e) {{ `${{e.name}}` }}"
    )


R = "\ufffd"


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"", ""),
        (b"plain ascii", "plain ascii"),
        ("h\u00e9 \u20ac \U0001f600".encode(), "h\u00e9 \u20ac \U0001f600"),
        (b"\xef\xbb\xbfbom", "bom"),  # one leading BOM is dropped
        (b"\xef\xbb\xbf\xef\xbb\xbfx", "\ufeffx"),  # ... only one
        (b"a\xef\xbb\xbf", "a\ufeff"),  # ... only at the start
        (b"\x80", R),  # lone continuation byte
        (b"\xc0\x80", R + R),  # overlong lead: each byte its own error
        (b"\xc1\xbf", R + R),
        (b"\xc3", R),  # truncated at the end: one replacement
        (b"\xc3A", R + "A"),  # the offending byte is not swallowed
        (b"\xe2\x82", R),  # maximal subpart: two bytes, one replacement
        (b"\xe2\x82A", R + "A"),
        (b"\xe0\x80\x80", R + R + R),  # E0 needs A0..BF next
        (b"\xe0\xa0\x80", "\u0800"),
        (b"\xed\xa0\x80", R + R + R),  # a surrogate's encoding
        (b"\xed\x9f\xbf", "\ud7ff"),
        (b"\xf0\x8f\xbf\xbf", R * 4),  # F0 needs 90..BF next
        (b"\xf0\x90\x80\x80", "\U00010000"),
        (b"\xf4\x8f\xbf\xbf", "\U0010ffff"),
        (b"\xf4\x90\x80\x80", R * 4),  # above U+10FFFF
        (b"\xf5\x80", R + R),
        (b"\xff\xfe", R + R),
        (b"\xf0\x9f\x98", R),  # a truncated four-byte sequence
        (b"\xf0\x9f\x98A\xf0\x9f", R + "A" + R),
        (b"\x00\x7f", "\x00\x7f"),
    ],
)
def test_decode_replaces_each_maximal_subpart_with_one_fffd(data: bytes, text: str) -> None:
    assert decode(data) == text


@pytest.mark.parametrize(
    ("data", "outcome"),
    [
        (b"ok \xc3\xa9", "ok \u00e9"),
        (b"\xff", "TypeError"),
        (b"a\xc3", "TypeError"),
        (b"\xed\xa0\x80", "TypeError"),
        (b"\xef\xbb\xbfx", "x"),
    ],
)
def test_fatal_decoder_throws_typeerror_on_invalid_input(data: bytes, outcome: str) -> None:
    assert decode(data, options="{ fatal: true }") == outcome


def test_ignore_bom_keeps_the_bom() -> None:
    assert decode(b"\xef\xbb\xbfx", options="{ ignoreBOM: true }") == "\ufeffx"


@pytest.mark.parametrize(
    ("label", "outcome"),
    [
        ("utf-8", "utf-8"),
        ("UTF-8", "utf-8"),
        ("utf8", "utf-8"),
        (" \t\n\f\rUtF8 \r\n", "utf-8"),
        ("unicode-1-1-utf-8", "utf-8"),
        ("unicode11utf8", "utf-8"),
        ("unicode20utf8", "utf-8"),
        ("x-unicode20utf8", "utf-8"),
        ("utf-16le", "utf-16le"),  # the legacy labels: tests/web/test_encoding_legacy.py
        ("latin1", "windows-1252"),
        ("utf-7", "RangeError"),
        ("utf-8\u00a0", "RangeError"),  # only ASCII whitespace is trimmed
        ("", "RangeError"),
    ],
)
def test_labels_are_trimmed_and_case_insensitive_and_unknown_ones_are_rangeerrors(
    label: str, outcome: str
) -> None:
    got = js(f"try {{ new TextDecoder({json.dumps(label)}).encoding }} catch (e) {{ e.name }}")
    assert got == outcome


def test_decoder_attributes_and_default_label() -> None:
    got = js(
        "const d = new TextDecoder(undefined, { fatal: 1, ignoreBOM: 'yes' });"
        "[d.encoding, d.fatal, d.ignoreBOM, new TextDecoder().fatal, String(d),"
        " new TextEncoder().encoding]"
    )
    assert got == ["utf-8", True, True, False, "[object TextDecoder]", "utf-8"]


@pytest.mark.parametrize(
    ("chunks", "text"),
    [
        ([b"\xf0\x9f", b"\x98\x80"], "\U0001f600"),
        ([b"\xf0", b"\x9f", b"\x98", b"\x80"], "\U0001f600"),
        ([b"\xef\xbb", b"\xbfa"], "a"),  # a BOM split across chunks is still dropped
        ([b"a\xc3", b"\xa9b"], "a\u00e9b"),
        ([b"\xf0\x9f", b"A"], R + "A"),  # the continuation never came
        ([b"\xe2\x82"], R),  # the final flush replaces what waits
        ([b"", b"x"], "x"),
    ],
)
def test_stream_true_joins_sequences_across_chunk_boundaries(
    chunks: list[bytes], text: str
) -> None:
    parts = json.dumps([list(c) for c in chunks])
    got = js(
        f"const d = new TextDecoder(); const c = {parts}; let s = '';"
        "c.forEach((b, i) => { s += d.decode(new Uint8Array(b), { stream: i < c.length - 1 }); });"
        "s"
    )
    assert got == text


def test_a_decoder_is_reset_after_a_flush_and_after_a_fatal_error() -> None:
    got = js(
        "const d = new TextDecoder(); d.decode(new Uint8Array([0xf0]), { stream: true });"
        "const a = d.decode();"  # flush: the pending byte is one U+FFFD
        "const b = d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]));"  # a new stream: BOM dropped
        "const f = new TextDecoder('utf-8', { fatal: true });"
        "f.decode(new Uint8Array([0xe2]), { stream: true });"
        "let e; try { f.decode(new Uint8Array([0x41])) } catch (x) { e = x.name }"
        "[a, b, e, f.decode(new Uint8Array([0x42]))]"
    )
    assert got == [R, "A", "TypeError", "B"]


@pytest.mark.parametrize(
    ("make", "text"),
    [
        ("new Uint8Array([104, 105]).buffer", "hi"),
        ("new DataView(new Uint8Array([0, 104, 105, 0]).buffer, 1, 2)", "hi"),
        ("new Uint8Array([0, 104, 105, 0]).subarray(1, 3)", "hi"),
        ("new Uint16Array([0x6968])", "hi"),
        ("new Int8Array([104, 105])", "hi"),
        ("new Float64Array(1).fill(0).subarray(0, 0)", ""),
        ("(() => { const b = new ArrayBuffer(2); b.transfer(); return b })()", ""),  # detached
        (
            "typeof SharedArrayBuffer === 'function' ? (() => { const s = new SharedArrayBuffer(2);"
            " new Uint8Array(s).set([104, 105]); return s })() : new Uint8Array([104, 105])",
            "hi",
        ),
        ("undefined", ""),
    ],
)
def test_decode_accepts_every_buffer_source(make: str, text: str) -> None:
    assert js(f"new TextDecoder().decode({make})") == text


@pytest.mark.parametrize("bad", ["'text'", "[104]", "{}", "null", "42"])
def test_decode_of_a_non_buffer_is_a_typeerror(bad: str) -> None:
    assert js(f"try {{ new TextDecoder().decode({bad}) }} catch (e) {{ e.name }}") == "TypeError"


@pytest.mark.parametrize(
    ("text", "data"),
    [
        ("''", b""),
        ("'abc'", b"abc"),
        ("'\\u00e9\\u20ac'", "\u00e9\u20ac".encode()),
        ("'\\ud83d\\ude00'", "\U0001f600".encode()),
        ("'\\ud800'", b"\xef\xbf\xbd"),  # a lone lead surrogate
        ("'\\udc00x'", b"\xef\xbf\xbdx"),  # a lone trail surrogate
        ("'\\ude00\\ud83d'", b"\xef\xbf\xbd\xef\xbf\xbd"),  # reversed pair
        ("undefined", b""),  # the default argument
        ("null", b"null"),
        ("12", b"12"),
    ],
)
def test_encode_gives_utf8_with_lone_surrogates_replaced(text: str, data: bytes) -> None:
    assert js(f"new TextEncoder().encode({text})") == data


@pytest.mark.parametrize(
    ("text", "size", "read", "written", "data"),
    [
        ("'abc'", 8, 3, 3, b"abc"),
        ("'abc'", 2, 2, 2, b"ab"),
        ("'a\\u00e9'", 2, 1, 1, b"a"),  # the two-byte é does not fit in one byte
        ("'\\u20ac'", 2, 0, 0, b""),
        ("'a\\ud83d\\ude00b'", 4, 1, 1, b"a"),  # a surrogate pair is never split
        ("'a\\ud83d\\ude00b'", 5, 3, 5, "a\U0001f600".encode()),
        ("'a\\ud83d\\ude00b'", 6, 4, 6, "a\U0001f600b".encode()),
        ("'\\ud800a'", 4, 2, 4, b"\xef\xbf\xbda"),
        ("''", 0, 0, 0, b""),
    ],
)
def test_encode_into_reports_exact_read_and_written(
    text: str, size: int, read: int, written: int, data: bytes
) -> None:
    got = js(
        f"const u = new Uint8Array({size}); const r = new TextEncoder().encodeInto({text}, u);"
        "[r.read, r.written, u.subarray(0, r.written).slice()]"
    )
    assert got == [read, written, data]


def test_encode_into_writes_through_a_view_at_its_offset() -> None:
    got = js(
        "const b = new Uint8Array(6);"
        "const r = new TextEncoder().encodeInto('xy', b.subarray(2, 3));"
        "[r.read, r.written, b]"
    )
    assert got == [1, 1, b"\x00\x00x\x00\x00\x00"]


def test_encode_into_a_detached_buffer_writes_nothing() -> None:
    got = js(
        "const u = new Uint8Array(4); u.buffer.transfer();"
        "const r = new TextEncoder().encodeInto('abc', u); [r.read, r.written]"
    )
    assert got == [0, 0]


@pytest.mark.parametrize("dest", ["new Uint16Array(4)", "new ArrayBuffer(4)", "[]", "null"])
def test_encode_into_needs_a_uint8array(dest: str) -> None:
    got = js(f"try {{ new TextEncoder().encodeInto('a', {dest}) }} catch (e) {{ e.name }}")
    assert got == "TypeError"


def test_a_mebibyte_round_trips_through_encoder_and_decoder() -> None:
    got = js(
        "const s = 'h\\u00e9\\u20ac\\ud83d\\ude00'.repeat(1 << 16) + 'x'.repeat(1 << 18);"
        "const b = new TextEncoder().encode(s);"
        "[b.length, new TextDecoder().decode(b) === s, new TextDecoder('utf-8', { fatal: true })"
        ".decode(b.subarray(0, b.length - (1 << 18) - 1), { stream: true }).length]"
    )
    assert got == [(1 + 2 + 3 + 4) * (1 << 16) + (1 << 18), True, 5 * (1 << 16) - 2]


def test_the_globals_are_writable_configurable_and_not_enumerable() -> None:
    got = js(
        "['TextEncoder', 'TextDecoder'].map((n) => {"
        " const d = Object.getOwnPropertyDescriptor(globalThis, n);"
        " return [d.writable, d.enumerable, d.configurable] })"
    )
    assert got == [[True, False, True], [True, False, True]]

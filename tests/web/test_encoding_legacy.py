"""TextDecoder decodes every encoding of the WHATWG Encoding Standard, through the public API.

Expected values came from Node 20's TextDecoder (full ICU) unless a comment says otherwise:
where Node's ICU departs from the Standard (windows-1252 as Latin-1, windows-874's unmapped
bytes, Big5's two-code-point pointers, GB18030-2022) they come from the Standard's algorithm
and indexes as the pinned web-platform-tests check them. The byte strings were made with
Python's codecs.
"""

from __future__ import annotations

import json

import pytest

import quickjail
from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


def decode(label: str, data: bytes, options: str = "{}") -> object:
    return js(
        f"const d = new TextDecoder({json.dumps(label)}, {options});"
        f"try {{ d.decode(new Uint8Array({list(data)})) }} catch (e) {{ e.name }}"
    )


def code_points(text: object) -> list[int]:
    assert isinstance(text, str)
    return [ord(c) for c in text]


@pytest.mark.parametrize(
    ("label", "name"),
    [
        (" Latin1\n", "windows-1252"),
        ("UTF-16", "utf-16le"),
        ("x-sjis", "shift_jis"),
        ("CSEUCKR", "euc-kr"),
        ("gb2312", "gbk"),
        ("Big5-HKSCS", "big5"),
        ("csISO2022JP", "iso-2022-jp"),
        ("unicodefffe", "utf-16be"),
        ("sun_eu_greek", "iso-8859-7"),
        ("x-mac-ukrainian", "x-mac-cyrillic"),
        ("Logical", "iso-8859-8-i"),
        ("x-user-defined", "x-user-defined"),  # the Standard's own; Node 20 lacks it
    ],
)
def test_every_label_of_the_standard_gives_its_encodings_name(label: str, name: str) -> None:
    assert js(f"new TextDecoder({json.dumps(label)}).encoding") == name


@pytest.mark.parametrize(
    "label",
    ["replacement", "iso-2022-kr", "csiso2022kr", "hz-gb-2312", "iso-2022-cn", "ISO-2022-CN-ext"],
)
def test_the_replacement_encodings_labels_are_rangeerrors(label: str) -> None:
    assert js(f"try {{ new TextDecoder({json.dumps(label)}) }} catch (e) {{ e.name }}") == (
        "RangeError"
    )


def test_labels_match_ascii_case_insensitively_only() -> None:
    # "K" (U+212A KELVIN SIGN) lower-cases to "k" in Unicode, not in ASCII: no match
    got = js('try { new TextDecoder("\\u212aoi8-r") } catch (e) { e.name }')
    assert got == "RangeError"
    assert js('new TextDecoder("KOI8-R").encoding') == "koi8-r"


HIGH = bytes([0x80, 0x9F, 0xA0, 0xA5, 0xC0, 0xE9, 0xFF])


@pytest.mark.parametrize(
    ("label", "cps"),
    [
        ("windows-1251", [0x402, 0x45F, 0xA0, 0x490, 0x410, 0x439, 0x44F]),
        ("koi8-r", [0x2500, 0xF7, 0x2550, 0x2554, 0x44E, 0x418, 0x42A]),
        ("ibm866", [0x410, 0x42F, 0x430, 0x435, 0x2514, 0x449, 0xA0]),
        # the Standard: 0x80 is the euro sign (Node 20 decodes windows-1252 as Latin-1)
        ("windows-1252", [0x20AC, 0x178, 0xA0, 0xA5, 0xC0, 0xE9, 0xFF]),
        ("x-user-defined", [0xF780, 0xF79F, 0xF7A0, 0xF7A5, 0xF7C0, 0xF7E9, 0xF7FF]),
    ],
)
def test_single_byte_decoders_map_each_high_byte_by_their_index(label: str, cps: list[int]) -> None:
    assert code_points(decode(label, b"az" + HIGH)) == [0x61, 0x7A, *cps]


@pytest.mark.parametrize(
    ("label", "data", "cps"),
    [
        ("iso-8859-3", b"\xa5", [0xFFFD]),
        ("shift_jis", b"\x82", [0xFFFD]),  # a lead byte at the end
        ("euc-kr", b"\xb0\x20", [0xFFFD, 0x20]),  # an ASCII trail is not eaten
        ("windows-874", b"\xdb", [0xFFFD]),  # the Standard (Node's ICU gives U+F8C1)
    ],
)
def test_bytes_without_a_code_point_are_fffd_or_a_fatal_typeerror(
    label: str, data: bytes, cps: list[int]
) -> None:
    assert code_points(decode(label, data)) == cps
    assert decode(label, data, "{fatal: true}") == "TypeError"


# BOM, "A", U+1F600, a lone lead surrogate before "B", a lone trail surrogate, an odd last byte
UTF16_LE = bytes([0xFF, 0xFE, 0x41, 0, 0x3D, 0xD8, 0, 0xDE, 0, 0xD8, 0x42, 0, 0, 0xDC, 0x43])
UTF16_BE = bytes([0xFE, 0xFF, 0, 0x41, 0xD8, 0x3D, 0xDE, 0, 0xD8, 0, 0, 0x42, 0xDC, 0, 0x43])


@pytest.mark.parametrize(
    ("label", "data"),
    [
        ("utf-16le", UTF16_LE),
        ("utf-16be", UTF16_BE),
    ],
)
def test_utf16_decodes_pairs_strips_one_bom_and_replaces_lone_surrogates(
    label: str, data: bytes
) -> None:
    assert code_points(decode(label, data)) == [0x41, 0x1F600, 0xFFFD, 0x42, 0xFFFD, 0xFFFD]
    assert decode(label, data, "{fatal: true}") == "TypeError"


def test_utf16_keeps_a_bom_with_ignore_bom_and_a_swapped_bom_is_fffe() -> None:
    assert code_points(decode("utf-16le", b"\xff\xfeA\x00", "{ignoreBOM: true}")) == [0xFEFF, 0x41]
    assert code_points(decode("utf-16be", b"\xff\xfe\x00A")) == [0xFFFE, 0x41]


MULTI = [
    ("shift_jis", "日本語のテキスト、ｶﾀｶﾅ。", "shift_jis"),
    ("euc-jp", "日本語のテキスト、ｶﾀｶﾅ。", "euc_jp"),
    ("iso-2022-jp", "日本語 text です", "iso2022_jp"),
    ("euc-kr", "한국어 텍스트", "euc_kr"),
    ("big5", "中文字元測試", "big5"),
    ("gb18030", "中文字符\U00020000€", "gb18030"),
    ("gbk", "简体中文", "gbk"),
    ("utf-16be", "A\U0001f600z", "utf-16-be"),
]


@pytest.mark.parametrize(("label", "text", "codec"), MULTI)
def test_multi_byte_decoders_match_node(label: str, text: str, codec: str) -> None:
    assert decode(label, text.encode(codec)) == text


@pytest.mark.parametrize(("label", "text", "codec"), MULTI)
def test_a_stream_split_at_every_byte_decodes_as_the_whole(
    label: str, text: str, codec: str
) -> None:
    data = list(text.encode(codec))
    got = js(
        f"const d = new TextDecoder({json.dumps(label)}), b = new Uint8Array({data}); let s = '';"
        "for (let i = 0; i < b.length; i++) s += d.decode(b.subarray(i, i + 1), {stream: true});"
        "s + d.decode()"
    )
    assert got == text


@pytest.mark.parametrize(
    ("label", "data", "cps"),
    [
        # GB18030-2022 (WPT gb18030-decoder): Node 20's ICU still has the 2005 PUA mappings
        ("gb18030", b"\xa6\xd9\xfe\x59", [0xFE10, 0x9FB4]),
        ("gb18030", b"\x82\x35\x90\x37\x84\x31\x82\x36", [0x9FB4, 0xFE10]),
        ("gb18030", b"\x84\x31\xa4\x39\xe3\x32\x9a\x35", [0xFFFF, 0x10FFFF]),
        ("gbk", b"\x80\x81\x30\xff", [0x20AC, 0xFFFD, 0x30, 0xFFFD]),
        # Big5's pointers that give two code points (the Standard; ICU gives none)
        ("big5", b"\x88\x62\x88\x64", [0xCA, 0x304, 0xCA, 0x30C]),
        # ISO-2022-JP escapes (WPT iso-2022-jp-decoder): Roman, then a doubled escape errs
        ("iso-2022-jp", b"\x1b(J\x5c\x7e\x1b(B\x1b(BA", [0xA5, 0x203E, 0xFFFD, 0x41]),
        ("shift_jis", b"\xf0\x40", [0xE000]),  # the user-defined (PUA) range
    ],
)
def test_the_standards_special_cases_decode_as_it_says(
    label: str, data: bytes, cps: list[int]
) -> None:
    assert code_points(decode(label, data)) == cps


def test_a_fatal_error_mid_stream_resets_the_decoder() -> None:
    got = js(
        """const d = new TextDecoder("shift_jis", {fatal: true}), out = [];
        out.push(d.decode(new Uint8Array([0x82]), {stream: true}));
        try { d.decode(new Uint8Array([0x20]), {stream: true}); } catch (e) { out.push(e.name); }
        out.push(d.decode(new Uint8Array([0x82, 0xa0])));
        out"""
    )
    assert got == ["", "TypeError", "\u3042"]


def test_a_flush_ends_a_pending_sequence_with_fffd_and_starts_afresh() -> None:
    got = js(
        """const d = new TextDecoder("gb18030"), out = [];
        out.push(d.decode(new Uint8Array([0x81, 0x30]), {stream: true}));
        out.push(d.decode());
        out.push(d.decode(new Uint8Array([0x81, 0x40])));
        out"""
    )
    assert got == ["", "\ufffd", "\u4e02"]


def test_a_legacy_decoder_survives_replaced_intrinsics() -> None:
    got = js(
        """Uint8Array.prototype.subarray = Array.prototype.push = String.prototype.slice = null;
        Object.defineProperty(Uint8Array.prototype, "length", {get() { throw 1; }});
        const d = new TextDecoder("utf-16le");
        d.decode(new Uint8Array([0xff, 0xfe, 0x41, 0x00]))"""
    )
    assert got == "A"


def test_decode_on_a_non_decoder_is_a_typeerror() -> None:
    got = js(
        """const decode = TextDecoder.prototype.decode;
        try { decode.call({}, new Uint8Array(1)); } catch (e) { e.name }"""
    )
    assert got == "TypeError"


def test_text_decoder_stream_decodes_a_legacy_encoding_across_chunks() -> None:
    r = quickjail.run_code_sync(
        """const s = new TextDecoderStream("euc-kr"), w = s.writable.getWriter();
        w.write(new Uint8Array([0xc7])); w.write(new Uint8Array([0xd1, 0xb1])); w.close();
        let text = "";
        for await (const chunk of s.readable) text += chunk;
        export default [s.encoding, text];"""
    )
    assert r.status == "success", r.error
    assert r.result == ["euc-kr", "\ud55c\ufffd"]


def test_a_huge_legacy_decode_is_bounded_by_the_runs_memory_limit() -> None:
    # 40 MiB of lead bytes, each its own U+FFFD: the output alone passes the 64 MiB default
    r = quickjail.run_code_sync(
        """const b = new Uint8Array(40 << 20).fill(0x81);
        export default new TextDecoder("gb18030").decode(b).length;"""
    )
    assert r.status == "memory", r.error
    assert js('new TextDecoder("big5").decode(new Uint8Array([0xa4, 0x40]))') == "\u4e00"


def test_a_four_mebibyte_legacy_input_decodes() -> None:
    got = js(
        """const b = new Uint8Array(4 << 20);
        for (let i = 0; i < b.length; i += 2) { b[i] = 0xa4; b[i + 1] = 0xa2; }
        const s = new TextDecoder("euc-jp").decode(b);
        [s.length, s[0], s[s.length - 1]]"""
    )
    assert got == [2 << 20, "\u3042", "\u3042"]


def test_a_reentrant_decode_from_the_options_getter_keeps_each_streams_state() -> None:
    # the inner call flushes a pending lead byte; the outer one then starts from a fresh state
    got = js(
        """const d = new TextDecoder("big5"), out = [];
        out.push(d.decode(new Uint8Array([0xa4]), {stream: true}));
        const options = {get stream() { out.push(d.decode()); return false; }};
        out.push(d.decode(new Uint8Array([0x40]), options));
        out.push(Object.getOwnPropertyNames(d).length);
        out"""
    )
    assert got == ["", "\ufffd", "@", 0]


def test_a_shared_array_buffer_decodes_as_its_bytes() -> None:
    got = js(
        """const s = new SharedArrayBuffer(4), b = new Uint8Array(s);
        b.set([0x82, 0xa0, 0x82, 0xa2]);
        new TextDecoder("shift_jis").decode(s)"""
    )
    assert got == "\u3042\u3044"


def test_a_decode_that_runs_out_of_memory_leaves_the_decoder_to_start_afresh() -> None:
    # the first, streaming decode (a pending lead byte) and the big one that fails: the next
    # decode is a new stream, not the rest of the failed one
    r = quickjail.run_code_sync(
        """const d = new TextDecoder("big5"), out = [];
        out.push(d.decode(new Uint8Array([0xa4]), {stream: true}));
        let big = new Uint8Array(24 << 20).fill(0x81), hold = [];
        try { for (;;) hold.push(d.decode(big, {stream: true})); } catch (e) { out.push(e.name); }
        big = hold = null;
        out.push(d.decode(new Uint8Array([0x40])));
        export default out;""",
        memory_limit_bytes=96 << 20,
    )
    assert r.status == "success", r.error
    assert r.result == ["", "InternalError", "@"]

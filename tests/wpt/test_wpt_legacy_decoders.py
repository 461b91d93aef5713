"""TextDecoder's multi-byte decoders agree with WPT's own reference decoders, byte for byte.

The pinned tree's ``encoding/legacy-mb-*`` tests are window-only (a page in each encoding), so
the WPT runs never reach these decoders. Their reference decoders and indexes
(``*-decoder.js``, ``*_index.js``: plain scripts written from the Encoding Standard) are the
oracle here, run in the same sandbox as ``TextDecoder``: every lead byte followed by each of
the 256 trail bytes (EUC-JP's JIS X 0212 triples too; for ISO-2022-JP, in each of its four
modes, the pairs of bytes up to 0x80, past which every byte is an error), and pseudo-random
streams, decoded whole and in chunks of 1 to 5 bytes with ``stream: true``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wpt_source import wpt_root

import quickjail

# encoding -> (the reference decoder's files under encoding/, its function)
ORACLES = {
    "euc-jp": (
        ["euc-jp/jis0208_index.js", "euc-jp/jis0212_index.js", "euc-jp/eucjp-decoder.js"],
        "eucjpDecoder",
    ),
    "shift_jis": (["shift_jis/jis0208_index.js", "shift_jis/sjis-decoder.js"], "sjisDecoder"),
    "iso-2022-jp": (
        ["iso-2022-jp/jis0208_index.js", "iso-2022-jp/iso2022jp-decoder.js"],
        "iso2022jpDecoder",
    ),
    "euc-kr": (
        [
            "../legacy-mb-korean/euc-kr/euckr_index.js",
            "../legacy-mb-korean/euc-kr/euckr-decoder.js",
        ],
        "euckrDecoder",
    ),
    "big5": (
        ["../legacy-mb-tchinese/big5/big5_index.js", "../legacy-mb-tchinese/big5/big5-decoder.js"],
        "big5Decoder",
    ),
}

CHECK = """
const enc = %(enc)s, oracle = %(oracle)s, streams = [];
if (enc === "iso-2022-jp") {
  const escapes = [[0x1b, 0x24, 0x42], [0x1b, 0x28, 0x4a], [0x1b, 0x28, 0x49], [0x1b, 0x28, 0x42]];
  for (const esc of escapes)
    for (let lead = 0; lead <= 0x80; lead++) {  // a byte past 0x7f is an error in every mode
      const b = [...esc];
      for (let t = 0; t <= 0x80; t++) b.push(lead, t);
      streams.push(b);
    }
} else {
  for (let lead = 0x80; lead < 0x100; lead++) {
    const b = [];
    for (let t = 0; t < 256; t++) b.push(lead, t);
    streams.push(b);
  }
}
if (enc === "euc-jp")
  for (let lead = 0xa1; lead <= 0xfe; lead++) {
    const b = [];
    for (let t = 0; t < 256; t++) b.push(0x8f, lead, t);
    streams.push(b);
  }
let x = 12345;  // an LCG: the same streams every run
for (let k = 0; k < 200; k++) {
  const b = [];
  for (let i = 0; i < 64; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    b.push((x >>> 16) & 0xff);
  }
  streams.push(b);
}
const bad = [];
streams.forEach((b, k) => {
  const want = oracle(b.map((v) => v.toString(16).padStart(2, "0")).join(" "));
  const u = new Uint8Array(b), whole = new TextDecoder(enc).decode(u);
  const d = new TextDecoder(enc), n = 1 + k %% 5;
  let chunked = "";
  for (let i = 0; i < u.length; i += n) chunked += d.decode(u.subarray(i, i + n), { stream: true });
  chunked += d.decode();
  if (whole !== want || chunked !== want)
    bad.push([b.slice(0, 8), whole === want, chunked === want]);
});
[streams.length, bad.slice(0, 5)]
"""


@pytest.fixture(scope="module")
def legacy_mb() -> Path:
    return wpt_root() / "encoding" / "legacy-mb-japanese"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("encoding", sorted(ORACLES))
def test_a_multi_byte_decoder_decodes_every_pair_as_wpts_reference_decoder(
    legacy_mb: Path, encoding: str
) -> None:
    files, function = ORACLES[encoding]
    scripts = [(legacy_mb / f).read_text(encoding="utf-8") for f in files]
    source = "\n;\n".join([*scripts, CHECK % {"enc": json.dumps(encoding), "oracle": function}])
    r = quickjail.run_code_sync(
        source, kind="script", language="javascript", memory_limit_bytes=256 << 20, timeout=300
    )
    assert r.status == "success", r.error
    count, bad = r.result
    assert count > 300  # every lead byte, and the random streams
    assert bad == [], (
        f"{encoding}: streams decoded unlike the reference (first bytes, whole ok, chunked ok)"
    )

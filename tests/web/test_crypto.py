"""crypto behaves as the W3C Web Cryptography API says, for the parts the guest offers.

getRandomValues and randomUUID read a ChaCha20 stream (RFC 7539) keyed per run: fresh host
entropy, or derived from the run's seed so seeded and deterministic runs repeat.
crypto.subtle.digest is checked against hashlib on the FIPS 180-4 example messages.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

import quickjail
from quickjail.sandbox import TypedArray

CASES: list[tuple[str, str, object]] = [
    (
        "get_random_values_returns_its_argument_filled",
        """const a = new Uint32Array(64), r = crypto.getRandomValues(a);
        return [r === a, a.some((v) => v !== 0)]""",
        [True, True],
    ),
    (
        "every_integer_array_type_is_accepted",
        """return [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
                Uint32Array, BigInt64Array, BigUint64Array].map((T) => {
          const a = new T(8); return crypto.getRandomValues(a) === a; })""",
        [True] * 9,
    ),
    (
        "only_the_view_is_filled",
        """const buf = new Uint8Array(32), view = new Uint8Array(buf.buffer, 8, 16);
        crypto.getRandomValues(view);
        return [buf.slice(0, 8).every((v) => v === 0), buf.slice(24).every((v) => v === 0),
                view.some((v) => v !== 0)]""",
        [True, True, True],
    ),
    (
        "views_of_resizable_detached_and_shared_buffers_are_filled_as_they_are_now",
        """const out = [];
        const rab = new ArrayBuffer(16, { maxByteLength: 64 }), tracking = new Uint8Array(rab);
        rab.resize(32);
        crypto.getRandomValues(tracking);
        out.push(tracking.length, tracking.slice(16).some((v) => v !== 0));
        rab.resize(8);
        crypto.getRandomValues(tracking);
        out.push(tracking.length);
        const whole = new Uint8Array(24), head = whole.subarray(0, 8);
        crypto.getRandomValues(head);
        out.push(whole.slice(8).every((v) => v === 0), head.some((v) => v !== 0));
        const ab = new ArrayBuffer(8), gone = new Uint8Array(ab);
        structuredClone(ab, { transfer: [ab] });
        try { crypto.getRandomValues(gone); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        [32, True, 8, True, True, "TypeError"],
    ),
    (
        "float_arrays_and_data_views_are_type_mismatch_errors",
        """return [new Float32Array(4), new Float64Array(4),
                new DataView(new ArrayBuffer(4))].map((a) => {
          try { crypto.getRandomValues(a); return "no error"; }
          catch (e) { return [e instanceof DOMException, e.name, e.code]; } })""",
        [[True, "TypeMismatchError", 17]] * 3,
    ),
    (
        "non_views_are_type_errors",
        """return [[1, 2], new ArrayBuffer(4), null, "abc", undefined].map((a) => {
          try { crypto.getRandomValues(a); return "no error"; } catch (e) { return e.name; } })""",
        ["TypeError"] * 5,
    ),
    (
        "more_than_65536_bytes_is_a_quota_exceeded_error",
        """const ok = crypto.getRandomValues(new Uint8Array(65536)).length;
        const out = [ok];
        for (const a of [new Uint8Array(65537), new Uint32Array(16385)])
          try { crypto.getRandomValues(a); out.push("no error"); }
          catch (e) { out.push([e.name, e.code, e.constructor === DOMException]); }
        return out""",
        # a plain DOMException, as workerd 1.20261117.1 and Node 20 throw
        [65536, ["QuotaExceededError", 22, True], ["QuotaExceededError", 22, True]],
    ),
    (
        "random_uuid_is_version_4_with_the_rfc_variant",
        """const re = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
        const ids = Array.from({ length: 200 }, () => crypto.randomUUID());
        return [ids.every((s) => re.test(s)), new Set(ids).size]""",
        [True, 200],
    ),
    (
        "methods_need_the_crypto_object",
        """const { getRandomValues, randomUUID } = crypto, out = [];
        for (const f of [() => getRandomValues(new Uint8Array(1)), () => randomUUID(),
                         () => new Crypto(), () => new SubtleCrypto()])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError"] * 4,
    ),
    (
        "the_globals_are_web_idl_shaped",
        """return [Object.prototype.toString.call(crypto),
                Object.prototype.toString.call(crypto.subtle),
                crypto instanceof Crypto, crypto.subtle instanceof SubtleCrypto,
                Object.getOwnPropertyDescriptor(globalThis, "crypto").enumerable,
                typeof crypto.subtle.encrypt, typeof crypto.subtle.importKey]""",
        ["[object Crypto]", "[object SubtleCrypto]", True, True, False, "undefined", "undefined"],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_crypto_follows_web_crypto(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (() => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


RANDOM = """export default [Array.from(crypto.getRandomValues(new Uint8Array(80))),
                         crypto.randomUUID()]"""


def test_two_runs_get_different_random_values() -> None:
    a, b = (quickjail.run_code_sync(RANDOM).result for _ in range(2))
    assert a != b


@pytest.mark.parametrize("options", [{"seed": 7}, {"deterministic": True}], ids=["seed", "det"])
def test_seeded_and_deterministic_runs_repeat_their_random_values(options: dict[str, Any]) -> None:
    a, b = (quickjail.run_code_sync(RANDOM, **options).result for _ in range(2))
    assert a == b


def test_different_seeds_give_different_values_and_math_random_keeps_its_own_sequence() -> None:
    src = "export default [Array.from(crypto.getRandomValues(new Uint8Array(16))), Math.random()]"
    one = quickjail.run_code_sync(src, seed=1).result
    two = quickjail.run_code_sync(src, seed=2).result
    plain = quickjail.run_code_sync("export default Math.random()", seed=1).result
    assert one[0] != two[0]
    assert one[1] == plain


def test_the_stream_is_chacha20_keyed_from_the_seed() -> None:
    # the run's key is sha256("quickjail crypto seed\0" + seed as 8 bytes, little-endian),
    # its nonce and first block counter 0 (RFC 7539 section 2.3): the bytes are its keystream
    seed = 12345
    key = hashlib.sha256(b"quickjail crypto seed\0" + seed.to_bytes(8, "little")).digest()
    stream = Cipher(algorithms.ChaCha20(key, bytes(16)), mode=None).encryptor().update(bytes(200))
    r = quickjail.run_code_sync(
        """const a = crypto.getRandomValues(new Uint8Array(70));
        const b = crypto.getRandomValues(new Uint8Array(130));
        export default new Uint8Array([...a, ...b])""",
        seed=seed,
    )
    assert r.result == stream


MESSAGES = {
    "empty": b"",
    "abc": b"abc",
    "448_bits": b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
    "896_bits": b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
    b"ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
    "a_million_a": b"a" * 1_000_000,
    "55_bytes": b"x" * 55,
    "56_bytes": b"x" * 56,
    "111_bytes": b"y" * 111,
    "112_bytes": b"y" * 112,
    "128_bytes": bytes(range(128)),
}
ALGORITHMS = {"SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}


@pytest.mark.parametrize("message", MESSAGES, ids=list(MESSAGES))
def test_digest_matches_fips_180_4(message: str) -> None:
    r = quickjail.run_code_sync(
        """export default async function (data) {
          const out = {};
          for (const name of ["SHA-1", "SHA-256", "SHA-384", "SHA-512"]) {
            const buf = await crypto.subtle.digest(name, data);
            if (!(buf instanceof ArrayBuffer)) throw new Error("not an ArrayBuffer");
            out[name] = buf;
          }
          return out;
        }""",
        execute={"fn": "default", "args": [MESSAGES[message]]},
        timeout=120,
    )
    assert r.status == "success", r.error
    want = {n: hashlib.new(h, MESSAGES[message]).digest() for n, h in ALGORITHMS.items()}
    assert r.result == {n: TypedArray("ArrayBuffer", d) for n, d in want.items()}


DIGEST_CASES: list[tuple[str, str, object]] = [
    (
        "algorithm_names_are_case_insensitive_strings_or_objects",
        """const d = new Uint8Array([1, 2, 3]);
        const all = await Promise.all(["sha-256", "Sha-256", { name: "SHA-256" },
                                       { name: "sHa-256", length: 9 }]
                                     .map((a) => crypto.subtle.digest(a, d)));
        return all.map((b) => new Uint8Array(b).join()).every((s, _, xs) => s === xs[0])""",
        True,
    ),
    (
        "every_buffer_source_is_accepted",
        """const bytes = new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7]);
        const hex = async (d) => new Uint8Array(await crypto.subtle.digest("SHA-1", d)).join();
        const want = await hex(bytes.slice(2, 6));
        const got = [await hex(bytes.buffer.slice(2, 6)),
                     await hex(new DataView(bytes.buffer, 2, 4)),
                     await hex(new Uint8Array(bytes.buffer, 2, 4)),
                     await hex(new Uint16Array(bytes.buffer, 2, 2))];
        return got.every((g) => g === want)""",
        True,
    ),
    (
        "unsupported_algorithms_reject_with_not_supported_error",
        """const out = [];
        for (const a of ["MD5", "SHA-224", { name: "HMAC" }, "SHA256"]) {
          const p = crypto.subtle.digest(a, new Uint8Array(1));
          out.push(p instanceof Promise);
          try { await p; out.push("resolved"); }
          catch (e) { out.push(e instanceof DOMException && e.name); }
        }
        return out""",
        [True, "NotSupportedError"] * 4,
    ),
    (
        "bad_arguments_reject_with_type_error",
        """const out = [];
        for (const args of [["SHA-256", "text"], ["SHA-256", [1, 2]], ["SHA-256"],
                            [{}, new Uint8Array(1)]])
          try { await crypto.subtle.digest(...args); out.push("resolved"); }
          catch (e) { out.push(e.name); }
        return out""",
        ["TypeError"] * 4,
    ),
    (
        "the_data_is_copied_when_digest_is_called",
        """const d = new Uint8Array([1, 2, 3]);
        const p = crypto.subtle.digest("SHA-256", d);
        d[0] = 99;
        const again = await crypto.subtle.digest("SHA-256", new Uint8Array([1, 2, 3]));
        const want = new Uint8Array(again).join();
        return new Uint8Array(await p).join() === want""",
        True,
    ),
]


@pytest.mark.parametrize(
    ("body", "expected"), [c[1:] for c in DIGEST_CASES], ids=[c[0] for c in DIGEST_CASES]
)
def test_digest_follows_web_crypto(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (async () => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected

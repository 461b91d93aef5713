"""Generated fuzzing cases for ``qjfuzz``: a program, the run record around it, and the tape of
host replies (``native/harness.c`` says the case format).

Everything is drawn from one :class:`random.Random`, so a case is reproducible from its seed.
A program is a list of statements, each in its own ``try``, over the guest's own surfaces:
the web APIs (``sandbox/_guest/web*.c`` and ``web/*.js``), console and report (the encoder),
host functions (the encoder for arguments, the decoder for replies), modules (the loader),
timers and memory exhaustion. The tape holds value messages, most well-formed, some mutated,
so the decoder sees hostile bytes as a host reply would carry them.
"""

from __future__ import annotations

import json
import random
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from quickjail.sandbox import _abi

__all__ = ["Case", "generate", "message", "run_record", "seed_statements"]


CORPUS = Path(__file__).resolve().parent / "corpus"
FN_KEY = _abi.FN_KEY
MISSING_KEY = _abi.NS_FALLBACK_KEY
E_PENDING = 0xFD
# a string wire_value returns for "an array nested this deep": message() writes it out
DEEP = "\ue000deep:"
CODE_UNTRANSFERABLE = 0xFA

LABELS = ["utf-8", "UTF8", " utf-8\n", "unicode-1-1-utf-8", "latin1", "", "utf-16le", "x"]
DIGESTS = ["SHA-1", "SHA-256", "SHA-384", "SHA-512", "sha-256", "MD5", ""]
TYPED = [
    "Uint8Array",
    "Int8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
]
URLS = [
    "https://user:pw@example.com:8080/a/b/../c?x=1&y=%zz#frag",
    "http://[::1]/",
    "http://[fe80::1%25eth0]/",
    "file:///C:/x/../y",
    "blob:https://a/b",
    "data:text/plain,hi",
    "https://xn--nxasmq6b.com/",
    "https://ex\u00e4mple.com/\u00fc?\u00df#\ud83d\ude00",
    "http://1.2.3.4.5/",
    "http://0x7f.1/",
    "https://a.b/%",
    "mailto:a@b",
    "//host/path",
    "../../x",
    "?q",
    "#h",
    "http://a/" + "x/" * 200,
    "http://a:99999/",
    "\u0000http://a/",
    "http://a\tb/",
]
STRINGS = [
    "",
    "a",
    "\\u0000",
    "\\ud800",
    "\\udc00x",
    "\\ud83d\\ude00",
    "\\uffff",
    "\u00e9\u4e2d",
    "\\x80",
    "==",
    "QQ==",
    "QQ=",
    "Q",
    "  QU JD\\n",
    "\\u0100",
    "%E0%A4%A",
    "a=b&c=d&&=&e",
    "\\u0000key",
]


@dataclass
class Case:
    """One case: the program, its record's options, and the tape of host replies."""

    seed: int
    statements: list[str] = field(default_factory=list)
    tape: list[tuple[int, bytes]] = field(default_factory=list)
    kind: int = _abi.KIND_MODULE
    flags: int = 0
    soft_limit: int = 32 << 20
    args: bytes = b""
    globals_value: object = None
    globals_blobs: list[bytes] = field(default_factory=list)
    result: str = "undefined"
    modules: list[tuple[str, str]] = field(default_factory=list)

    def source(self) -> str:
        """The program's JS source, in the shape its kind wants."""
        body = "\n".join(f"try {{ {s} }} catch (e) {{ sink(e); }}" for s in self.statements)
        prelude = (
            "const sink = (e) => { try { if (e && e.message) String(e.message); } catch (_) {} };\n"
        )
        if self.kind == _abi.KIND_SCRIPT:
            return f"{prelude}(async () => {{\n{body}\nreturn {self.result};\n}})()"
        entry = "export default async function (...args)"
        return f"{prelude}{entry} {{\n{body}\nreturn {self.result};\n}}"

    def encode(self) -> bytes:
        """The case file: u32 record length, the record, the tape entries."""
        if self.kind == _abi.KIND_COMPILE:
            batch = struct.pack("<I", len(self.modules))
            for name, src in self.modules:
                n, s = name.encode(), src.encode("utf-8", "surrogatepass")
                batch += struct.pack("<I", len(n)) + n + struct.pack("<I", len(s)) + s
            source = batch
        else:
            source = self.source().encode("utf-8", "surrogatepass")
        glob = self.globals_value
        globals_msg = b"" if glob is None else message(glob, self.globals_blobs)
        rec = run_record(
            self.kind, self.flags, self.seed, self.soft_limit, source, self.args, globals_msg
        )
        out = struct.pack("<I", len(rec)) + rec
        for code, data in self.tape:
            out += struct.pack("<BI", code, len(data)) + data
        return out


def run_record(
    kind: int, flags: int, seed: int, soft_limit: int, source: bytes, args: bytes, glob: bytes
) -> bytes:
    """A run record (quickjail.h): the header words, then filename, source, fn, args, globals."""
    filename, fn = b"main.js", b"default"
    entropy = [(seed * 0x9E3779B1 + i * 0x85EBCA77) & 0xFFFFFFFF for i in range(8)]
    words = [
        kind,
        flags,
        seed & 0xFFFFFFFF,
        (seed >> 32) & 0xFFFFFFFF,
        soft_limit,
        512 * 1024,
        len(filename),
        len(source),
        len(fn),
        len(args),
        len(glob),
        0,
        1,
        0x5F5E1000,
        0x18000000,
        *entropy,
    ]
    return _abi.RUN_HEADER.pack(*words) + filename + source + fn + args + glob


def message(value: object, blobs: list[bytes] | None = None, tagged: bool = True) -> bytes:
    """A value message: u8 flags, u32 JSON length, JSON, u32 blob count, (u32 len, bytes)*."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    while DEEP in text:  # an array nested n deep, past Python's own recursion limit
        at = text.index(DEEP) - 1
        end = text.index('"', at + 1)
        n = int(text[at + 1 + len(DEEP) : end])
        text = text[:at] + "[" * n + "1" + "]" * n + text[end + 1 :]
    data = text.encode("utf-8", "surrogatepass")
    out = struct.pack("<BI", 1 if tagged else 0, len(data)) + data
    blobs = blobs or []
    out += struct.pack("<I", len(blobs))
    for b in blobs:
        out += struct.pack("<I", len(b)) + b
    return out


def _tag(t: str, payload: object) -> dict[str, object]:
    return {"\0": [t, payload]}


TYPED_KINDS: Final = [
    "Int8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array",
    "Float16Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
    "ArrayBuffer", "DataView",
]  # fmt: skip


def wire_value(
    r: random.Random, blobs: list[bytes], depth: int = 0, hostile: bool = True
) -> object:
    """A random JSON value of the message format, tags and blobs included; ``hostile``: some
    of it wrong (a value the guest must refuse)."""
    if not hostile:
        return valid_value(r, blobs, depth)
    k = r.randrange(22 if depth < 4 else 10)
    if k == 0:
        return None
    if k == 1:
        return r.choice([True, False])
    if k == 2:
        return r.choice([0, -1, 2**53 + 1, 1e308, -5e-324, 3.5, 10**30])
    if k == 3:
        return r.choice(["", "x", "\ud800", "\x00k", "\u00e9" * r.randrange(50), "\U0001f600"])
    if k == 4:
        return _tag("u", 0)
    if k == 5:
        blobs.append(r.randbytes(r.choice([0, 1, 7, 300, 70000])))
        index = len(blobs) - 1 if r.random() < 0.9 else r.choice([-1, 99, "0", 1.5])
        if r.random() < 0.5:
            return _tag("b", index)
        kind = r.choice([*TYPED_KINDS, "Uint8Array", "Int128Array", "", 3, None])
        return _tag("a", r.choice([[kind, index], [kind, index], [kind], kind, [index, kind]]))
    if k == 6:
        return _tag(
            "n", r.choice(["0", "-1f", "ffffffffffffffffffffffffffff", "-", "", "zz", "-0"])
        )
    if k == 7:
        return _tag("d", r.choice([0, -8.64e15, 8.64e15 + 1, None, "x", 1.5]))
    if k == 8:
        return _tag("f", r.choice(["NaN", "Infinity", "-Infinity", "-0", "0", "nan", 5]))
    if k == 9:
        data = ("t" * r.randrange(300000)).encode() if r.random() < 0.1 else r.randbytes(9)
        blobs.append(data)
        return _tag("t", len(blobs) - 1 if r.random() < 0.9 else 1000)
    if k in (10, 11):
        return [wire_value(r, blobs, depth + 1) for _ in range(r.randrange(5))]
    if k in (12, 13, 14):
        keys = ["a", "\0\0x", "__proto__", "constructor", "\0", "0", "4294967295", FN_KEY, "b"]
        return {r.choice(keys): wire_value(r, blobs, depth + 1) for _ in range(r.randrange(5))}
    if k == 15:
        pairs = [[wire_value(r, blobs, depth + 1), wire_value(r, blobs, depth + 1)]]
        return _tag("m", pairs if r.random() < 0.8 else [[1]])
    if k == 16:
        return _tag("s", [wire_value(r, blobs, depth + 1) for _ in range(r.randrange(3))])
    if k == 17:
        return {"\0": r.choice([[], ["u"], ["q", 1], "u", ["b"], ["m", 5], None])}
    if k == 18:
        return {FN_KEY: [r.choice([1, 2, 3, -1, 2**40]), r.choice([0, 1, 2, 9]), "f"]}
    if k == 19:
        return {"\0": ["u", 0], "extra": 1}
    if k == 20:
        return f"{DEEP}{r.choice([10, 100, 3000, 100000])}"  # message() nests it
    return {"name": "TypeError", "message": "m" * r.randrange(400)}


def valid_value(r: random.Random, blobs: list[bytes], depth: int = 0) -> object:
    """A random value the message format holds correctly: every tag, well formed."""
    k = r.randrange(13 if depth < 4 else 7)
    if k == 0:
        return r.choice([None, True, False, 0, -1.5, 2**53, "", "s\u00e9\U0001f600", "\0\0k"])
    if k == 1:
        return _tag("u", 0)
    if k == 2:
        kind = r.choice(["Uint8Array", *TYPED_KINDS])
        size = 8 if "64" in kind else 4 if "32" in kind else 2 if "16" in kind else 1
        blobs.append(r.randbytes(size * r.choice([0, 3, 1000])))
        return (
            _tag("b", len(blobs) - 1) if kind == "Uint8Array" else _tag("a", [kind, len(blobs) - 1])
        )
    if k == 3:
        return _tag("n", r.choice(["0", "-1f", "123456789abcdef0123456789"]))
    if k == 4:
        return _tag("d", r.choice([0, -1e12, None]))
    if k == 5:
        return _tag("f", r.choice(["NaN", "Infinity", "-Infinity", "-0"]))
    if k == 6:
        blobs.append("t\u00e9".encode() * r.randrange(1, 50))
        return _tag("t", len(blobs) - 1)
    if k in (7, 8):
        return [valid_value(r, blobs, depth + 1) for _ in range(r.randrange(4))]
    if k in (9, 10):
        keys = r.sample(["a", "\0\0x", "constructor", "0", "b", "k\u00e9"], r.randrange(4))
        return {key: valid_value(r, blobs, depth + 1) for key in keys}
    if k == 11:
        return _tag("m", [[valid_value(r, blobs, depth + 1), 1] for _ in range(r.randrange(3))])
    return _tag("s", [valid_value(r, blobs, depth + 1) for _ in range(r.randrange(3))])


def mutate(r: random.Random, data: bytes) -> bytes:
    """Corrupt a message the ways a hostile host could: flipped bytes, cuts, bad lengths."""
    b = bytearray(data)
    for _ in range(r.randrange(1, 4)):
        k = r.randrange(5)
        if k == 0 and b:
            b[r.randrange(len(b))] ^= 1 << r.randrange(8)
        elif k == 1:
            del b[r.randrange(len(b) + 1) :]
        elif k == 2 and len(b) >= 5:
            at = r.choice([1, len(b) - 4 if len(b) >= 4 else 1, r.randrange(len(b) - 3)])
            b[at : at + 4] = struct.pack("<I", r.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, len(b)]))
        elif k == 3:
            at = r.randrange(len(b) + 1)
            b[at:at] = r.randbytes(r.randrange(1, 8))
        else:
            b[r.randrange(len(b) + 1) :] = bytes([0xC0, 0x80, 0xFF, 0xED, 0xA0, 0x80])
    return bytes(b)


def reply_message(r: random.Random, error: bool = False) -> bytes:
    """A value (or error) message for the tape, mutated one time in five."""
    blobs: list[bytes] = []
    value = wire_value(r, blobs, hostile=r.random() < 0.5)
    if error and r.random() < 0.7:
        value = {"name": r.choice(["TypeError", "Error", "X", 5]), "message": value}
    data = message(value, blobs, tagged=r.random() < 0.95)
    return mutate(r, data) if r.random() < 0.2 else data


def js_string(r: random.Random) -> str:
    """A JS string literal, lone surrogates and NULs included."""
    if r.random() < 0.05:
        return f'"{r.choice("ab")}".repeat({r.choice([70000, 300000, 1 << 20])})'
    return '"' + "".join(r.choice(STRINGS) for _ in range(r.randrange(4))) + '"'


def js_bytes(r: random.Random) -> str:
    """A JS expression for bytes: a typed array, a buffer or a view, some over UTF-8 edges."""
    raw = r.choice(
        [
            "[0xEF,0xBB,0xBF,0x61]",
            "[0xF0,0x9F,0x98]",
            "[0xED,0xA0,0x80]",
            "[0xC0,0x80]",
            "[0xFF]",
            "[0xE2,0x82,0xAC,0xF4,0x90,0x80,0x80]",
            "[]",
            "Array.from({length: 300}, (_, i) => (i * 37) & 255)",
        ]
    )
    wrap = r.randrange(5)
    if wrap == 0:
        return f"new Uint8Array({raw})"
    if wrap == 1:
        return f"new Uint8Array({raw}).buffer"
    if wrap == 2:
        return f"new DataView(new Uint8Array({raw}).buffer, {r.randrange(2)})"
    if wrap == 3:
        return f"new Uint8Array({raw}).subarray({r.randrange(3)})"
    return f"new {r.choice(TYPED[:3])}({raw})"


def js_value(r: random.Random, depth: int = 0) -> str:
    """A JS expression for a random value: every type the encoder knows, and some it refuses."""
    k = r.randrange(30 if depth < 3 else 14)
    simple = [
        "undefined",
        "null",
        "true",
        "-0",
        "NaN",
        "-Infinity",
        "2 ** 53",
        "1e308 * 10",
        "5e-324",
        "-123456789012345678901234567890n",
        "2n ** 200n",
        "0n",
    ]
    if k < 4:
        return r.choice(simple)
    if k < 7:
        return js_string(r)
    if k == 7:
        return r.choice(["new Date(0)", "new Date(NaN)", "new Date(8.64e15)", "new Date(-1)"])
    if k == 8:
        return js_bytes(r)
    if k == 9:
        return f"new {r.choice(TYPED)}({r.choice([0, 1, 3, 1000])})"
    if k == 10:
        return r.choice(["Symbol('s')", "() => 1", "new WeakMap()", "Promise.resolve(1)"])
    if k == 11:
        return r.choice(
            ["new Error('e')", "new TypeError('t', {cause: 1})", "new DOMException('d')"]
        )
    if k == 12:
        return r.choice(["new ArrayBuffer(8)", "new SharedArrayBuffer(4)", "new Number(1)"])
    if k == 13:
        return r.choice(["Object.create(null)", "new String('s')", "new Boolean(false)"])
    if k < 17:
        items = ", ".join(js_value(r, depth + 1) for _ in range(r.randrange(5)))
        return f"[{items}]" if r.random() < 0.8 else f"[, {items}, ,]"
    if k < 21:
        keys = ['"a"', '"\\u0000x"', '"\\u0002fn"', '"__proto__"', "[Symbol.iterator]", '"0"', "b"]
        # distinct keys: a literal with "__proto__" twice does not parse
        picked = r.sample(keys, r.randrange(4))
        body = ", ".join(f"{key}: {js_value(r, depth + 1)}" for key in picked)
        return "{" + body + "}"
    if k == 21:
        pairs = ", ".join(
            f"[{js_value(r, depth + 1)}, {js_value(r, depth + 1)}]" for _ in range(r.randrange(3))
        )
        return f"new Map([{pairs}])"
    if k == 22:
        return f"new Set([{', '.join(js_value(r, depth + 1) for _ in range(r.randrange(3)))}])"
    if k == 23:
        return "(() => { const o = {a: [1]}; o.self = o; o.a.push(o); return o; })()"
    if k == 24:
        return "{ get x() { throw new Error('getter'); } }"
    if k == 25:
        trap = r.choice(["get", "ownKeys", "getOwnPropertyDescriptor", "has", "getPrototypeOf"])
        return f"new Proxy({{a: 1}}, {{ {trap}() {{ throw new Error('trap'); }} }})"
    if k == 26:
        n = r.choice([100, 1000, 10000, 100000])
        return f"(() => {{ let v = 1; for (let i = 0; i < {n}; i++) v = [v]; return v; }})()"
    if k == 27:
        n = r.choice([100, 10000])
        return f"(() => {{ let v = {{}}; for (let i = 0; i < {n}; i++) v = {{v}}; return v; }})()"
    if k == 28:
        return "Object.assign(Object.create({inherited: 1}), {own: 2})"
    return "new (class Foo { constructor() { this.x = 1; } })()"


def statement(r: random.Random, case: Case, depth: int = 0) -> str:
    """One statement of the program; appends the tape entries its host calls want."""
    k = r.randrange(30)

    def v() -> str:
        return js_value(r)

    if k == 0:
        level = r.choice(["log", "info", "warn", "error", "debug"])
        if r.random() < 0.3:
            case.tape.append((r.choice([0, 1, CODE_UNTRANSFERABLE]), r.randbytes(r.randrange(300))))
        return f"console.{level}({v()}, {v()});"
    if k == 1:
        if r.random() < 0.5:
            code = r.choice([0, 0xFC, 0xFB, CODE_UNTRANSFERABLE, 0xFF])
            case.tape.append((code, r.randbytes(r.randrange(250))))
        return f"report({v()});"
    if k in (2, 3):
        mode = r.choice(["sync", "promise", "async"])
        if mode == "async" and r.random() < 0.7:
            case.tape.append((E_PENDING, b""))
            case.tape.append((r.choice([0, 0, 1]), reply_message(r)))
        elif r.random() < 0.8:
            ok = r.random() < 0.7
            first = _abi.CALL_OK if ok else _abi.CALL_ERROR
            data = reply_message(r, error=not ok)
            if r.random() < 0.05:
                data = data + b" " * (300 * 1024)  # longer than scratch: fetched
            case.tape.append((0, first + data if mode != "async" else data))
        else:
            case.tape.append((r.choice([0xFF, 0xFE, E_PENDING]), b""))
        return f"await h.{mode}({v()}, {v()});"
    if k == 4:
        case.tape.append((0, b"\x01" + reply_message(r)))
        return f"ns[{js_string(r)}]({v()});"
    if k == 5:
        which = r.randrange(4)
        name = r.choice(["./m1.js", "lib", "./a/../../x.js", "./j.json", "lib2"])
        if which == 0:
            src = r.choice(
                [
                    "export default 1; export const x = [1n, 2];",
                    "export default await Promise.resolve({a: 1});",
                    "import 'lib'; export let y;",
                    "export default (",
                    "throw new Error('m');",
                ]
            )
            case.tape.append((0, b"S" + src.encode()))
        elif which == 1:
            case.tape.append((0, b"H" + reply_message(r)))
        elif which == 2:
            case.tape.append((0, bytes([r.choice(b"SHBX")]) + r.randbytes(r.randrange(40))))
        else:
            case.tape.append((r.choice([0xFE, 0xFF]), b""))
        attrs = ", {with: {type: 'json'}}" if name.endswith("json") or r.random() < 0.1 else ""
        return f"const m = await import({json.dumps(name)}{attrs}); String(Object.keys(m));"
    if k == 6:
        label = json.dumps(r.choice(LABELS))
        fatal, bom = (str(r.random() < 0.5).lower() for _ in range(2))
        opts = f"{{fatal: {fatal}, ignoreBOM: {bom}}}"
        calls = "".join(
            f"d.decode({js_bytes(r)}, {{stream: {str(r.random() < 0.6).lower()}}});"
            for _ in range(r.randrange(1, 4))
        )
        return f"const d = new TextDecoder({label}, {opts}); {calls} d.decode();"
    if k == 7:
        target = f"new Uint8Array({r.choice([0, 1, 2, 3, 5, 100])})"
        if r.random() < 0.3:
            target = f"new Uint8Array(new ArrayBuffer(8), {r.randrange(9)})"
        return (
            f"const t = new TextEncoder(); t.encode({js_string(r)});"
            f" t.encodeInto({js_string(r)}, {target});"
        )
    if k == 8:
        s = js_string(r)
        return r.choice([f"btoa(atob({s}));", f"atob({s});", f"btoa({s});", "btoa('\\u0100');"])
    if k in (9, 10):
        url = json.dumps(r.choice(URLS), ensure_ascii=True)
        base = json.dumps(r.choice(URLS), ensure_ascii=True)
        ops = r.choice(
            [
                "u.href; u.origin; u.host; u.pathname; u.search; u.hash;",
                "u.pathname = " + js_string(r) + "; u.href;",
                "u.search = " + js_string(r) + "; u.searchParams.toString();",
                "u.host = " + js_string(r) + "; u.port = '70000'; u.href;",
                "u.searchParams.append(" + js_string(r) + ", 'v'); u.searchParams.sort(); u.href;",
                "u.hash = " + js_string(r) + "; JSON.stringify(u);",
                "u.protocol = 'file'; u.username = 'x'; u.href;",
            ]
        )
        ctor = f"new URL({url}, {base})" if r.random() < 0.5 else f"new URL({url})"
        return f"const u = {ctor}; {ops} URL.canParse({url});"
    if k == 11:
        init = r.choice(
            [js_string(r), "[['a', 'b'], ['c', 'd']]", "{a: 1, b: '\\ud800'}", "[['x']]", "null"]
        )
        return (
            f"const p = new URLSearchParams({init}); p.append({js_string(r)}, {js_string(r)});"
            f" p.delete('a'); p.sort(); [...p]; p.getAll('c'); p.has('x', 'y'); String(p); p.size;"
        )
    if k == 12:
        transfer = ", {transfer: [b]}" if r.random() < 0.3 else ""
        return (
            f"const b = new ArrayBuffer(16); structuredClone({v()}{transfer});"
            f" structuredClone([b, b]{transfer});"
        )
    if k == 13:
        return (
            f"crypto.getRandomValues(new {r.choice(TYPED)}({r.choice([0, 1, 16, 16385, 65537])}));"
        )
    if k == 14:
        alg = json.dumps(r.choice(DIGESTS))
        return f"await crypto.subtle.digest({alg}, {js_bytes(r)}); crypto.randomUUID();"
    if k == 15:
        inner = statement(r, case, depth + 1) if depth < 2 else "1;"
        ms = r.choice([0, 1, 10, 1000, -1, 2**31, "NaN", 3600000])
        return f"setTimeout(async () => {{ try {{ {inner} }} catch (e) {{}} }}, {ms}, {v()});"
    if k == 16:
        n = r.randrange(1, 5)
        return (
            f"let c = 0; const i = setInterval(() => {{ if (++c >= {n}) clearInterval(i); }},"
            f" {r.choice([0, 1, 5])}); clearTimeout({r.randrange(10)});"
        )
    if k == 17:
        inner = statement(r, case, depth + 1) if depth < 2 else "1;"
        return f"queueMicrotask(async () => {{ try {{ {inner} }} catch (e) {{}} }});"
    if k == 18:
        return "performance.now(); performance.timeOrigin; JSON.stringify(performance);"
    if k == 19:
        return r.choice(
            [
                "const a = new AbortController(); a.signal.onabort = () => 1; a.abort(1);"
                " a.signal.reason;",
                "AbortSignal.timeout(5).addEventListener('abort', (e) => e.type);",
                "AbortSignal.any([AbortSignal.abort(), new AbortController().signal]).aborted;",
                "const t = new EventTarget(); t.addEventListener('x', () => { throw 1; });"
                " t.dispatchEvent(new Event('x'));",
            ]
        )
    if k == 20:
        # memory exhaustion: the OOM paths of mem.c and oom.c
        return r.choice(
            [
                "let s = 'x'; for (;;) s += s;",
                "const a = []; for (;;) a.push(new Array(1e5).fill(1));",
                "new ArrayBuffer(2 ** 31);",
                "const m = new Map(); for (let i = 0; ; i++) m.set(i, {i});",
                "'x'.repeat(2 ** 28);",
            ]
        )
    if k == 21:
        return "const f = (n) => f(n + 1) + 1; f(0);"
    if k == 22:
        return f"throw {v()};"
    if k == 23:
        return f"Promise.reject({v()});"
    if k == 24:
        return f"JSON.stringify({v()}); String({v()});"
    if k == 25:
        return r.choice(["eval('1 + 1');", "new Function('return 1')();", "(0, eval)('this');"])
    if k == 26:
        return "args.length; report(args);"
    if k == 27:
        return "Error.prepareStackTrace = () => { throw 1; }; new Error('x').stack;"
    if k == 28:
        return "globalThis.cfg; JSON.stringify(cfg); h.sync.name;"
    seeds = seed_statements()
    return r.choice(seeds) if seeds else "1;"


_SEEDS: list[str] | None = None


def seed_statements() -> list[str]:
    """The hand-written seed statements in ``corpus/*.js`` (one per file)."""
    global _SEEDS
    if _SEEDS is None:
        _SEEDS = [p.read_text().strip() for p in sorted(CORPUS.glob("*.js"))]
    return _SEEDS


def generate(seed: int) -> Case:
    """The case of ``seed``."""
    r = random.Random(seed)
    case = Case(seed=seed)
    case.kind = r.choice(
        [_abi.KIND_MODULE] * 6 + [_abi.KIND_SCRIPT, _abi.KIND_AUTO, _abi.KIND_COMPILE]
    )
    case.flags = _abi.FLAG_DYNAMIC if r.random() < 0.5 else 0
    case.soft_limit = r.choice([4 << 20, 16 << 20, 64 << 20])
    if case.kind == _abi.KIND_COMPILE:
        case.modules = [
            (f"m{i}.js", r.choice(["export default 1;", "import x from 'y'; export {x};", "(", ""]))
            for i in range(r.randrange(1, 4))
        ]
        return case
    if case.kind == _abi.KIND_MODULE and r.random() < 0.5:
        case.flags |= _abi.FLAG_ARGS
        blobs: list[bytes] = []
        args = [wire_value(r, blobs, hostile=r.random() < 0.2) for _ in range(r.randrange(3))]
        data = message(args, blobs)
        case.args = mutate(r, data) if r.random() < 0.1 else data
    fns = {
        "sync": {FN_KEY: [1, _abi.FN_VALUE, "sync"]},
        "promise": {FN_KEY: [2, _abi.FN_PROMISE, "promise"]},
        "async": {FN_KEY: [3, _abi.FN_ASYNC, "async"]},
    }
    blobs = case.globals_blobs
    case.globals_value = {
        "h": fns,
        "ns": {MISSING_KEY: {FN_KEY: [4, _abi.FN_VALUE, "missing"]}},
        "cfg": wire_value(r, blobs, hostile=r.random() < 0.2),
    }
    case.statements = [statement(r, case) for _ in range(r.randrange(1, 12))]
    case.result = js_value(r)
    return case

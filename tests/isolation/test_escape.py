"""Escape attempts: nothing the guest can name reaches code evaluation, a module outside the
graph, a quickjs-libc facility, a forged host function or the host's view of its results."""

from __future__ import annotations

from typing import Any

import pytest
from _isolation import Case, Ctx, case_id, run_case, table

from quickjail.sandbox import UNDEFINED, CodeResult

ECMASCRIPT_GLOBALS = frozenset(
    {
        # value properties and functions of the global object (ECMA-262 §19.1, §19.2, Annex B)
        "globalThis",
        "Infinity",
        "NaN",
        "undefined",
        "eval",
        "isFinite",
        "isNaN",
        "parseFloat",
        "parseInt",
        "decodeURI",
        "decodeURIComponent",
        "encodeURI",
        "encodeURIComponent",
        "escape",
        "unescape",
        # constructors and namespaces (§19.3, §19.4)
        "AggregateError",
        "Array",
        "ArrayBuffer",
        "BigInt",
        "BigInt64Array",
        "BigUint64Array",
        "Boolean",
        "DataView",
        "Date",
        "Error",
        "EvalError",
        "FinalizationRegistry",
        "Float16Array",
        "Float32Array",
        "Float64Array",
        "Function",
        "Int8Array",
        "Int16Array",
        "Int32Array",
        "Iterator",
        "Map",
        "Number",
        "Object",
        "Promise",
        "Proxy",
        "RangeError",
        "ReferenceError",
        "RegExp",
        "Set",
        "SharedArrayBuffer",
        "String",
        "Symbol",
        "SyntaxError",
        "TypeError",
        "Uint8Array",
        "Uint8ClampedArray",
        "Uint16Array",
        "Uint32Array",
        "URIError",
        "WeakMap",
        "WeakRef",
        "WeakSet",
        "Atomics",
        "JSON",
        "Math",
        "Reflect",
        # ECMA-402 (web/intl_collator.js makes it if no earlier file did)
        "Intl",
        # explicit resource management (stage 4, ES2026)
        "DisposableStack",
        "AsyncDisposableStack",
        "SuppressedError",
    }
)
# engine builtins that are not host capabilities: QuickJS's error class and a job-queue hook
ENGINE_EXTRAS = frozenset({"InternalError", "queueMicrotask"})
SANDBOX_GLOBALS = frozenset({"console", "report"})
# the web-platform globals (sandbox/_guest/web/): no I/O, no host capability (fetch rejects
# unless the host bridges a Fetch: tests/test_bridge_fetch.py)
WEB_GLOBALS = frozenset(
    {
        "DOMException",
        "Event",
        "CustomEvent",
        "EventTarget",
        "AbortController",
        "AbortSignal",
        "Crypto",
        "SubtleCrypto",
        "crypto",
        "Performance",
        "performance",
        "setTimeout",
        "setInterval",
        "clearTimeout",
        "clearInterval",
        "TextEncoder",
        "TextDecoder",
        "atob",
        "btoa",
        "URL",
        "URLPattern",
        "URLSearchParams",
        "structuredClone",
        # streams (web/streams_*.js)
        "ReadableStream",
        "ReadableStreamDefaultReader",
        "ReadableStreamDefaultController",
        "ReadableStreamBYOBReader",
        "ReadableStreamBYOBRequest",
        "ReadableByteStreamController",
        "WritableStream",
        "WritableStreamDefaultWriter",
        "WritableStreamDefaultController",
        "TransformStream",
        "TransformStreamDefaultController",
        "ByteLengthQueuingStrategy",
        "CountQueuingStrategy",
        "TextEncoderStream",
        "TextDecoderStream",
        # compression (web/compression.js, zlib in the guest)
        "CompressionStream",
        "DecompressionStream",
        # the fetch family (web/blob.js, fetch_*.js, formdata.js)
        "Blob",
        "File",
        "Headers",
        "Request",
        "Response",
        "FormData",
        # the global scope (web/global.js, messaging.js)
        "self",
        "navigator",
        "Navigator",
        "WorkerGlobalScope",
        "ErrorEvent",
        "PromiseRejectionEvent",
        "reportError",
        "QuotaExceededError",
        "MessageChannel",
        "MessagePort",
        "MessageEvent",
        # fetch (web/outbound_fetch.js; rejects unless bridged)
        "fetch",
    }
)
LIBC_NAMES = [
    "std",
    "os",
    "scriptArgs",
    "print",
    "__loadScript",
    "bjson",
    "require",
    "process",
    "WebAssembly",
    "Deno",
    "Bun",
    "importScripts",
    "XMLHttpRequest",
    "__filename",
    "__dirname",
    "module",
    "exports",
    "Buffer",
    "global",
]
FORGED = '{"\\x02fn": [0, false, "x"]}'


def _echo(*args: Any) -> list[Any]:
    return list(args)


def _globals_only_standard(names: Any) -> bool:
    allowed = ECMASCRIPT_GLOBALS | ENGINE_EXTRAS | SANDBOX_GLOBALS | WEB_GLOBALS
    return isinstance(names, list) and set(names) <= allowed and "console" in names


def _no_report(r: CodeResult, ctx: Ctx) -> None:
    assert r.reports == [], f"the transfer ran guest hooks: {r.reports}"


def _forged_report_is_inert(r: CodeResult, ctx: Ctx) -> None:
    assert r.reports == [{"\x02fn": [0, False, "x"]}]
    assert all(not callable(v) for v in r.reports)
    assert ctx.calls == [], "a forged marker reached a host function"


def _record(ctx: Ctx) -> dict[str, Any]:
    def f(*args: Any) -> str:
        ctx.calls.append(args)
        return "called"

    return {"globals": {"f": f, "echo": _echo}}


def _refused(spec: str) -> str:
    return (
        f"export default await import({spec!r}).then("
        "(m) => 'loaded: ' + Object.keys(m), (e) => e instanceof Error ? 'refused' : 'odd')"
    )


CASES = [
    # ---- constructor chains to a global Function (dynamic code is off by default)
    Case(
        "array-constructor-constructor",
        "[].constructor.constructor('return this')()",
        "js_error",
        error="TypeError",
        message="dynamic code",
    ),
    Case(
        "async-function-prototype-ctor",
        "(async function () {}).constructor('return this')()",
        "js_error",
        error="TypeError",
    ),
    Case(
        "generator-function-prototype-ctor",
        "(function* () {}).constructor('return this')().next()",
        "js_error",
        error="TypeError",
    ),
    Case(
        "async-generator-prototype-ctor",
        "(async function* () {}).constructor('return this')()",
        "js_error",
        error="TypeError",
    ),
    Case(
        "class-constructor-chain",
        "(class {}).constructor('return this')()",
        "js_error",
        error="TypeError",
    ),
    Case(
        "arrow-via-getPrototypeOf",
        "Object.getPrototypeOf(() => 1).constructor('return globalThis')()",
        "js_error",
        error="TypeError",
    ),
    Case(
        "reflect-construct-function",
        "Reflect.construct(Function, ['return this'])",
        "js_error",
        error="TypeError",
    ),
    Case(
        "reflect-construct-async-ctor",
        "Reflect.construct(Object.getPrototypeOf(async () => {}).constructor, ['return 1'])",
        "js_error",
        error="TypeError",
    ),
    Case(
        "bound-function-ctor",
        "Function.prototype.bind.call(Function, null, 'return this')()",
        "js_error",
        error="TypeError",
    ),
    Case(
        "property-descriptor-ctor",
        "Object.getOwnPropertyDescriptor(Function.prototype, 'constructor').value('return 1')",
        "js_error",
        error="TypeError",
    ),
    Case(
        "proxied-function-ctor",
        "new Proxy(Function, {}).call(null, 'return this')()",
        "js_error",
        error="TypeError",
    ),
    Case("direct-eval", "export default eval('globalThis')", "js_error", error="TypeError"),
    Case("indirect-eval", "export default (0, eval)('1 + 1')", "js_error", error="TypeError"),
    Case(
        "constructors-all-replaced-consistently",
        "const ps = [function(){}, async function(){}, function*(){}, async function*(){}]"
        ".map(Object.getPrototypeOf);\n"
        "export default [ps.every((p) => p.constructor === Function),"
        " (() => 1) instanceof Function]",
        "completes",
        result=[True, True],
    ),
    Case(
        "dynamic-code-on-still-no-host",
        "const g = Function('return this')();\n"
        "export default ['std', 'os', 'scriptArgs', 'print', 'process']"
        ".map((n) => typeof g[n]).concat(eval('typeof require'))",
        "completes",
        result=["undefined"] * 6,
        opts={"dynamic_code": True},
    ),
    # ---- import() of builtins and files
    Case("import-fs", _refused("fs"), "completes", result="refused"),
    Case("import-std", _refused("std"), "completes", result="refused"),
    Case("import-os", _refused("os"), "completes", result="refused"),
    Case("import-bjson", _refused("bjson"), "completes", result="refused"),
    Case("import-node-fs", _refused("node:fs"), "completes", result="refused"),
    Case("import-absolute-path", _refused("/etc/passwd"), "completes", result="refused"),
    Case("import-file-url", _refused("file:///etc/passwd"), "completes", result="refused"),
    Case("import-parent-relative", _refused("../x"), "completes", result="refused"),
    Case(
        "import-deep-parent-relative",
        _refused("./a/../../../../etc/passwd"),
        "completes",
        result="refused",
    ),
    Case(
        "import-own-filename-is-only-itself",
        "export const marker = 42;\n"
        "export default () => import('<run_code>').then((m) => m.marker, () => 'refused')",
        "completes",
        result=lambda v: v in (42, "refused"),
    ),
    Case("import-escape-marker-byte", _refused("\x01../etc/passwd"), "completes", result="refused"),
    Case("static-import-os", "import * as os from 'os'; export default typeof os", "link_error"),
    Case(
        "static-import-std", "import { open } from 'std'; export default typeof open", "link_error"
    ),
    # ---- quickjs-libc and platform names
    Case(
        "libc-and-platform-names-absent",
        f"export default {LIBC_NAMES!r}.filter((n) => typeof globalThis[n] !== 'undefined')",
        "completes",
        result=[],
    ),
    Case(
        "globalThis-only-ecmascript",
        "export default Reflect.ownKeys(globalThis)"
        ".filter((k) => k !== Symbol.toStringTag).map(String)",
        "completes",
        result=_globals_only_standard,
    ),
    # the global object is a WorkerGlobalScope, an EventTarget: its chain adds only those methods
    Case(
        "global-prototype-chain-is-an-event-target-only",
        "let o = globalThis, names = []; while ((o = Object.getPrototypeOf(o)))"
        " names.push(...Object.getOwnPropertyNames(o));\n"
        "export default names.filter((n) => !(n in Object.prototype))",
        "completes",
        result=["addEventListener", "removeEventListener", "dispatchEvent"],
    ),
    Case(
        "webassembly-absent", "export default typeof WebAssembly", "completes", result="undefined"
    ),
    Case(
        "atomics-wait-cannot-hang",
        "const sab = new SharedArrayBuffer(16);\n"
        "export default typeof Atomics === 'undefined' ? 'no Atomics'\n"
        "  : String(Atomics.wait(new Int32Array(sab), 0, 0, 60000))",
        "completes",
        result=lambda v: v in ("no Atomics", "timed-out"),
        max_wall=2.5,
    ),
    Case(
        "shared-array-buffer-result-is-inert",
        "export default new SharedArrayBuffer(8)",
        "completes",
        result=lambda v: v in ({}, b"\0" * 8),
    ),
    Case(
        "symbol-registry-is-per-run",
        "export default [Symbol.for('quickjail.leak').description,"
        " globalThis[Symbol.for('quickjail.leak')]]",
        "completes",
        result=["quickjail.leak", UNDEFINED],
        prior="globalThis[Symbol.for('quickjail.leak')] = 'from an earlier run'; export default 1",
    ),
    Case(
        "prototype-pollution-does-not-survive-runs",
        "export default [({}).leaked, typeof Array.prototype.push, globalThis.stash]",
        "completes",
        result=[UNDEFINED, "function", UNDEFINED],
        prior="Object.prototype.leaked = 1; Array.prototype.push = null;"
        " globalThis.stash = 'x'; export default 1",
    ),
    # ---- forged bridge messages
    Case(
        "forged-host-marker-as-result",
        f"export default {FORGED}",
        "completes",
        result={"\x02fn": [0, False, "x"]},
    ),
    Case(
        "forged-host-marker-in-report",
        f"report({FORGED}); export default f.name",
        "completes",
        result=lambda v: isinstance(v, str),
        opts=_record,
        check=_forged_report_is_inert,
    ),
    Case(
        "forged-host-marker-echoed-back",
        f"let r; try {{ r = await echo({FORGED}) }} catch (e) {{ r = e }}\n"
        "export default typeof r === 'function' || typeof r?.[0] === 'function'"
        " ? 'CALLABLE' : 'inert'",
        "completes",
        result="inert",
        opts=_record,
        check=lambda r, ctx: None if ctx.calls == [] else pytest.fail("f was called"),
    ),
    Case(
        "forged-marker-in-module-default-export",
        f"export const fake = {FORGED}; export default typeof fake",
        "completes",
        result="object",
    ),
    Case(
        "nul-key-tag-as-result",
        'export default {"\\0": ["n", "5"]}',
        "completes",
        result={"\0": ["n", "5"]},
    ),
    Case(
        "nul-key-blob-tag-nested",
        'export default [{"\\0": ["b", 0]}, {"\\0\\0": ["u"]}]',
        "completes",
        result=[{"\0": ["b", 0]}, {"\0\0": ["u"]}],
    ),
    Case(
        "nul-key-round-trips-through-host",
        'const v = {"\\0": ["u"], "\\0x": 1};\n'
        "export default JSON.stringify((await echo(v))[0]) === JSON.stringify(v)",
        "completes",
        result=True,
        opts=_record,
    ),
    # ---- CallSite and stack tricks
    Case(
        "prepare-stack-trace-functions-grant-nothing",
        "const fns = [];\n"
        "Error.prepareStackTrace = (e, cs) => { for (const c of cs)"
        " if (c.getFileName() !== '<run_code>') fns.push(c.getFunction()); return ''; };\n"
        "const it = Object.getPrototypeOf(new Map().entries());\n"
        "Object.defineProperty(it, Symbol.iterator, { configurable: true, value() {"
        " new Error().stack; return [][Symbol.iterator](); } });\n"
        "report(new Map([[1, 2]]));\n"
        "Error.prepareStackTrace = undefined;\n"
        "const out = [];\n"
        "for (const f of fns) { if (typeof f !== 'function') continue;\n"
        "  try { const g = f('return globalThis'); out.push(typeof g === 'function'"
        " ? 'CODE' : 'data'); } catch { out.push('threw'); } }\n"
        "export default out.length && !out.includes('CODE') ? 'nothing' : out",
        "completes",
        result="nothing",
    ),
    Case(
        "capture-stack-trace-own-frames-only",
        "const o = {}; function inner() { Error.captureStackTrace(o) } inner();\n"
        "export default o.stack",
        "completes",
        result=lambda s: "<run_code>" in s and "quickjail" not in s,
    ),
    Case(
        "stack-trace-limit-huge",
        "Error.stackTraceLimit = 1e9; function f(n) { return n ? f(n - 1) : new Error().stack }"
        " export default f(500).split('\\n').length",
        "completes",
        result=lambda n: isinstance(n, int) and n > 1,
    ),
    # ---- prototype pollution and the host's view of results
    Case(
        "object-prototype-getter-named-like-result-keys",
        "for (const k of ['status', 'result', 'error', 'name', 'message', 'stack', '\\0'])\n"
        "  Object.defineProperty(Object.prototype, k, { get() { return 'pwned' },"
        " enumerable: true, configurable: true });\n"
        "export default { a: 1 }",
        "completes",
        result={"a": 1},
    ),
    Case(
        "array-prototype-iterator-replaced",
        "const value = [[1, 2], new Map([['k', 'v']])];\n"
        "Array.prototype[Symbol.iterator] = function* () { yield 'forged' };\n"
        "Map.prototype.entries = () => [['forged', 1]].values();\n"
        "Map.prototype.forEach = () => {};\n"
        "export default value",
        "completes",
        result=[[1, 2], {"k": "v"}],
    ),
    Case(
        "error-prototype-setter-cannot-fake-oom",
        "Object.defineProperty(Object.prototype, 'uncatchable', { set() {}, get() { return true }"
        " });\nthrow new InternalError('out of memory')",
        "js_error",
        error="InternalError",
    ),
    Case(
        "thrown-plain-object-claiming-oom",
        "throw { name: 'InternalError', message: 'out of memory', uncatchable: true }",
        "js_error",
    ),
    # ---- toJSON and friends are not called by the transfer
    Case(
        "tojson-non-enumerable-not-called",
        "const o = { a: 1 };\n"
        "Object.defineProperty(o, 'toJSON', { value() { report('toJSON ran'); return 'x' } });\n"
        "export default o",
        "completes",
        result={"a": 1},
        check=_no_report,
    ),
    Case(
        "tojson-own-function-refused-not-called",
        "export default { a: 1, toJSON() { report('toJSON ran'); return 'hijacked' } }",
        "js_error",
        error="TypeError",
        message="toJSON",
        check=_no_report,
    ),
    Case(
        "tojson-on-prototypes-ignored",
        "for (const C of [Object, Date, Array, Map, BigInt, Uint8Array])\n"
        "  C.prototype.toJSON = function () { report('toJSON ran'); return 'hijacked' };\n"
        "export default [{ d: new Date(0) }, new Map([[1, 2]]), 5n, [1]]",
        "completes",
        check=_no_report,
        result=lambda v: v[1:] == [{1: 2}, 5, [1]] and v[0]["d"].year == 1970,
    ),
    Case(
        "valueof-tostring-not-called",
        "const o = { a: 1 };\n"
        "Object.defineProperties(o, { valueOf: { value() { report('valueOf') } },"
        " toString: { value() { report('toString') } } });\n"
        "export default o",
        "completes",
        result={"a": 1},
        check=_no_report,
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_escape_attempt_reaches_nothing_outside_ecmascript(case: Case, ctx: Ctx) -> None:
    run_case(case, ctx)

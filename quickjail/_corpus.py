"""The adversarial corpus of ``quickjail stress``: small hostile programs and what they may do.

Each :class:`CorpusCase` is an ES module run in a fresh sandbox with the user's bridge. It
states the statuses it may end with (``expect``) and, when it tries to get something it must
not have, it says so with the :data:`ESCAPE_MARKER`: a program that succeeds in an escape
reports (or returns) ``"ESCAPED:" + what``, a string it produces only on success. The runner
(``quickjail._stress``) looks for the marker in everything the run produced, and also checks
the host-side invariants every case shares (limits held, time bounded, no host exception
escaped, no host path or canary secret in what the program saw).

The runner prepends a prelude that names what the bridge holds, so cases can aim at it:

- ``__QJ_MODULES``: the bridged module names; ``__QJ_GLOBALS``: the bridged global names.
- ``__QJ_CANARY``: the absolute host path of a secret file outside every allowed root.
- ``__QJ_FNS`` (cases with ``uses_bridge``): ``[[label, fn], ...]``, every bridged host
  function (the prelude imports the bridged modules for these cases only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["CORPUS", "ESCAPE_MARKER", "Category", "CorpusCase"]

ESCAPE_MARKER: Final = "ESCAPED:"

Category = Literal["escape", "memory", "cpu", "recursion", "flood", "leak", "host-work"]
Status = Literal["success", "error", "memory", "link_error", "terminated"]

_ANY_END: Final[frozenset[Status]] = frozenset({"success", "error"})
# A memory bomb must not succeed; it may run out of memory, out of time, or end with an
# error thrown while memory was short (QuickJS may fail to build the error object itself).
# That memory stayed bounded is checked on host facts (peak guest memory, host RSS).
_OOM: Final[frozenset[Status]] = frozenset({"memory", "error", "terminated"})
_TIMEOUT: Final[frozenset[Status]] = frozenset({"terminated"})
# host work on what the program sends ends as a value or a clear error; a large value may also
# run the guest out of memory while it is encoded
_HOST_WORK: Final[frozenset[Status]] = frozenset({"success", "error", "memory"})
_ERROR: Final[frozenset[Status]] = frozenset({"error"})
_COLLIDE = (
    "const coll = (n) => Array.from({length: n}, (_, i) => BigInt(i + 1) * (2n ** 61n - 1n));"
)
_DAG = "let dag = []; for (let i = 0; i < 8; i++) dag = [dag, dag, dag];"
_STACK = "const e = new Error('crafted'); e.stack = 'at ' + ' (:1:1'.repeat(100000) + '!';"
_HOG = "try { new Uint8Array(2 ** 30) } catch {}"


def _host_work(id: str, description: str, source: str, expect: frozenset[Status]) -> CorpusCase:
    return _c(f"host-{id}", "host-work", description, source, expect)


@dataclass(frozen=True, slots=True)
class CorpusCase:
    """One hostile program and the outcomes that keep the host safe.

    Attributes:
        id: A short kebab-case name, unique in the corpus (the JUnit test name).
        category: What it attacks: ``escape``, ``memory``, ``cpu``, ``recursion``, ``flood``,
            ``leak`` or ``host-work`` (the host's work on what the program sends: crafted
            stacks, hash collisions, DAGs, huge BigInts and messages, sparse arrays, values
            Python would merge, status forgery).
        description: One line saying what the program tries.
        source: The ES module (JavaScript); it sees the prelude's ``__QJ_*`` constants.
        expect: The statuses the run may end with; any other one is a violation.
        uses_bridge: Whether the prelude imports the bridged modules and defines
            ``__QJ_FNS`` (the program calls the user's host functions).
    """

    id: str
    category: Category
    description: str
    source: str
    expect: frozenset[Status]
    uses_bridge: bool = False


def _c(
    id: str,
    category: Category,
    description: str,
    source: str,
    expect: frozenset[Status],
    *,
    uses_bridge: bool = False,
) -> CorpusCase:
    return CorpusCase(id, category, description, source.strip() + "\n", expect, uses_bridge)


# A program that gets a working Function constructor reports the marker.
_CTOR = """
let got = null;
try { got = (@EXPR@).constructor("return globalThis")(); } catch (e) {}
if (got !== null && got !== undefined) report("ESCAPED:@NAME@");
export default "contained";
"""


def _ctor_case(name: str, expr: str) -> CorpusCase:
    src = _CTOR.replace("@EXPR@", expr).replace("@NAME@", name)
    return _c(
        f"ctor-{name}", "escape", f"reach a Function constructor through {expr}", src, _ANY_END
    )


_IMPORT_PROBE = """
const names = @NAMES@;
for (const name of names) {
  if (__QJ_MODULES.includes(name)) continue;
  try {
    const m = await import(name);
    report("ESCAPED:import " + name + " -> " + Object.keys(m).join(","));
  } catch (e) {}
}
export default "contained";
"""


def _import_case(id: str, description: str, names: str) -> CorpusCase:
    return _c(id, "escape", description, _IMPORT_PROBE.replace("@NAMES@", names), _ANY_END)


_GLOBAL_PROBE = """
const names = @NAMES@;
for (const name of names) {
  if (__QJ_GLOBALS.includes(name)) continue;
  if (typeof globalThis[name] !== "undefined") report("ESCAPED:global " + name);
}
export default "contained";
"""


def _global_case(id: str, description: str, names: str) -> CorpusCase:
    return _c(id, "escape", description, _GLOBAL_PROBE.replace("@NAMES@", names), _ANY_END)


CORPUS: Final[tuple[CorpusCase, ...]] = (
    # ------------------------------------------------------------ escapes: dynamic code
    _ctor_case("array", "[]"),
    _ctor_case("function", "(function () {})"),
    _ctor_case("arrow", "(() => 0)"),
    _ctor_case("async-function", "(async function () {})"),
    _ctor_case("generator", "(function* () {})"),
    _ctor_case("async-generator", "(async function* () {})"),
    _ctor_case("report", "report"),
    _ctor_case("console-log", "console.log"),
    _c(
        "eval-indirect",
        "escape",
        "evaluate a string with indirect eval",
        """
       let v;
       try { v = (0, eval)("6 * 7"); } catch (e) {}
       if (v === 42) report("ESCAPED:eval");
       export default "contained";
       """,
        _ANY_END,
    ),
    _c(
        "ctor-host-functions",
        "escape",
        "reach a Function constructor through each bridged host function",
        """
       for (const [label, fn] of __QJ_FNS) {
         let got = null;
         try { got = fn.constructor("return globalThis")(); } catch (e) {}
         if (got) report("ESCAPED:ctor via " + label);
         try { got = Object.getPrototypeOf(fn).constructor("return 1")(); } catch (e) {}
         if (got) report("ESCAPED:proto ctor via " + label);
       }
       export default "contained";
       """,
        _ANY_END,
        uses_bridge=True,
    ),
    # ------------------------------------------------------------ escapes: modules
    _import_case(
        "import-libc",
        "import the quickjs-libc modules",
        '["std", "os", "bjson", "qjs:std", "qjs:os", "qjs:bjson"]',
    ),
    _import_case(
        "import-node-builtins",
        "import Node/Deno builtins",
        '["fs", "node:fs", "child_process", "node:child_process", "process", "net",'
        ' "http", "path", "module", "worker_threads", "deno:fs"]',
    ),
    _import_case(
        "import-host-files",
        "import host files by absolute path and URL",
        '["/etc/passwd", "file:///etc/passwd", "/proc/self/environ", __QJ_CANARY,'
        ' "file://" + __QJ_CANARY]',
    ),
    _import_case(
        "import-traversal",
        "import host files through relative traversal",
        '["./../../../../../../etc/passwd", "../../../../../../etc/passwd",'
        ' "./%2e%2e/%2e%2e/etc/passwd", "./..\\\\..\\\\etc\\\\passwd",'
        ' "./" + "../".repeat(40) + __QJ_CANARY]',
    ),
    _c(
        "import-static-std",
        "escape",
        "statically import the quickjs-libc std module",
        """
       import * as std from "std";
       report("ESCAPED:static import std " + Object.keys(std));
       """,
        frozenset({"link_error", "error"}),
    ),
    _c(
        "import-static-os",
        "escape",
        "statically import the quickjs-libc os module",
        """
       import * as os from "os";
       report("ESCAPED:static import os " + Object.keys(os));
       """,
        frozenset({"link_error", "error"}),
    ),
    # ------------------------------------------------------------ escapes: globals
    _global_case(
        "globals-libc",
        "find quickjs-libc globals",
        '["std", "os", "scriptArgs", "print", "__loadScript", "bjson", "gc", "__date_clock"]',
    ),
    _global_case(
        "globals-node",
        "find Node/Deno/Bun globals",
        '["require", "process", "Buffer", "module", "exports", "__filename",'
        ' "__dirname", "Deno", "Bun", "global"]',
    ),
    _global_case(
        "globals-web",
        "find web-platform I/O (timers, crypto and performance are the runtime's own: they run"
        " inside the run)",
        '["fetch", "XMLHttpRequest", "WebSocket", "WebAssembly", "setImmediate",'
        ' "importScripts", "navigator", "Worker", "SharedWorker", "EventSource",'
        ' "BroadcastChannel", "localStorage", "indexedDB"]',
    ),
    # ------------------------------------------------------------ escapes: forged markers
    _c(
        "forged-marker-report",
        "escape",
        "report values shaped like the codec's host-function marker",
        """
       const forged = [];
       for (let c = 0; c < 32; c++) forged.push({[String.fromCharCode(c) + "fn"]: [0, false, "x"]});
       for (const f of forged) { try { report(f); } catch (e) {} }
       try { report([{"\\x02fn": [0, true, "y"]}, new Map([["\\x02fn", [1, false, "z"]]])]); }
       catch (e) {}
       export default "contained";
       """,
        _ANY_END,
    ),
    _c(
        "forged-marker-result",
        "escape",
        "return a forged host-function marker as the result",
        """
       export default {"\\x02fn": [0, false, "x"], nested: [{"\\x02fn": [1, true, "y"]}]};
       """,
        _ANY_END,
    ),
    _c(
        "forged-marker-thrown",
        "escape",
        "throw a forged host-function marker",
        """
       throw {"\\x02fn": [0, false, "x"]};
       """,
        frozenset({"error"}),
    ),
    _c(
        "forged-marker-to-host",
        "escape",
        "pass forged host-function markers to every bridged host function",
        """
       const forged = [{"\\x02fn": [0, false, "x"]}, {"\\x02fn": [0, true, "x"]},
                       [{"\\x02fn": [99999, false, "x"]}], {"\\x01": 1, "\\x02": 2}];
       for (const [label, fn] of __QJ_FNS) {
         for (const f of forged) {
           try { await fn(f); } catch (e) {}
           try { await fn("a", f, f); } catch (e) {}
         }
       }
       export default "contained";
       """,
        frozenset({"success", "error", "terminated"}),
        uses_bridge=True,
    ),
    # ------------------------------------------------------------ escapes: pollution
    _c(
        "prototype-pollution",
        "escape",
        "pollute the builtin prototypes, then call host functions and return values",
        """
       Object.prototype.polluted = "ESCAPED:inherited property crossed";
       Array.prototype.extra = "ESCAPED:inherited array property crossed";
       Object.defineProperty(Object.prototype, "toJSON",
         {get() { return () => "ESCAPED:toJSON hook ran on the host"; }, configurable: true});
       for (const [label, fn] of __QJ_FNS) {
         try { await fn({}); } catch (e) {}
         try { await fn([]); } catch (e) {}
       }
       report({a: 1});
       export default [1, 2, {b: 2}];
       """,
        frozenset({"success", "error", "terminated"}),
        uses_bridge=True,
    ),
    _c(
        "pollution-persists",
        "escape",
        "see whether the previous program's pollution survived into this fresh run",
        """
       if (({}).polluted !== undefined || [].extra !== undefined) {
         report("ESCAPED:pollution persisted across runs");
       }
       globalThis.__qj_leftover = "x";
       export default "contained";
       """,
        _ANY_END,
    ),
    _c(
        "leftover-globals",
        "escape",
        "see a global set by an earlier run",
        """
       if (typeof __qj_leftover !== "undefined") report("ESCAPED:state persisted across runs");
       export default "contained";
       """,
        _ANY_END,
    ),
    _c(
        "transfer-hooks",
        "escape",
        "return values whose getters, proxies and toPrimitive hooks run during transfer",
        """
       const trap = new Proxy({}, {ownKeys() { throw new Error("trap"); },
                                   get() { return "ESCAPED:proxy read by host"; }});
       try { report(trap); } catch (e) {}
       try { report({[Symbol.toPrimitive]() { return "ESCAPED:toPrimitive"; }}); } catch (e) {}
       export default {get x() { throw new Error("getter"); }};
       """,
        _ANY_END,
    ),
    # ------------------------------------------------------------ memory bombs
    _c(
        "memory-array-push",
        "memory",
        "grow an array of arrays without bound",
        "const a = []; while (true) a.push(new Array(1e5).fill(1.5));",
        _OOM,
    ),
    _c(
        "memory-typed-arrays",
        "memory",
        "allocate 8 MiB typed arrays without bound",
        "const a = []; while (true) a.push(new Uint8Array(8 << 20));",
        _OOM,
    ),
    _c(
        "memory-map-growth",
        "memory",
        "grow a Map of objects without bound",
        "const m = new Map(); let i = 0; while (true) m.set(i++, {i, s: 'v' + i});",
        _OOM,
    ),
    _c(
        "memory-string-doubling",
        "memory",
        "double a string until something gives",
        "let s = 'x'; while (true) s += s;",
        _OOM,
    ),
    _c(
        "memory-huge-buffer",
        "memory",
        "ask for 2 GiB and 1e9-element buffers at once",
        """
       const out = [];
       out.push(new ArrayBuffer(2 ** 31));
       out.push(new Float64Array(1e9));
       export default out.length;
       """,
        _OOM,
    ),
    _c(
        "memory-catch-and-retry",
        "memory",
        "catch out-of-memory errors and keep allocating",
        """
       const keep = [];
       for (;;) {
         try { for (;;) keep.push(new Array(1e5).fill(keep.length)); }
         catch (e) { keep.push(String(e)); }
       }
       """,
        _OOM,
    ),
    _c(
        "memory-generator-spread",
        "memory",
        "spread an infinite generator",
        "export default [...(function* () { for (;;) yield 1; })()].length;",
        _OOM,
    ),
    _c(
        "memory-giant-result",
        "memory",
        "return a result far larger than the guest memory",
        "export default 'x'.repeat(2 ** 28);",
        _OOM,
    ),
    # ------------------------------------------------------------ CPU hogs
    _c("cpu-busy-loop", "cpu", "spin forever", "for (;;) {}", _TIMEOUT),
    _c(
        "cpu-finally-continue",
        "cpu",
        "spin in a loop whose finally restarts it",
        "while (true) { try { for (;;) {} } finally { continue; } }",
        _TIMEOUT,
    ),
    _c(
        "cpu-catch-everything",
        "cpu",
        "catch whatever stops the loop and spin again",
        "while (true) { try { while (true) {} } catch (e) {} }",
        _TIMEOUT,
    ),
    _c(
        "cpu-catastrophic-regex",
        "cpu",
        "run a catastrophically backtracking regex",
        "export default /^(a+)+$/.test('a'.repeat(48) + 'b');",
        _TIMEOUT,
    ),
    _c(
        "cpu-await-loop",
        "cpu",
        "spin on awaited microtasks",
        "async function f() { for (;;) await null; } export default await f();",
        _TIMEOUT,
    ),
    _c(
        "cpu-sort-comparator",
        "cpu",
        "sort with a comparator that never returns",
        "export default [3, 1, 2].sort(() => { for (;;) {} });",
        _TIMEOUT,
    ),
    _c(
        "cpu-host-call-loop",
        "cpu",
        "call the bridged host functions in an endless loop",
        """
       if (__QJ_FNS.length === 0) for (;;) {}
       for (;;) for (const [label, fn] of __QJ_FNS) {
         try { Promise.resolve(fn()).catch(() => 0); } catch (e) {}
       }
       """,
        frozenset({"terminated", "error", "memory"}),
        uses_bridge=True,
    ),
    # ------------------------------------------------------------ deep recursion
    _c(
        "recursion-plain",
        "recursion",
        "recurse without a base case",
        "function f() { return f() + 1; } export default f();",
        frozenset({"error"}),
    ),
    _c(
        "recursion-caught",
        "recursion",
        "catch the stack overflow and carry on",
        """
       function f(n) { return f(n + 1) + 1; }
       let msg = "";
       try { f(0); } catch (e) { msg = e.name; }
       export default msg;
       """,
        frozenset({"success"}),
    ),
    _c(
        "recursion-in-catch",
        "recursion",
        "recurse again inside every catch handler",
        "function f() { try { return f(); } catch (e) { return f(); } } export default f();",
        frozenset({"error", "terminated"}),
    ),
    _c(
        "recursion-json-parse",
        "recursion",
        "parse a million nested brackets",
        "export default JSON.parse('['.repeat(1e6));",
        frozenset({"error", "memory"}),
    ),
    _c(
        "recursion-proxy-get",
        "recursion",
        "recurse through a Proxy get trap",
        """
       const p = new Proxy({}, {get(t, k, r) { return r[k]; }});
       export default p.x;
       """,
        frozenset({"error"}),
    ),
    _c(
        "recursion-tojson",
        "recursion",
        "recurse through toJSON during JSON.stringify",
        "const o = {toJSON() { return JSON.stringify(o); }}; export default JSON.stringify(o);",
        frozenset({"error"}),
    ),
    _c(
        "recursion-deep-result",
        "recursion",
        "return a value nested 100,000 levels deep",
        "let o = []; for (let i = 0; i < 1e5; i++) o = [o]; export default o;",
        frozenset({"error", "memory"}),
    ),
    _c(
        "recursion-deep-to-host",
        "recursion",
        "pass a value nested 100,000 levels deep to every bridged host function",
        """
       let o = []; for (let i = 0; i < 1e5; i++) o = [o];
       for (const [label, fn] of __QJ_FNS) { try { await fn(o); } catch (e) {} }
       export default "contained";
       """,
        frozenset({"success", "error", "memory", "terminated"}),
        uses_bridge=True,
    ),
    # ------------------------------------------------------------ floods
    _c(
        "flood-logs",
        "flood",
        "log a hundred thousand lines",
        "for (let i = 0; i < 1e5; i++) console.log('x'.repeat(100), i); export default 1;",
        frozenset({"success", "terminated"}),
    ),
    _c(
        "flood-big-logs",
        "flood",
        "log one-megabyte strings",
        "const s = 'x'.repeat(1 << 20); for (let i = 0; i < 64; i++) console.error(s);"
        " export default 1;",
        frozenset({"success", "terminated", "memory"}),
    ),
    _c(
        "flood-reports",
        "flood",
        "report a million values",
        "for (let i = 0; i < 1e6; i++) report(i); export default 1;",
        frozenset({"error", "success", "terminated"}),
    ),
    _c(
        "flood-big-reports",
        "flood",
        "report one-megabyte strings",
        "const s = 'x'.repeat(1 << 20); for (let i = 0; i < 64; i++) report(s);",
        frozenset({"error", "success", "terminated", "memory"}),
    ),
    _c(
        "flood-rejections",
        "flood",
        "leave ten thousand promise rejections unhandled",
        "for (let i = 0; i < 1e4; i++) Promise.reject(new Error('r' + i)); export default 1;",
        frozenset({"success", "terminated"}),
    ),
    _c(
        "flood-host-calls",
        "flood",
        "call every bridged host function 100,000 times",
        """
       let refused = 0;
       for (const [label, fn] of __QJ_FNS) {
         for (let i = 0; i < 1e5; i++) { try { await fn(); } catch (e) { refused++; } }
       }
       export default refused;
       """,
        frozenset({"success", "error", "terminated", "memory"}),
        uses_bridge=True,
    ),
    _c(
        "flood-host-calls-in-flight",
        "flood",
        "start ten thousand concurrent calls of every bridged host function",
        """
       for (const [label, fn] of __QJ_FNS) {
         const calls = [];
         for (let i = 0; i < 1e4; i++) {
           try { calls.push(Promise.resolve(fn("x")).catch(() => 0)); } catch (e) {}
         }
         await Promise.all(calls);
       }
       export default "done";
       """,
        frozenset({"success", "error", "terminated", "memory"}),
        uses_bridge=True,
    ),
    # ------------------------------------------------------------ information leaks
    _c(
        "leak-error-stack",
        "leak",
        "read the stack of an error for host paths",
        """
       function inner() { return new Error("where am I"); }
       const e = inner();
       report({leak: e.stack, file: e.fileName ?? null, line: e.lineNumber ?? null});
       throw e;
       """,
        frozenset({"error"}),
    ),
    _c(
        "leak-import-meta",
        "leak",
        "read import.meta for the host path of the module",
        "export default {leak: JSON.stringify(import.meta) + String(import.meta.url)};",
        _ANY_END,
    ),
    _c(
        "leak-host-function-source",
        "leak",
        "stringify every bridged host function for host source or paths",
        """
       export default {leak: __QJ_FNS.map(([label, fn]) => label + ": " + String(fn) + " "
         + JSON.stringify(Object.getOwnPropertyNames(fn)))};
       """,
        _ANY_END,
        uses_bridge=True,
    ),
    _c(
        "leak-host-errors",
        "leak",
        "make every bridged host function fail and read its errors for host details",
        """
       const bad = [undefined, null, 1e308, "", "/", "../../..", "\\u0000", {}, [], -1];
       const leak = [];
       for (const [label, fn] of __QJ_FNS) {
         for (const v of bad) {
           try { await fn(v, v, v); } catch (e) { leak.push(String(e), String(e && e.stack)); }
         }
       }
       export default {leak};
       """,
        frozenset({"success", "error", "terminated"}),
        uses_bridge=True,
    ),
    _c(
        "leak-engine-errors",
        "leak",
        "trigger engine errors and read their messages",
        """
       const leak = [];
       for (const f of [() => null.x, () => undefinedName, () => new Array(-1),
                        () => JSON.parse("{"), () => decodeURIComponent("%"),
                        () => Symbol() + ""]) {
         try { f(); } catch (e) { leak.push(e.name + ": " + e.message + "\\n" + e.stack); }
       }
       export default {leak};
       """,
        _ANY_END,
    ),
    _c(
        "leak-environment",
        "leak",
        "look for environment, argv and clock details",
        """
       const found = [];
       for (const n of ["process", "Deno", "Bun", "scriptArgs", "std", "os", "environ"]) {
         try { const v = globalThis[n]; if (v !== undefined && !__QJ_GLOBALS.includes(n))
           found.push(n); } catch (e) {}
       }
       if (found.length) report("ESCAPED:environment via " + found.join(","));
       export default {leak: [typeof Intl === "undefined" ? null
         : Intl.DateTimeFormat().resolvedOptions().timeZone]};
       """,
        _ANY_END,
    ),
    # ------------------------------------------------------------ host work on guest data
    _host_work(
        "crafted-stack",
        "throw an error whose stack line backtracks a regex",
        f"{_STACK}\nthrow e",
        _ERROR,
    ),
    _host_work(
        "crafted-stack-logged",
        "log and reject with an error whose stack line backtracks a regex",
        f"{_STACK}\nconsole.error(e); Promise.reject(e); export default 1",
        _HOST_WORK,
    ),
    _host_work(
        "colliding-set",
        "return a Set of BigInts that collide in CPython's int hash",
        f"{_COLLIDE}\nexport default new Set(coll(2000))",
        _HOST_WORK,
    ),
    _host_work(
        "colliding-map-report",
        "report and log Maps whose BigInt keys collide in CPython's int hash",
        f"{_COLLIDE}\nconst m = new Map(coll(2000).map((k) => [k, 1]));\n"
        "try { report(m) } catch {}\nconsole.log(m); export default 1",
        _HOST_WORK,
    ),
    _host_work(
        "dag-reports",
        "report a DAG of 9 arrays that decodes to 10,000 lists, 10 times",
        f"{_DAG}\nlet n = 0;\n"
        "try { for (let i = 0; i < 10; i++) { report(dag); n++ } } catch {}\n"
        "export default n",
        _HOST_WORK,
    ),
    _host_work(
        "deep-result",
        "return an array nested 20,000 levels deep",
        "let a = []; for (let i = 0; i < 20000; i++) a = [a]; export default a",
        _HOST_WORK,
    ),
    _host_work(
        "huge-bigint",
        "throw, log and return a 100,000-digit BigInt",
        "const b = 2n ** 332193n; console.log(b); report({b}); throw b",
        _ERROR,
    ),
    _host_work(
        "huge-error-message",
        "throw an object with a 2 MiB message and a 512 KiB name",
        "throw {name: 'N'.repeat(2 ** 19), message: 'm'.repeat(2 ** 21)}",
        _ERROR,
    ),
    _host_work(
        "sparse-array",
        "report, log and return an array of length 2**32 - 1 with no elements",
        "const a = []; a.length = 2 ** 32 - 1;\ntry { report(a) } catch {}\n"
        "console.log(a); export default a",
        _HOST_WORK,
    ),
    _host_work(
        "deep-stringify",
        "JSON.stringify an object nested 20,000 levels deep",
        "let o = {}; for (let i = 0; i < 20000; i++) o = {o};\n"
        "let r = 'none'; try { JSON.stringify(o) } catch (e) { r = e.name }\nexport default r",
        _HOST_WORK,
    ),
    _host_work(
        "finalization-throws",
        "throw from FinalizationRegistry callbacks",
        "const r = new FinalizationRegistry(() => { throw 2n ** 100000n });\n"
        "(() => { for (let i = 0; i < 20; i++) r.register({}, i) })();\n"
        "for (let i = 0; i < 5; i++) await null;\nexport default 1",
        _HOST_WORK,
    ),
    _host_work(
        "oom-forged-null",
        "after one caught allocation failure, throw null to be classified memory",
        f"{_HOG}\nthrow null",
        _ERROR,
    ),
    _host_work(
        "oom-forged-internal-error",
        "after one caught allocation failure, throw a hand-made out-of-memory error",
        f"{_HOG}\nthrow new InternalError('out of memory')",
        _ERROR,
    ),
    _host_work(
        "merging-map-keys",
        "return a Map whose keys 1, true and 1n are one Python key",
        "export default new Map([[1, 'a'], [true, 'b'], [1n, 'c']])",
        _ERROR,
    ),
    _host_work(
        "merging-set-members-report",
        "report and log a Set whose members are one in Python",
        "try { report(new Set([1, true, 1n])) } catch {}\nconsole.log(new Set([0, false]));\n"
        "export default 1",
        _HOST_WORK,
    ),
    _host_work(
        "out-of-range-date",
        "return Dates outside Python's years 1-9999",
        "export default [new Date(8.64e15), new Date(-62167219200000)]",
        _ERROR,
    ),
    _c(
        "forged-marker-on-prototype-replies",
        "escape",
        "plant a host-function marker on Object.prototype, then read what host functions return",
        """
       Object.prototype["\\x02fn"] = [0, 0, "forged"];
       for (const [label, fn] of __QJ_FNS) {
         let v;
         try { v = await fn("notes.txt"); } catch (e) { continue; }
         const seen = [v, ...(v && typeof v === "object" ? Object.values(v) : [])];
         if (seen.some((x) => typeof x === "function"))
           report("ESCAPED:forged function from " + label);
       }
       delete Object.prototype["\\x02fn"];
       export default "contained";
       """,
        _ANY_END,
        uses_bridge=True,
    ),
)

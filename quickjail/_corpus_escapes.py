"""The corpus's escapes: dynamic code, modules, globals, forged markers, pollution."""

from __future__ import annotations

from typing import Final

from quickjail._corpus_case import _ANY_END, CorpusCase, _c

__all__ = ["ESCAPES"]

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


ESCAPES: Final[tuple[CorpusCase, ...]] = (
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
        "find web-platform I/O (timers, crypto, performance, navigator and MessageChannel are"
        " the runtime's own: they run inside the run; fetch reaches only what a bridged Fetch"
        " allows: fetch-metadata)",
        '["XMLHttpRequest", "WebSocket", "WebAssembly", "setImmediate",'
        ' "importScripts", "Worker", "SharedWorker", "EventSource",'
        ' "BroadcastChannel", "localStorage", "indexedDB"]',
    ),
    _c(
        "fetch-metadata",
        "escape",
        "fetch the cloud metadata address and a loopback port (a bridged Fetch refuses them"
        " unless allow_private)",
        """
       for (const url of ["http://169.254.169.254/latest/meta-data/", "http://127.0.0.1:1/",
                          "http://[::ffff:169.254.169.254]/", "http://0x7f.1/"]) {
         try {
           const r = await fetch(url);
           report("ESCAPED:fetch " + url + " -> " + r.status);
         } catch (e) {}
       }
       export default "contained";
       """,
        _ANY_END,
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
)

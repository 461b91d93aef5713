"""The corpus's attacks on limits: memory bombs, CPU hogs, deep recursion, floods,
information leaks, and host work on what the program sends."""

from __future__ import annotations

from typing import Final

from quickjail._corpus_case import (
    _ANY_END,
    _ERROR,
    _HOST_WORK,
    _OOM,
    _TIMEOUT,
    CorpusCase,
    Status,
    _c,
)

__all__ = ["LIMITS"]

_COLLIDE = (
    "const coll = (n) => Array.from({length: n}, (_, i) => BigInt(i + 1) * (2n ** 61n - 1n));"
)
_DAG = "let dag = []; for (let i = 0; i < 8; i++) dag = [dag, dag, dag];"
_STACK = "const e = new Error('crafted'); e.stack = 'at ' + ' (:1:1'.repeat(100000) + '!';"
_HOG = "try { new Uint8Array(2 ** 30) } catch {}"


def _host_work(id: str, description: str, source: str, expect: frozenset[Status]) -> CorpusCase:
    return _c(f"host-{id}", "host-work", description, source, expect)


LIMITS: Final[tuple[CorpusCase, ...]] = (
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

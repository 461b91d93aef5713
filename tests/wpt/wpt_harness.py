"""Run web-platform-tests files in quickjail with WPT's own ``testharness.js``.

A test file runs as a Worker runs it: in a fresh sandbox, as one classic script made of a
small prelude, ``resources/testharness.js`` (from the pinned tree, never copied into the repo),
the ``// META: script=`` helpers (or a ``.worker.js`` file's ``importScripts`` helpers) and the
file itself, in that order, then a reporter that collects ``add_result_callback`` results and
the ``add_completion_callback`` status into the run's value. Decisions, each as WPT's own
runners or Node's ``test/common/wpt.js`` make them:

- **Globals.** ``// META: global=`` decides: a file runs when its scopes include a dedicated
  worker (``worker`` and the default ``window,dedicatedworker`` do) or ``jsshell``. A Worker is
  quickjail's model; ``window``-only, shared- and service-worker-only files and ``.window.js``
  files are listed as not run, with the reason (:func:`discover`), never dropped in silence.
- **One script.** Separate ``<script>`` elements share the global lexical scope, which an
  indirect ``eval`` per file would not give (``let``/``class`` of a helper would stay in the
  eval, and a ``'use strict'`` helper's functions too), so the pieces are joined into one
  script. It is sloppy at its top, as a worker script without a directive; a piece's own
  top-level ``'use strict'`` is then an ordinary statement (its functions' own directives
  stand). A top-level throw ends the file: its subtests count as failing. An ``.any.js`` file
  is followed by ``done()``, as in WPT's generated worker wrapper; on a service-worker global
  (workerd's, in ``rates.py``) an ``install`` event then tells the harness the scripts are in.
- **The test context WPT's server gives.** ``self`` (if the runtime lacks it: Node's runner
  sets it too), ``GLOBAL`` (``isWindow()`` false, ``isWorker()`` true: WPT's generated worker
  wrapper defines it), ``location`` (the test's worker URL with its variant, if the runtime
  lacks it: ``common/subset-tests.js`` reads ``location.search``), and ``fetch`` of the test's
  own resource files (outside ``fetch/``), which the host reads from the tree beforehand, as
  Node's runner does (``url`` loads its test data so), and a ``WebAssembly.Memory`` whose
  buffer is a ``SharedArrayBuffer`` (``common/sab.js`` gets that constructor only so) if the
  runtime has ``SharedArrayBuffer`` and no ``WebAssembly``. What was supplied is in
  :attr:`FileResult.shims`.
- **Time.** A file has 10 s (``// META: timeout=long``: 60 s, WPT's own budgets) times
  :data:`TIME_MULTIPLIER` for a shared machine; then the harness's ``timeout()`` ends it (the
  unfinished subtests fail as TIMEOUT), and the run's own timeout a little later is the
  backstop. Memory: :data:`MEMORY_LIMIT` per file.

A subtest passes when its status is PASS; the pseudo-subtest :data:`HARNESS` fails when the
file's harness status is not OK (an uncaught error, a timeout) or the run did not succeed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import quickjail

__all__ = [
    "CLAIMED",
    "HARNESS",
    "MEMORY_LIMIT",
    "TIME_MULTIPLIER",
    "UNCLAIMED",
    "FileResult",
    "WptFile",
    "backstop",
    "budget",
    "discover",
    "interpret",
    "not_run",
    "program",
    "run_file",
    "run_files",
]

# The directories whose globals quickjail has or is getting (README, "Web platform"), in the
# pinned tree's layout. Node 20's set has no fetch tests (only fetch/data-urls/resources) and no
# compression directory (``compression`` comes from Node 22's tarball, see wpt_source).
CLAIMED = (
    "url",
    "encoding",
    "dom/events",
    "dom/abort",
    "hr-time",
    "html/webappapis/timers",
    "html/webappapis/structured-clone",
    "html/webappapis/atob",
    "html/webappapis/microtask-queuing",
    "WebCryptoAPI",
    "console",
    "webidl",
    "FileAPI",
    "streams",
    "compression",
)
# Folders of a claimed directory for an API quickjail does not have and is not getting (README,
# "Web platform"): their files are listed as not run, with this reason, and count in no rate.
_NO_SUBTLE = "crypto.subtle beyond digest: not claimed (README, Web platform)"
UNCLAIMED = {
    f"WebCryptoAPI/{folder}": _NO_SUBTLE
    for folder in (
        "derive_bits_keys",
        "encrypt_decrypt",
        "generateKey",
        "import_export",
        "sign_verify",
        "wrapKey_unwrapKey",
    )
}
HARNESS = "(harness)"
"""The pseudo-subtest that fails when the file itself does not run to an OK harness status."""
MEMORY_LIMIT = 256 * 2**20
TIME_MULTIPLIER = 2
_NORMAL_S, _LONG_S = 10, 60
_BACKSTOP_S = 15
_MAX_RESOURCE = 16 * 2**20
_MESSAGE = 200  # characters of a subtest's message kept
_SCOPES_RUN = frozenset({"dedicatedworker", "jsshell"})
_STATUS = ("PASS", "FAIL", "TIMEOUT", "NOTRUN", "PRECONDITION_FAILED")
_HARNESS_STATUS = ("OK", "ERROR", "TIMEOUT", "PRECONDITION_FAILED")


@dataclass(frozen=True)
class WptFile:
    """One run of one test file: its path under the WPT root and its variant (``?...``)."""

    path: str
    variant: str
    scripts: tuple[str, ...]
    long: bool
    worker_file: bool

    @property
    def id(self) -> str:
        """``path`` plus the variant: the key of the expectations file."""
        return self.path + self.variant

    @property
    def directory(self) -> str:
        """The claimed directory the file belongs to."""
        return next(d for d in CLAIMED if self.path.startswith(d + "/"))


@dataclass
class FileResult:
    """What one file's run gave: each subtest's status and message, and what was supplied."""

    file: WptFile
    subtests: dict[str, tuple[str, str]] = field(default_factory=dict)
    shims: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failing(self) -> dict[str, str]:
        """The subtests (and :data:`HARNESS`) that did not pass: name -> status and message."""
        return {
            name: f"{status}: {message}" if message else status
            for name, (status, message) in self.subtests.items()
            if status != "PASS"
        }


def _meta(source: str) -> list[tuple[str, str]]:
    """The leading ``// META: key=value`` lines (WPT reads only the leading comment block)."""
    out = []
    for line in source.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        m = re.match(r"//\s*META:\s*(\w+)=(.*)$", stripped)
        if m:
            out.append((m.group(1), m.group(2).strip()))
        elif not stripped.startswith("//"):
            break
    return out


def _scopes(values: Iterable[str]) -> set[str]:
    scopes: set[str] = set()
    for value in values:
        for scope in (v.strip() for v in value.split(",")):
            if scope == "worker":
                scopes |= {"dedicatedworker", "sharedworker", "serviceworker"}
            elif scope == "worker-module" or scope.endswith("-module"):
                continue  # module workers: not a classic worker script
            elif scope:
                scopes.add(scope)
    return scopes or {"window", "dedicatedworker"}


def _resolve(root: Path, base: str, ref: str) -> str:
    """``ref`` (absolute from the WPT root, or relative to ``base``'s folder) under the root."""
    ref = ref.split("?", 1)[0].split("#", 1)[0]
    joined = (
        PurePosixPath(ref.lstrip("/")) if ref.startswith("/") else PurePosixPath(base).parent / ref
    )
    parts: list[str] = []
    for part in joined.parts:
        if part == "..":
            if not parts:
                raise ValueError(f"{base}: {ref!r} leaves the WPT tree")
            parts.pop()
        elif part != ".":
            parts.append(part)
    rel = "/".join(parts)
    if not (root / rel).is_file():
        raise ValueError(f"{base}: {ref!r} is not a file of the WPT tree")
    return rel


def _candidates(root: Path, directory: str) -> Iterator[Path]:
    for path in sorted((root / directory).rglob("*.js")):
        rel = path.relative_to(root).parts
        if "resources" in rel or "support" in rel:
            continue
        if path.name.endswith((".any.js", ".worker.js", ".window.js")):
            yield path


def discover(root: Path, directory: str) -> tuple[list[WptFile], dict[str, str]]:
    """The runs of ``directory``'s test files, and the files not run with the reason."""
    runs: list[WptFile] = []
    skipped: dict[str, str] = {}
    for path in _candidates(root, directory):
        rel = path.relative_to(root).as_posix()
        unclaimed = next((r for f, r in UNCLAIMED.items() if rel.startswith(f + "/")), None)
        if unclaimed is not None:
            skipped[rel] = unclaimed
            continue
        if path.name.endswith(".window.js"):
            skipped[rel] = "a .window.js file (window global only)"
            continue
        source = path.read_text(encoding="utf-8")
        meta = _meta(source)
        worker_file = path.name.endswith(".worker.js")
        if not worker_file:
            scopes = _scopes(v for k, v in meta if k == "global")
            if not scopes & _SCOPES_RUN:
                skipped[rel] = f"global={','.join(sorted(scopes))} (no dedicated worker)"
                continue
        try:
            if worker_file:
                scripts = tuple(_resolve(root, rel, s) for s in _imported(source))
            else:
                scripts = tuple(_resolve(root, rel, v) for k, v in meta if k == "script")
        except ValueError as e:
            skipped[rel] = str(e)
            continue
        long = any(k == "timeout" and v == "long" for k, v in meta)
        variants = [v for k, v in meta if k == "variant"] or [""]
        for variant in variants:
            runs.append(WptFile(rel, variant, scripts, long, worker_file))
    return runs, skipped


def not_run(root: Path) -> dict[str, str]:
    """Every file of the claimed directories that is not run, with the reason."""
    out: dict[str, str] = {}
    for directory in CLAIMED:
        out.update(discover(root, directory)[1])
    return out


_IMPORT = re.compile(r"^\s*importScripts\((.*)\);?\s*$", re.M)
_STRING = re.compile(r"""(["'])([^"'\\]+)\1""")
_FETCHED = re.compile(r"""\bfetch\(\s*(["'`])([^"'`$\\]+)\1""")


def _imported(source: str) -> list[str]:
    """A worker file's ``importScripts`` helpers (not the harness: it is loaded anyway)."""
    out = []
    for m in _IMPORT.finditer(source):
        for s in _STRING.finditer(m.group(1)):
            if not s.group(2).endswith(("testharness.js", "testharnessreport.js")):
                out.append(s.group(2))
    return out


_PRELUDE = """var __wpt = (function () {
  "use strict";
  const setup = %(setup)s, shims = [], results = [], resources = %(resources)s;
  const define = (name, value) => {
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
    shims.push(name);
  };
  if (typeof self === "undefined") define("self", globalThis);
  // a global that is a WorkerGlobalScope makes testharness.js a dedicated worker's harness,
  // which posts its results to the page that made the worker: there is none, the reporter
  // below takes them
  if (typeof globalThis.postMessage !== "function") define("postMessage", () => {});
  define("GLOBAL", { isWindow: () => false, isWorker: () => true, isShadowRealm: () => false });
  if (typeof location === "undefined") {  // a WorkerLocation's attributes, from a URL
    const u = new URL(setup.url), loc = {};
    for (const k of ["href", "origin", "protocol", "host", "hostname", "port", "pathname",
                     "search", "hash"]) loc[k] = u[k];
    loc.toString = () => u.href;
    define("location", Object.freeze(loc));
  }
  // common/sab.js reaches the SharedArrayBuffer constructor through a shared WebAssembly.Memory
  // (whatwg/html#5380): a runtime with SharedArrayBuffer and no WebAssembly gets a Memory whose
  // buffer is a SharedArrayBuffer, so the SharedArrayBuffer subtests test the API, not wasm
  if (typeof WebAssembly === "undefined" && typeof SharedArrayBuffer === "function")
    define("WebAssembly", { Memory: function Memory(d) {
      if (!d || !d.shared) throw new TypeError("WebAssembly is not available");
      this.buffer = new SharedArrayBuffer(d.initial * 65536);
    } });
  if (setup.fetch) define("fetch", function fetch(input) {
    const path = new URL(String(input), setup.url).pathname;
    if (!Object.prototype.hasOwnProperty.call(resources, path))
      return Promise.reject(new TypeError("not a resource of this test: " + path));
    const text = resources[path];
    if (typeof Response === "function") return Promise.resolve(new Response(text));
    return Promise.resolve({ ok: true, status: 200, text: async () => text,
                             json: async () => JSON.parse(text) });
  });
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });
  return { setup, shims, results, done, finish };
})();
"""
_REPORTER = """;
(function () {
  "use strict";
  const cut = (m) => (m === undefined || m === null ? "" : String(m).slice(0, %(cut)d));
  add_result_callback((t) => __wpt.results.push([String(t.name), t.status, cut(t.message)]));
  const timer = setTimeout(() => timeout(), __wpt.setup.budget_ms);
  add_completion_callback((tests, status) => {
    clearTimeout(timer);
    const seen = new Set(__wpt.results.map((r) => r[0]));  // a timed-out test has no result call
    for (const t of tests) if (!seen.has(String(t.name)))
      __wpt.results.push([String(t.name), t.status, cut(t.message)]);
    __wpt.finish([status.status, cut(status.message)]);
  });
})();
"""
_LOADED = """;
(function () {  // a service worker's harness waits for its install event (workerd's global is one)
  if (typeof ServiceWorkerGlobalScope === "function" && self instanceof ServiceWorkerGlobalScope)
    self.dispatchEvent(new Event("install"));
})();
"""
_FINALE = """;
__wpt.done.then((harness) => ({ harness, results: __wpt.results, shims: __wpt.shims }))
"""


def _resources(root: Path, file: WptFile, sources: Iterable[str]) -> dict[str, str]:
    """The test's own files it ``fetch``es by a literal name, keyed by URL path."""
    out: dict[str, str] = {}
    for source in sources:
        for m in _FETCHED.finditer(source):
            try:
                rel = _resolve(root, file.path, m.group(2))
            except ValueError:
                continue
            path = root / rel
            if path.stat().st_size <= _MAX_RESOURCE:
                out["/" + rel] = path.read_text(encoding="utf-8")
    return out


def program(root: Path, file: WptFile) -> str:
    """The one classic script a file runs as."""
    test = (root / file.path).read_text(encoding="utf-8")
    if file.worker_file:  # its importScripts lines: the helpers are pieces before it
        test = _IMPORT.sub(lambda m: "/* " + m.group(0).strip().replace("*/", "* /") + " */", test)
    helpers = [(root / s).read_text(encoding="utf-8") for s in file.scripts]
    harness = (root / "resources" / "testharness.js").read_text(encoding="utf-8")
    suffix = ".worker.html" if file.worker_file else ".any.worker.html"
    stem = file.path.removesuffix(".worker.js").removesuffix(".any.js")
    setup = {
        "url": f"http://web-platform.test:8000/{stem}{suffix}{file.variant}",
        "budget_ms": budget(file) * 1000,
        "fetch": not file.path.startswith("fetch/"),
    }
    resources = _resources(root, file, [test, *helpers]) if setup["fetch"] else {}
    prelude = _PRELUDE % {"setup": json.dumps(setup), "resources": json.dumps(resources)}
    # WPT's generated wrapper of an .any.js file for a worker ends with done(); a .worker.js
    # file calls it itself
    ending = [] if file.worker_file else ["done();"]
    pieces = [prelude, harness, _REPORTER % {"cut": _MESSAGE}, *helpers, test, *ending]
    pieces += [_LOADED, _FINALE]
    return "\n;\n".join(pieces)


def budget(file: WptFile) -> float:
    """The seconds a file has before the harness's ``timeout()`` ends it."""
    return float((_LONG_S if file.long else _NORMAL_S) * TIME_MULTIPLIER)


def backstop(file: WptFile) -> float:
    """The seconds after which a runner stops a file's run itself."""
    return budget(file) + _BACKSTOP_S


def interpret(file: WptFile, value: object, failure: str | None, seconds: float) -> FileResult:
    """A file's result from what its program gave: its value, or why it gave none."""
    out = FileResult(file, seconds=seconds)
    if not isinstance(value, dict):
        out.subtests[HARNESS] = ("FAIL", (failure or "no result")[:_MESSAGE])
        return out
    try:  # the program's value is the file's to shape (it can overwrite __wpt): check it
        for name, status, message in value.get("results", []):
            ok = isinstance(status, int) and 0 <= status < len(_STATUS)
            out.subtests[str(name)] = (_STATUS[status] if ok else str(status), str(message))
        harness, message = value.get("harness", [1, "no harness status"])
        if harness != 0:
            ok = isinstance(harness, int) and 0 <= harness < len(_HARNESS_STATUS)
            out.subtests[HARNESS] = (_HARNESS_STATUS[harness] if ok else str(harness), str(message))
        out.shims = [str(s) for s in value.get("shims", [])]
    except (TypeError, ValueError) as e:
        out.subtests[HARNESS] = ("FAIL", f"the run's value is not the reporter's: {e}")
    return out


def run_file(root: Path, file: WptFile) -> FileResult:
    """Run one file in a fresh sandbox; never raises for what the file did."""
    started = time.monotonic()
    run = quickjail.run_code_sync(
        program(root, file),
        kind="script",
        language="javascript",
        filename=f"<wpt:{file.id}>",
        memory_limit_bytes=MEMORY_LIMIT,
        timeout=backstop(file),
    )
    seconds = time.monotonic() - started
    if run.status == "success":
        return interpret(file, run.result, None, seconds)
    reason = run.error or run.reason or f"the run ended {run.status} without a result"
    return interpret(file, None, str(reason), seconds)


def run_files(root: Path, files: list[WptFile], workers: int = 2) -> list[FileResult]:
    """Run ``files`` on ``workers`` threads (quickjail runs are thread-safe), in order."""
    # the long ones first, so they overlap the rest
    order = sorted(range(len(files)), key=lambda i: not files[i].long)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = dict(zip(order, pool.map(lambda i: run_file(root, files[i]), order), strict=True))
    return [done[i] for i in range(len(files))]

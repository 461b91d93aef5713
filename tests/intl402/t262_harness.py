"""Run test262 files of SpiderMonkey's import in quickjail, one fresh sandbox per file.

A file runs as SpiderMonkey's ``jstests`` runs its import, with the import's harness: one
classic script made of a small prelude (``_PRELUDE``: what SpiderMonkey's own ``js/src/tests/
shell.js`` and shell give that the import's harness calls), the ``shell.js`` chain from the
import's root down to the file's folder (test262's ``includes``, folded in there by
SpiderMonkey), the file, and a finale whose value is the outcome. Decisions:

- **Frontmatter.** ``flags``: ``onlyStrict`` puts ``"use strict";`` first (the whole script is
  strict, as test262's own runners prepend it to the includes and the test; a file SpiderMonkey
  wrote as a strict variant has its ``'use strict';`` line after the ``// |reftest|`` line, and
  runs so too); ``noStrict`` and the default run sloppy, once (SpiderMonkey's import runs a
  default file in sloppy mode only); ``raw`` runs the file alone, nothing before or after;
  ``module`` would need the harness run as a script before the module in the same realm, which
  a quickjail run does not offer, so such a file is not run (listed with the reason;
  ``intl402`` has none); ``async`` waits for ``$DONE`` (within :data:`ASYNC_BUDGET_S`).
  ``negative``: the run must end with an uncaught error of that type (parse-phase ones: the
  script does not parse). ``features``: a file needing one of :data:`SKIPPED_FEATURES` is not
  run, with the reason. ``includes``: already in the folder's ``shell.js`` (checked: a file
  whose include is defined in no ``shell.js`` of its chain is not run, named).
- **Pass.** A positive synchronous file passes when the run succeeds, nothing called
  ``reportFailure`` (``$DONE(error)`` does), and the closing ``reportCompare(0, 0)`` the import
  added was reached and compared equal; an asynchronous one when ``$DONE()`` was called without
  a failure, once. Anything else (an uncaught error, ``$DONE`` never called, fuel, memory, the
  backstop) fails, with the reason.
- **The host.** ``$262`` is SpiderMonkey's ``test262-host.js`` (in the root ``shell.js``). What
  it takes from the shell that quickjail cannot give stays absent, so a test using it fails
  honestly: ``$262.createRealm`` (no ``newGlobal``), ``$262.evalScript``,
  ``$262.detachArrayBuffer``, the agents. It insists on an ``[[IsHTMLDDA]]`` object, which only
  an engine hook makes: the prelude's ``createIsHTMLDDA`` gives a plain object and
  ``$262.IsHTMLDDA`` is then replaced by a getter that throws (the feature is skipped anyway).
- **Limits.** :data:`MEMORY_LIMIT`, :data:`FUEL` and a wall-clock backstop per file;
  ``dynamic_code=True``: test262 takes ``eval`` and ``Function`` as given (a Worker refuses
  them; what is measured here is ``Intl``, not that policy).

"For the shipped locales": :func:`locale_literals` finds the language tags a test names in its
own source (see there for the rule); a file is *shipped-only* when every one of them has a
primary language in :data:`SHIPPED` (no literal at all: the default locale, also shipped-only).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import quickjail

__all__ = [
    "ASYNC_BUDGET_S",
    "BACKSTOP_S",
    "FUEL",
    "MEMORY_LIMIT",
    "SHIPPED",
    "SKIPPED_FEATURES",
    "FileResult",
    "Test262File",
    "backstop",
    "discover",
    "interpret",
    "locale_literals",
    "parse_file",
    "program",
    "run_file",
    "run_files",
    "top_of",
]

MEMORY_LIMIT = 256 * 2**20
FUEL = 20_000_000_000
"""Instructions per file: generous (seconds of guest time; a file parses its ~100 KB of harness
and runs briefly), so that a file that spins ends on a host fact rather than the backstop."""
ASYNC_BUDGET_S = 20.0
BACKSTOP_S = 60.0
_MESSAGE = 300  # characters of a failure's message kept

SHIPPED = frozenset(
    "en de fr es it pt nl ja zh ko ru ar hi tr pl und".split()
)  # issue 27's locales, plus undetermined
SKIPPED_FEATURES = {
    "Temporal": "QuickJS-ng has no Temporal",
    "Intl.DurationFormat": "not shipped: issue 27 does not claim Intl.DurationFormat",
    "Intl.Locale-info": "a proposal (Intl.Locale's weekInfo, hourCycles, ...) not shipped; "
    "SpiderMonkey's import skips it too",
    "cross-realm": "needs $262.createRealm: a sandbox has one realm and the host makes no other",
    "IsHTMLDDA": "needs an [[IsHTMLDDA]] object, which only a browser's engine hook makes",
    "ShadowRealm": "QuickJS-ng has no ShadowRealm",
}
"""Features whose files are not run, with the reason (they count in no rate)."""


def top_of(path: str) -> str:
    """``path``'s first folder under ``intl402`` (``intl402/NumberFormat``), or ``intl402``."""
    parts = path.split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


@dataclass(frozen=True)
class Test262File:
    """One test file and what its frontmatter asks for."""

    __test__ = False  # not a pytest test class, whatever its name
    path: str  # under the import's root: "intl402/Collator/length.js"
    flags: frozenset[str]
    features: tuple[str, ...]
    includes: tuple[str, ...]
    negative: str | None  # the error type a negative test must end with
    strict: bool
    locales: tuple[str, ...]

    @property
    def folder(self) -> str:
        """The folder the file is in."""
        return self.path.rsplit("/", 1)[0]

    @property
    def top(self) -> str:
        """The first folder under ``intl402`` (``intl402/NumberFormat``), or ``intl402``."""
        return top_of(self.path)

    @property
    def shipped_only(self) -> bool:
        """Whether every locale the file names is one of :data:`SHIPPED` (or it names none)."""
        return all(tag.split("-")[0].lower() in SHIPPED for tag in self.locales)


@dataclass
class FileResult:
    """What one file's run gave."""

    file: Test262File
    passed: bool
    message: str = ""
    seconds: float = 0.0


_FRONTMATTER = re.compile(r"/\*---(.*?)---\*/", re.S)
_KEY = re.compile(r"^([A-Za-z]+):\s*(.*)$")


def _frontmatter(source: str) -> dict[str, object]:
    """The keys of the YAML frontmatter that the runner reads: flow or block lists of words
    (``flags``, ``features``, ``includes``) and ``negative``'s ``type`` and ``phase``."""
    m = _FRONTMATTER.search(source)
    out: dict[str, object] = {}
    if m is None:
        return out
    lines = m.group(1).split("\n")
    i = 0
    while i < len(lines):
        key = _KEY.match(lines[i])
        i += 1
        if key is None:
            continue
        name, rest = key.group(1), key.group(2).strip()
        if name in ("flags", "features", "includes"):
            text = rest
            while text.startswith("[") and "]" not in text and i < len(lines):  # a wrapped list
                text += " " + lines[i].strip()
                i += 1
            items: list[str] = []
            if text.startswith("["):
                items = [w.strip() for w in text.strip("[] ").split(",") if w.strip()]
            else:  # a block list
                while i < len(lines) and lines[i].strip().startswith("- "):
                    items.append(lines[i].strip()[2:].strip())
                    i += 1
            out[name] = [w.split("#")[0].strip() for w in items]
        elif name == "negative":
            sub: dict[str, str] = {}
            while i < len(lines) and lines[i].startswith((" ", "\t")):
                kv = _KEY.match(lines[i].strip())
                if kv:
                    sub[kv.group(1)] = kv.group(2).strip()
                i += 1
            out[name] = sub
    return out


# A language tag as a string literal: language (2-3 letters), then subtags of 1-8 letters or
# digits separated by "-" (or "_", which tests use for invalid tags).
_EXTENSION_KEYS = frozenset(
    "ca cf co cu dx em fw hc ka kb kc kf kh kk kn kr ks kv lb lw ms mu nu rg sd ss tz va".split()
)  # UTS #35's Unicode extension (-u-) keys
_TAG = re.compile(r"""(["'])([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*)\1""")


def locale_literals(source: str) -> tuple[str, ...]:
    """The language tags a test names as string literals in its code (frontmatter left out).

    The rule: a string literal (single or double quotes) that is a well-formed tag shape, a
    primary language subtag of 2 or 3 letters followed by ``-``/``_``-separated subtags of 1 to 8
    letters or digits (``"en-US"``, ``"de-DE-u-co-phonebk"``, ``"zh_Hant"``), counts when it has
    a subtag after the language, or is a bare 2-letter language (``"ja"``) that is not also a
    Unicode extension key (``"nu"``, ``"ca"``, ``"kn"``: keys far more often than Corsican or
    Kannada in these tests). A bare 3-letter one is left out (``"day"``, ``"era"``, ``"USD"``
    are units, fields and currencies far more often than ISO 639-2 languages), as are strings
    built at run time (``getLocaleSupportInfo``'s); ``"und"`` is undetermined. The rule errs
    towards counting: a non-tag that has a tag's shape (``"ab"`` as an invalid option value)
    only takes its file out of the shipped-only subset.
    """
    code = _FRONTMATTER.sub("", source)
    found = []
    for m in _TAG.finditer(code):
        tag = m.group(2)
        if len(tag) == 3 and tag.isalpha() and tag.lower() != "und":
            continue
        if tag.lower() in _EXTENSION_KEYS:
            continue
        found.append(tag.replace("_", "-"))
    return tuple(dict.fromkeys(found))


_STRICT_PROLOGUE = re.compile(r"\A(?://[^\n]*\n)?'use strict';\n")
_DEFINED = re.compile(r"^// file: (\S+)$", re.M)


def parse_file(root: Path, path: str) -> Test262File:
    """A file's frontmatter and locale literals (``path`` is under ``root``)."""
    source = (root / path).read_text(encoding="utf-8")
    front = _frontmatter(source)
    flags = frozenset(str(f) for f in front.get("flags", []))  # type: ignore[attr-defined]
    negative = front.get("negative")
    return Test262File(
        path=path,
        flags=flags,
        features=tuple(str(f) for f in front.get("features", [])),  # type: ignore[attr-defined]
        includes=tuple(str(f) for f in front.get("includes", [])),  # type: ignore[attr-defined]
        negative=str(negative.get("type")) if isinstance(negative, dict) else None,
        strict="onlyStrict" in flags or bool(_STRICT_PROLOGUE.match(source)),
        locales=locale_literals(source),
    )


def _chain(root: Path, path: str) -> list[Path]:
    """The ``shell.js`` files from the root down to ``path``'s folder, those that exist."""
    parts = path.split("/")[:-1]
    folders = [root.joinpath(*parts[:i]) for i in range(len(parts) + 1)]
    return [f / "shell.js" for f in folders if (f / "shell.js").is_file()]


def _tests(root: Path, directory: str) -> Iterator[str]:
    for p in sorted((root / directory).rglob("*.js")):
        if p.name not in ("shell.js", "browser.js") and p.is_file():
            yield p.relative_to(root).as_posix()


def discover(root: Path, directory: str = "intl402") -> tuple[list[Test262File], dict[str, str]]:
    """The files under ``directory`` to run, and those not run with the reason."""
    runs, not_run = [], {}
    for path in _tests(root, directory):
        file = parse_file(root, path)
        skipped = [f for f in file.features if f in SKIPPED_FEATURES]
        if skipped:
            not_run[path] = "; ".join(f"{f}: {SKIPPED_FEATURES[f]}" for f in skipped)
            continue
        if "module" in file.flags:
            not_run[path] = "a module test: the import's harness is a script before it"
            continue
        if file.includes and "raw" not in file.flags:
            defined = set()
            for shell in _chain(root, path):
                defined |= set(_DEFINED.findall(shell.read_text(encoding="utf-8")))
            missing = [i for i in file.includes if i not in defined]
            if missing:
                not_run[path] = f"includes {', '.join(missing)}, in no shell.js of its chain"
                continue
        runs.append(file)
    return runs, not_run


_PRELUDE = """var __t262 = (function (global) {
  "use strict";
  // what SpiderMonkey's js/src/tests/shell.js and its shell give that the import's harness
  // (test262-host.js, $DONE) and the tests call
  const failures = [], log = typeof console === "object" ? console.log : () => {};
  let compared = 0, dones = 0, finish;
  const done = new Promise((resolve) => { finish = resolve; });
  const define = (name, value) =>
    Object.defineProperty(global, name, { value, writable: true, configurable: true });
  const cut = (s) => String(s).slice(0, %(cut)d);
  define("print", (...args) => log(...args));
  define("reportFailure", (message) => { failures.push(cut(message)); });
  define("reportCompare", (expected, actual, description) => {
    compared++;
    if (typeof expected !== typeof actual || expected != actual)
      failures.push(cut(`reportCompare: expected ${String(expected)}, got ${String(actual)}` +
                        (description ? ` (${description})` : "")));
  });
  // test262-host.js wants an [[IsHTMLDDA]] object; none can be made here (see afterShell)
  define("createIsHTMLDDA", () => ({}));
  return {
    afterShell() {
      if (typeof $262 === "object" && $262 !== null)
        Object.defineProperty($262, "IsHTMLDDA", {
          get() { throw new Error("no [[IsHTMLDDA]] object in quickjail"); },
          configurable: true,
        });
      const inner = global.$DONE;
      if (typeof inner === "function")
        global.$DONE = function $DONE(failure) {
          try { return inner(failure); } finally { dones++; finish(); }
        };
    },
    outcome() {
      return { failures: failures.slice(), compared, dones };
    },
    settled(ms) {
      let timer;
      const late = new Promise((resolve) => { timer = setTimeout(resolve, ms); });
      return Promise.race([done, late]).then(() => {
        clearTimeout(timer);
        return { failures: failures.slice(), compared, dones };
      });
    },
  };
})(globalThis);
"""


def program(root: Path, file: Test262File) -> str:
    """The one classic script a file runs as."""
    test = (root / file.path).read_text(encoding="utf-8")
    if "raw" in file.flags:
        return test
    pieces = ['"use strict";'] if file.strict else []
    pieces.append(_PRELUDE % {"cut": _MESSAGE})
    pieces += [shell.read_text(encoding="utf-8") for shell in _chain(root, file.path)]
    pieces += ["__t262.afterShell();", test]
    if "async" in file.flags:
        pieces.append(f"__t262.settled({int(ASYNC_BUDGET_S * 1000)})")
    else:
        pieces.append("__t262.outcome()")
    return "\n;\n".join(pieces)


def backstop(file: Test262File) -> float:
    """The seconds after which a runner stops a file's run itself."""
    return BACKSTOP_S + (ASYNC_BUDGET_S if "async" in file.flags else 0.0)


def interpret(
    file: Test262File, value: object, error: tuple[str, str] | None, seconds: float = 0.0
) -> FileResult:
    """A file's result from its run: the program's value, or the uncaught error's type and
    text (``error``; the type may be ``""`` when not known, the text says why)."""
    if file.negative is not None:
        if error is None:
            return FileResult(file, False, f"expected {file.negative}, nothing was thrown", seconds)
        ok = error[0] == file.negative
        message = "" if ok else f"expected {file.negative}, got {error[1]}"[:_MESSAGE]
        return FileResult(file, ok, message, seconds)
    if error is not None:
        return FileResult(file, False, error[1][:_MESSAGE], seconds)
    if "raw" in file.flags:
        return FileResult(file, True, "", seconds)
    if not isinstance(value, dict):
        message = f"the run's value is not an outcome: {value!r}"
        return FileResult(file, False, message[:_MESSAGE], seconds)
    failures, compared, dones = (value.get(k) for k in ("failures", "compared", "dones"))
    if not isinstance(failures, list) or not isinstance(compared, int):
        return FileResult(file, False, "the run's value is not the prelude's outcome", seconds)
    if failures:
        return FileResult(file, False, "; ".join(str(f) for f in failures)[:_MESSAGE], seconds)
    if "async" in file.flags:
        if dones != 1:
            return FileResult(file, False, f"$DONE called {dones} times, not once", seconds)
    elif compared < 1:
        return FileResult(file, False, "the closing reportCompare was not reached", seconds)
    return FileResult(file, True, "", seconds)


def _error_type(name: str, text: str) -> str:
    """The type of an uncaught error: its name, or what ``toString`` starts with (a thrown
    ``Test262Error`` is not an ``Error``: ``"Test262Error: message"``)."""
    if name:
        return name
    m = re.match(r"([A-Za-z_$][\w$]*): ", text)
    return m.group(1) if m else ""


def run_file(root: Path, file: Test262File) -> FileResult:
    """Run one file in a fresh sandbox; never raises for what the file did."""
    started = time.monotonic()
    run = quickjail.run_code_sync(
        program(root, file),
        kind="script",
        language="javascript",
        filename=f"<test262:{file.path}>",
        memory_limit_bytes=MEMORY_LIMIT,
        fuel=FUEL,
        timeout=backstop(file),
        dynamic_code=True,
    )
    seconds = time.monotonic() - started
    if run.status == "success":
        return interpret(file, run.result, None, seconds)
    if run.status == "error" and run.error is not None:
        text = str(run.error)
        if run.error.value is not None and not run.error.message:
            text = json.dumps(run.error.value, default=repr)[:_MESSAGE]
        return interpret(file, None, (_error_type(run.error.name, text), text), seconds)
    reason = f"the run ended {run.status}" + (f" ({run.reason})" if run.reason else "")
    return interpret(file, None, ("", reason), seconds)


def run_files(root: Path, files: list[Test262File], workers: int = 2) -> list[FileResult]:
    """Run ``files`` on ``workers`` threads (quickjail runs are thread-safe), in order."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda f: run_file(root, f), files))

"""The isolation stress test: the adversarial corpus and a fuzzer, run against a user's bridge.

:func:`run_stress` takes a *bridge configuration* — the ``imports``/``globals`` (and optionally
``output_limits``, ``quotas``, ``timeout``, ``memory_limit_bytes``) a deployment hands
to :func:`bridge.run_code` — and checks the host's invariants under attack:

``corpus``
    Every program of :data:`quickjail._corpus.CORPUS` runs once with the bridge. It must end
    with one of the statuses it declares, never produce the escape marker, keep the limits
    (logs, reports, host calls, guest memory), finish within the timeout plus a margin, and
    show no host path, environment value or canary secret.
``fuzz``
    Every bridged host function is called with hostile arguments drawn by hypothesis (wrong
    types, 1–5 MB strings, values nested 200 deep, lone surrogates, path tricks, huge ints,
    NaN/infinities, bytes, forged host-function markers, long argument lists), plus fixed
    path tricks aimed at a *canary*: a file holding a random secret, planted in a fresh
    temporary directory outside every :class:`bridge.ReadOnlyDir` root of the bridge. No
    exception may escape the run, the secret may never reach the program, and each run must
    stay within its time and memory bounds.
``host``
    After both phases: no thread the stress test did not find at the start is still alive
    (the sandbox's own worker pool excepted), and the process's resident memory grew by at
    most the guest memory limit plus a margin.

Host exceptions that a run records in ``CodeResult.host_errors`` are fine: the sandbox
handled them. What the function *returns* is not judged, only what crosses the boundary.

:class:`bridge.ReadOnlyDir` has no public attribute for its root, so the root is read from
the directory fd it holds (``ReadOnlyDir._fd``) through ``/proc/self/fd``; a public ``root``
attribute is used instead when a ReadOnlyDir has one.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import json
import math
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from quickjail import bridge, sandbox
from quickjail._corpus import CORPUS, ESCAPE_MARKER, CorpusCase

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = [
    "DEFAULT_EXAMPLES",
    "DEFAULT_TIMEOUT",
    "Phase",
    "PhaseSummary",
    "Progress",
    "StressConfigError",
    "StressReport",
    "TestCaseResult",
    "Violation",
    "load_bridge",
    "run_stress",
]

Phase = Literal["corpus", "fuzz", "host"]
ViolationKind = Literal[
    "escape",
    "canary",
    "leak",
    "outcome",
    "host-exception",
    "time",
    "memory",
    "limits",
    "threads",
    "hang",
]

DEFAULT_EXAMPLES: Final = 100
DEFAULT_TIMEOUT: Final = 2.0
DEFAULT_MEMORY: Final = 64 * 2**20
TIME_MARGIN: Final = 1.0  # seconds a run may take past its timeout
HARD_MARGIN: Final = 5.0  # past timeout + margin the watchdog stops waiting
RSS_MARGIN: Final = 256 * 2**20  # host RSS growth allowed on top of the guest memory limit
_THREAD_GRACE: Final = 3.0
_T = TypeVar("_T")
_SHOW: Final = 240
_CONFIG_KEYS: Final = frozenset(
    {"imports", "globals", "output_limits", "quotas", "timeout", "memory_limit_bytes"}
)
_POOL_THREAD: Final = "quickjail-worker"
_RUN_THREAD: Final = "quickjail-stress-run"


class StressConfigError(ValueError):
    """The bridge configuration (or the entry point naming it) cannot be used."""


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant.

    Attributes:
        phase: ``"corpus"``, ``"fuzz"`` or ``"host"``.
        case: The corpus case id, the fuzzed function (``imports.fs.readFile``) or
            ``"host-invariants"``.
        kind: What broke: ``escape``, ``canary``, ``leak``, ``outcome``, ``host-exception``,
            ``time``, ``memory``, ``limits``, ``threads`` or ``hang``.
        message: What happened, in one or two sentences.
        example: The arguments of the fuzzed call that broke it (``repr``, truncated).
    """

    phase: Phase
    case: str
    kind: ViolationKind
    message: str
    example: str | None = None

    def __str__(self) -> str:
        text = f"[{self.phase}] {self.case}: {self.kind}: {self.message}"
        return f"{text}\n    arguments: {self.example}" if self.example else text


@dataclass(frozen=True, slots=True)
class TestCaseResult:
    """One corpus case, one fuzzed function, or the host check: its runs and violations."""

    __test__ = False  # not a pytest test class

    phase: Phase
    name: str
    group: str
    runs: int
    duration_s: float
    violations: tuple[Violation, ...] = ()
    skipped: str | None = None

    @property
    def passed(self) -> bool:
        """True when nothing broke and the case ran."""
        return not self.violations and self.skipped is None


@dataclass(frozen=True, slots=True)
class PhaseSummary:
    """One row of the summary table."""

    phase: Phase
    cases: int
    passed: int
    violations: int
    skipped: int


@dataclass(frozen=True, slots=True)
class StressReport:
    """Everything a stress run found.

    Attributes:
        cases: One entry per corpus case, per fuzzed function and for the host check.
        seed: The hypothesis seed (pass it again to repeat the fuzzing).
        examples: Generated examples per fuzzed function.
        timeout: The timeout each run had, in seconds.
        memory_limit_bytes: The guest memory limit of each run.
        functions: The bridged host functions that were fuzzed.
        roots: The :class:`bridge.ReadOnlyDir` roots found in the bridge.
        canary: Where the canary file was planted (``None`` if it could not be placed
            outside every root).
        duration_s: Wall time of the whole stress run.
    """

    cases: tuple[TestCaseResult, ...]
    seed: int
    examples: int
    timeout: float
    memory_limit_bytes: int
    functions: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    canary: str | None = None
    duration_s: float = 0.0

    @property
    def violations(self) -> list[Violation]:
        """Every violation, in the order found."""
        return [v for c in self.cases for v in c.violations]

    @property
    def ok(self) -> bool:
        """True when no invariant broke."""
        return not self.violations

    def summary(self) -> list[PhaseSummary]:
        """One row per phase: cases, passed, violations, skipped."""
        rows = []
        for phase in ("corpus", "fuzz", "host"):
            cases = [c for c in self.cases if c.phase == phase]
            rows.append(
                PhaseSummary(
                    phase,
                    len(cases),
                    sum(c.passed for c in cases),
                    sum(len(c.violations) for c in cases),
                    sum(c.skipped is not None for c in cases),
                )
            )
        return rows

    def format_table(self) -> str:
        """The summary as a plain-text table."""
        head = ("phase", "cases", "passed", "violations", "skipped")
        rows = [
            (r.phase, str(r.cases), str(r.passed), str(r.violations), str(r.skipped))
            for r in self.summary()
        ]
        widths = [max(len(x[i]) for x in (head, *rows)) for i in range(len(head))]
        lines = [
            "  ".join(
                h.ljust(w) if i == 0 else h.rjust(w)
                for i, (h, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in (head, *rows)
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Raise :class:`AssertionError` listing the violations, if there are any."""
        found = self.violations
        if found:
            listed = "\n".join(f"  {v}" for v in found)
            raise AssertionError(
                f"quickjail stress found {len(found)} violation(s) (seed {self.seed}):\n{listed}"
            )

    def to_junit_xml(self) -> bytes:
        """The report as JUnit XML: one testcase per corpus case and per fuzzed function."""
        root = ET.Element(
            "testsuites",
            name="quickjail stress",
            tests=str(len(self.cases)),
            failures=str(sum(not c.passed and c.skipped is None for c in self.cases)),
            time=f"{self.duration_s:.3f}",
        )
        for phase in ("corpus", "fuzz", "host"):
            cases = [c for c in self.cases if c.phase == phase]
            suite = ET.SubElement(
                root,
                "testsuite",
                name=f"quickjail.stress.{phase}",
                tests=str(len(cases)),
                failures=str(sum(bool(c.violations) for c in cases)),
                errors="0",
                skipped=str(sum(c.skipped is not None for c in cases)),
                time=f"{sum(c.duration_s for c in cases):.3f}",
            )
            if phase == "fuzz":
                props = ET.SubElement(suite, "properties")
                for name, value in (("seed", self.seed), ("examples", self.examples)):
                    ET.SubElement(props, "property", name=name, value=str(value))
            for case in cases:
                tc = ET.SubElement(
                    suite,
                    "testcase",
                    classname=case.group,
                    name=_xml_text(case.name),
                    time=f"{case.duration_s:.3f}",
                )
                if case.skipped is not None:
                    ET.SubElement(tc, "skipped", message=_xml_text(case.skipped))
                if case.violations:
                    kinds = sorted({v.kind for v in case.violations})
                    first = case.violations[0]
                    failure = ET.SubElement(
                        tc,
                        "failure",
                        type=",".join(kinds),
                        message=_xml_text(
                            f"{len(case.violations)} violation(s): {first.kind}: {first.message}"
                        ),
                    )
                    failure.text = _xml_text("\n".join(str(v) for v in case.violations))
        ET.indent(root)
        return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))

    def write_junit(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_junit_xml` to ``path``."""
        Path(path).write_bytes(self.to_junit_xml())


def _xml_text(text: str) -> str:
    """Keep only characters XML 1.0 allows; escape the others as ``\\uXXXX``."""
    out = []
    for ch in text:
        o = ord(ch)
        if (
            o in (0x9, 0xA, 0xD)
            or 0x20 <= o <= 0xD7FF
            or 0xE000 <= o <= 0xFFFD
            or 0x10000 <= o <= 0x10FFFF
        ):
            out.append(ch)
        else:
            out.append(f"\\u{o:04x}")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress event: a phase starts (``done == 0``), a step ends, or a phase ends.

    Attributes:
        phase: The running phase.
        event: ``"start"``, ``"step"`` or ``"end"``.
        done: Steps finished in this phase (runs of the sandbox).
        total: Steps planned in this phase (an estimate for the fuzz phase).
        case: The case or function being run.
        violations: Violations found so far in the whole stress run.
    """

    phase: Phase
    event: Literal["start", "step", "end"]
    done: int
    total: int
    case: str = ""
    violations: int = 0


# ---------------------------------------------------------------- the bridge


def load_bridge(spec: str) -> dict[str, Any]:
    """Import a bridge factory named ``"package.module:callable"`` and call it.

    The current directory is put on ``sys.path`` first (as ``python -m`` does), so a module
    of the project under test is found from the console script too.

    Args:
        spec: ``module:attribute`` (the attribute may be dotted). A callable is called with
            no arguments; a mapping is used as it is.

    Returns:
        The bridge configuration: a dict with ``imports`` and/or ``globals``, and optionally
        ``output_limits``, ``quotas``, ``timeout`` and ``memory_limit_bytes``.

    Raises:
        StressConfigError: If the module cannot be imported, the attribute is missing, or the
            factory fails or returns something else than a mapping.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise StressConfigError(
            f"--bridge {spec!r} is not MODULE:CALLABLE; e.g. --bridge my_pkg.bridges:make"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise StressConfigError(
            f"cannot import {module_name!r} ({type(exc).__name__}: {exc}); check the module "
            "path and that it is importable from the current directory"
        ) from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise StressConfigError(f"{module_name!r} has no attribute {attr!r}") from None
    if callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise StressConfigError(
                f"the bridge factory {spec} raised {type(exc).__name__}: {exc}"
            ) from exc
    if not isinstance(obj, Mapping):
        raise StressConfigError(
            f"the bridge factory {spec} returned {type(obj).__name__}; it must return a dict "
            "with 'imports' and/or 'globals'"
        )
    return dict(obj)


@dataclass(frozen=True, slots=True)
class _Target:
    """A bridged host function and how JS reaches it."""

    label: str
    fn: Callable[..., Any]
    is_async: bool
    module: str | None  # the import's module name, or None for a global
    keys: tuple[str, ...]  # property path inside the module namespace or globalThis
    arity: int

    def prelude(self) -> str:
        """JS that binds the function to ``__qj_target``."""
        props = "".join(f"[{json.dumps(k)}]" for k in self.keys)
        if self.module is None:
            return f"const __qj_target = globalThis{props};\n"
        return (
            f"import * as __qj_ns from {json.dumps(self.module)};\n"
            f"const __qj_target = __qj_ns{props};\n"
        )


@dataclass(slots=True)
class _Probe:
    """Records what the bridged functions received (wrapped around each of them)."""

    calls: int = 0
    callable_args: list[str] = field(default_factory=list)
    base_exceptions: list[str] = field(default_factory=list)

    def saw(self, label: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        self.calls += 1
        if len(self.callable_args) < 5 and _has_callable((args, dict(kwargs))):
            self.callable_args.append(label)

    def raised(self, label: str, exc: BaseException) -> None:
        """A host function raised something that is not an ``Exception``."""
        if not isinstance(exc, Exception) and len(self.base_exceptions) < 5:
            self.base_exceptions.append(f"{label} raised {type(exc).__name__}")


def _has_callable(value: Any, depth: int = 0) -> bool:
    if depth > 300:
        return False
    if callable(value) and not isinstance(value, type):
        return True
    if isinstance(value, Mapping):
        return any(
            _has_callable(k, depth + 1) or _has_callable(v, depth + 1) for k, v in value.items()
        )
    if isinstance(value, list | tuple | set | frozenset):
        return any(_has_callable(v, depth + 1) for v in value)
    return False


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or (
        not inspect.isfunction(fn)
        and not inspect.ismethod(fn)
        and inspect.iscoroutinefunction(type(fn).__call__)
    )


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _wrap(fn: Callable[..., Any], label: str, probe: _Probe) -> Callable[..., Any]:
    """The function, recording its calls; signature and type hints stay visible."""
    if _is_async(fn):

        @functools.wraps(fn)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            probe.saw(label, args, kwargs)
            try:
                return await fn(*args, **kwargs)
            except BaseException as exc:
                probe.raised(label, exc)
                raise

        return call_async

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        probe.saw(label, args, kwargs)
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            probe.raised(label, exc)
            raise

    return call


def _expand(value: Any) -> Any:
    """A capability object (with ``exports()``) becomes its mapping, as the sandbox does."""
    exports = getattr(value, "exports", None)
    if callable(exports) and not isinstance(value, Mapping):
        out = exports()
        if isinstance(out, Mapping):
            return out
    return value


@dataclass(slots=True)
class _Bridge:
    """A user's bridge, with probes around its functions and what the stress test found."""

    imports: dict[str, Any]
    globals: dict[str, Any]
    output_limits: sandbox.OutputLimits
    quotas: bridge.Quotas
    targets: list[_Target]
    roots: list[str]
    probe: _Probe


def _analyse(config: Mapping[str, Any]) -> _Bridge:
    if not isinstance(config, Mapping):
        raise StressConfigError(
            f"the bridge configuration must be a dict, not {type(config).__name__}"
        )
    unknown = set(config) - _CONFIG_KEYS
    if unknown:
        raise StressConfigError(
            f"unknown bridge configuration key(s): {', '.join(sorted(map(str, unknown)))}; "
            f"allowed: {', '.join(sorted(_CONFIG_KEYS))}"
        )
    imports = config.get("imports") or {}
    glob = config.get("globals") or {}
    if not isinstance(imports, Mapping) or not isinstance(glob, Mapping):
        raise StressConfigError("'imports' and 'globals' must be mappings")
    output_limits = _typed(sandbox.OutputLimits, config, "output_limits")
    quotas = _typed(bridge.Quotas, config, "quotas")
    probe = _Probe()
    targets: list[_Target] = []
    roots: list[str] = []

    def note_root(obj: Any) -> None:
        if isinstance(obj, bridge.ReadOnlyDir):
            root = _readonlydir_root(obj)
            if root is not None and root not in roots:
                roots.append(root)

    def walk(value: Any, label: str, module: str | None, keys: tuple[str, ...], depth: int) -> Any:
        note_root(value)
        value = _expand(value)
        if callable(value) and not isinstance(value, type):
            note_root(getattr(value, "__self__", None))
            targets.append(_Target(label, value, _is_async(value), module, keys, _arity(value)))
            return _wrap(value, label, probe)
        if depth < 16 and isinstance(value, Mapping):
            return {
                k: walk(v, f"{label}.{k}", module, (*keys, str(k)), depth + 1)
                if isinstance(k, str)
                else v
                for k, v in value.items()
            }
        return value

    wrapped_imports = {
        name: walk(ns, f"imports.{name}", str(name), (), 0) for name, ns in imports.items()
    }
    wrapped_globals = {
        name: walk(v, f"globals.{name}", None, (str(name),), 0) for name, v in glob.items()
    }
    return _Bridge(wrapped_imports, wrapped_globals, output_limits, quotas, targets, roots, probe)


def _typed(cls: type[_T], config: Mapping[str, Any], key: str) -> _T:
    """A typed limits object from the configuration: an instance, a mapping of its fields, or
    absent (the defaults)."""
    value = config.get(key)
    try:
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls(**value)
    except (TypeError, ValueError) as exc:
        raise StressConfigError(f"{key!r}: {exc}") from None
    raise StressConfigError(f"{key!r} must be a {cls.__name__} or a mapping of its fields")


def _readonlydir_root(fs: bridge.ReadOnlyDir) -> str | None:
    """The host directory a :class:`bridge.ReadOnlyDir` exposes, if it can be learned.

    Uses its public ``root`` property (which refuses once the capability is closed).

    Args:
        fs: The capability.

    Returns:
        The absolute root path, or None when it is closed or cannot be resolved.
    """
    try:
        public = getattr(fs, "root", None)
    except bridge.FsError:
        return None  # closed
    if isinstance(public, str | os.PathLike):
        return os.path.realpath(os.fspath(public))
    fd = getattr(fs, "_fd", None)
    if not isinstance(fd, int):
        return None
    for link in (f"/proc/self/fd/{fd}", f"/dev/fd/{fd}"):
        with contextlib.suppress(OSError):
            target = os.readlink(link)
            if os.path.isabs(target):
                return target
    with contextlib.suppress(ImportError, OSError, AttributeError):
        import fcntl

        raw = fcntl.fcntl(fd, fcntl.F_GETPATH, b"\0" * 1024)  # type: ignore[attr-defined,unused-ignore]
        return os.fsdecode(raw.split(b"\0", 1)[0])
    return None


# ---------------------------------------------------------------- the canary


@dataclass(slots=True)
class _Canary:
    directory: str | None
    secret: str
    tricks: list[str]

    @property
    def file(self) -> str | None:
        return None if self.directory is None else os.path.join(self.directory, "CANARY")

    def close(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


_PATH_TRICKS: Final = (
    "../../etc/passwd",
    "/etc/passwd",
    "a\0b",
    "%2e%2e/%2e%2e/etc/passwd",
    "..",
    "../",
    "./..",
    "..\\..\\etc\\passwd",
    "//etc/passwd",
    "/proc/self/environ",
    "/proc/self/cmdline",
    "file:///etc/passwd",
    "~/.ssh/id_rsa",
    "C:\\Windows\\win.ini",
    "....//....//etc/passwd",
    "..%2f..%2fetc%2fpasswd",
    "a/../../b",
    ".",
    "/",
    "",
    " ",
    "\\\\?\\C:\\",
    "..;/",
    "\u2025/\u2025/etc/passwd",
    "\uff0e\uff0e/\uff0e\uff0e/etc/passwd",
    "%00",
    "\n",
    "x" * 5000,
)


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath(
            [os.path.realpath(path), os.path.realpath(root)]
        ) == os.path.realpath(root)
    except ValueError:
        return False


def _plant_canary(roots: Sequence[str]) -> _Canary:
    secret = f"QUICKJAIL-CANARY-{secrets.token_hex(16)}"
    tricks = list(_PATH_TRICKS)
    candidates = [tempfile.gettempdir(), os.path.expanduser("~"), os.getcwd()]
    for base in candidates:
        if any(_inside(base, r) for r in roots):
            continue
        try:
            directory = tempfile.mkdtemp(prefix="quickjail-stress-", dir=base)
        except OSError:
            continue
        file = os.path.join(directory, "CANARY")
        with open(file, "w", encoding="utf-8") as f:
            f.write(secret)
        rel = file.lstrip("/")
        tricks += [
            file,
            "file://" + file,
            "../" * 32 + rel,
            "./" + "../" * 32 + rel,
            "%2e%2e/" * 32 + rel,
            "..\\" * 32 + rel.replace("/", "\\"),
            os.path.relpath(file, os.getcwd()),
        ]
        for root in roots:
            tricks += [os.path.relpath(file, root), "./" + os.path.relpath(file, root)]
        return _Canary(directory, secret, list(dict.fromkeys(tricks)))
    return _Canary(None, secret, tricks)


# ---------------------------------------------------------------- sensitive text


def _host_strings(roots: Sequence[str], canary: _Canary) -> list[str]:
    """Host facts that must not appear in what the program sees."""
    found = {
        os.getcwd(),
        os.path.expanduser("~"),
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(sys.executable),
        *roots,
    }
    for module in (sandbox, bridge, sys.modules[__name__]):
        file = getattr(module, "__file__", None)
        if file:
            found.add(os.path.dirname(os.path.dirname(os.path.abspath(file))))
    if canary.directory is not None:
        found.add(canary.directory)
    found.update(v for v in os.environ.values() if len(v) >= 12)
    return sorted(s for s in found if len(s) >= 5 and s.strip("/"))


def _texts(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string (and bytes, as latin-1) inside a value that crossed the boundary."""
    if depth > 300:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes | bytearray | memoryview):
        yield bytes(value).decode("latin-1")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _texts(k, depth + 1)
            yield from _texts(v, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for v in value:
            yield from _texts(v, depth + 1)
    elif isinstance(value, sandbox.ErrorInfo):
        yield value.name
        yield value.message
        yield value.stack
        yield from _texts(value.value, depth + 1)
    elif isinstance(value, sandbox.LogEntry):
        yield from _texts(value.args, depth + 1)


def _result_texts(r: sandbox.CodeResult) -> list[str]:
    return [*_texts(r.result), *_texts(r.reports), *_texts(r.logs), *_texts(r.error)]


def _error_texts(r: sandbox.CodeResult) -> list[str]:
    """Error messages and stacks of a run, including the fuzz program's caught error."""
    caught = r.result if isinstance(r.result, Mapping) else {}
    return [*_texts(r.error), *_texts(r.logs), *_texts([caught.get("err"), caught.get("stack")])]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOW else f"{text[:_SHOW]}... ({len(text)} chars)"


# ---------------------------------------------------------------- running one program


@dataclass(slots=True)
class _Outcome:
    result: sandbox.CodeResult | None = None
    raised: BaseException | None = None
    refused: Exception | None = None  # run_code refused the options (nothing ran)
    wall: float = 0.0
    hung: bool = False


class _Runner:
    """Runs programs with the bridge, one at a time, each under a watchdog thread."""

    def __init__(self, b: _Bridge, timeout: float, memory: int, canary: _Canary) -> None:
        self.bridge = b
        self.timeout = timeout
        self.memory = memory
        self.canary = canary
        self.host_strings = _host_strings(b.roots, canary)
        self.hung = False
        self.max_rss_growth = 0
        self.rss_case = ""
        import psutil  # type: ignore[import-untyped,unused-ignore]

        self._process = psutil.Process()
        self.rss_baseline = self._rss()

    def _rss(self) -> int:
        return int(self._process.memory_info().rss)

    def run(self, source: str, execute: dict[str, Any] | None = None) -> _Outcome:
        options: dict[str, Any] = {
            "imports": self.bridge.imports,
            "globals": self.bridge.globals,
            "output_limits": self.bridge.output_limits,
            "quotas": self.bridge.quotas,
            "timeout": self.timeout,
            "memory_limit_bytes": self.memory,
            "language": "javascript",
        }
        if execute is not None:
            options["execute"] = execute
        try:
            execution = bridge.run_code(source, **options)
        except (TypeError, ValueError) as exc:  # TransferError is a TypeError
            return _Outcome(refused=exc)
        box: list[sandbox.CodeResult | BaseException] = []

        def drive() -> None:
            try:
                box.append(execution.run_sync())
            except BaseException as exc:  # reported as a violation by the caller
                box.append(exc)

        thread = threading.Thread(target=drive, name=_RUN_THREAD, daemon=True)
        start = time.perf_counter()
        thread.start()
        try:
            thread.join(self.timeout + TIME_MARGIN + HARD_MARGIN)
            if thread.is_alive():
                execution.terminate("quickjail stress watchdog")
                thread.join(HARD_MARGIN)
        except BaseException:
            execution.terminate("interrupted")
            raise
        wall = time.perf_counter() - start
        if thread.is_alive():
            self.hung = True
            return _Outcome(wall=wall, hung=True)
        out = box[0]
        if isinstance(out, BaseException):
            return _Outcome(raised=out, wall=wall)
        return _Outcome(result=out, wall=wall)

    def sample_rss(self, case: str) -> None:
        growth = self._rss() - self.rss_baseline
        if growth > self.max_rss_growth:
            self.max_rss_growth = growth
            self.rss_case = case

    def check(
        self,
        phase: Phase,
        case: str,
        outcome: _Outcome,
        inputs: str,
        example: str | None = None,
        *,
        errors_only: bool = False,
    ) -> list[Violation]:
        """The invariants every run shares.

        Args:
            phase: The phase the run belongs to.
            case: The case id or function label.
            outcome: What the run did.
            inputs: Everything the run was given (source, arguments): a host string found
                there is not a leak.
            example: The fuzzed arguments, for the report.
            errors_only: Look for host paths and environment values only in error texts
                (what a host function *returns* is its business; what it throws is not).
        """
        out: list[Violation] = []

        def add(kind: ViolationKind, message: str) -> None:
            out.append(Violation(phase, case, kind, message, example))

        if outcome.hung:
            add(
                "hang",
                f"the run did not end {self.timeout + TIME_MARGIN + 2 * HARD_MARGIN:g} s "
                "after it started, even after terminate(): a host function blocks",
            )
            return out
        if outcome.raised is not None:
            exc = outcome.raised
            add(
                "host-exception",
                f"an exception escaped the sandbox: {type(exc).__name__}: {_show(str(exc))}",
            )
            return out
        if outcome.wall > self.timeout + TIME_MARGIN:
            add(
                "time",
                f"the run took {outcome.wall:.2f} s, over its timeout "
                f"{self.timeout:g} s + {TIME_MARGIN:g} s",
            )
        r = outcome.result
        if r is None:
            return out
        limits, quotas = self.bridge.output_limits, self.bridge.quotas
        if r.metrics.peak_memory_bytes > self.memory:
            add(
                "memory",
                f"guest memory reached {r.metrics.peak_memory_bytes} bytes, over the "
                f"limit {self.memory}",
            )
        if len(r.logs) > limits.max_logs + 1:
            add("limits", f"{len(r.logs)} log entries, over max_logs {limits.max_logs}")
        if len(r.reports) > limits.max_reports:
            add("limits", f"{len(r.reports)} reports, over max_reports {limits.max_reports}")
        if r.metrics.host_calls > quotas.max_host_calls:
            add(
                "limits",
                f"{r.metrics.host_calls} host calls, over max_host_calls {quotas.max_host_calls}",
            )
        texts = _result_texts(r)
        if any(self.canary.secret in t for t in texts):
            add(
                "canary",
                "the canary's secret text reached the sandbox: a host function read "
                f"a file outside its root ({self.canary.file})",
            )
        scanned = _error_texts(r) if errors_only else texts
        for s in self.host_strings:
            if s not in inputs and any(s in t for t in scanned):
                add(
                    "leak",
                    f"host information reached the sandbox: {_show(s)} appears in what "
                    "the program saw",
                )
                break
        if _has_callable(
            [r.result, r.reports, [e.args for e in r.logs], r.error.value if r.error else None]
        ):
            add(
                "escape",
                "a host callable came out of the sandbox (a forged function marker "
                "was decoded as a function)",
            )
        probe = self.bridge.probe
        if probe.base_exceptions:
            found = sorted(set(probe.base_exceptions))
            probe.base_exceptions.clear()
            add(
                "host-exception",
                f"{'; '.join(found)}: not an Exception, so the sandbox "
                "cannot turn it into a JS error or keep it in host_errors",
            )
        if self.bridge.probe.callable_args:
            labels = sorted(set(self.bridge.probe.callable_args))
            self.bridge.probe.callable_args.clear()
            add("escape", f"a host function received a callable argument: {', '.join(labels)}")
        return out


# ---------------------------------------------------------------- corpus


def _prelude(case: CorpusCase, b: _Bridge, canary: _Canary) -> str:
    lines = [
        f"const __QJ_MODULES = {json.dumps(sorted(b.imports))};",
        f"const __QJ_GLOBALS = {json.dumps(sorted(b.globals))};",
        f"const __QJ_CANARY = {json.dumps(canary.file or '/nonexistent/CANARY')};",
    ]
    if case.uses_bridge:
        modules = sorted({t.module for t in b.targets if t.module is not None})
        alias = {m: f"__qj_m{i}" for i, m in enumerate(modules)}
        lines += [f"import * as {alias[m]} from {json.dumps(m)};" for m in modules]
        entries = []
        for t in b.targets:
            props = "".join(f"[{json.dumps(k)}]" for k in t.keys)
            base = "globalThis" if t.module is None else alias[t.module]
            entries.append(f"[{json.dumps(t.label)}, {base}{props}]")
        lines.append(f"const __QJ_FNS = [{', '.join(entries)}];")
    return "\n".join(lines) + "\n"


def _run_corpus(
    runner: _Runner, notify: Callable[[Progress], None], count: Callable[[], int]
) -> list[TestCaseResult]:
    results: list[TestCaseResult] = []
    total = len(CORPUS)
    notify(Progress("corpus", "start", 0, total, violations=count()))
    for i, case in enumerate(CORPUS):
        group = f"quickjail.stress.corpus.{case.category}"
        if runner.hung:
            results.append(
                TestCaseResult("corpus", case.id, group, 0, 0.0, skipped="a previous run hung")
            )
            continue
        source = _prelude(case, runner.bridge, runner.canary) + case.source
        outcome = runner.run(source)
        runner.sample_rss(f"corpus {case.id}")
        violations = runner.check("corpus", case.id, outcome, source)
        r = outcome.result
        if outcome.refused is not None:
            violations.append(
                Violation(
                    "corpus", case.id, "outcome", f"run_code refused the program: {outcome.refused}"
                )
            )
        if r is not None:
            if r.status not in case.expect:
                detail = r.reason if r.status == "terminated" else (str(r.error) if r.error else "")
                violations.append(
                    Violation(
                        "corpus",
                        case.id,
                        "outcome",
                        f"ended with status {r.status!r} ({_show(detail)}), expected "
                        f"{' or '.join(sorted(case.expect))}",
                    )
                )
            marks = sorted({t for t in _result_texts(r) if ESCAPE_MARKER in t})
            if marks:
                violations.append(
                    Violation(
                        "corpus", case.id, "escape", f"the program escaped: {_show(marks[0])}"
                    )
                )
        results.append(TestCaseResult("corpus", case.id, group, 1, outcome.wall, tuple(violations)))
        notify(Progress("corpus", "step", i + 1, total, case.id, count()))
    notify(Progress("corpus", "end", total, total, violations=count()))
    return results


# ---------------------------------------------------------------- fuzz


_FORGED: Final = (
    {"\x02fn": [0, False, "x"]},
    {"\x02fn": [0, True, "x"]},
    [{"\x02fn": [99999, False, ""]}],
    {"\x01": 1, "\x02": 2, "\x03": [0]},
)


def _nest_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _nest_dict(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _huge_text(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit.encode("utf-8", "surrogatepass")))


def _strategies(paths: Sequence[str], arity: int) -> SearchStrategy[list[Any]]:
    from hypothesis import strategies as st

    surrogates = st.one_of(
        st.text(st.characters(categories=["Cs"]), min_size=1, max_size=8),
        st.sampled_from(["a\ud800b", "\udfff", "\ud83d", "x\udc00\ud800y", "\ud800" * 1000]),
    )
    small = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(),
        st.text(max_size=40),
        st.binary(max_size=64),
        st.sampled_from(paths),
        surrogates,
    )
    large_int = st.one_of(
        st.integers(min_value=2**64, max_value=2**4096),
        st.integers(min_value=-(2**4096), max_value=-(2**64)),
    )
    special_float = st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324])
    huge_str = st.builds(
        _huge_text,
        st.sampled_from(["a", "../", "\u00e9", "\U0001f600", "\ud800", "\0"]),
        st.integers(min_value=1 << 20, max_value=5 << 20),
    )
    huge_bytes = st.integers(min_value=1 << 20, max_value=5 << 20).map(lambda n: b"\xff" * n)
    deep = st.one_of(
        st.integers(min_value=150, max_value=250).map(_nest_list),
        st.integers(min_value=150, max_value=250).map(_nest_dict),
    )
    nested = st.recursive(
        small,
        lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=10), c, max_size=5),
        max_leaves=12,
    )
    value = st.one_of(
        small,
        large_int,
        special_float,
        st.sampled_from(paths),
        huge_str,
        huge_bytes,
        deep,
        nested,
        st.sampled_from(_FORGED),
    )
    shapes = [st.lists(value, max_size=4), st.lists(small, min_size=64, max_size=1000)]
    if arity:
        shapes.insert(0, st.lists(value, min_size=arity, max_size=arity))
    return st.one_of(*shapes)


def _fuzz_program(target: _Target, json_args: bool) -> str:
    call = "const a = JSON.parse(text);\n  " if json_args else ""
    params = "text" if json_args else "...a"
    return (
        target.prelude() + f"export async function main({params}) {{\n  {call}"
        "try { return {ok: await __qj_target(...a)}; }\n"
        "  catch (e) { return {err: String(e), stack: String(e && e.stack)}; }\n}\n"
    )


def _fuzz_target(
    runner: _Runner, target: _Target, examples: int, seed: int, on_step: Callable[[], None]
) -> TestCaseResult:
    from hypothesis import HealthCheck, Verbosity, example, given, settings
    from hypothesis import Phase as HPhase
    from hypothesis import seed as hseed

    direct = _fuzz_program(target, json_args=False)
    via_json = _fuzz_program(target, json_args=True)
    violations: list[Violation] = []
    kinds: dict[str, int] = {}
    runs = 0
    start = time.perf_counter()

    def one(args: list[Any]) -> None:
        nonlocal runs
        if runner.hung:
            return
        outcome = runner.run(direct, {"fn": "main", "args": args})
        source = direct
        if outcome.refused is not None:
            try:
                text = json.dumps(args, allow_nan=True)
            except (TypeError, ValueError):
                on_step()
                return  # the host codec refused it and JSON cannot carry it: nothing ran
            outcome = runner.run(via_json, {"fn": "main", "args": [text]})
            source = via_json
            if outcome.refused is not None:
                on_step()
                return
        runs += 1
        runner.sample_rss(f"fuzz {target.label}")
        inputs = source + "\n" + "\n".join(_texts(args))
        for v in runner.check("fuzz", target.label, outcome, inputs, _show(args), errors_only=True):
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
            if kinds[v.kind] <= 3:  # a few examples of each kind are enough
                violations.append(v)
        on_step()

    test = given(_strategies(runner.canary.tricks, target.arity))(one)
    for trick in runner.canary.tricks:
        if runner.canary.secret not in trick:
            test = example([trick])(test)
            if target.arity >= 2:
                test = example([trick, "utf8"])(test)
    phases = [HPhase.explicit, HPhase.generate] if examples else [HPhase.explicit]
    test = settings(
        max_examples=max(1, examples),
        deadline=None,
        database=None,
        derandomize=False,
        phases=phases,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )(test)
    test = hseed(seed)(test)
    test()
    skipped = "a previous run hung" if runner.hung and runs == 0 else None
    return TestCaseResult(
        "fuzz",
        target.label,
        "quickjail.stress.fuzz",
        runs,
        time.perf_counter() - start,
        tuple(violations),
        skipped,
    )


def _run_fuzz(
    runner: _Runner,
    examples: int,
    seed: int,
    notify: Callable[[Progress], None],
    count: Callable[[], int],
) -> list[TestCaseResult]:
    targets = runner.bridge.targets
    explicit = sum(1 + (t.arity >= 2) for t in targets) * len(runner.canary.tricks)
    total = examples * len(targets) + explicit
    done = 0
    notify(Progress("fuzz", "start", 0, total, violations=count()))
    results = []
    for i, target in enumerate(targets):

        def step(label: str = target.label) -> None:
            nonlocal done
            done += 1
            notify(Progress("fuzz", "step", done, total, label, count()))

        results.append(_fuzz_target(runner, target, examples, seed + i, step))
    notify(Progress("fuzz", "end", done, max(done, total), violations=count()))
    return results


# ---------------------------------------------------------------- host invariants


def _other_threads(baseline: set[threading.Thread]) -> list[threading.Thread]:
    return [
        t
        for t in threading.enumerate()
        if t not in baseline and t.is_alive() and t.name != _POOL_THREAD
    ]


def _check_host(runner: _Runner, baseline: set[threading.Thread]) -> TestCaseResult:
    start = time.perf_counter()
    violations: list[Violation] = []
    deadline = time.monotonic() + _THREAD_GRACE
    left = _other_threads(baseline)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _other_threads(baseline)
    if left:
        names = ", ".join(sorted(t.name for t in left))
        violations.append(
            Violation(
                "host",
                "host-invariants",
                "threads",
                f"{len(left)} thread(s) still running after the stress test: {names}",
            )
        )
    bound = runner.memory + RSS_MARGIN
    if runner.max_rss_growth > bound:
        violations.append(
            Violation(
                "host",
                "host-invariants",
                "memory",
                f"the host process grew by {runner.max_rss_growth >> 20} MiB of resident memory "
                f"(first over the bound during {runner.rss_case}); the bound is the guest limit "
                f"plus {RSS_MARGIN >> 20} MiB = {bound >> 20} MiB",
            )
        )
    return TestCaseResult(
        "host",
        "host-invariants",
        "quickjail.stress.host",
        1,
        time.perf_counter() - start,
        tuple(violations),
    )


# ---------------------------------------------------------------- entry point


def run_stress(
    bridge_config: Mapping[str, Any],
    *,
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = None,
    timeout: float | None = None,
    memory_limit_bytes: int | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> StressReport:
    """Run the corpus and the fuzzer against a bridge and check the host's invariants.

    Args:
        bridge_config: ``{"imports": ..., "globals": ...}`` as given to
            :func:`bridge.run_code`, optionally with ``output_limits``, ``quotas``, ``timeout`` and
            ``memory_limit_bytes``.
        examples: Generated hypothesis examples per bridged host function (fixed path tricks
            aimed at the canary are tried on top of these).
        seed: The hypothesis seed; random (and recorded in the report) when None.
        timeout: Each run's timeout in seconds; default: the configuration's, else 2 s.
        memory_limit_bytes: Each run's guest memory limit; default: the configuration's,
            else 64 MiB.
        progress: Called with a :class:`Progress` as phases start, advance and end.

    Returns:
        The report; :meth:`StressReport.assert_ok` raises when an invariant broke.

    Raises:
        StressConfigError: If the configuration cannot be used.
        ImportError: If hypothesis is not installed (the ``stress`` extra).
    """
    import hypothesis  # noqa: F401  (fail before any work when the extra is missing)

    if not isinstance(examples, int) or isinstance(examples, bool) or examples < 0:
        raise StressConfigError("examples must be a non-negative int")
    b = _analyse(bridge_config)
    eff_timeout = timeout if timeout is not None else bridge_config.get("timeout")
    eff_timeout = DEFAULT_TIMEOUT if eff_timeout is None else eff_timeout
    eff_memory = (
        memory_limit_bytes
        if memory_limit_bytes is not None
        else bridge_config.get("memory_limit_bytes")
    )
    eff_memory = DEFAULT_MEMORY if eff_memory is None else eff_memory
    if seed is None:
        seed = secrets.randbits(32)
    notify = progress or (lambda _event: None)
    start = time.perf_counter()
    canary = _plant_canary(b.roots)
    try:
        try:  # checks the options and loads the engine before the baselines are taken
            bridge.run_code_sync(
                "export default 1",
                timeout=eff_timeout,
                memory_limit_bytes=eff_memory,
                imports=b.imports,
                globals=b.globals,
                output_limits=b.output_limits,
                quotas=b.quotas,
            )
        except (TypeError, ValueError) as exc:
            raise StressConfigError(str(exc)) from None
        baseline = set(threading.enumerate())
        runner = _Runner(b, float(eff_timeout), int(eff_memory), canary)
        cases: list[TestCaseResult] = []

        def count() -> int:
            return sum(len(c.violations) for c in cases)

        cases += _run_corpus(runner, notify, count)
        cases += _run_fuzz(runner, examples, seed, notify, count)
        notify(Progress("host", "start", 0, 1, violations=count()))
        cases.append(_check_host(runner, baseline))
        notify(Progress("host", "end", 1, 1, "host-invariants", count()))
    finally:
        canary.close()
    return StressReport(
        cases=tuple(cases),
        seed=seed,
        examples=examples,
        timeout=float(eff_timeout),
        memory_limit_bytes=int(eff_memory),
        functions=tuple(t.label for t in b.targets),
        roots=tuple(b.roots),
        canary=canary.file,
        duration_s=time.perf_counter() - start,
    )

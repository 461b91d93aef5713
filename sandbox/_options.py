"""The options of one run, checked once, before anything runs.

:func:`check_options` turns the keyword arguments of ``run_code`` into a frozen
:class:`RunOptions`, raising ``TypeError``/``ValueError`` with the option's name for anything
a caller got wrong. It holds only what the caller chose (the execute arguments as the value
message they were encoded to when ``run_code`` was called: a snapshot, encoded once); what is
derived from it (erased TypeScript, encoded host data) is the
:class:`~quickjail.sandbox._program.Program`.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Callable, Mapping
from typing import Any, Final

from quickjail.sandbox import _values
from quickjail.sandbox._limits import OutputLimits
from quickjail.sandbox.host import HostTable, Kind, Language

__all__ = ["RunOptions", "check_options"]

MIN_MEMORY = 8 * 2**20
MAX_MEMORY = 4 * 2**30 - 2**16
_DEFAULT_LIMITS = OutputLimits()


class RunOptions:
    """What the caller chose for one run, checked (see ``run_code`` for each field).

    Read-only by contract (``Final``), and a plain class rather than a frozen dataclass:
    building a dataclass at import costs about 2 ms of every process's first run.
    """

    __slots__ = (
        "args_message",
        "deterministic",
        "dynamic_code",
        "filename",
        "fn",
        "fuel",
        "host",
        "kind",
        "language",
        "memory_limit_bytes",
        "modules",
        "output_limits",
        "report",
        "seed",
        "source",
        "timeout",
        "timeout_includes_host_calls",
    )

    def __init__(
        self,
        *,
        source: str,
        fn: str,
        args_message: _values.Message | None,
        kind: Kind,
        language: Language,
        filename: str,
        modules: Mapping[str, str],
        host: HostTable | None,
        report: Callable[[Any], Any] | None,
        memory_limit_bytes: int,
        timeout: float | None,
        timeout_includes_host_calls: bool,
        fuel: int | None,
        dynamic_code: bool,
        deterministic: bool,
        seed: int | None,
        output_limits: OutputLimits,
    ) -> None:
        self.source: Final = source
        self.fn: Final = fn
        self.args_message: Final = args_message  # execute["args"] encoded; None without args
        self.kind: Final = kind
        self.language: Final = language
        self.filename: Final = filename
        self.modules: Final = modules  # graph keys (resolved against the entry) → sources
        self.host: Final = host
        self.report: Final = report
        self.memory_limit_bytes: Final = memory_limit_bytes
        self.timeout: Final = timeout
        self.timeout_includes_host_calls: Final = timeout_includes_host_calls
        self.fuel: Final = fuel
        self.dynamic_code: Final = dynamic_code
        self.deterministic: Final = deterministic
        self.seed: Final = seed
        self.output_limits: Final = output_limits

    def with_timeout(self, timeout: float) -> RunOptions:
        """A copy with another timeout: what is left of this one after preparing the run."""
        fields = {name: getattr(self, name) for name in RunOptions.__slots__}
        fields["timeout"] = timeout
        return RunOptions(**fields)


def check_options(
    source: Any,
    *,
    execute: Mapping[str, Any] | None,
    kind: Any,
    language: Any,
    filename: Any,
    modules: Any,
    host: HostTable | None,
    report: Any,
    memory_limit_bytes: Any,
    timeout: Any,
    timeout_includes_host_calls: Any,
    fuel: Any,
    dynamic_code: Any,
    deterministic: Any,
    seed: Any,
    output_limits: Any,
) -> RunOptions:
    """Check every option and return them frozen; raise TypeError/ValueError naming the one
    that is wrong."""
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, not {type(source).__name__}")
    if kind not in ("module", "script", "auto"):
        raise ValueError(f"kind must be 'module', 'script' or 'auto', not {kind!r}")
    fn, args_message = _execute(execute, kind)
    if language not in ("javascript", "typescript"):
        raise ValueError(f"language must be 'javascript' or 'typescript', not {language!r}")
    if not isinstance(filename, str) or not filename or "\0" in filename:
        raise TypeError("filename must be a non-empty str without NUL")
    if report is not None and not callable(report):
        raise TypeError("report must be callable")
    if output_limits is None:
        output_limits = _DEFAULT_LIMITS
    elif not isinstance(output_limits, OutputLimits):
        raise TypeError("output_limits must be a sandbox.OutputLimits")
    graph = _modules(modules, filename)
    if host is not None and (shared := sorted(set(graph) & set(host.modules))):
        # each load is answered from its specifier's namespace, and QuickJS knows one module
        # per name: a graph module named like an import could not be imported beside it
        raise ValueError(f"modules and imports both name the module {shared[0]!r}")
    return RunOptions(
        source=source,
        fn=fn,
        args_message=args_message,
        kind=kind,
        language=language,
        filename=filename,
        modules=graph,
        host=host,
        report=report,
        memory_limit_bytes=_memory(memory_limit_bytes),
        timeout=_timeout(timeout),
        timeout_includes_host_calls=_flag(
            "timeout_includes_host_calls", timeout_includes_host_calls
        ),
        fuel=_fuel(fuel),
        dynamic_code=_flag("dynamic_code", dynamic_code),
        deterministic=_flag("deterministic", deterministic),
        seed=_seed(seed),
        output_limits=output_limits,
    )


def _execute(execute: Any, kind: str) -> tuple[str, _values.Message | None]:
    """The export to run and its arguments, encoded here once: refused before any run, and
    a snapshot of what they were when ``run_code`` was called."""
    if execute is None:
        return "default", None
    if not isinstance(execute, Mapping):
        raise TypeError("execute must be a mapping like {'fn': 'main', 'args': [...]}")
    extra = set(execute) - {"fn", "args"}
    if extra:
        raise TypeError(f"unknown execute key(s): {', '.join(sorted(map(str, extra)))}")
    fn = execute.get("fn", "default")
    if not isinstance(fn, str) or not fn:
        raise TypeError("execute['fn'] must be a non-empty str")
    if kind == "script" and "fn" in execute:
        raise ValueError("execute['fn'] needs kind='module': a script has no exports")
    if "args" not in execute:
        return fn, None
    args = execute["args"]
    if not isinstance(args, list | tuple):
        raise TypeError("execute['args'] must be a list")
    return fn, _values.encode_message(list(args), path="execute.args")


def _modules(modules: Any, filename: str) -> dict[str, str]:
    if modules is None:
        return {}
    if not isinstance(modules, Mapping):
        raise TypeError("modules must be a mapping of relative paths to sources")
    base = posixpath.dirname(filename) if "/" in filename else ""
    out: dict[str, str] = {}
    for spec, src in modules.items():
        if not isinstance(spec, str) or not spec.startswith("./"):
            raise ValueError(f"module keys are relative paths starting with './', not {spec!r}")
        if not isinstance(src, str):
            raise TypeError(f"the source of module {spec!r} must be a str")
        key = posixpath.normpath(posixpath.join(base, spec[2:]) if base else spec[2:])
        if key.startswith("..") or key.startswith("/"):
            raise ValueError(f"module {spec!r} escapes the module graph")
        out[key] = src
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _memory(value: Any) -> int:
    if not _is_int(value):
        raise TypeError("memory_limit_bytes must be an int")
    if not MIN_MEMORY <= value <= MAX_MEMORY:
        raise ValueError(f"memory_limit_bytes must be between {MIN_MEMORY} and {MAX_MEMORY}")
    return int(value)


def _timeout(value: Any) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError("timeout must be a number of seconds or None")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError("timeout must be a positive finite number of seconds")
    return float(value)


def _fuel(value: Any) -> int | None:
    if value is not None and (not _is_int(value) or value <= 0):
        raise TypeError("fuel must be a positive int (instruction budget units) or None")
    return value  # type: ignore[no-any-return]


def _seed(value: Any) -> int | None:
    if value is not None and (not _is_int(value) or not 0 <= value < 2**64):
        raise TypeError("seed must be an int in [0, 2**64)")
    return value  # type: ignore[no-any-return]


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool")
    return value

"""The public entry points: :class:`Sandbox`, :func:`run_code` and :func:`run_code_sync`."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import posixpath
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from quickjail.sandbox import _engine, _values
from quickjail.sandbox._errors import SandboxClosedError
from quickjail.sandbox._hostfn import build_validator
from quickjail.sandbox._limits import Limits
from quickjail.sandbox._result import CodeResult, ErrorInfo
from quickjail.sandbox._run import CodeExecution, HostFunction, RunOptions
from quickjail.sandbox._typescript import TypeScriptError as _TypeScriptError

__all__ = ["Sandbox", "run_code", "run_code_sync", "warm_up"]

_MIN_MEMORY = 8 * 2**20
_MAX_MEMORY = 4 * 2**30 - 2**16
_OPTIONS = frozenset(
    {
        "execute",
        "kind",
        "filename",
        "report",
        "memory_limit_bytes",
        "timeout",
        "dynamic_code",
        "imports",
        "globals",
        "modules",
        "language",
        "seed",
        "deterministic",
        "fuel",
        "limits",
        "timeout_includes_host_calls",
    }
)


class Sandbox:
    """Process-level configuration for runs; every run still gets a fresh instance.

    Args:
        cache_dir: where compiled guest modules are cached (default: ``$QUICKJAIL_CACHE_DIR``
            or the user cache dir).
        defaults: default values for run options (for example ``{"timeout": 5}``).

    A Sandbox holds no per-run state. ``close()`` only stops new runs from this object; the
    process-wide engine stays for other Sandboxes.
    """

    def __init__(
        self, *, cache_dir: str | Path | None = None, defaults: Mapping[str, Any] | None = None
    ) -> None:
        unknown = set(defaults or {}) - _OPTIONS
        if unknown:
            raise TypeError(f"unknown default option(s): {', '.join(sorted(unknown))}")
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._defaults = dict(defaults or {})
        self._closed = False

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Refuse further runs from this Sandbox (idempotent)."""
        self._closed = True

    def warm_up(self) -> None:
        """Load the engine and the compiled module now instead of on the first run."""
        _engine.get_engine(self._cache_dir)

    def run_code(self, source: str, **options: Any) -> CodeExecution:
        """Prepare a run; await the returned handle to execute it. See DESIGN §1 for options."""
        if self._closed:
            raise SandboxClosedError("this Sandbox is closed")
        opts = self._options(source, options)
        return CodeExecution(
            _engine.get_engine(self._cache_dir, metered=opts.fuel is not None), opts
        )

    def run_code_sync(self, source: str, **options: Any) -> CodeResult:
        """Run to completion from synchronous code and return the result."""
        return self.run_code(source, **options).run_sync()

    # ------------------------------------------------------------ option checking

    def _options(self, source: Any, given: dict[str, Any]) -> RunOptions:
        unknown = set(given) - _OPTIONS
        if unknown:
            raise TypeError(f"unknown option(s): {', '.join(sorted(unknown))}")
        o = {**self._defaults, **given}
        if not isinstance(source, str):
            raise TypeError(f"source must be a str, not {type(source).__name__}")

        execute = o.get("execute")
        fn, args = "default", None
        if execute is not None:
            if not isinstance(execute, Mapping):
                raise TypeError("execute must be a mapping like {'fn': 'main', 'args': [...]}")
            extra = set(execute) - {"fn", "args"}
            if extra:
                raise TypeError(f"unknown execute key(s): {', '.join(sorted(extra))}")
            fn = execute.get("fn", "default")
            if not isinstance(fn, str) or not fn:
                raise TypeError("execute['fn'] must be a non-empty str")
            if "args" in execute:
                a = execute["args"]
                if not isinstance(a, list | tuple):
                    raise TypeError("execute['args'] must be a list")
                args = list(a)
                _values.encode(args, path="execute.args")  # refuse early, before any run

        kind = o.get("kind", "module")
        if kind not in ("module", "script"):
            raise ValueError(f"kind must be 'module' or 'script', not {kind!r}")
        if kind == "script" and execute is not None and "fn" in execute:
            raise ValueError("execute['fn'] needs kind='module': a script has no exports")

        filename = o.get("filename", "<run_code>")
        if not isinstance(filename, str) or not filename or "\0" in filename:
            raise TypeError("filename must be a non-empty str without NUL")

        report = o.get("report")
        if report is not None and not callable(report):
            raise TypeError("report must be callable")

        mem = o.get("memory_limit_bytes", 64 * 2**20)
        if not isinstance(mem, int) or isinstance(mem, bool):
            raise TypeError("memory_limit_bytes must be an int")
        if not _MIN_MEMORY <= mem <= _MAX_MEMORY:
            raise ValueError(f"memory_limit_bytes must be between {_MIN_MEMORY} and {_MAX_MEMORY}")

        timeout = o.get("timeout")
        if timeout is not None:
            if not isinstance(timeout, int | float) or isinstance(timeout, bool):
                raise TypeError("timeout must be a number of seconds or None")
            if not (timeout > 0 and math.isfinite(timeout)):
                raise ValueError("timeout must be a positive finite number of seconds")

        dynamic = o.get("dynamic_code", False)
        if not isinstance(dynamic, bool):
            raise TypeError("dynamic_code must be a bool")

        seed = o.get("seed")
        if seed is not None and (
            not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64
        ):
            raise TypeError("seed must be an int in [0, 2**64)")

        deterministic = o.get("deterministic", False)
        if not isinstance(deterministic, bool):
            raise TypeError("deterministic must be a bool")
        fuel = o.get("fuel")
        if fuel is not None and (not isinstance(fuel, int) or isinstance(fuel, bool) or fuel <= 0):
            raise TypeError("fuel must be a positive int (instruction budget units) or None")
        limits = Limits.coerce(o.get("limits"))
        tih = o.get("timeout_includes_host_calls", True)
        if not isinstance(tih, bool):
            raise TypeError("timeout_includes_host_calls must be a bool")

        language = o.get("language", "typescript")
        if language not in ("javascript", "typescript"):
            raise ValueError(f"language must be 'javascript' or 'typescript', not {language!r}")

        functions: list[HostFunction] = []

        def register(fn: Callable[..., Any], path: str) -> tuple[int, bool]:
            is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
                type(fn).__call__ if not inspect.isfunction(fn) else None
            )
            label = path.replace("imports[", "").replace("globals[", "").replace("]", "")
            label = label.replace("'", "")
            functions.append(
                HostFunction(len(functions), fn, is_async, label, build_validator(fn, label))
            )
            return len(functions) - 1, is_async

        host_modules: dict[str, bytes] = {}
        imports = o.get("imports") or {}
        if not isinstance(imports, Mapping):
            raise TypeError("imports must be a mapping of module names to namespaces")
        for name, ns in imports.items():
            if not isinstance(name, str) or not name or name.startswith((".", "/")):
                raise ValueError(f"import names are bare specifiers, not {name!r}")
            ns = _namespace(ns, f"imports[{name!r}]")
            host_modules[name] = _values.encode(ns, path=f"imports[{name!r}]", functions=register)

        glob = o.get("globals") or {}
        if not isinstance(glob, Mapping):
            raise TypeError("globals must be a mapping of names to values")
        for name in glob:
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"global names must be identifiers, not {name!r}")
        globals_message = (
            _values.encode(
                {k: _expand(v, f"globals[{k!r}]") for k, v in glob.items()},
                path="globals",
                functions=register,
            )
            if glob
            else b""
        )

        modules_in = o.get("modules") or {}
        if not isinstance(modules_in, Mapping):
            raise TypeError("modules must be a mapping of relative paths to sources")
        base = posixpath.dirname(filename) if "/" in filename else ""
        modules: dict[str, str] = {}
        for spec, src in modules_in.items():
            if not isinstance(spec, str) or not spec.startswith("./"):
                raise ValueError(f"module keys are relative paths starting with './', not {spec!r}")
            if not isinstance(src, str):
                raise TypeError(f"the source of module {spec!r} must be a str")
            key = (
                posixpath.normpath(posixpath.join(base, spec[2:]))
                if base
                else posixpath.normpath(spec[2:])
            )
            if key.startswith("..") or key.startswith("/"):
                raise ValueError(f"module {spec!r} escapes the module graph")
            modules[key] = src

        pre_error: ErrorInfo | None = None
        user_source = source
        try:
            if language == "typescript":
                source = _strip(source, filename)
            for key, src in modules.items():
                if _is_typescript(key, language):
                    modules[key] = _strip(src, key)
        except _TypeScriptError as exc:
            pre_error = ErrorInfo(
                "SyntaxError",
                exc.message,
                f"    at {exc.filename}:{exc.line}:{exc.column}\n",
                exc.line,
                exc.column,
                exc.filename,
            )

        build_id = _engine.get_engine(self._cache_dir).guest.build_id

        def content_id() -> str:
            digest = hashlib.sha256(build_id.encode())
            digest.update(
                json.dumps(
                    {
                        "source": source,
                        "kind": kind,
                        "fn": fn,
                        "filename": filename,
                        "language": language,
                        "modules": modules,
                        "dynamic": dynamic,
                        "imports": sorted((k, v.hex()) for k, v in host_modules.items()),
                        "globals": globals_message.hex(),
                        "deterministic": deterministic,
                        "seed": seed,
                        "fuel": fuel,
                    },
                    sort_keys=True,
                    ensure_ascii=False,
                ).encode("utf-8", "surrogatepass")
            )
            return digest.hexdigest()

        return RunOptions(
            source=source,
            kind=kind,
            fn=fn,
            args=args,
            filename=filename,
            report=report,
            memory_limit_bytes=mem,
            timeout=float(timeout) if timeout is not None else None,
            dynamic_code=dynamic,
            seed=seed,
            modules=modules,
            host_modules=host_modules,
            globals_message=globals_message,
            functions=functions,
            content_id=content_id,
            pre_error=pre_error,
            user_source=user_source,
            deterministic=deterministic,
            fuel=fuel,
            limits=limits,
            timeout_includes_host_calls=tih,
        )


_TS_SUFFIXES = (".ts", ".mts", ".cts")
_JS_SUFFIXES = (".js", ".mjs", ".cjs")


def _is_typescript(key: str, language: str) -> bool:
    if key.endswith(_TS_SUFFIXES):
        return True
    if key.endswith(_JS_SUFFIXES):
        return False
    return language == "typescript"


@functools.lru_cache(maxsize=512)
def _strip(source: str, filename: str) -> str:
    from quickjail.sandbox._typescript import strip_types

    return strip_types(source, filename=filename)


def _namespace(ns: Any, path: str) -> Mapping[str, Any]:
    ns = _expand(ns, path)
    if not isinstance(ns, Mapping):
        raise TypeError(f"{path} must be a mapping of export names to values")
    return ns


def _expand(value: Any, path: str) -> Any:
    """A capability object (with ``exports()``) becomes its mapping of functions."""
    exports = getattr(value, "exports", None)
    if callable(exports) and not isinstance(value, Mapping):
        out = exports()
        if not isinstance(out, Mapping):
            raise TypeError(f"{path}.exports() must return a mapping")
        return out
    return value


_default = Sandbox()


def warm_up() -> None:
    """Load the engine and compile (or load the cached) guest module now, not on first run."""
    _default.warm_up()


def run_code(source: str, **options: Any) -> CodeExecution:
    """Prepare a run on the default :class:`Sandbox`; ``await`` the handle to execute it."""
    return _default.run_code(source, **options)


def run_code_sync(source: str, **options: Any) -> CodeResult:
    """Run on the default :class:`Sandbox` from synchronous code."""
    return _default.run_code_sync(source, **options)

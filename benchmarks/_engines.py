"""The engines under comparison: quickjail, and the optional peers (``pip install .[bench]``).

Every helper here does the same unit of work on its engine: a fresh sandbox or context, the
code, the value back in Python. Engines are imported lazily: a missing peer costs nothing but
its column (``n/a``), and a child process measuring one engine loads only that one.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quickjail import sandbox
__all__ = [
    "NG",
    "PEERS",
    "QUICKJAIL",
    "RS",
    "BenchFailure",
    "ng_eval",
    "qj",
    "qj_async",
    "rs_eval",
    "rs_eval_async",
    "versions",
]

QUICKJAIL = "quickjail"
NG = "quickjs-ng"
RS = "quickjs-rs"
PEERS: tuple[str, ...] = (NG, RS)

# distribution name -> import name, for the version header and availability
_DISTRIBUTIONS = {QUICKJAIL: "quickjail", NG: "quickjs-ng", RS: "quickjs-rs"}


class BenchFailure(Exception):
    """A run that did not produce the expected value (a bug, not a slow run)."""


def versions() -> dict[str, str | None]:
    """Installed versions of quickjail, wasmtime and the peers (None when missing)."""
    out: dict[str, str | None] = {}
    for name, dist in {**_DISTRIBUTIONS, "wasmtime": "wasmtime", "anyio": "anyio"}.items():
        try:
            out[name] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


# ------------------------------------------------------------------ quickjail


def _checked(result: sandbox.CodeResult) -> Any:
    if result.status != "success":
        err = result.error
        detail = f"{err.name}: {err.message}" if err is not None else result.reason or "?"
        raise BenchFailure(f"quickjail run ended with status {result.status!r} ({detail})")
    return result.result


def qj(source: str, **options: Any) -> Any:
    """One quickjail run through the sync API; the result value, or BenchFailure."""
    from quickjail import bridge

    return _checked(bridge.run_code_sync(source, **options))


async def qj_async(source: str, **options: Any) -> Any:
    """One quickjail run through the async API, awaited on the current loop."""
    from quickjail import bridge

    return _checked(await bridge.run_code(source, **options))


# ------------------------------------------------------------------ native quickjs-ng


def ng_eval(
    source: str,
    *,
    callables: Mapping[str, Callable[..., Any]] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Any:
    """Fresh native quickjs-ng ``Context``, optional host callables and globals, ``eval``."""
    import quickjs  # type: ignore[import-untyped]

    ctx = quickjs.Context()
    for name, fn in (callables or {}).items():
        ctx.add_callable(name, fn)
    for name, value in (values or {}).items():
        ctx.set(name, value)
    return ctx.eval(source)


# ------------------------------------------------------------------ quickjs-rs


def rs_eval(
    source: str,
    *,
    callables: Mapping[str, Callable[..., Any]] | None = None,
    values: Mapping[str, Any] | None = None,
    limit_s: float = 120.0,
) -> Any:
    """Fresh quickjs-rs ``Runtime`` and ``Context`` (its isolation unit), ``eval``, close."""
    import quickjs_rs

    with quickjs_rs.Runtime() as rt, rt.new_context(timeout=limit_s) as ctx:
        for name, fn in (callables or {}).items():
            ctx.register(name, fn)
        for name, value in (values or {}).items():
            ctx.globals[name] = value
        return ctx.eval(source)


async def rs_eval_async(
    source: str,
    *,
    callables: Mapping[str, Callable[..., Any]] | None = None,
    limit_s: float = 120.0,
) -> Any:
    """:func:`rs_eval` through ``eval_async`` (script mode: top-level await, last value)."""
    import quickjs_rs

    with quickjs_rs.Runtime() as rt, rt.new_context(timeout=limit_s) as ctx:
        for name, fn in (callables or {}).items():
            ctx.register(name, fn)
        return await ctx.eval_async(source)

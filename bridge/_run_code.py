"""The public ``run_code``: a sandbox run with the host capabilities the caller bridges."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from quickjail import sandbox
from quickjail.bridge._quotas import Quotas
from quickjail.bridge._table import BridgeTable
from quickjail.sandbox.host import DEFAULT_MEMORY_LIMIT, Executor, Kind, Language, blocking

__all__ = ["run_code", "run_code_sync"]

_DEFAULT_QUOTAS = Quotas()


def run_code(
    source: str,
    *,
    execute: Mapping[str, Any] | None = None,
    imports: Mapping[str, Any] | None = None,
    globals: Mapping[str, Any] | None = None,
    kind: Kind = "module",
    language: Language = "typescript",
    filename: str = "<run_code>",
    modules: Mapping[str, str] | None = None,
    report: Callable[[Any], Any] | None = None,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
    timeout: float | None = None,
    timeout_includes_host_calls: bool = True,
    fuel: int | None = None,
    dynamic_code: bool = False,
    deterministic: bool = False,
    seed: int | None = None,
    output_limits: sandbox.OutputLimits | None = None,
    quotas: Quotas | None = None,
    executor: Executor | None = None,
) -> sandbox.CodeExecution:
    """Run code in a fresh sandbox with exactly the host capabilities given.

    Host functions may be sync or ``async def``; a call from JS passes its arguments (copied,
    validated against the function's type hints or pydantic model) and returns a Promise of
    its result, as in a Worker. A sync function is still called at once and its promise is
    settled before the call returns; one marked with :func:`synchronous` returns its value.
    A :class:`HostError` shows its message to the program; any other exception shows only a
    generic error, and stays in ``CodeResult.host_errors``.

    Args:
        source: the entry: an ES module (``kind="module"``), a classic script, or with
            ``kind="auto"`` any of the code shapes models write (README, "Code shapes").
        execute: ``{"fn": export name, "args": [...]}``; default ``{"fn": "default"}``. A
            function export is called with ``args`` and awaited; another value is the result
            (``args`` then must be absent). The arguments are encoded when ``run_code`` is
            called: changing them afterwards does not change what the program sees.
        imports: bare-specifier modules, ``{"fs": ReadOnlyDir(root), "db": {"get": get}}``:
            ``import { get } from "db"``. A :class:`Capability` stands for its ``exports()``.
        globals: free identifiers, ``{"LIMIT": 10, "lookup": lookup}``; frozen in the guest.
        kind: ``"module"``, ``"script"`` (whose completion value is the result) or
            ``"auto"`` (the parser picks the shape: a module, a function or arrow to call,
            statements, a function body or an expression; one Markdown fence is stripped).
        language: ``"typescript"`` (types are erased in place; plain JavaScript is valid
            TypeScript) or ``"javascript"`` (no erasure step).
        filename: the entry's name in stacks and errors; relative imports resolve against it.
        modules: other modules of the graph, ``{"./util.ts": source}``, relative to the entry.
        report: called with each ``report(value)`` as it happens (sync or async callable).
        memory_limit_bytes: hard cap on the guest's linear memory (8 MiB to 4 GiB).
        timeout: seconds before the run is stopped as ``terminated``/``timeout``; None for no
            deadline (the reference contract sets none).
        timeout_includes_host_calls: whether time spent awaiting async host calls counts.
        fuel: an instruction budget (machine-independent); exhausted → ``terminated``/``fuel``.
        dynamic_code: allow ``eval`` and ``Function`` (off, as in Workers).
        deterministic: fixed clock (2025-01-01, +1 ms per read) and seeded ``Math.random``.
        seed: the ``Math.random`` seed (default: fresh entropy, or 0 when deterministic).
        output_limits: caps on logs, reports, rejections and the result's size.
        quotas: caps on host calls: count, in flight, bytes each way (:class:`Quotas`).
        executor: where the run executes: None (this process) or one of
            ``quickjail.executors`` (``ProcessPool(workers=4)``); the handle, the result and
            the host functions (called in this process, quotas and validation included) are
            the same either way.

    Returns:
        The run's handle: ``await`` it for the ``CodeResult`` (it never raises for what the
        program did), iterate ``reports()``, ``terminate(reason)`` from anywhere.

    Raises:
        TypeError, ValueError: an option is wrong (raised here, before anything runs).
    """
    if quotas is None:
        quotas = _DEFAULT_QUOTAS
    elif not isinstance(quotas, Quotas):
        raise TypeError("quotas must be a bridge.Quotas")
    host = BridgeTable(imports, globals, quotas) if imports or globals else None
    return sandbox.run_code(
        source,
        execute=execute,
        kind=kind,
        language=language,
        filename=filename,
        modules=modules,
        host=host,
        report=report,
        memory_limit_bytes=memory_limit_bytes,
        timeout=timeout,
        timeout_includes_host_calls=timeout_includes_host_calls,
        fuel=fuel,
        dynamic_code=dynamic_code,
        deterministic=deterministic,
        seed=seed,
        output_limits=output_limits,
        executor=executor,
    )


run_code_sync = blocking(run_code)

"""The sandbox's entry points: :func:`run_code`, :func:`run_code_sync` and :func:`warm_up`."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from quickjail.sandbox import _engine
from quickjail.sandbox._execution import CodeExecution
from quickjail.sandbox._family import adopt
from quickjail.sandbox._limits import OutputLimits
from quickjail.sandbox._options import RunOptions, check_options
from quickjail.sandbox._program import Program, prepare
from quickjail.sandbox._result import ErrorInfo
from quickjail.sandbox._typescript_error import StripTimeout
from quickjail.sandbox.host import (
    DEFAULT_MEMORY_LIMIT,
    Executor,
    HostTable,
    Kind,
    Language,
    blocking,
)

__all__ = ["run_code", "run_code_sync", "warm_up"]


def run_code(
    source: str,
    *,
    execute: Mapping[str, Any] | None = None,
    kind: Kind = "module",
    language: Language = "typescript",
    filename: str = "<run_code>",
    modules: Mapping[str, str] | None = None,
    host: HostTable | None = None,
    report: Callable[[Any], Any] | None = None,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
    timeout: float | None = None,
    timeout_includes_host_calls: bool = True,
    fuel: int | None = None,
    dynamic_code: bool = False,
    deterministic: bool = False,
    seed: int | None = None,
    output_limits: OutputLimits | None = None,
    executor: Executor | None = None,
) -> CodeExecution:
    """Prepare a run in a fresh sandbox; ``await`` the handle (or call ``run_sync()``) to run it.

    The program has ECMAScript, ``console`` and ``report(value)`` and nothing from the host
    unless ``host`` bridges it; ``quickjail.bridge.run_code`` builds ``host`` from
    ``imports=``/``globals=`` and is what most callers want.

    Args:
        source: the entry: an ES module (``kind="module"``), a classic script, or with
            ``kind="auto"`` any of the code shapes models write (README, "Code shapes").
        execute: ``{"fn": export name, "args": [...]}``; default ``{"fn": "default"}``. A
            function export is called with ``args`` and awaited; another value is the result
            (``args`` then must be absent). The arguments are encoded when ``run_code`` is
            called: changing them afterwards does not change what the program sees.
        kind: ``"module"``, ``"script"`` (whose completion value is the result) or
            ``"auto"`` (the parser picks the shape: a module, a function or arrow to call,
            statements, a function body or an expression; one Markdown fence is stripped).
        language: ``"typescript"`` (types are erased in place; plain JavaScript is valid
            TypeScript) or ``"javascript"`` (no erasure step).
        filename: the entry's name in stacks and errors; relative imports resolve against it.
        modules: other modules of the graph, ``{"./util.ts": source}``, relative to the entry.
        host: the host functions and data the program may reach (see
            :mod:`quickjail.sandbox.host`).
        report: called with each ``report(value)`` as it happens (sync or async callable).
        memory_limit_bytes: hard cap on the guest's linear memory (8 MiB to 4 GiB).
        timeout: seconds before the run is stopped as ``terminated``/``timeout``; None for no
            deadline (the reference contract sets none). Erasing TypeScript, done here before
            the run starts, counts against it.
        timeout_includes_host_calls: whether time spent awaiting async host calls counts.
        fuel: an instruction budget (machine-independent); exhausted → ``terminated``/``fuel``.
        dynamic_code: allow ``eval`` and ``Function`` (off, as in Workers).
        deterministic: fixed clock (2025-01-01, +1 ms per read) and seeded ``Math.random``.
        seed: the ``Math.random`` seed (default: fresh entropy, or 0 when deterministic).
        output_limits: caps on logs, reports, rejections and the result's size.
        executor: where the run executes: None (this process) or one of
            ``quickjail.executors`` (``ProcessPool(workers=4)``); the handle, the result and
            the host functions (called in this process) are the same either way.

    Returns:
        The run's handle: ``await`` it for the :class:`CodeResult` (it never raises for what
        the program did), iterate ``reports()``, ``terminate(reason)`` from anywhere.

    Raises:
        TypeError, ValueError: an option is wrong (raised here, before anything runs).
    """
    opts = check_options(
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
    )
    if executor is not None and not callable(getattr(executor, "execution", None)):
        raise TypeError("executor must be None or an executor (see quickjail.executors)")
    opts, program = _prepare_within_timeout(opts)
    if executor is not None:
        execution: CodeExecution = executor.execution(opts, program)
        adopt(execution)  # started by a host function: stops with the run that called it
    else:
        engine = _engine.get_engine(metered=opts.fuel is not None)
        execution = CodeExecution(engine, opts, program)
    if program is _STRIP_TIMED_OUT:
        execution.terminate("timeout")  # ends before it starts, as a run's timeout does
    return execution


_STRIP_TIMED_OUT = ErrorInfo(
    "InternalError", "the run's timeout passed while its TypeScript was being stripped"
)
"""The program of a run whose timeout passed during stripping (its stop, ``timeout``, wins)."""


def _prepare_within_timeout(opts: RunOptions) -> tuple[RunOptions, Program | ErrorInfo]:
    """Prepares the run; the options' timeout becomes what is left of it afterwards."""
    if opts.timeout is None:
        return opts, prepare(opts)
    started = time.monotonic()
    deadline = started + opts.timeout
    try:
        program = prepare(opts, deadline)
    except StripTimeout:
        return opts, _STRIP_TIMED_OUT
    left = deadline - time.monotonic()
    if left <= 0:
        return opts, _STRIP_TIMED_OUT
    return opts.with_timeout(left), program


run_code_sync = blocking(run_code)


def warm_up() -> None:
    """Load the engine and compile (or load the cached) guest module now, not on first run."""
    _engine.get_engine()

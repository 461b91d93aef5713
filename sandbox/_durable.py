"""A run's host side, saved when it pauses and rebuilt when it resumes.

:func:`capture` turns a parked :class:`~quickjail.sandbox._run.Run` into a
:class:`~quickjail.sandbox._continuation.Continuation`: the memory pages that differ from a
fresh instance's, and the host-side state that must survive, as plain values:

- ``options``: what the guest's program is (sources, module graph, entry) and the options
  that hold for the whole run (dynamic code, determinism, seed, output limits, whether host
  calls count against the timeout);
- ``functions``: the names of the program's host functions, in dispatch order (a resumed run
  must be given the same table, or its guest's function ids would name other functions);
- ``paused``: each paused call (id, function index and name, decoded arguments, info);
- ``counters``: what the run used of its output limits and host-call quotas, bytes and calls;
- ``clock``: the deterministic clock (reads and virtual time) or, in real time, the guest's
  monotonic clock at the pause, so that pending timers keep their remaining delay;
- ``fuel``: the instruction budget left, for a metered run.

:func:`restore` writes it all into a fresh run before its first slice. The state comes from
a continuation whose MAC was checked, yet every number is checked again (an int in range)
and the memory is treated as a compromised guest's: the run's controls are the host's own.
"""

from __future__ import annotations

import ctypes
import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from quickjail.sandbox._continuation import Continuation, diff_pages, initial_image
from quickjail.sandbox._limits import OutputLimits
from quickjail.sandbox._result import PausedCall
from quickjail.sandbox.errors import ContinuationError

if TYPE_CHECKING:
    from quickjail.sandbox._engine import EngineState
    from quickjail.sandbox._options import RunOptions
    from quickjail.sandbox._run import Run

__all__ = [
    "Answer",
    "capture",
    "options_record",
    "restore",
    "saved_options",
    "saved_paused",
]

_U64: Final = 2**64
_COUNTERS: Final = (
    "reports",
    "report_bytes",
    "logs",
    "log_bytes",
    "rejections",
    "bytes_in",
    "bytes_out",
    "timers_fired",
    "timers_cancelled",
    "bytecode_hits",
    "host_calls",
    "quota_refusals",
)

Answer = tuple[int, int, Any]
"""``(call id, function index, value or Rejection)``: a paused call's answer, checked."""


def capture(run: Run) -> Continuation:
    """The parked run as a continuation (its instance still open)."""
    engine = run.engine
    image = initial_image(engine.guest.build_id, lambda: _fresh_memory(engine))
    base, size = run.instance.memory(1 << 62)
    memory = ctypes.string_at(base, size)
    pages = diff_pages(memory, image, engine.idle_spans)
    opts, data = run.opts, run.store_data
    functions = run.program.functions
    paused = [
        [p.call_id, _function_index(functions, p.function), p.function, p.args, p.info]
        for p in run.dispatch.paused
    ]
    if opts.deterministic:
        clock = {"reads": data.reads, "virtual_ns": run.virtual_ns}
    else:
        clock = {"monotonic_ns": (time.monotonic_ns() + data.virtual_ns) % _U64}
    usage = getattr(run.dispatch.calls, "usage", None)
    state: dict[str, Any] = {
        "options": options_record(opts),
        "functions": [fn.name for fn in functions],
        "paused": paused,
        "counters": run.counters(),
        "quotas": usage() if callable(usage) else None,
        "clock": clock,
        "fuel": run.instance.fuel_left() if opts.fuel is not None else None,
    }
    return Continuation(engine.guest.build_id, size, pages, state)


def options_record(opts: RunOptions) -> dict[str, Any]:
    """The ``options`` record of a run's state: what its program is and the options that
    hold for the whole run (an executor's caller writes its own over a worker's)."""
    return {
        "source": opts.source,
        "fn": opts.fn,
        "kind": opts.kind,
        "language": opts.language,
        "filename": opts.filename,
        "modules": dict(opts.modules),
        "dynamic_code": opts.dynamic_code,
        "deterministic": opts.deterministic,
        "seed": opts.seed,
        "timeout_includes_host_calls": opts.timeout_includes_host_calls,
        "output_limits": dataclasses.asdict(opts.output_limits),
    }


def _function_index(functions: tuple[Any, ...], name: str) -> int:
    for i, fn in enumerate(functions):
        if fn.name == name:
            return i
    raise RuntimeError(f"the paused function {name} is not in the run's table")


def _fresh_memory(engine: EngineState) -> bytes:
    """The memory of a fresh instance: the module's initial image."""
    inst = engine.bare_instance()
    try:
        base, size = inst.memory()
        return ctypes.string_at(base, size)
    finally:
        inst.close()


def restore(run: Run, cont: Continuation) -> None:
    """Write the continuation into ``run``'s fresh instance and host state.

    Raises:
        MemoryError: the memory does not fit the run's memory limit.
        ContinuationError: the state is inconsistent.
    """
    inst = run.instance
    if not inst.grow_to(cont.memory_size):
        raise MemoryError(
            f"the paused run's {cont.memory_size} bytes of memory do not fit its memory limit"
        )
    for index, page in cont.pages:
        inst.write(index * 4096, page)
    state = cont.state
    counters = _record(state, "counters")
    run.restore_counters({name: _int(counters, name, 0, _U64 - 1) for name in _COUNTERS})
    restore_usage = getattr(run.dispatch.calls, "restore", None)
    quotas = state.get("quotas")
    if quotas is not None and callable(restore_usage):
        try:
            restore_usage(quotas)
        except (TypeError, ValueError) as exc:
            raise _bad(f"its quota state does not fit ({exc})") from None
    clock = _record(state, "clock")
    data = run.store_data
    if run.opts.deterministic:
        data.reads = _int(clock, "reads", 0, _U64 - 1)
        run.set_virtual_ns(_int(clock, "virtual_ns", 0, _U64 - 1))
    else:
        mono = _int(clock, "monotonic_ns", 0, _U64 - 1)
        data.virtual_ns = (mono - time.monotonic_ns()) % _U64


def saved_options(state: Mapping[str, Any]) -> dict[str, Any]:
    """The paused run's options, each checked for its type.

    Raises:
        ContinuationError: a field is missing or of the wrong type.
    """
    o = _record(state, "options")
    out: dict[str, Any] = {}
    for name in ("source", "fn", "filename"):
        out[name] = _str(o, name)
    if o.get("kind") not in ("module", "script", "auto"):
        raise _bad("its kind is unknown")
    if o.get("language") not in ("typescript", "javascript"):
        raise _bad("its language is unknown")
    out["kind"], out["language"] = o["kind"], o["language"]
    modules = _record(o, "modules")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in modules.items()):
        raise _bad("its modules are not sources")
    out["modules"] = modules
    for name in ("dynamic_code", "deterministic", "timeout_includes_host_calls"):
        if not isinstance(o.get(name), bool):
            raise _bad(f"its option {name} is not a bool")
        out[name] = o[name]
    seed = o.get("seed")
    out["seed"] = None if seed is None else _int(o, "seed", 0, _U64 - 1)
    limits = _record(o, "output_limits")
    try:
        out["output_limits"] = OutputLimits(**limits)
    except (TypeError, ValueError) as exc:
        raise _bad(f"its output limits do not fit ({exc})") from None
    fuel = state.get("fuel")
    out["fuel"] = None if fuel is None else _int(state, "fuel", 0, _U64 - 1)
    return out


def saved_paused(state: Mapping[str, Any]) -> tuple[list[str], list[PausedCall], list[int]]:
    """The saved function names, the paused calls and each one's function index.

    Raises:
        ContinuationError: the records are malformed.
    """
    names = state.get("functions")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _bad("its function table is malformed")
    raw = state.get("paused")
    if not isinstance(raw, list) or not raw:
        raise _bad("it has no paused call")
    calls: list[PausedCall] = []
    indices: list[int] = []
    seen: set[int] = set()
    for item in raw:
        if not isinstance(item, list) or len(item) != 5:
            raise _bad("a paused call is malformed")
        call_id, fid, name, args, info = item
        if not _is_int(call_id) or not 0 < call_id < 2**31 or call_id in seen:
            raise _bad("a paused call's id is malformed")
        if not _is_int(fid) or not 0 <= fid < len(names) or names[fid] != name:
            raise _bad("a paused call names no function of the table")
        if not isinstance(args, list):
            raise _bad("a paused call's arguments are malformed")
        seen.add(call_id)
        calls.append(PausedCall(call_id, name, args, info))
        indices.append(fid)
    return names, calls, indices


def _record(state: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = state.get(name)
    if not isinstance(value, dict):
        raise _bad(f"its {name} record is missing")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(record: Mapping[str, Any], name: str, lo: int, hi: int) -> int:
    value = record.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise _bad(f"its {name} is not an int in range")
    return value


def _str(record: Mapping[str, Any], name: str) -> str:
    value = record.get(name)
    if not isinstance(value, str):
        raise _bad(f"its {name} is not a str")
    return value


def _bad(detail: str) -> ContinuationError:
    return ContinuationError(f"cannot resume this continuation: {detail}", reason="tampered")

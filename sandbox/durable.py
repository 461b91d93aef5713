"""Durable runs for a layer above the sandbox: :func:`open_continuation` and :func:`resume`.

A run whose host function raised :class:`~quickjail.sandbox.host.Pause` ends ``"paused"``
with a continuation (``CodeResult.continuation.seal(key, context)`` gives its bytes).

A resumed run is a run like any other (the same handle, the same result, the same limits),
whose first slice delivers the answers to its paused calls instead of starting the program:
a fresh instance gets the saved memory pages and host state (``_durable.restore``), and each
answer settles its call's promise through the path every async host call takes.

What the resumed result holds: the reports and logs since the resume (the paused result had
the earlier ones); its output limits and host-call quotas count the whole run, every leg.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from quickjail.sandbox import _durable, _engine, _values
from quickjail.sandbox._continuation import Continuation, load
from quickjail.sandbox._execution import CodeExecution
from quickjail.sandbox._log import LOGGER
from quickjail.sandbox._options import RunOptions, check_options
from quickjail.sandbox._program import prepare
from quickjail.sandbox._result import ErrorInfo
from quickjail.sandbox.errors import ContinuationError, ResumeError
from quickjail.sandbox.host import DEFAULT_MEMORY_LIMIT, Executor, HostTable, Rejection, blocking

__all__ = ["Opened", "open_continuation", "resume", "resume_sync"]


class Opened:
    """A loaded continuation, checked: its paused calls and the names of its host functions.

    Attributes:
        continuation: the loaded continuation.
        functions: the names of the paused run's host functions, in its dispatch order.
        paused: the paused calls waiting for an answer.
        memory_limit_bytes: the resumed run's memory limit (the memory was checked to fit).
    """

    __slots__ = ("_indices", "continuation", "functions", "memory_limit_bytes", "paused")

    def __init__(self, continuation: Continuation, memory_limit_bytes: int) -> None:
        self.continuation = continuation
        self.memory_limit_bytes = memory_limit_bytes
        self.functions, self.paused, self._indices = _durable.saved_paused(continuation.state)

    def answers(self, answers: Mapping[int, Any]) -> list[_durable.Answer]:
        """``(call id, function index, value)`` for every paused call, in order.

        Raises:
            ResumeError: an answer for an unknown call, or a paused call left unanswered.
            TransferError: an answer that cannot cross into the guest.
        """
        if not isinstance(answers, Mapping):
            raise TypeError("answers must be a mapping of call ids to values")
        ids = {p.call_id for p in self.paused}
        unknown = [k for k in answers if k not in ids]
        if unknown:
            raise ResumeError(
                f"answers name calls that are not paused: {sorted(map(repr, unknown))}; the "
                f"paused calls are {sorted(ids)}"
            )
        missing = [p for p in self.paused if p.call_id not in answers]
        if missing:
            names = ", ".join(f"{p.call_id} ({p.function})" for p in missing)
            raise ResumeError(f"no answer for the paused call(s) {names}")
        for call_id, value in answers.items():
            if not isinstance(value, Rejection):  # refused here, before anything runs
                _values.encode(value, path=f"answers[{call_id}]")
        return [
            (p.call_id, fid, answers[p.call_id])
            for p, fid in zip(self.paused, self._indices, strict=True)
        ]


def open_continuation(
    sealed: bytes,
    *,
    key: bytes,
    context: bytes = b"",
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
    max_age: float | None = None,
) -> Opened:
    """Check and load sealed bytes (size caps, MAC, format version, guest build, age).

    Raises:
        ContinuationError: the bytes were refused; the message says why.
        ValueError, TypeError: a bad key, context or max_age.
    """
    if max_age is not None and (
        not isinstance(max_age, int | float) or isinstance(max_age, bool) or max_age < 0
    ):
        raise TypeError("max_age must be a non-negative number of seconds or None")
    check_options("", **_NO_OPTIONS, memory_limit_bytes=memory_limit_bytes)
    engine = _engine.get_engine()
    try:
        cont = load(
            sealed,
            key=key,
            context=context,
            build_id=engine.guest.build_id,
            memory_limit_bytes=memory_limit_bytes,
            max_age=max_age,
        )
    except ContinuationError as exc:
        # an operator wants to know: a forged or stale continuation, or a key rotated too soon
        LOGGER.warning("continuation refused (%s): %s", exc.reason, exc)
        raise
    return Opened(cont, memory_limit_bytes)


_NO_OPTIONS: dict[str, Any] = {
    "execute": None,
    "kind": "module",
    "language": "javascript",
    "filename": "<resume>",
    "modules": None,
    "host": None,
    "report": None,
    "timeout": None,
    "timeout_includes_host_calls": True,
    "fuel": None,
    "dynamic_code": False,
    "deterministic": False,
    "seed": None,
    "output_limits": None,
}


def resume(
    opened: Opened,
    *,
    answers: Mapping[int, Any],
    host: HostTable | None = None,
    report: Callable[[Any], Any] | None = None,
    timeout: float | None = None,
    executor: Executor | None = None,
) -> CodeExecution:
    """Continue a paused run where it stopped; ``await`` the handle as ``run_code``'s.

    Args:
        opened: the continuation, loaded by :func:`open_continuation`.
        answers: ``{call id: value}`` for every paused call; a
            :class:`~quickjail.sandbox.host.Rejection` rejects the call's promise.
        host: the host functions, by the same names in the same order as the paused run's.
        report: called with each ``report(value)`` from now on.
        timeout: seconds for the rest of the run (a fresh deadline).
        executor: where the resumed run executes (None: this process); it must have a
            ``resumption(opts, program, continuation, answers)`` method, as the
            ``quickjail.executors`` do.

    Raises:
        ResumeError: a missing or extra host function, an unknown call id, a missing answer.
        TypeError, ValueError: an option is wrong.
    """
    saved = _durable.saved_options(opened.continuation.state)
    checked = check_options(
        saved["source"],
        **{
            **_NO_OPTIONS,
            "kind": saved["kind"],
            "language": saved["language"],
            "filename": saved["filename"],
            "host": host,
            "report": report,
            "timeout": timeout,
        },
        memory_limit_bytes=opened.memory_limit_bytes,
    )
    opts = RunOptions(
        source=saved["source"],
        fn=saved["fn"],
        args_message=None,  # the entry was called before the pause
        kind=saved["kind"],
        language=saved["language"],
        filename=saved["filename"],
        modules=saved["modules"],
        host=host,
        report=checked.report,
        memory_limit_bytes=opened.memory_limit_bytes,
        timeout=checked.timeout,
        timeout_includes_host_calls=saved["timeout_includes_host_calls"],
        fuel=None if saved["fuel"] is None else max(1, saved["fuel"]),  # never unmetered
        dynamic_code=saved["dynamic_code"],
        deterministic=saved["deterministic"],
        seed=saved["seed"],
        output_limits=saved["output_limits"],
    )
    program = prepare(opts)
    if isinstance(program, ErrorInfo):
        raise ResumeError(f"the paused run's program no longer prepares: {program}")
    names = [fn.name for fn in program.functions]
    check_functions(opened.functions, names)
    plan = opened.answers(answers)
    if executor is not None:
        resumption = getattr(executor, "resumption", None)
        if not callable(resumption):
            raise TypeError(f"{type(executor).__name__} cannot resume paused runs")
        execution: CodeExecution = resumption(opts, program, opened.continuation, plan)
        return execution
    engine = _engine.get_engine(metered=opts.fuel is not None)
    return CodeExecution(engine, opts, program, (opened.continuation, plan))


def check_functions(saved: list[str], given: list[str]) -> None:
    """The host functions given to ``resume`` must be the paused run's, in its order.

    Raises:
        ResumeError: naming the missing and the extra functions.
    """
    if saved == given:
        return
    missing = [n for n in saved if n not in given]
    extra = [n for n in given if n not in saved]
    if missing or extra:
        raise ResumeError(
            "resume() must be given the paused run's host functions: "
            f"missing {missing or 'none'}, extra {extra or 'none'}"
        )
    raise ResumeError(
        "resume() was given the paused run's host functions in another order: pass the same "
        "imports and globals, in the same order"
    )


resume_sync = blocking(resume)

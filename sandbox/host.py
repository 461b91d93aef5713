"""What a layer above the sandbox builds on: the host-call protocol, and run_code's types.

The host-call protocol is the sandbox's only way out.

The sandbox does not decide *which* host functions a program may call, how their arguments
are validated, or how many calls a run may make: the layer above (``quickjail.bridge``) does,
by handing :func:`quickjail.sandbox.run_code` a :class:`HostTable`. The sandbox only:

- sends the table's ``modules`` and ``globals`` into the guest, where every
  :class:`HostFunction` leaf becomes a JS function bound to its index in the run's dispatch
  table (a function that is not in the table cannot be expressed);
- for each call, checks the index, asks the run's :class:`HostCalls` to ``admit`` it (quotas),
  decodes the arguments, lets the function ``prepare`` them (validation), calls it, and
  encodes the result back;
- shows a failure to the program through ``HostCalls.describe``, which decides what a host
  exception may reveal; everything else becomes a generic ``Error``;
- parks a call whose function raised :class:`Pause`: its promise stays pending in the guest,
  and once the guest waits for nothing else the run ends ``"paused"`` with a continuation
  (``quickjail.sandbox.resume`` answers the call, with a value or a :class:`Rejection`).

Nothing here knows about pydantic, capabilities or threads. :func:`blocking` and the option
types let a layer wrap ``run_code`` with the same parameters.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, ParamSpec, Protocol, TypeVar

from quickjail.sandbox._abi import FN_ASYNC, FN_PROMISE, FN_VALUE, HIDDEN_GLOBAL, NS_FALLBACK_KEY
from quickjail.sandbox._family import calling
from quickjail.sandbox.errors import HostCallRefused

if TYPE_CHECKING:
    from quickjail.sandbox._execution import CodeExecution
    from quickjail.sandbox._options import RunOptions
    from quickjail.sandbox._program import Program
    from quickjail.sandbox._result import ErrorInfo

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "HIDDEN_GLOBALS",
    "NAMESPACE_FALLBACK",
    "Executor",
    "HostCallRefused",
    "HostCalls",
    "HostFunction",
    "HostTable",
    "Kind",
    "Language",
    "Pause",
    "Rejection",
    "blocking",
    "close_calls",
    "current_calls",
    "is_async_callable",
]

Kind = Literal["module", "script", "auto"]
Language = Literal["typescript", "javascript"]
DEFAULT_MEMORY_LIMIT = 64 * 2**20
_CLOSE_SECONDS: Final = 10.0  # a bound for HostCalls.aclose: closing is meant to be quick
NAMESPACE_FALLBACK: Final = NS_FALLBACK_KEY
"""A key that makes a global object a namespace with a fallback: when ``globals["ns"]`` holds
a host function under this key, reading a missing name on ``ns`` in JavaScript gives a
function that calls the fallback with the name and the call's arguments (code mode uses it so
that an unknown tool rejects with the list of tools). The key itself is not visible in JS."""

HIDDEN_GLOBALS: Final = HIDDEN_GLOBAL
"""The first character of a ``HostTable.globals`` name the program does not see: such a value
is given to the guest's web globals instead (``sandbox/_guest/web/README.md``), which read it
when called. The bridge hands ``HIDDEN_GLOBALS + "fetch"`` (a :class:`~quickjail.bridge.Fetch`'s
host function) to the guest's own ``fetch`` this way."""

P = ParamSpec("P")
R = TypeVar("R", covariant=True)


@dataclass(frozen=True, slots=True)
class HostFunction:
    """A host callable the guest may call: one entry of a run's dispatch table.

    Every call returns a Promise in JS, as in a Worker. A sync function is still called at
    once, on the run's worker thread, and its value or exception settles the promise before the
    call returns (no event-loop round trip); an async one's promise settles when its awaitable
    does.

    Attributes:
        name: how errors name it (``"fs.readFile"``).
        fn: the callable; called with the prepared positional arguments. If ``is_async``,
            it returns an awaitable, awaited on the event loop that awaits the run.
        is_async: whether ``fn`` returns an awaitable.
        prepare: turns the decoded JS arguments into the call's positional arguments; it
            raises to refuse them (validation). ``None`` passes them as they are.
        sync_js: the opt-in for a sync ``fn``: a JS call returns its value (or throws)
            instead of returning a Promise. Not allowed with ``is_async``.
    """

    name: str
    fn: Callable[..., Any]
    is_async: bool = False
    prepare: Callable[[list[Any]], tuple[Any, ...]] | None = None
    sync_js: bool = False

    def __post_init__(self) -> None:
        if self.sync_js and self.is_async:
            raise ValueError(f"{self.name}: an async function cannot return its value at once")

    @property
    def js_mode(self) -> int:
        """How a JS call answers: the guest ABI's ``FN_*`` mode."""
        if self.is_async:
            return FN_ASYNC
        return FN_VALUE if self.sync_js else FN_PROMISE


class Pause(Exception):
    """Raised by a host function (sync or async) to pause the run at this call.

    The call's promise stays pending in the guest. When the guest next waits (nothing left to
    run but host calls and timers), and every other async call in flight has settled, the run
    ends with ``status == "paused"``: ``CodeResult.paused`` lists the paused calls and
    ``CodeResult.continuation`` seals the parked guest into bytes that
    ``quickjail.resume`` continues, answering each paused call.

    A function marked ``synchronous`` (its JS call returns the value at once) cannot leave
    its call pending: a Pause there fails the call with a ``TypeError`` in the program.

    Attributes:
        info: JSON-able data for whoever decides the answer (why the call paused, what it
            wants approved); it travels in the continuation.
    """

    def __init__(self, info: Any = None) -> None:
        super().__init__("the host function paused the run")
        self.info = info


@dataclass(frozen=True, slots=True)
class Rejection:
    """An answer to a paused call that rejects its promise in the guest.

    Attributes:
        message: the message of the ``Error`` the program catches.
        name: the error's class name in JS.
    """

    message: str
    name: str = "Error"

    def __post_init__(self) -> None:
        if not isinstance(self.message, str) or not isinstance(self.name, str):
            raise TypeError("Rejection takes a str message (and a str name)")


class HostCalls(Protocol):
    """One run's host-call state (quotas), made fresh by :meth:`HostTable.calls` per run.

    It may also have ``async def aclose(self) -> None``: awaited once the run has ended
    (finished, failed, stopped or paused), on the event loop its async host functions ran on,
    to release what they kept for the run (:func:`close_calls`).
    """

    def admit(self, fn: HostFunction, nbytes: int) -> None:
        """Charge a call whose arguments take ``nbytes``, before they are decoded.

        Raises:
            HostCallRefused: the call is over a quota; it is not made.
        """
        ...

    def reply(self, fn: HostFunction, nbytes: int) -> None:
        """Charge a result of ``nbytes`` going back into the guest (and end an async call).

        Raises:
            HostCallRefused: over a quota; the program gets this error instead of the result.
        """
        ...

    def describe(self, exc: BaseException) -> tuple[str, str] | None:
        """The ``(js_name, message)`` a program may see for a host exception, or None to show
        only a generic error naming the function and the exception's class."""
        ...


async def close_calls(calls: HostCalls | None) -> None:
    """Await ``calls.aclose()`` if it has one (the run ended), shielded from cancellation and
    bounded in time; a failure there is the host's, and is dropped."""
    close = getattr(calls, "aclose", None)
    if close is None:
        return
    import anyio  # an async run imported it already

    with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
        try:
            await close()
        except Exception:
            pass


def current_calls() -> HostCalls | None:
    """The host-call state (:meth:`HostTable.calls`) of the run whose host function is
    executing here, or None outside one (a host function called directly from Python).

    What a table's functions keep for one run belongs there, not on the function: every run
    using the table shares the function, and one run must not reach or exhaust another's.
    """
    parent = calling.get()
    return None if parent is None else parent.host_calls


class HostTable(Protocol):
    """What a run may call on the host, built once and usable for many runs.

    ``modules`` maps bare specifiers (``import { readFile } from "fs"``) to namespaces, and
    ``globals`` maps identifiers to values; both hold transferable data and
    :class:`HostFunction` leaves.
    """

    @property
    def modules(self) -> Mapping[str, Mapping[str, Any]]: ...

    @property
    def globals(self) -> Mapping[str, Any]: ...

    def calls(self) -> HostCalls:
        """Fresh per-run host-call state."""
        ...


class Executor(Protocol):
    """Where a run executes: ``run_code(..., executor=...)``; None runs it in this process.

    ``run_code`` checks the options and prepares the program (TypeScript erased, host data
    encoded) in the caller as always, then asks the executor for the run's handle. The
    handle is a :class:`~quickjail.sandbox.CodeExecution` with the same semantics wherever
    the run executes; the host functions and the report callback stay the caller's and run
    in the caller's process. Implementations live in ``quickjail.executors``.
    """

    def execution(self, opts: RunOptions, program: Program | ErrorInfo) -> CodeExecution:
        """The handle of a run with these checked options and this prepared program (or the
        error preparing it gave); nothing runs until it is awaited."""
        ...


class _Runnable(Protocol[R]):
    def run_sync(self) -> R: ...


def blocking(run: Callable[P, _Runnable[R]]) -> Callable[P, R]:
    """The synchronous twin of a ``run_code``: same parameters, runs to the end, returns the
    ``CodeResult`` (``help()`` and type checkers see the same parameters)."""

    @functools.wraps(run)
    def run_sync(*args: P.args, **kwargs: P.kwargs) -> R:
        return run(*args, **kwargs).run_sync()

    signature = inspect.signature(run)
    run_sync.__signature__ = signature.replace(return_annotation="CodeResult")  # type: ignore[attr-defined]
    run_sync.__name__ = run_sync.__qualname__ = f"{run.__name__}_sync"
    doc = inspect.getdoc(run) or ""
    options = doc[doc.find("Args:") : doc.find("Returns:")].rstrip()
    run_sync.__doc__ = (
        "Run to completion from synchronous code and return the ``CodeResult``.\n\n"
        f"The options are ``{run.__name__}``'s. Blocks the calling thread: guest code runs on "
        "quickjail's worker threads, where a sync ``report`` callback is called too; async "
        "host functions or callbacks get a private event loop.\n\n"
        f"{options}\n\nReturns:\n    The run's ``CodeResult`` (never raises for what the "
        "program did).\n"
    )
    return run_sync


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` gives an awaitable to await: an ``async def`` function or method,
    or an object whose ``__call__`` is one. The sandbox, the bridge and the runtime ask this
    one question the same way."""
    if fn is None:
        return False
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return False
    return inspect.iscoroutinefunction(getattr(type(fn), "__call__", None))  # noqa: B004

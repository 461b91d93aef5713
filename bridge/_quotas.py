"""Per-run quotas on host calls: how many, how many at once, and how many bytes each way."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from quickjail.sandbox.errors import HostCallRefused
from quickjail.sandbox.host import HostFunction

__all__ = ["QuotaState", "Quotas"]


@dataclass(frozen=True, slots=True)
class Quotas:
    """Caps on what one run may ask of its host functions; all enforced on the host.

    A call over a quota is not made: it throws (or its promise rejects with) a ``RangeError``
    that names the quota, and ``CodeResult.metrics.quota_refusals`` counts it.

    Attributes:
        max_host_calls: calls per run, sync and async together.
        max_calls_in_flight: async calls started and not yet settled.
        max_bytes_out: bytes of arguments the program sends to host functions, in total.
        max_bytes_in: bytes of results (and errors) host functions send back, in total.
    """

    max_host_calls: int = 10_000
    max_calls_in_flight: int = 256
    max_bytes_out: int = 256 * 2**20
    max_bytes_in: int = 256 * 2**20

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Quotas.{f.name} must be a non-negative int, not {value!r}")


class QuotaState:
    """One run's use of its :class:`Quotas` (the sandbox's ``HostCalls`` for that run)."""

    __slots__ = ("_bytes_in", "_bytes_out", "_calls", "_in_flight", "_quotas")

    def __init__(self, quotas: Quotas) -> None:
        self._quotas = quotas
        self._calls = 0
        self._in_flight = 0
        self._bytes_out = 0
        self._bytes_in = 0

    def admit(self, fn: HostFunction, nbytes: int) -> None:
        """Charge a call, or refuse it with the quota it would exceed."""
        q = self._quotas
        if nbytes < 0:
            raise HostCallRefused("host call arguments have a negative size")
        if self._calls >= q.max_host_calls:
            raise HostCallRefused(f"host call quota exceeded ({q.max_host_calls} calls per run)")
        if fn.is_async and self._in_flight >= q.max_calls_in_flight:
            raise HostCallRefused(
                f"too many host calls in flight (at most {q.max_calls_in_flight})"
            )
        if self._bytes_out + nbytes > q.max_bytes_out:
            raise HostCallRefused(f"host call quota exceeded ({q.max_bytes_out} bytes out per run)")
        self._calls += 1
        self._bytes_out += nbytes
        if fn.is_async:
            self._in_flight += 1

    def usage(self) -> dict[str, Any]:
        """The quotas and what the run used of them, for a paused run's continuation."""
        return {
            "limits": dataclasses.asdict(self._quotas),
            "used": [self._calls, self._in_flight, self._bytes_out, self._bytes_in],
        }

    def restore(self, usage: Any) -> None:
        """Take on what the paused run used (:meth:`usage`); the resumed run goes on from it.

        Raises:
            ValueError: ``usage`` is not what :meth:`usage` gives.
        """
        used = usage.get("used") if isinstance(usage, dict) else None
        if (
            not isinstance(used, list)
            or len(used) != 4
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in used)
        ):
            raise ValueError("the quota usage is malformed")
        self._calls, self._in_flight, self._bytes_out, self._bytes_in = used

    def reply(self, fn: HostFunction, nbytes: int) -> None:
        """End a call: charge its reply, or refuse the reply when it would exceed the quota."""
        if fn.is_async:
            self._in_flight -= 1
        self._bytes_in += max(nbytes, 0)
        if self._bytes_in > self._quotas.max_bytes_in:
            cap = self._quotas.max_bytes_in
            raise HostCallRefused(f"host call quota exceeded ({cap} bytes in per run)")

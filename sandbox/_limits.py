"""Per-run output and host-call limits, as typed configuration."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Limits"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what one run may produce or ask of the host; all enforced on the host.

    What happens at each cap:

    - logs (``max_logs`` entries, ``max_log_bytes`` in total): later logs are dropped and one
      ``warn`` entry says so; the program is not interrupted.
    - reports (``max_reports``, ``max_report_bytes``): ``report()`` throws a ``RangeError``.
    - unhandled promise rejections (``max_rejections``): recorded as ``error`` log entries,
      later ones dropped.
    - the result (``max_result_bytes`` as transferred): the run ends with status ``error``.
    - host calls (``max_host_calls`` in total, ``max_calls_in_flight`` async at once,
      ``max_bytes_in``/``max_bytes_out`` transferred): the call throws (or its promise
      rejects with) a ``RangeError``; ``metrics.quota_refusals`` counts them.
    """

    max_logs: int = 1000
    max_log_bytes: int = 1 * 2**20
    max_reports: int = 10_000
    max_report_bytes: int = 16 * 2**20
    max_rejections: int = 100
    max_result_bytes: int = 64 * 2**20
    max_host_calls: int = 10_000
    max_calls_in_flight: int = 256
    max_bytes_in: int = 256 * 2**20
    max_bytes_out: int = 256 * 2**20

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Limits.{f.name} must be a non-negative int, not {value!r}")

    @classmethod
    def coerce(cls, value: Limits | Mapping[str, Any] | None) -> Limits:
        """Accept a Limits, a mapping of field names, or None (the defaults)."""
        if value is None:
            return _DEFAULT
        if isinstance(value, Limits):
            return value
        if isinstance(value, Mapping):
            names = {f.name for f in dataclasses.fields(cls)}
            unknown = set(value) - names
            if unknown:
                raise TypeError(f"unknown limit(s): {', '.join(sorted(map(str, unknown)))}")
            return cls(**value)
        raise TypeError("limits must be a sandbox.Limits or a mapping of its fields")


_DEFAULT = Limits()

"""Caps on what one run may send out: logs, reports, rejections and the result."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["OutputLimits"]


@dataclass(frozen=True, slots=True)
class OutputLimits:
    """Caps on what one run may produce; all enforced on the host.

    Memory, time and fuel are options of their own (``memory_limit_bytes``, ``timeout``,
    ``fuel``); host-call quotas belong to the bridge (``quickjail.bridge.Quotas``).

    What happens at each cap:

    - logs (``max_logs`` entries, ``max_log_bytes`` in total): the first log over either cap
      closes the log: it and every later one are dropped and one ``warn`` entry says so; the
      program is not interrupted. Once closed, console methods return at once in the guest
      without reading their arguments (no host crossing per call).
    - reports (``max_reports``, ``max_report_bytes``): ``report()`` throws a ``RangeError``
      naming the limit and its value (``report refused: more than 10000 reports
      (output_limits.max_reports)``). Past ``max_reports`` the guest refuses by itself.
    - unhandled promise rejections (``max_rejections``): recorded as ``error`` log entries,
      later ones dropped.
    - the result (``max_result_bytes`` as transferred): the run ends with status ``error``.
    """

    max_logs: int = 1000
    max_log_bytes: int = 1 * 2**20
    max_reports: int = 10_000
    max_report_bytes: int = 16 * 2**20
    max_rejections: int = 100
    max_result_bytes: int = 64 * 2**20

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"OutputLimits.{f.name} must be a non-negative int, not {value!r}")

"""quickjail's log records: the ``quickjail`` logger of the standard :mod:`logging` module.

What an operator needs and ``CodeResult`` alone does not give them: a host function that raised,
a host call the bridge refused, the host failing while running code, a pool worker lost and
replaced. Each record of a run names the run's id (``CodeResult.run_id``). The logger has a
``NullHandler`` (``quickjail/__init__.py``), so nothing is printed until the application
configures logging; the successful paths log nothing at all, so a run with logging off pays
nothing for it (``make bench``, "host calls: logging").

A hostile program can make every host call fail or be refused: each run logs at most
:data:`RECORDS_PER_RUN` records, then one saying the rest are not logged.
"""

from __future__ import annotations

import itertools
import logging
import os
from typing import Final

__all__ = ["LOGGER", "MAX_HOST_ERRORS", "RECORDS_PER_RUN", "RunLog", "keep_error", "new_run_id"]

LOGGER: Final = logging.getLogger("quickjail")
RECORDS_PER_RUN: Final = 8
"""The most records one run logs (then one saying so)."""

_ids = itertools.count(1)


def new_run_id() -> str:
    """A run id unique on this machine while the process lives: ``<pid hex>-<counter hex>``."""
    return f"{os.getpid():x}-{next(_ids):x}"


class RunLog:
    """The records of one run, at most :data:`RECORDS_PER_RUN` of them."""

    __slots__ = ("count", "run_id")

    def __init__(self, run_id: str | None = None) -> None:
        self.run_id = run_id or new_run_id()
        self.count = 0

    def _admit(self, level: int) -> bool:
        if not LOGGER.isEnabledFor(level):
            return False
        self.count += 1
        if self.count <= RECORDS_PER_RUN:
            return True
        if self.count == RECORDS_PER_RUN + 1:
            LOGGER.log(level, "run %s: later records of this run are not logged", self.run_id)
        return False

    def host_error(self, function: str, exc: BaseException) -> None:
        """A host function raised (the program sees an error; ``CodeResult.host_errors``
        keeps the exception)."""
        if self._admit(logging.WARNING):
            LOGGER.warning(
                "run %s: host function %s() raised %s",
                self.run_id,
                function,
                type(exc).__name__,
                exc_info=(type(exc), exc, exc.__traceback__),
            )

    def refused(self, function: str, reason: str, *, arguments: bool = False) -> None:
        """The bridge refused a call: a quota or cap (``WARNING``), or the program's arguments
        (``INFO``: the program's own mistake, told to it)."""
        level = logging.INFO if arguments else logging.WARNING
        if self._admit(level):
            what = "arguments refused" if arguments else "refused"
            LOGGER.log(level, "run %s: host call %s() %s: %s", self.run_id, function, what, reason)

    def host_failed(self, exc: BaseException) -> None:
        """The host failed while running the code (a bug of ours or of a callback): the run
        ends as an error."""
        if self._admit(logging.ERROR):
            LOGGER.error(
                "run %s: the host failed while running the code (%s)",
                self.run_id,
                type(exc).__name__,
                exc_info=(type(exc), exc, exc.__traceback__),
            )

    def worker_lost(self, how: str) -> None:
        """A pool worker died under this run."""
        if self._admit(logging.WARNING):
            LOGGER.warning("run %s: its worker was lost (%s)", self.run_id, how)


MAX_HOST_ERRORS = 100
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def keep_error(errors: list[BaseException], exc: BaseException) -> None:
    """Keep a host-side exception in ``errors`` (at most ``MAX_HOST_ERRORS``), without our own
    frames (they hold the decoded arguments) and with the other frames' locals cleared."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        tb = tb.tb_next
    exc.__traceback__ = tb
    if tb is not None:
        import traceback  # with textwrap, milliseconds of a first run that keeps no error

        traceback.clear_frames(tb)
    if len(errors) < MAX_HOST_ERRORS:
        errors.append(exc)

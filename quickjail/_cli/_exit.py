"""How a command ends: the exit codes, their help text, and the usage error.

Commands return the ``EXIT_*`` codes (``quickjail run`` stopped by a signal returns 128 plus
its number). A problem found after parsing (a file that cannot be read, flags that do not
go together) is raised as :class:`UsageError`, which :func:`quickjail._cli.main` prints like
argparse's own usage errors and turns into :data:`EXIT_USAGE`.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LINK_ERROR",
    "EXIT_MEMORY",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "UsageError",
]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_LINK_ERROR: Final = 3
EXIT_MEMORY: Final = 4
EXIT_TERMINATED: Final = 5
EXIT_INTERRUPTED: Final = 130

EXIT_CODES_HELP: Final = f"""\
exit codes:
  {EXIT_OK}    success
  {EXIT_ERROR}    the program threw (status "error"), or the sandbox failed to start
  {EXIT_USAGE}    usage error: a bad flag, an unreadable file; the message says what to change
  {EXIT_LINK_ERROR}    link error: an import that cannot be resolved (status "link_error")
  {EXIT_MEMORY}    the program exceeded --memory (status "memory")
  {EXIT_TERMINATED}    the run was stopped: --timeout expired (status "terminated")
  {EXIT_INTERRUPTED}  interrupted by Ctrl-C (SIGINT; 143 for SIGTERM): the run is stopped cleanly
"""


class UsageError(Exception):
    """A usage problem found after parsing; the message says what to change."""

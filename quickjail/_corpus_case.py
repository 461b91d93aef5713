"""A case of the ``quickjail stress`` corpus (``_corpus.py``) and the outcomes cases expect."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["ESCAPE_MARKER", "Category", "CorpusCase", "Status"]

ESCAPE_MARKER: Final = "ESCAPED:"

Category = Literal["escape", "memory", "cpu", "recursion", "flood", "leak", "host-work"]
Status = Literal["success", "error", "memory", "link_error", "terminated"]

_ANY_END: Final[frozenset[Status]] = frozenset({"success", "error"})
# A memory bomb must not succeed; it may run out of memory, out of time, or end with an
# error thrown while memory was short (QuickJS may fail to build the error object itself).
# That memory stayed bounded is checked on host facts (peak guest memory, host RSS).
_OOM: Final[frozenset[Status]] = frozenset({"memory", "error", "terminated"})
_TIMEOUT: Final[frozenset[Status]] = frozenset({"terminated"})
# host work on what the program sends ends as a value or a clear error; a large value may also
# run the guest out of memory while it is encoded
_HOST_WORK: Final[frozenset[Status]] = frozenset({"success", "error", "memory"})
_ERROR: Final[frozenset[Status]] = frozenset({"error"})


@dataclass(frozen=True, slots=True)
class CorpusCase:
    """One hostile program and the outcomes that keep the host safe.

    Attributes:
        id: A short kebab-case name, unique in the corpus (the JUnit test name).
        category: What it attacks: ``escape``, ``memory``, ``cpu``, ``recursion``, ``flood``,
            ``leak`` or ``host-work`` (the host's work on what the program sends: crafted
            stacks, hash collisions, DAGs, huge BigInts and messages, sparse arrays, values
            Python would merge, status forgery).
        description: One line saying what the program tries.
        source: The ES module (JavaScript); it sees the prelude's ``__QJ_*`` constants.
        expect: The statuses the run may end with; any other one is a violation.
        uses_bridge: Whether the prelude imports the bridged modules and defines
            ``__QJ_FNS`` (the program calls the user's host functions).
    """

    id: str
    category: Category
    description: str
    source: str
    expect: frozenset[Status]
    uses_bridge: bool = False


def _c(
    id: str,
    category: Category,
    description: str,
    source: str,
    expect: frozenset[Status],
    *,
    uses_bridge: bool = False,
) -> CorpusCase:
    return CorpusCase(id, category, description, source.strip() + "\n", expect, uses_bridge)

"""The adversarial corpus of ``quickjail stress``: small hostile programs and what they may do.

Each :class:`CorpusCase` is an ES module run in a fresh sandbox with the user's bridge. It
states the statuses it may end with (``expect``) and, when it tries to get something it must
not have, it says so with the :data:`ESCAPE_MARKER`: a program that succeeds in an escape
reports (or returns) ``"ESCAPED:" + what``, a string it produces only on success. The runner
(``quickjail._stress``) looks for the marker in everything the run produced, and also checks
the host-side invariants every case shares (limits held, time bounded, no host exception
escaped, no host path or canary secret in what the program saw).

The runner prepends a prelude that names what the bridge holds, so cases can aim at it:

- ``__QJ_MODULES``: the bridged module names; ``__QJ_GLOBALS``: the bridged global names.
- ``__QJ_CANARY``: the absolute host path of a secret file outside every allowed root.
- ``__QJ_FNS`` (cases with ``uses_bridge``): ``[[label, fn], ...]``, every bridged host
  function (the prelude imports the bridged modules for these cases only).

The cases live in ``_corpus_escapes.py`` and ``_corpus_limits.py``, the case type in
``_corpus_case.py``.
"""

from __future__ import annotations

from typing import Final

from quickjail._corpus_case import ESCAPE_MARKER, Category, CorpusCase
from quickjail._corpus_escapes import ESCAPES
from quickjail._corpus_limits import LIMITS

__all__ = ["CORPUS", "ESCAPE_MARKER", "Category", "CorpusCase"]

CORPUS: Final[tuple[CorpusCase, ...]] = (*ESCAPES, *LIMITS)

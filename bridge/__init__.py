"""quickjail's bridge: the only way out of the sandbox, and the ``run_code`` most callers use.

``run_code(source, imports=..., globals=...)`` runs code in a fresh sandbox with exactly the
host capabilities given: the namespaces are compiled into a whitelist (a call that is not in
it cannot be expressed), arguments are validated from each function's type hints or pydantic
model, calls are held to per-run :class:`Quotas`, and failures reach the program as safe
errors. Ready-made capabilities:

- :class:`ReadOnlyDir` — ``readFile``/``readdir``/``stat`` over one directory, traversal-proof.
- :class:`Fetch` — the guest's ``fetch``, made on the host within an allowlist and caps
  (``globals={"fetch": Fetch(allow=[...])}``); without it ``fetch`` rejects.

Every host function returns a Promise in JS; :func:`synchronous` marks one whose JS call
returns its value instead.

Raise :class:`HostError` from a host function to show its message inside JS. The exception
tree is drawn in ``bridge/_errors.py``; its root is :class:`BridgeError`.

Raise :class:`Pause` from a host function to pause the run at that call: the result is
``"paused"`` with a continuation to seal into bytes, and :func:`resume` continues it later,
in any process, answering the call with a value or a :class:`Rejection` (README "Durable
runs"). Sealed bytes that cannot be loaded raise ``quickjail.sandbox.errors.ContinuationError``.
"""

from quickjail.bridge._errors import ArgumentError, BridgeError, HostError, Pause, ResumeError
from quickjail.bridge._fetch import Fetch
from quickjail.bridge._fs import FsError, ReadOnlyDir
from quickjail.bridge._quotas import Quotas
from quickjail.bridge._resume import resume, resume_sync
from quickjail.bridge._run_code import run_code, run_code_sync
from quickjail.bridge._table import Capability, synchronous
from quickjail.sandbox.host import Rejection

__all__ = [
    "ArgumentError",
    "BridgeError",
    "Capability",
    "Fetch",
    "FsError",
    "HostError",
    "Pause",
    "Quotas",
    "ReadOnlyDir",
    "Rejection",
    "ResumeError",
    "resume",
    "resume_sync",
    "run_code",
    "run_code_sync",
    "synchronous",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("quickjail.bridge._"):
        _obj.__module__ = __name__
del _name, _obj

"""quickjail's bridge: the host capabilities a sandboxed program may be given.

The sandbox has no host capability of its own; ``imports=`` and ``globals=`` of
:func:`sandbox.run_code` bridge what the caller chooses. This package holds ready-made
capabilities and the error types host functions use to speak to the program:

- :class:`ReadOnlyDir` — ``readFile``/``readdir``/``stat`` over one directory, traversal-proof.
- :class:`HostError` — raise it from a host function to show its message inside JS.
"""

from quickjail.bridge._errors import BridgeError, HostError
from quickjail.bridge._fs import FsError, ReadOnlyDir

__all__ = ["BridgeError", "FsError", "HostError", "ReadOnlyDir"]

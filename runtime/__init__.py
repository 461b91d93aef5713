"""quickjail's agent-tool runtime: tools, thread state, persistence, schema export, code mode.

Layering: ``runtime`` runs code through ``quickjail.bridge.run_code`` (its thread files are a
bridge capability) and never touches the sandbox's internals or wasmtime. Every error raised on
purpose derives from :class:`ToolRuntimeError`; the tree is drawn in
:mod:`quickjail.runtime.errors`. Functions for tool authors (``get_messages``, ``queue_tool``,
``render_results``, ``discovery_tools``, ...) live in :mod:`quickjail.runtime.helpers`; tool
sources beyond ``define_tool`` (MCP servers, OpenAPI services) in
:mod:`quickjail.runtime.connectors`.
"""

from . import connectors, errors, helpers  # noqa: F401 - connectors: public subpackage
from ._codemode import code_mode_tool
from ._define import define_tool, discover_tools
from ._export import export_tools
from ._message import Message
from ._result import AttachmentRef, ToolAttachment, ToolResult
from ._runtime import Runtime
from ._state import ThreadState
from ._thread import Thread
from ._tool import Tool, Variable
from .errors import ToolRuntimeError

__all__ = [
    "AttachmentRef",
    "Message",
    "Runtime",
    "Thread",
    "ThreadState",
    "Tool",
    "ToolAttachment",
    "ToolResult",
    "ToolRuntimeError",
    "Variable",
    "code_mode_tool",
    "define_tool",
    "discover_tools",
    "errors",
    "export_tools",
    "helpers",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("quickjail.runtime._"):
        _obj.__module__ = __name__
del _name, _obj

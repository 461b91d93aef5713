"""quickjail's agent-tool runtime: tools, thread state, persistence, schema export, code mode.

Layering: ``runtime`` calls ``sandbox.run_code`` (host functions cross through the sandbox's
bridge) and never touches wasmtime.
Every error raised on purpose derives from :class:`ToolRuntimeError`; the tree is drawn in
``runtime/_errors.py``.
"""

from ._calls import render_results
from ._codemode import code_mode_tool
from ._errors import ToolNameWarning, ToolRuntimeError
from ._export import export_tools
from ._helpers import emit_thread_event, get_messages, inject_message, queue_tool
from ._message import Message
from ._result import AttachmentRef, ToolAttachment, ToolResult
from ._runtime import Runtime
from ._state import AbortSignal, ExecutionState, ThreadState
from ._thread import Thread
from ._tool import Tool, Variable, define_tool, discover_tools

__all__ = [
    "AbortSignal",
    "AttachmentRef",
    "ExecutionState",
    "Message",
    "Runtime",
    "Thread",
    "ThreadState",
    "Tool",
    "ToolAttachment",
    "ToolNameWarning",
    "ToolResult",
    "ToolRuntimeError",
    "Variable",
    "code_mode_tool",
    "define_tool",
    "discover_tools",
    "emit_thread_event",
    "export_tools",
    "get_messages",
    "inject_message",
    "queue_tool",
    "render_results",
]

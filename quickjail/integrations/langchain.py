"""A LangChain tool, ``run_code``, backed by the sandbox.

Needs langchain-core (``pip install 'quickjail[langchain]'``), imported only when the tool is
built::

    from quickjail.integrations.langchain import run_code_tool

    tool = run_code_tool(globals={"lookup": lookup})
    tool.invoke({"code": "export default 6 * 7"})        # {"status": "success", "result": 42, ...}
    llm.bind_tools([tool])

Each call runs in a fresh sandbox; sync ``invoke`` and async ``ainvoke`` both work. The
tool returns a JSON-able dict (``status``, ``result``, ``error``, ``reason``, ``reports``,
``logs``), so a failing program is an answer the model can read, not an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import sandbox
from quickjail.integrations._runner import TOOL_NAME, CodeRunner

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

__all__ = ["run_code_tool"]


def run_code_tool(
    *,
    imports: Mapping[str, Any] | None = None,
    globals: Mapping[str, Any] | None = None,
    timeout: float = 10.0,
    max_timeout: float = 60.0,
    memory_limit_bytes: int = 64 * 2**20,
    language: Literal["typescript", "javascript"] = "typescript",
    limits: sandbox.Limits | Mapping[str, int] | None = None,
    capabilities: str | None = None,
    name: str = TOOL_NAME,
) -> StructuredTool:
    """Build the ``run_code`` tool.

    Args:
        imports: Host modules the programs may import (as for :func:`sandbox.run_code`).
        globals: Host globals the programs see.
        timeout: Seconds a call may run when the model does not choose a timeout.
        max_timeout: Largest timeout the model may ask for.
        memory_limit_bytes: Memory limit of every call.
        language: Source language of the programs.
        limits: Output and host-call limits.
        capabilities: A sentence for the tool description saying what the bridge offers.
        name: The tool's name.

    Returns:
        A :class:`langchain_core.tools.StructuredTool` taking ``code`` and an optional
        ``timeout``.
    """
    from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, Field

    runner = CodeRunner(imports=imports, globals=globals, timeout=timeout,
                        max_timeout=max_timeout, memory_limit_bytes=memory_limit_bytes,
                        language=language, limits=limits, capabilities=capabilities)

    class RunCodeArgs(BaseModel):
        code: str = Field(description="Source of an ES module; its default export is the "
                                      "result.")
        timeout: float | None = Field(default=None, gt=0, description="Seconds the run may "
                                      "take (capped); omit for the default.")

    def run_code(code: str, timeout: float | None = None) -> dict[str, Any]:
        return runner.run_sync(code, timeout)

    # the model chooses the sandbox's own time limit (capped): not a cancellation timeout
    async def arun_code(code: str, timeout: float | None = None  # noqa: ASYNC109
                        ) -> dict[str, Any]:
        return await runner.run(code, timeout)

    return StructuredTool.from_function(
        func=run_code, coroutine=arun_code, name=name, description=runner.description(),
        args_schema=RunCodeArgs)

"""A pydantic-ai toolset with one tool, ``run_code``, backed by the sandbox.

Needs pydantic-ai (``pip install 'quickjail[pydantic-ai]'``), imported only when a toolset is
built::

    from pydantic_ai import Agent
    from quickjail.integrations.pydantic_ai import run_code_toolset

    agent = Agent("openai:gpt-5", toolsets=[run_code_toolset(globals={"lookup": lookup})])

Each call runs in a fresh sandbox with the caller's ``imports``/``globals`` and limits; the
tool returns a JSON-able dict (``status``, ``result``, ``error``, ``reason``, ``reports``,
``logs``), so a failing program is an answer the model can read and fix, not an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import sandbox
from quickjail.integrations._runner import TOOL_NAME, CodeRunner

if TYPE_CHECKING:
    from pydantic_ai import Tool
    from pydantic_ai.toolsets import FunctionToolset

__all__ = ["run_code_tool", "run_code_toolset"]


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
) -> Tool[Any]:
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
        A :class:`pydantic_ai.Tool` taking ``code`` and an optional ``timeout``.
    """
    from pydantic_ai import Tool

    runner = CodeRunner(imports=imports, globals=globals, timeout=timeout,
                        max_timeout=max_timeout, memory_limit_bytes=memory_limit_bytes,
                        language=language, limits=limits, capabilities=capabilities)

    # the model chooses the sandbox's own time limit (capped): not a cancellation timeout
    async def run_code(code: str, timeout: float | None = None  # noqa: ASYNC109
                       ) -> dict[str, Any]:
        """Run a program in the sandbox.

        Args:
            code: Source of an ES module; its default export is the result.
            timeout: Seconds the run may take (capped); omit for the default.
        """
        return await runner.run(code, timeout)

    return Tool(run_code, takes_ctx=False, name=name, description=runner.description())


def run_code_toolset(
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
) -> FunctionToolset[Any]:
    """Build a toolset holding the ``run_code`` tool of :func:`run_code_tool`.

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
        A :class:`pydantic_ai.toolsets.FunctionToolset` for ``Agent(toolsets=[...])``.
    """
    from pydantic_ai.toolsets import FunctionToolset

    return FunctionToolset([run_code_tool(
        imports=imports, globals=globals, timeout=timeout, max_timeout=max_timeout,
        memory_limit_bytes=memory_limit_bytes, language=language, limits=limits,
        capabilities=capabilities, name=name)])

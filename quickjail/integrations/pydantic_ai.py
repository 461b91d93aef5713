"""A pydantic-ai toolset with one tool, ``run_code``, backed by the sandbox.

Needs pydantic-ai (``pip install 'quickjail[pydantic-ai]'``), imported only when a toolset is
built (without it, building one raises ``ModuleNotFoundError`` naming the extra)::

    from pydantic_ai import Agent
    from quickjail.integrations.pydantic_ai import run_code_toolset

    agent = Agent("openai:gpt-5", toolsets=[run_code_toolset(globals={"lookup": lookup})])

Each call runs in a fresh sandbox with the caller's ``imports``/``globals`` and limits; the
tool returns a JSON-able dict (``status``, ``result``, ``error``, ``reason``, ``reports``,
``logs``), so a failing program is an answer the model can read and fix, not an exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

from quickjail.integrations._extras import needs_extra
from quickjail.integrations._runner import TOOL_NAME, CodeRunner, RunnerOptions

if TYPE_CHECKING:
    from pydantic_ai import Tool
    from pydantic_ai.toolsets import FunctionToolset

__all__ = ["run_code_tool", "run_code_toolset"]


def run_code_tool(*, name: str = TOOL_NAME, **options: Unpack[RunnerOptions]) -> Tool[Any]:
    """Build the ``run_code`` tool.

    Args:
        name: The tool's name.
        **options: How each call runs (:class:`~quickjail.integrations._runner.CodeRunner`:
            ``imports``, ``globals``, ``timeout``, ``max_timeout``, ``memory_limit_bytes``,
            ``language``, ``kind`` (default ``"auto"``: any shape models write),
            ``output_limits``, ``quotas``, ``capabilities``).

    Returns:
        A :class:`pydantic_ai.Tool` taking ``code`` and an optional ``timeout``.

    Raises:
        MissingExtraError: pydantic-ai cannot be imported (a ``ModuleNotFoundError`` naming
            the ``pydantic-ai`` extra).
    """
    with needs_extra(__name__, "pydantic-ai", "pydantic-ai"):
        from pydantic_ai import Tool

    runner = CodeRunner(**options)

    # the model chooses the sandbox's own time limit (capped): not a cancellation timeout
    async def run_code(
        code: str,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> dict[str, Any]:
        return dict(await runner.run(code, timeout))

    # pydantic-ai reads the parameters' descriptions from the docstring
    run_code.__doc__ = (
        "Run a program in the sandbox.\n\nArgs:\n"
        f"    code: {runner.code_description()}\n"
        "    timeout: Seconds the run may take (capped); omit for the default.\n"
    )

    return Tool(run_code, takes_ctx=False, name=name, description=runner.description())


def run_code_toolset(
    *, name: str = TOOL_NAME, **options: Unpack[RunnerOptions]
) -> FunctionToolset[Any]:
    """Build a toolset holding the ``run_code`` tool of :func:`run_code_tool`.

    Args:
        name: The tool's name.
        **options: As for :func:`run_code_tool`.

    Returns:
        A :class:`pydantic_ai.toolsets.FunctionToolset` for ``Agent(toolsets=[...])``.

    Raises:
        MissingExtraError: As for :func:`run_code_tool`.
    """
    with needs_extra(__name__, "pydantic-ai", "pydantic-ai"):
        from pydantic_ai.toolsets import FunctionToolset

    return FunctionToolset([run_code_tool(name=name, **options)])

"""A LangChain tool, ``run_code``, backed by the sandbox.

Needs langchain-core (``pip install 'quickjail[langchain]'``), imported only when the tool is
built (without it, building one raises ``ModuleNotFoundError`` naming the extra)::

    from quickjail.integrations.langchain import run_code_tool

    tool = run_code_tool(globals={"lookup": lookup})
    tool.invoke({"code": "return 6 * 7"})        # {"status": "success", "result": 42, ...}
    llm.bind_tools([tool])

Each call runs in a fresh sandbox; sync ``invoke`` and async ``ainvoke`` both work. The
tool returns a JSON-able dict (``status``, ``result``, ``error``, ``reason``, ``reports``,
``logs``), so a failing program is an answer the model can read, not an exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

from quickjail.integrations._extras import needs_extra
from quickjail.integrations._runner import TOOL_NAME, CodeRunner, RunnerOptions

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

__all__ = ["run_code_tool"]


def run_code_tool(*, name: str = TOOL_NAME, **options: Unpack[RunnerOptions]) -> StructuredTool:
    """Build the ``run_code`` tool.

    Args:
        name: The tool's name.
        **options: How each call runs (:class:`~quickjail.integrations._runner.CodeRunner`:
            ``imports``, ``globals``, ``timeout``, ``max_timeout``, ``memory_limit_bytes``,
            ``language``, ``kind`` (default ``"auto"``: any shape models write),
            ``output_limits``, ``quotas``, ``capabilities``).

    Returns:
        A :class:`langchain_core.tools.StructuredTool` taking ``code`` and an optional
        ``timeout``.

    Raises:
        MissingExtraError: langchain-core cannot be imported (a ``ModuleNotFoundError``
            naming the ``langchain`` extra).
    """
    with needs_extra(__name__, "langchain-core", "langchain"):
        from langchain_core.tools import StructuredTool
    from pydantic import BaseModel, Field

    runner = CodeRunner(**options)

    class RunCodeArgs(BaseModel):
        code: str = Field(description=runner.code_description())
        timeout: float | None = Field(
            default=None,
            gt=0,
            description="Seconds the run may take (capped); omit for the default.",
        )

    def run_code(code: str, timeout: float | None = None) -> dict[str, Any]:
        return runner.run_sync(code, timeout)

    # the model chooses the sandbox's own time limit (capped): not a cancellation timeout
    async def arun_code(
        code: str,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> dict[str, Any]:
        return await runner.run(code, timeout)

    return StructuredTool.from_function(
        func=run_code,
        coroutine=arun_code,
        name=name,
        description=runner.description(),
        args_schema=RunCodeArgs,
    )

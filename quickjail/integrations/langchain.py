"""A LangChain tool, ``run_code``, backed by the sandbox.

Needs langchain-core (``pip install 'quickjail[langchain]'``), imported only when the tool is
built (without it, building one raises ``ModuleNotFoundError`` naming the extra)::

    from quickjail.integrations.langchain import run_code_tool

    tool = run_code_tool(globals={"lookup": lookup})
    tool.invoke({"code": "return 6 * 7"})        # {"status": "success", "result": 42, ...}
    llm.bind_tools([tool])

Each call runs in a fresh sandbox; sync ``invoke`` and async ``ainvoke`` both work. The
tool returns a JSON-able dict (``status``, ``result``, ``error``, ``reason``, ``reports``,
``logs``), so a failing program is an answer the model can read, not an exception. Called
with a tool call (as agents call it), the answer is a ``ToolMessage`` whose ``status`` is
``"error"`` unless the program succeeded; arguments that do not fit the schema (an unknown
one included) are an ``"invalid_arguments"`` answer, never a raised ``ValidationError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Unpack, cast

from quickjail.integrations._extras import needs_extra
from quickjail.integrations._runner import TOOL_NAME, CodeRunner, RunnerOptions
from quickjail.runtime.helpers import invalid_answer

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool
    from pydantic import ValidationError

    from quickjail.runtime.helpers import RunCodeAnswer

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
        ``timeout`` (no other argument).

    Raises:
        MissingExtraError: langchain-core cannot be imported (a ``ModuleNotFoundError``
            naming the ``langchain`` extra).
    """
    with needs_extra(__name__, "langchain-core", "langchain"):
        from langchain_core.tools import StructuredTool, ToolException
    from pydantic import BaseModel, ConfigDict, Field

    runner = CodeRunner(**options)

    class RunCodeArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")

        code: str = Field(description=runner.code_description())
        timeout: float | None = Field(
            default=None,
            gt=0,
            description="Seconds the run may take (capped); omit for the default.",
        )

    class _Failed(ToolException):
        """A run that did not succeed: LangChain marks its ``ToolMessage`` as an error."""

        def __init__(self, answer: dict[str, Any]) -> None:
            super().__init__(answer["status"])
            self.answer = answer

    def _checked(answer: RunCodeAnswer) -> dict[str, Any]:
        if answer["status"] != "success":
            raise _Failed(dict(answer))
        return dict(answer)

    def run_code(code: str, timeout: float | None = None) -> dict[str, Any]:
        return _checked(runner.run_sync(code, timeout))

    # the model chooses the sandbox's own time limit (capped): not a cancellation timeout
    async def arun_code(
        code: str,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> dict[str, Any]:
        return _checked(await runner.run(code, timeout))

    def failed(exc: ToolException) -> dict[str, Any]:
        return exc.answer if isinstance(exc, _Failed) else dict(invalid_answer("Error", str(exc)))

    # LangChain types a handler's answer as message content; it formats whatever the handler
    # returns exactly as it formats what the tool returns, so both give the same dict
    return StructuredTool.from_function(
        func=run_code,
        coroutine=arun_code,
        name=name,
        description=runner.description(),
        args_schema=RunCodeArgs,
        handle_tool_error=cast("Callable[[ToolException], str]", failed),
        handle_validation_error=cast("Callable[[ValidationError], str]", _invalid_arguments),
    )


def _invalid_arguments(exc: ValidationError) -> dict[str, Any]:
    """The ``invalid_arguments`` answer to arguments that do not fit the schema."""
    problems: list[str] = []
    unknown = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden"]
    if unknown:
        problems.append(
            f"unknown argument(s) {', '.join(unknown)}; the arguments are code, timeout"
        )
    for error in exc.errors():
        if error["type"] == "extra_forbidden":
            continue
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"`{where}`: {error['msg']}")
    return dict(invalid_answer("ValidationError", "; ".join(problems)))

"""Agent-framework tools: a real tool call through pydantic-ai's agent loop, LangChain's tool, and
the extra a missing framework's error names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from quickjail import bridge
from quickjail.integrations import CodeRunner
from quickjail.integrations import langchain as langchain_integration
from quickjail.integrations import pydantic_ai as pydantic_ai_integration


async def _scale(value: int) -> int:
    return value * 2


def test_code_runner_answers_with_json_data() -> None:
    runner = CodeRunner(globals={"BASE": 20})
    answer = runner.run_sync("console.log('hi'); report({n: 1}); export default BASE + 1")
    assert answer == {
        "status": "success",
        "result": 21,
        "error": None,
        "reason": None,
        "reports": [{"n": 1}],
        "logs": [{"level": "log", "args": ["hi"]}],
    }


def test_code_runner_caps_the_timeout_a_call_asks_for() -> None:
    runner = CodeRunner(timeout=0.1, max_timeout=0.2)
    answer = runner.run_sync("for (;;) {}", timeout=1000)
    assert (answer["status"], answer["reason"]) == ("terminated", "timeout")


def test_code_runner_reports_malformed_calls_as_answers() -> None:
    runner = CodeRunner()
    assert runner.run_sync(123)["status"] == "invalid_arguments"  # type: ignore[arg-type]
    assert runner.run_sync("export default 1", timeout=-1)["status"] == "invalid_arguments"


def test_code_runner_error_has_position_in_user_source() -> None:
    answer = CodeRunner().run_sync("const x: number = 1;\nthrow new TypeError('bad ' + x)")
    assert answer["status"] == "error"
    assert answer["error"]["name"] == "TypeError"
    assert answer["error"]["message"] == "bad 1"
    assert answer["error"]["line"] == 2


def test_an_async_run_leaves_the_event_loop_running_while_typescript_is_stripped() -> None:
    # run_code erases TypeScript before it returns; for a large source that is a helper
    # process's parse, seconds on adversarial text. CodeRunner.run waits for it on a worker
    # thread, so a task of the loop keeps running (it ticked about once before: the loop was
    # blocked in run_code until the run's timeout).
    runner = CodeRunner(timeout=0.5, kind="module")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async def main() -> tuple[Any, int]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            await anyio.sleep(0.01)
            before = ticks
            answer = await runner.run("f<T>(x," * (400 * 2**10 // 7))
            tasks.cancel_scope.cancel()
        return answer, ticks - before

    answer, during = anyio.run(main)
    assert (answer["status"], answer["reason"]) == ("terminated", "timeout")
    assert during > 20, during


def test_importing_quickjail_does_not_import_the_frameworks() -> None:
    code = (
        "import sys, quickjail, quickjail.integrations, quickjail.integrations.pydantic_ai, "
        "quickjail.integrations.langchain, quickjail.pytest_plugin; "
        "print(sorted(m for m in ('pydantic_ai', 'langchain_core', 'hypothesis') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _hide(monkeypatch: pytest.MonkeyPatch, top_level: str) -> None:
    """Make importing a framework fail as if it were not installed (None in sys.modules)."""
    for module in [m for m in sys.modules if m.startswith(f"{top_level}.")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, top_level, None)


@pytest.mark.parametrize(
    ("build", "top_level", "message"),
    [
        (
            pydantic_ai_integration.run_code_tool,
            "pydantic_ai",
            "quickjail.integrations.pydantic_ai needs pydantic-ai: "
            "pip install 'quickjail[pydantic-ai]'",
        ),
        (
            pydantic_ai_integration.run_code_toolset,
            "pydantic_ai",
            "quickjail.integrations.pydantic_ai needs pydantic-ai: "
            "pip install 'quickjail[pydantic-ai]'",
        ),
        (
            langchain_integration.run_code_tool,
            "langchain_core",
            "quickjail.integrations.langchain needs langchain-core: "
            "pip install 'quickjail[langchain]'",
        ),
    ],
    ids=["pydantic-ai tool", "pydantic-ai toolset", "langchain tool"],
)
def test_building_a_tool_without_its_framework_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, build: Callable[[], object], top_level: str, message: str
) -> None:
    _hide(monkeypatch, top_level)
    with pytest.raises(ModuleNotFoundError, match=f"^{re.escape(message)}$") as caught:
        build()
    assert caught.value.name is not None
    assert caught.value.name.split(".")[0] == top_level
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)


# ---------------------------------------------------------------- pydantic-ai


def test_pydantic_ai_agent_runs_code_through_a_tool_call() -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from quickjail.integrations.pydantic_ai import run_code_toolset

    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["tools"] = [t.name for t in info.function_tools]
        returns = [
            part
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        if not returns:
            code = (
                "const squares = [1, 2, 3].map((x) => x * x);\n"
                "export default await scale(squares.reduce((a, b) => a + b) * 3);"
            )
            return ModelResponse(parts=[ToolCallPart("run_code", {"code": code}, "call-1")])
        seen["answer"] = returns[-1].content
        computed = returns[-1].content["result"]
        return ModelResponse(parts=[TextPart(f"The sandbox computed {computed}.")])

    agent = Agent(FunctionModel(model), toolsets=[run_code_toolset(globals={"scale": _scale})])
    # Agent.run_sync leaves an event loop open (a ResourceWarning): drive Agent.run instead
    result = anyio.run(agent.run, "What is twice three times the sum of the squares of 1, 2, 3?")
    assert seen["tools"] == ["run_code"]
    assert seen["answer"]["status"] == "success"
    assert result.output == "The sandbox computed 84."


def test_pydantic_ai_tool_schema() -> None:
    pytest.importorskip("pydantic_ai")
    from quickjail.integrations.pydantic_ai import run_code_tool

    tool = run_code_tool(timeout=5, max_timeout=30, memory_limit_bytes=32 * 2**20)
    definition = tool.tool_def
    assert definition.name == "run_code"
    assert definition.parameters_json_schema == {
        "additionalProperties": False,
        "properties": {
            "code": {
                "description": CodeRunner().code_description(),
                "type": "string",
            },
            "timeout": {
                "anyOf": [{"type": "number"}, {"type": "null"}],
                "default": None,
                "description": "Seconds the run may take (capped); omit for the default.",
            },
        },
        "required": ["code"],
        "type": "object",
    }
    assert "32 MiB of memory and a 5 s timeout by default (at most 30 s)" in (
        definition.description or ""
    )


# ---------------------------------------------------------------- LangChain


def test_langchain_tool_invokes_sync_and_async() -> None:
    pytest.importorskip("langchain_core")
    from quickjail.integrations.langchain import run_code_tool

    tool = run_code_tool(globals={"scale": _scale}, language="javascript")
    assert tool.name == "run_code"
    assert set(tool.args) == {"code", "timeout"}
    answer = tool.invoke({"code": "export default await scale(21)"})
    assert (answer["status"], answer["result"]) == ("success", 42)

    async def call() -> Any:
        return await tool.ainvoke({"code": "export default [...'abc'].reverse().join('')"})

    assert anyio.run(call)["result"] == "cba"
    stopped = tool.invoke({"code": "for (;;) {}", "timeout": 0.1})
    assert (stopped["status"], stopped["reason"]) == ("terminated", "timeout")


# ---------------------------------------------------------------- code shapes (issue 29 item 14)

# what models write instead of an ES module, and what each computes
_SHAPES = [
    ("const x = 6 * 7;\nreturn x", 42),
    ("```ts\nconst n: number = 41;\nreturn n + 1\n```", 42),
    ("[1, 2, 3].map((x) => x * 2)", [2, 4, 6]),
    ("async () => { await Promise.resolve(); return 'arrow' }", "arrow"),
    ("export default 6 * 7", 42),
]


def _tool_returns(messages: list[Any]) -> list[Any]:
    from pydantic_ai.messages import ModelRequest, ToolReturnPart

    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def _pydantic_ai_answers(codes: list[str], **options: Any) -> list[Any]:
    """Each of ``codes`` as a tool call of a pydantic-ai ``Agent``'s model; the answers."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from quickjail.integrations.pydantic_ai import run_code_toolset

    seen: list[Any] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = _tool_returns(messages)
        if not returns:
            calls = [ToolCallPart("run_code", {"code": c}, f"c{i}") for i, c in enumerate(codes)]
            return ModelResponse(parts=calls)
        seen.extend(returns)
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), toolsets=[run_code_toolset(**options)])
    anyio.run(agent.run, "compute")
    return seen


def _langchain_agent_messages(calls: list[dict[str, Any]], **options: Any) -> list[Any]:
    """Each of ``calls`` (a tool call's arguments) made by the model of a LangChain
    ``create_agent`` agent; the tool messages it got back."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, ToolMessage

    from quickjail.integrations.langchain import run_code_tool

    class ToolCallingFake(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    tool_calls = [{"name": "run_code", "args": a, "id": f"c{i}"} for i, a in enumerate(calls)]
    model = ToolCallingFake(responses=[AIMessage("", tool_calls=tool_calls), AIMessage("done")])
    agent = create_agent(model, [run_code_tool(**options)])
    out = agent.invoke({"messages": [{"role": "user", "content": "compute"}]})
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def _langchain_agent_answers(codes: list[str], **options: Any) -> list[Any]:
    """:func:`_langchain_agent_messages` of one call per code."""
    return _langchain_agent_messages([{"code": code} for code in codes], **options)


def test_pydantic_ai_agent_runs_every_code_shape_models_write() -> None:
    pytest.importorskip("pydantic_ai")
    answers = _pydantic_ai_answers([code for code, _ in _SHAPES])
    assert [(a["status"], a["result"]) for a in answers] == [("success", v) for _, v in _SHAPES]


def test_pydantic_ai_tool_can_insist_on_an_es_module() -> None:
    pytest.importorskip("pydantic_ai")
    (answer,) = _pydantic_ai_answers(["return 1"], kind="module")
    assert answer["status"] == "error"
    assert answer["error"]["name"] == "SyntaxError"


def test_langchain_agent_runs_every_code_shape_models_write() -> None:
    pytest.importorskip("langchain")
    messages = _langchain_agent_answers([code for code, _ in _SHAPES])
    answers = [json.loads(str(m.content)) for m in messages]
    assert [(a["status"], a["result"]) for a in answers] == [("success", v) for _, v in _SHAPES]


def test_code_runner_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind must be one of auto, module, script"):
        CodeRunner(kind="repl")  # type: ignore[arg-type]


# ------------------------------------------- LangChain: failures are errors (issue 29 item 15)


def test_langchain_agent_sees_a_failed_program_as_an_error_tool_message() -> None:
    pytest.importorskip("langchain")
    codes = ["return 1", "throw new RangeError('no')", "for (;;) {}"]
    messages = _langchain_agent_answers(codes, timeout=0.1, max_timeout=0.1)
    assert [m.status for m in messages] == ["success", "error", "error"]
    answers = [json.loads(str(m.content)) for m in messages]
    assert [a["status"] for a in answers] == ["success", "error", "terminated"]
    assert answers[1]["error"]["name"] == "RangeError"
    assert answers[2]["reason"] == "timeout"


def test_langchain_tool_answers_bad_and_unknown_arguments_without_raising() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import ToolMessage

    from quickjail.integrations.langchain import run_code_tool

    tool = run_code_tool()
    bad = tool.invoke({"code": "return 1", "timeout": -1})
    assert bad["status"] == "invalid_arguments"
    assert bad["error"]["message"] == "`timeout`: Input should be greater than 0"
    unknown = tool.invoke({"code": "return 1", "language": "python"})
    assert unknown["status"] == "invalid_arguments"
    assert unknown["error"]["message"] == (
        "unknown argument(s) language; the arguments are code, timeout"
    )
    call = {"name": "run_code", "args": {"source": "1"}, "id": "c1", "type": "tool_call"}
    message = tool.invoke(call)
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    assert json.loads(str(message.content))["error"]["message"] == (
        "unknown argument(s) source; the arguments are code, timeout; `code`: Field required"
    )


def test_langchain_agent_answers_unknown_arguments_as_an_error() -> None:
    pytest.importorskip("langchain")
    (message,) = _langchain_agent_messages([{"code": "return 1", "lang": "js"}])
    assert message.status == "error"
    assert json.loads(str(message.content))["status"] == "invalid_arguments"


def test_the_tool_description_says_whether_fetch_reaches_the_network() -> None:
    # every run has a fetch; the model is told it rejects unless the host bridged one
    plain = CodeRunner().description()
    assert "`fetch` rejects with a TypeError" in plain and "Headers/Request/Response" in plain
    bridged = CodeRunner(globals={"fetch": bridge.Fetch(allow=["api.example.com"])})
    assert "`fetch` reaches only the hosts the host allowed" in bridged.description()
    assert "rejects with a TypeError" not in bridged.description()

"""Tenvs: ``define_tool(tenvs=Model)``, ``state.tenvs``, the merge order, missing ones listed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, SecretStr

from quickjail import runtime
from quickjail.runtime import ThreadState, ToolResult, Variable, define_tool
from quickjail.runtime.errors import MissingVariablesError, ToolDefinitionError

pytestmark = pytest.mark.anyio

TOKEN = "tok-9f8e7d6c5b4a-very-secret"


class ServiceEnv(BaseModel):
    base_url: str = Field(alias="BASE_URL", description="Where the service lives")
    retries: int = Field(3, alias="RETRIES")
    verbose: bool = Field(False, alias="VERBOSE")
    mode: Literal["fast", "safe"] = Field("safe", alias="MODE")
    token: SecretStr = Field(alias="SERVICE_TOKEN", description="API token")


async def _show_env(state: ThreadState) -> ToolResult:
    env: ServiceEnv = state.tenvs
    return ToolResult.success(
        {
            "base_url": env.base_url,
            "retries": env.retries,
            "verbose": env.verbose,
            "mode": env.mode,
            "token": env.token.get_secret_value(),
            "raw": await state.env("BASE_URL"),
        }
    )


SERVICE = define_tool(
    description="shows its tenvs", execute=_show_env, tenvs=ServiceEnv, name="service"
)
CALL = {"type": "tool_use", "id": "c1", "name": "service", "input": {}}


def _db_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*") if p.is_file())


def test_tenvs_fields_become_variables_with_name_requirement_secrecy_and_description() -> None:
    assert SERVICE.tenvs_model is ServiceEnv
    assert SERVICE.variables == (
        Variable("BASE_URL", required=True, description="Where the service lives"),
        Variable("RETRIES"),
        Variable("VERBOSE"),
        Variable("MODE"),
        Variable("SERVICE_TOKEN", type="secret", required=True, description="API token"),
    )


async def test_state_tenvs_is_the_typed_model_parsed_from_the_merged_layers(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime(
        tools=[SERVICE],
        prompt_env={"BASE_URL": "https://prompt", "RETRIES": "1", "MODE": "fast"},
        agent_env={"RETRIES": "5", "SERVICE_TOKEN": TOKEN},
    ) as rt:
        thread = await rt.thread(env={"BASE_URL": "https://thread", "VERBOSE": "true"})
        (result,) = await thread.execute_tool_calls([CALL])
        messages = await runtime.helpers.get_messages(thread.state)
    assert result.status == "success", result.error
    assert result.result == {
        "base_url": "https://thread",
        "retries": 5,
        "verbose": True,
        "mode": "fast",
        "token": "[REDACTED]",
        "raw": "https://thread",
    }
    assert TOKEN not in repr(messages)
    assert TOKEN.encode() not in _db_bytes(db_path)


async def test_a_secret_tenv_set_on_the_thread_is_encrypted_at_rest(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime(tools=[SERVICE], agent_env={"BASE_URL": "u"}) as rt:
        thread = await rt.thread(env={"SERVICE_TOKEN": TOKEN})
        (result,) = await thread.execute_tool_calls([CALL])
        assert await thread.state.env("SERVICE_TOKEN") == TOKEN
    assert result.result["token"] == "[REDACTED]"
    assert TOKEN.encode() not in _db_bytes(db_path)


async def test_state_tenvs_is_none_outside_a_tool_with_tenvs(rt: runtime.Runtime) -> None:
    assert (await rt.thread()).state.tenvs is None


async def test_a_tenv_that_does_not_parse_is_an_error_result_naming_the_field_not_the_value(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(
        tools=[SERVICE], agent_env={"BASE_URL": "u", "SERVICE_TOKEN": TOKEN, "RETRIES": "many"}
    ) as rt:
        (result,) = await (await rt.thread()).execute_tool_calls([CALL])
    assert result.status == "error"
    assert result.error is not None
    assert result.error.startswith("tool 'service': invalid tenvs: RETRIES: ")
    assert "integer" in result.error and "many" not in result.error


async def test_creating_a_thread_lists_every_missing_required_tenv_before_any_tool_runs(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    ran: list[str] = []

    async def other(state: ThreadState) -> ToolResult:
        ran.append("other")
        return ToolResult.success()

    needs_region = define_tool(
        description="x",
        execute=other,
        name="needs_region",
        variables=[Variable("REGION", required=True, description="Cloud region")],
    )
    async with open_runtime(tools=[SERVICE, needs_region], agent_env={"BASE_URL": "u"}) as rt:
        with pytest.raises(MissingVariablesError) as caught:
            await rt.thread("refused")
        assert caught.value.missing == [
            ("SERVICE_TOKEN", "service", "API token"),
            ("REGION", "needs_region", "Cloud region"),
        ]
        message = str(caught.value)
        assert "missing 2 required variables" in message
        assert "SERVICE_TOKEN (required by tool 'service'): API token" in message
        assert "REGION (required by tool 'needs_region'): Cloud region" in message
        with pytest.raises(MissingVariablesError, match="REGION") as caught:
            await rt.thread("refused", env={"SERVICE_TOKEN": TOKEN})
        assert [m[0] for m in caught.value.missing] == ["REGION"]
        thread = await rt.thread("refused", env={"SERVICE_TOKEN": TOKEN, "REGION": "eu"})
        assert await thread.state.env("REGION") == "eu"
    assert ran == []


async def test_a_refused_thread_is_not_created(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(tools=[SERVICE]) as rt:
        with pytest.raises(MissingVariablesError):
            await rt.thread("never")
    async with open_runtime() as rt:  # no tools: nothing required
        state = (await rt.thread("never")).state
        assert await state.env("BASE_URL") is None
        assert state.turn_count == 0


async def test_provider_tools_require_nothing_of_the_thread(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(
        tools=[
            define_tool(
                description="web search",
                name="web_search",
                execution_mode="provider",
                variables=[Variable("KEY", required=True)],
            )
        ],
    ) as other:
        assert (await other.thread()).thread_id


@pytest.mark.parametrize(
    ("model_fields", "message"),
    [
        ({"items": (list[str], ...)}, "tenv 'items' must be str, SecretStr"),
        ({"nested": (dict[str, int], ...)}, "tenv 'nested' must be str, SecretStr"),
        ({"mode": (Literal[1, 2], ...)}, "tenv 'mode' must be str, SecretStr"),
    ],
)
def test_tenvs_fields_text_cannot_express_are_refused_at_definition(
    model_fields: dict[str, Any], message: str
) -> None:
    from pydantic import create_model

    model = create_model("Bad", **model_fields)

    async def execute(state: ThreadState) -> ToolResult:
        return ToolResult.success()

    with pytest.raises(ToolDefinitionError, match=message):
        define_tool(description="x", execute=execute, tenvs=model, name="bad")


def test_tenvs_must_be_a_model_and_must_not_repeat_a_variable() -> None:
    async def execute(state: ThreadState) -> ToolResult:
        return ToolResult.success()

    with pytest.raises(ToolDefinitionError, match="pydantic model class"):
        define_tool(description="x", execute=execute, tenvs=dict, name="bad")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="duplicate variable names"):
        define_tool(
            description="x",
            execute=execute,
            tenvs=ServiceEnv,
            variables=[Variable("BASE_URL")],
            name="bad",
        )


async def test_agent_config_is_a_read_only_mapping_with_thread_overrides(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    config = {"model": "m-1", "limits": {"max_steps": 8, "tags": ["a", "b"]}}
    async with open_runtime(agent_config=config) as rt:
        state = (await rt.thread(agent_config={"model": "m-2"})).state
        assert state.agent_config["model"] == "m-2"
        assert state.agent_config["limits"]["tags"] == ("a", "b")
        with pytest.raises(TypeError):
            state.agent_config["model"] = "x"  # type: ignore[index]
        with pytest.raises(TypeError):
            state.agent_config["limits"]["max_steps"] = 1  # type: ignore[index]
        config["model"] = "changed after"
        assert (await rt.thread()).state.agent_config["model"] == "m-1"
    with pytest.raises(TypeError, match="not JSON-like"):
        open_runtime(agent_config={"fn": print})
    with pytest.raises(TypeError, match="keys must be str"):
        open_runtime(agent_config={1: "x"})


async def test_a_secret_tenv_without_the_key_is_an_error_result_saying_so(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(tools=[SERVICE], agent_env={"BASE_URL": "u"}) as rt:
        await rt.thread("t", env={"SERVICE_TOKEN": TOKEN})
    async with open_runtime(tools=[SERVICE], agent_env={"BASE_URL": "u"}, secret_key=None) as rt:
        (result,) = await (await rt.thread("t")).execute_tool_calls([CALL])
    assert result.status == "error"
    assert result.error == (
        "tool 'service': variable 'SERVICE_TOKEN' is a secret; reading it needs "
        "Runtime(secret_key=...)"
    )

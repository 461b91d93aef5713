"""``quickjail mcp --connect/--openapi``: one run_code over other tool sources, end to end with
the official MCP SDK client (issue 30, item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_support import connect, server_env
from openapi_support import PetServer, petstore_documents, serving

SECRET = "pets-key-0123456789"

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def docs(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return petstore_documents(pytestconfig, tmp_path_factory)


@pytest.fixture
def server() -> Iterator[PetServer]:
    with serving() as running:
        yield running


def _answer(result: Any) -> Any:
    assert result.is_error is False, result.content
    return result.structured_content


def _pets_args(docs: Path, server: PetServer, tmp_path: Path) -> tuple[str, ...]:
    return (
        "--openapi",
        f"pets={docs / '3.0/json/petstore.json'}",
        "--base-url",
        f"pets={server.url}/v2",
        "--auth",
        "pets=header:api_key:PETS_KEY",
        "--tools-db",
        str(tmp_path / "tools.db"),
    )


async def test_mcp_openapi_serves_run_code_over_the_api_with_the_key_added_on_the_host(
    docs: Path, server: PetServer, tmp_path: Path
) -> None:
    server.api_key = SECRET
    program = """
    const pet = await pets.getPetById({petId: 1});
    let missing;
    try { await pets.getPetById({petId: 99}); } catch (e) { missing = e.message; }
    return {name: pet.name, missing};
    """
    args = _pets_args(docs, server, tmp_path)
    async with connect(*args, extra_env={"PETS_KEY": SECRET}) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        ran = await session.call_tool("run_code", {"code": program})
        found = await session.call_tool("search", {"query": "pet by id", "limit": 3})
        described = await session.call_tool("describe", {"name": "pets.getPetById"})
    assert sorted(listed) == ["describe", "run_code", "save_snippet", "search"]
    description = listed["run_code"].description or ""
    assert "- pets:" in description and len(description) <= 4096
    answer = _answer(ran)
    assert answer["status"] == "success", answer
    assert answer["result"] == {"name": "Rex", "missing": "HTTP 404 Not Found: Pet not found"}
    assert server.requests[0]["headers"]["api_key"] == SECRET
    assert SECRET not in json.dumps(answer)
    assert "pets.getPetById" in found.content[0].text  # type: ignore[union-attr]
    assert "function getPetById(args: {" in described.content[0].text  # type: ignore[union-attr]


async def test_mcp_snippets_saved_in_one_call_run_in_a_later_one(
    docs: Path, server: PetServer, tmp_path: Path
) -> None:
    server.api_key = SECRET
    args = _pets_args(docs, server, tmp_path)
    save = {
        "name": "pet_name",
        "description": "The name of the pet with id args.id.",
        "code": "return (await pets.getPetById({petId: args.id})).name;",
    }
    async with connect(*args, extra_env={"PETS_KEY": SECRET}) as session:
        saved = await session.call_tool("save_snippet", save)
        ran = await session.call_tool(
            "run_code", {"code": "return await snippets.pet_name({id: 2});"}
        )
    assert saved.is_error is False
    assert _answer(ran)["result"] == "Tom"


async def test_mcp_connect_serves_a_published_mcp_server_and_an_api_in_one_run_code(
    docs: Path, server: PetServer, tmp_path: Path
) -> None:
    # the official SDK client, against `quickjail mcp`, itself a client of the published
    # reference time server (PyPI mcp-server-time, pinned in the dev extra)
    time_server = f"{sys.executable} -m mcp_server_time --local-timezone UTC"
    server.api_key = SECRET
    args = ("--connect", f"time={time_server}", *_pets_args(docs, server, tmp_path))
    program = """
    const [tokyo, pet] = await Promise.all([
      time.get_current_time({timezone: "Asia/Tokyo"}),
      pets.getPetById({petId: 3}),
    ]);
    const moved = await time.convert_time(
      {source_timezone: "UTC", time: "12:00", target_timezone: "Asia/Tokyo"});
    let wrong;
    try { await time.get_current_time({timezone: "Nowhere/Land"}); }
    catch (e) { wrong = e.message; }
    const found = (await search("convert time")).map((f) => f.name);
    return {zone: tokyo.timezone, pet: pet.name, at: moved.target.datetime, wrong, found};
    """
    async with connect(*args, extra_env={"PETS_KEY": SECRET}) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        ran = await session.call_tool("run_code", {"code": program})
        described = await session.call_tool("describe", {"name": "time"})
    description = listed["run_code"].description or ""
    assert "- time:" in description and "- pets:" in description
    answer = _answer(ran)
    assert answer["status"] == "success", answer
    value = answer["result"]
    assert value["zone"] == "Asia/Tokyo" and value["pet"] == "Kit"
    assert value["at"].endswith("T21:00:00+09:00")
    assert "Invalid timezone" in value["wrong"]
    assert value["found"][0] == "time.convert_time"
    text = described.content[0].text  # type: ignore[union-attr]
    assert "declare namespace time {" in text and "function get_current_time(" in text


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--openapi", "pets=spec.json"], {}, "give its service's URL with --base-url pets=URL"),
        (["--base-url", "pets=http://x"], {}, "--base-url pets: no --openapi source"),
        (["--connect", "bad"], {}, "--connect takes NAME=VALUE"),
        (["--connect", "a=x", "--connect", "a=y"], {}, "the source name 'a' is given twice"),
        (["--connect", "x='unclosed"], {}, "does not split into a command"),
        (
            ["--openapi", "p=s.json", "--base-url", "p=http://x", "--auth", "p=bearer:NOPE_VAR"],
            {},
            "the environment variable NOPE_VAR is not set",
        ),
        (
            ["--openapi", "p=s.json", "--base-url", "p=http://x", "--auth", "p=basic:u:p"],
            {},
            "give bearer:VAR, header:NAME:VAR or query:NAME:VAR",
        ),
        (["--connect", "search=echo hi"], {}, "cannot be named 'search'"),
        (["--connect", "a=echo", "--allow-read", "."], {}, "drop one of them"),
    ],
)
def test_mcp_source_flags_are_checked_before_anything_starts(
    args: list[str], env: dict[str, str], message: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "quickjail", "mcp", *args, "--tools-db", str(tmp_path / "t.db")],
        env=server_env(env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr

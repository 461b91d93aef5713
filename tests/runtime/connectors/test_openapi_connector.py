"""The OpenAPI connector against the published Petstore document and a loopback server.

The document is the pinned ``@readme/oas-examples`` package (see ``openapi_support``); the
server implements some of its operations on 127.0.0.1. Each test goes through the public API:
``connectors.openapi(...)``, its tools, and ``Tool.call``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from openapi_support import PetServer, echo_document, petstore_documents, serving

from quickjail import runtime
from quickjail.runtime import Tool, Variable
from quickjail.runtime.connectors import api_key, bearer, openapi
from quickjail.runtime.errors import MissingVariablesError, ToolDefinitionError

pytestmark = pytest.mark.anyio

SECRET = "pk-live-91c2e7-NEVER-SHOWN"
PETSTORE_IDS = [
    "updatePet", "addPet", "findPetsByStatus", "findPetsByTags", "getPetById",
    "updatePetWithForm", "deletePet", "uploadFile", "getInventory", "placeOrder",
    "getOrderById", "deleteOrder", "createUser", "createUsersWithArrayInput",
    "createUsersWithListInput", "loginUser", "logoutUser", "getUserByName", "updateUser",
    "deleteUser",
]  # fmt: skip


@pytest.fixture(scope="module")
def docs(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return petstore_documents(pytestconfig, tmp_path_factory)


@pytest.fixture
def server() -> Iterator[PetServer]:
    with serving() as running:
        yield running


async def tools_of(connector: Any) -> dict[str, Tool]:
    return {tool.name: tool for tool in await connector.tools()}


async def test_petstore_operations_become_tools_typed_by_their_parameters(docs: Path) -> None:
    async with openapi(
        "pets", docs / "3.0/json/petstore.json", base_url="http://127.0.0.1:9/v2"
    ) as c:
        tools = await tools_of(c)
    assert list(tools) == PETSTORE_IDS
    assert c.description.startswith("Swagger Petstore: This is a sample server Petstore server.")
    assert len(c.description) <= 200
    get_pet = tools["getPetById"]
    assert get_pet.input_schema["properties"]["petId"]["type"] == "integer"
    assert get_pet.input_schema["required"] == ["petId"]
    assert get_pet.input_schema["additionalProperties"] is False
    assert get_pet.output_schema is not None
    assert get_pet.output_schema["required"] == ["name", "photoUrls"]
    assert get_pet.description.startswith("GET /pet/{petId}: Find pet by ID")
    declaration = get_pet.typescript_declaration
    assert "petId: number;" in declaration and "photoUrls: Array<string>;" in declaration
    status = tools["findPetsByStatus"].input_schema["properties"]["status"]
    assert status["items"]["enum"] == ["available", "pending", "sold"]
    # the header parameter, the path parameter, and a JSON body declared required
    delete = tools["deletePet"].input_schema
    assert set(delete["properties"]) == {"api_key", "petId"} and delete["required"] == ["petId"]
    add = tools["addPet"].input_schema
    assert add["required"] == ["body"] and add["properties"]["body"]["required"] == [
        "name",
        "photoUrls",
    ]
    # a form body (not JSON) and an optional one: the operation is kept, without a body
    assert set(tools["updatePetWithForm"].input_schema["properties"]) == {"petId"}


async def test_a_call_puts_each_argument_in_its_place_and_resolves_to_the_json(
    docs: Path, server: PetServer
) -> None:
    spec = docs / "3.0/json/petstore.json"
    async with openapi("pets", spec, base_url=f"{server.url}/v2") as c:
        tools = await tools_of(c)
        got = await tools["getPetById"].call({"petId": 2})
        found = await tools["findPetsByStatus"].call({"status": ["available", "sold"]})
        added = await tools["addPet"].call({"body": {"name": "Ada", "photoUrls": ["a.png"]}})
        deleted = await tools["deletePet"].call({"petId": 3, "api_key": "from-the-guest"})
        login = await tools["loginUser"].call({"username": "ann", "password": "p&q=1"})
    assert got.status == "success" and got.result["name"] == "Tom"
    assert [p["name"] for p in found.result] == ["Rex", "Tom"]
    assert added.result == {"id": 4, "name": "Ada", "photoUrls": ["a.png"]}
    assert deleted.status == "success" and deleted.result is None
    assert login.result == "logged in user session:ann"
    by_path = {(r["method"], r["path"]): r for r in server.requests}
    assert by_path[("GET", "/v2/pet/findByStatus")]["query"] == {"status": ["available", "sold"]}
    posted = by_path[("POST", "/v2/pet")]
    assert json.loads(posted["body"]) == {"name": "Ada", "photoUrls": ["a.png"]}
    assert posted["headers"]["content-type"] == "application/json"
    assert by_path[("DELETE", "/v2/pet/3")]["headers"]["api_key"] == "from-the-guest"
    assert by_path[("GET", "/v2/user/login")]["query"] == {
        "username": ["ann"],
        "password": ["p&q=1"],
    }


async def test_arguments_that_miss_the_declared_types_never_reach_the_server(
    docs: Path, server: PetServer
) -> None:
    async with openapi("pets", docs / "3.0/json/petstore.json", base_url=f"{server.url}/v2") as c:
        tools = await tools_of(c)
        wrong_type = await tools["getPetById"].call({"petId": "2"})
        unknown = await tools["getPetById"].call({"petId": 2, "extra": 1})
        missing = await tools["addPet"].call({})
        bad_enum = await tools["findPetsByStatus"].call({"status": ["lost"]})
    for result in (wrong_type, unknown, missing, bad_enum):
        assert result.status == "error"
        assert "invalid arguments" in (result.error or "")
    assert server.requests == []


async def test_a_status_outside_2xx_fails_with_its_reason_and_the_start_of_the_body(
    docs: Path, server: PetServer
) -> None:
    async with openapi("pets", docs / "3.0/json/petstore.json", base_url=f"{server.url}/v2") as c:
        missing = await (await tools_of(c))["getPetById"].call({"petId": 99})
    assert missing.status == "error"
    assert missing.error is not None and missing.error.endswith("HTTP 404 Not Found: Pet not found")
    async with openapi("odd", echo_document(), base_url=server.url) as c:
        failed = await (await tools_of(c))["status"].call({"code": 503})
    assert failed.error is not None
    _, body = failed.error.split("HTTP 503 Service Unavailable: ", 1)
    assert body == ("nope " * 400)[:500]


async def test_the_yaml_and_3_1_documents_give_the_same_operations(docs: Path) -> None:
    names = []
    for path in ("3.0/json/petstore.json", "3.0/yaml/petstore.yaml", "3.1/json/petstore.json"):
        async with openapi("pets", docs / path, base_url="http://127.0.0.1:9/v2") as c:
            tools = await tools_of(c)
        names.append(list(tools))
        assert tools["getPetById"].input_schema["properties"]["petId"]["type"] == "integer"
    assert names[0] == names[1] == names[2] == PETSTORE_IDS


@pytest.mark.parametrize("path", ["2.0/json/petstore.json", "2.0/yaml/petstore.yaml"])
def test_a_swagger_2_document_is_refused_saying_so(docs: Path, path: str) -> None:
    with pytest.raises(ToolDefinitionError, match=r"Swagger 2\.0: only OpenAPI 3\.0 and 3\.1"):
        openapi("pets", docs / path, base_url="http://127.0.0.1:9/v2")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"openapi": "2.9.0", "paths": {}}, "declares openapi '2.9.0'"),
        ({"openapi": "4.0.0", "paths": {}}, "declares openapi '4.0.0'"),
        ({"info": {}}, "declares openapi 'None'"),
        ({"openapi": "3.0.3", "paths": []}, "'paths' is not an object"),
    ],
    ids=["2.9", "4.0", "no-version", "paths-list"],
)
def test_a_document_that_is_not_openapi_3_0_or_3_1_is_refused(
    doc: dict[str, Any], message: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        openapi("api", doc, base_url="http://127.0.0.1:9")


async def test_parameters_that_share_a_name_are_told_apart_by_where_they_go(
    server: PetServer,
) -> None:
    async with openapi("odd", echo_document(), base_url=server.url) as c:
        echo = (await tools_of(c))["echo"]
        assert set(echo.input_schema["properties"]) == {
            "item", "item_query", "body_header", "X-Trace", "tags",
        }  # fmt: skip
        result = await echo.call(
            {"item": "a", "item_query": "b", "body_header": "c", "X-Trace": "d", "tags": ["x", "y"]}
        )
    assert result.result["path"] == "/echo/a"
    assert result.result["query"] == {"item": ["b"], "tags": ["x", "y"]}
    assert result.result["headers"]["body"] == "c" and result.result["headers"]["x-trace"] == "d"


async def test_the_api_key_is_added_on_the_host_and_redacted_from_what_comes_back(
    docs: Path, server: PetServer, open_runtime: Callable[..., runtime.Runtime]
) -> None:
    server.api_key = SECRET
    connector = openapi(
        "pets",
        docs / "3.0/json/petstore.json",
        base_url=f"{server.url}/v2",
        auth=api_key("PETS_KEY", header="api_key"),
    )
    async with connector:
        tools = await tools_of(connector)
        get_pet = tools["getPetById"]
        assert get_pet.variables == (
            Variable("PETS_KEY", type="secret", required=True, description="pets auth"),
        )
        # the guest cannot set (or see) the header the key goes in
        assert "api_key" not in tools["deletePet"].input_schema["properties"]
        no_thread = await get_pet.call({"petId": 1})
        assert no_thread.status == "error" and "'PETS_KEY'" in (no_thread.error or "")
        async with open_runtime(tools=list(tools.values())) as rt:
            with pytest.raises(MissingVariablesError, match="PETS_KEY"):
                await rt.thread("without")
            thread = await rt.thread("t", env={"PETS_KEY": SECRET})
            ok = await get_pet.call({"petId": 1}, thread.state)
            echoed = await get_pet.call({"petId": 7}, thread.state)
            failed = await get_pet.call({"petId": 99}, thread.state)
    assert ok.status == "success" and ok.result["name"] == "Rex"
    assert [r["headers"].get("api_key") for r in server.requests] == [SECRET] * 3
    # the server echoed the key: what the thread returns holds it redacted
    assert echoed.result == {"id": 7, "name": "key=[REDACTED]", "photoUrls": ["[REDACTED]"]}
    assert failed.error is not None and failed.error.endswith("HTTP 404 Not Found: Pet not found")
    for result in (ok, echoed, failed):
        assert SECRET not in repr(result)


async def test_a_bearer_token_goes_only_to_the_origin_the_call_started_at(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    with serving() as home, serving() as other:
        connector = openapi(
            "odd",
            echo_document(),
            base_url=home.url,
            allow=[home.url, other.url],
            auth=bearer("TOKEN"),
            headers={"X-Client": "quickjail-test"},
        )
        async with connector:
            tools = await tools_of(connector)
            async with open_runtime(tools=list(tools.values())) as rt:
                thread = await rt.thread("t", env={"TOKEN": SECRET})
                direct = await tools["echo"].call({"item": "here"}, thread.state)
                moved = await tools["redirect"].call(
                    {"to": f"{other.url}/echo/there"}, thread.state
                )
    assert direct.result["headers"]["authorization"] == "Bearer [REDACTED]"
    assert direct.result["headers"]["x-client"] == "quickjail-test"
    assert home.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"
    assert moved.status == "success" and moved.result["path"] == "/echo/there"
    assert [r["path"] for r in other.requests] == ["/echo/there"]
    assert "authorization" not in other.requests[0]["headers"]
    assert other.requests[0]["headers"]["x-client"] == "quickjail-test"
    assert SECRET not in repr(direct) + repr(moved)


async def test_a_program_in_code_mode_gets_the_response_but_never_the_key(
    docs: Path, server: PetServer, open_runtime: Callable[..., runtime.Runtime]
) -> None:
    server.api_key = SECRET
    code = """
    const echoed = await pets.getPetById({ petId: 7 });
    let missing;
    try { await pets.getPetById({ petId: 99 }); } catch (e) { missing = e.message; }
    export default { echoed, missing, env: typeof process };
    """
    connector = openapi(
        "pets",
        docs / "3.0/json/petstore.json",
        base_url=f"{server.url}/v2",
        auth=api_key("PETS_KEY", header="api_key"),
    )
    tool = runtime.code_mode_tool([connector], timeout=30)
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread("t", env={"PETS_KEY": SECRET})
        call = {"type": "tool_use", "id": "c", "name": "run_code", "input": {"code": code}}
        (result,) = await thread.execute_tool_calls([call])
        messages = await runtime.helpers.get_messages(thread.state)
    assert connector.closed  # the runtime closed it
    assert result.status == "success", result.error
    answer = result.result["result"]
    assert answer["echoed"]["name"] == "key=[REDACTED]"
    assert answer["missing"] == "HTTP 404 Not Found: Pet not found"
    assert server.requests[0]["headers"]["api_key"] == SECRET
    assert SECRET not in repr(result) + repr(messages)


async def test_cancelling_a_call_stops_its_request_and_the_connector_still_serves(
    server: PetServer,
) -> None:
    async with openapi("odd", echo_document(), base_url=server.url) as c:
        tools = await tools_of(c)
        with anyio.move_on_after(0.3) as scope:
            await tools["slow"].call({})
        assert scope.cancelled_caught
        after = await tools["echo"].call({"item": "x"})
        assert after.status == "success" and after.result["path"] == "/echo/x"
    assert c.closed
    refused = await tools["echo"].call({"item": "x"})
    assert refused.status == "error" and "connector 'odd' is closed" in (refused.error or "")
    await c.aclose()  # idempotent


async def test_a_query_api_key_is_added_on_the_host_and_the_guest_cannot_set_it(
    server: PetServer, open_runtime: Callable[..., runtime.Runtime]
) -> None:
    doc = echo_document()
    doc["paths"]["/echo/{item}"]["get"]["parameters"].append(
        {"name": "key", "in": "query", "schema": {"type": "string"}}
    )
    connector = openapi("odd", doc, base_url=server.url, auth=api_key("KEY", query="key"))
    async with connector:
        tools = await tools_of(connector)
        assert "key" not in tools["echo"].input_schema["properties"]
        async with open_runtime(tools=list(tools.values())) as rt:
            thread = await rt.thread("t", env={"KEY": SECRET})
            echoed = await tools["echo"].call({"item": "x", "item_query": "y"}, thread.state)
            refused = await tools["echo"].call({"item": "x", "key": "mine"}, thread.state)
    assert server.requests[0]["query"] == {"item": ["y"], "key": [SECRET]}
    assert echoed.result["query"] == {"item": ["y"], "key": ["[REDACTED]"]}
    assert refused.status == "error" and "invalid arguments" in (refused.error or "")
    assert SECRET not in repr(echoed) + repr(refused)

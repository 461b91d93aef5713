"""The published input schema and the validator agree, for every allowed type up to 7 levels.

For each allowed argument type (see ``runtime/_argtypes.py``) nested 1 to 7 levels deep in
models, lists and dicts, the tool's schema is compared with a snapshot (a change shows up as a
visible diff; regenerate with ``QUICKJAIL_UPDATE_SNAPSHOTS=1``), and on good and bad values the
runtime's verdict is the verdict of an independent JSON Schema validator over that schema:
no coercion the schema does not allow, no key it does not list.
"""

from __future__ import annotations

import enum
import json
import os
from pathlib import Path
from typing import Any, Literal, Optional

import anyio
import jsonschema
import pytest
from pydantic import BaseModel, create_model

from quickjail.runtime import Tool, ToolResult, define_tool
from quickjail.runtime.errors import ToolValidationError

SNAPSHOT = Path(__file__).parent / "snapshots" / "strict_schemas.json"
MAX_DEPTH = 7


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Leaf(BaseModel):
    y: int


# name -> (type, good values, bad values)
LEAVES: dict[str, tuple[Any, list[Any], list[Any]]] = {
    "str": (str, ["s", ""], [5, None, True]),
    "int": (int, [5, -3, 0], ["5", 5.5, True, None]),
    "float": (float, [1.5, 2, -0.25], ["1.5", True, None]),
    "bool": (bool, [True, False], [1, 0, "true", None]),
    "none": (None, [None], [0, "", False]),
    "literal": (Literal["a", "b"], ["a", "b"], ["c", 1, None]),
    "str_enum": (Color, ["red", "green"], ["RED", 0, None]),
    "int_enum": (Level, [1, 2], ["1", 3, True]),
    "optional": (Optional[int], [None, 3], ["3", 3.5]),  # noqa: UP045 - the spelled form
    "list": (list[int], [[1, 2], []], [[1, "2"], "12", [True]]),
    "dict": (dict[str, int], [{"a": 1}, {}], [{"a": "1"}, [1], {"a": None}]),
    "union": (int | str, [1, "a"], [1.5, None, True]),
    "model": (Leaf, [{"y": 1}], [{"y": 1, "z": 2}, {}, {"y": "1"}]),
}
WRAPPERS = ("model", "list", "dict")


def _wrap_type(tp: Any, depth: int, name: str) -> Any:
    for level in range(depth - 1):
        kind = WRAPPERS[level % 3]
        if kind == "model":
            tp = create_model(f"{name}L{level}", v=(tp, ...))
        elif kind == "list":
            tp = list[tp]
        else:
            tp = dict[str, tp]
    return tp


def _wrap_value(value: Any, depth: int) -> Any:
    for level in range(depth - 1):
        kind = WRAPPERS[level % 3]
        value = {"v": value} if kind == "model" else [value] if kind == "list" else {"k": value}
    return value


def _tool(leaf: str, depth: int) -> Tool:
    name = f"{leaf.title().replace('_', '')}D{depth}"
    args = create_model(f"{name}Args", x=(_wrap_type(LEAVES[leaf][0], depth, name), ...))

    async def execute(state: Any, parsed: BaseModel) -> ToolResult:
        return ToolResult.success("ok")

    return define_tool(description="probe", args=args, execute=execute, name=f"probe_{leaf}")


CASES = [(leaf, depth) for leaf in LEAVES for depth in range(1, MAX_DEPTH + 1)]


def _accepts(tool: Tool, value: Any) -> bool:
    try:
        anyio.run(tool.execute, value)
    except ToolValidationError as exc:
        assert exc.target == "input" and exc.issues
        return False
    return True


def test_schemas_match_the_snapshot() -> None:
    schemas = {f"{leaf}/{depth}": _tool(leaf, depth).input_schema for leaf, depth in CASES}
    if os.environ.get("QUICKJAIL_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(schemas, indent=1, sort_keys=True) + "\n")
    assert schemas == json.loads(SNAPSHOT.read_text())


@pytest.mark.parametrize(("leaf", "depth"), CASES, ids=[f"{name}-{d}" for name, d in CASES])
def test_validator_verdicts_equal_the_published_schema_verdicts(leaf: str, depth: int) -> None:
    tool = _tool(leaf, depth)
    schema = tool.input_schema
    checker = jsonschema.Draft202012Validator(schema)
    _, goods, bads = LEAVES[leaf]
    values: list[tuple[Any, bool]] = []
    for good in goods:
        values.append(({"x": _wrap_value(good, depth)}, True))
    for bad in bads:
        values.append(({"x": _wrap_value(bad, depth)}, False))
    first = {"x": _wrap_value(goods[0], depth)}
    values.append(({**first, "extra": 1}, False))  # an extra key at the top
    if depth > 1:  # an extra key in the innermost wrapping model
        inner = _wrap_value(goods[0], 1)
        values.append(({"x": _wrap_value_extra(inner, depth)}, False))
    for value, expected in values:
        assert checker.is_valid(value) is expected, (value, expected)
        assert _accepts(tool, value) is expected, (value, expected)


def _wrap_value_extra(value: Any, depth: int) -> Any:
    for level in range(depth - 1):
        kind = WRAPPERS[level % 3]
        if kind == "model":
            value = {"v": value, "unlisted": True}
        else:
            value = [value] if kind == "list" else {"k": value}
    return value


def test_error_text_names_the_field_and_what_was_expected() -> None:
    tool = _tool("int", 4)
    with pytest.raises(ToolValidationError) as caught:
        anyio.run(tool.execute, {"x": {"k": [{"v": "5"}]}})
    assert caught.value.issues == [
        {"path": ["x", "k", 0, "v"], "message": 'expected an integer (got a string "5")'}
    ]
    with pytest.raises(ToolValidationError) as caught:
        anyio.run(tool.execute, {"x": {"k": [{"v": 5, "w": 1}]}})
    assert caught.value.issues == [
        {"path": ["x", "k", 0, "w"], "message": "unexpected key (allowed keys: v)"}
    ]


class _A(BaseModel):
    p: int


class _B(BaseModel):
    q: int


class _ManyArgs(BaseModel):
    items: list[_A | _B]


def test_a_huge_hostile_value_gets_a_bounded_list_of_issues() -> None:
    async def execute(state: Any, parsed: BaseModel) -> ToolResult:
        return ToolResult.success(len(getattr(parsed, "items", [])))

    tool = define_tool(description="many", args=_ManyArgs, execute=execute, name="many")
    hostile = {"items": [{"p": 1, "q": 2, f"k{i}": i} for i in range(100_000)]}
    with pytest.raises(ToolValidationError) as caught:
        anyio.run(tool.execute, hostile)
    assert len(caught.value.issues) == 5
    assert caught.value.issues[0] == {
        "path": ["items", 0, "q"],
        "message": "unexpected key (allowed keys: p)",
    }
    assert anyio.run(tool.execute, {"items": [{"p": 1}, {"q": 2}] * 50_000}) == 100_000

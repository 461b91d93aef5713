"""What a tool result may be on the MCP stream: cut to ``--max-result-chars``, each message
under the TypeScript SDK client's 10 MiB (``quickjail._mcp_results``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP server needs the 'mcp' extra")

import jsonschema

from quickjail._mcp_results import (
    MAX_MESSAGE_BYTES,
    answer_result,
    cap_answer,
    cut_text,
    fit_message,
    message_bytes,
)
from quickjail.runtime.helpers import answer_schema


def _answer(**fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "status": "success",
        "result": None,
        "error": None,
        "reason": None,
        "reports": [],
        "logs": [],
    }
    answer.update(fields)
    return answer


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


ANSWERS = {
    "long-string": _answer(result="x" * 200_000),
    "quotes": _answer(result='"\\' * 100_000),
    "object": _answer(result={"rows": [{"n": i, "s": "é" * 10} for i in range(20_000)]}),
    "many-numbers": _answer(result=list(range(100_000))),
    "reports-and-logs": _answer(
        result="r" * 50_000,
        reports=["p" * 1000] * 100,
        logs=[{"level": "log", "args": ["l" * 500, i]} for i in range(400)],
    ),
    "one-huge-log": _answer(logs=[{"level": "error", "args": ["z" * 300_000]}]),
    "error": _answer(
        status="error",
        error={
            "name": "Error",
            "message": "m" * 100_000,
            "line": 1,
            "column": 2,
            "stack": "s" * 100_000,
        },
    ),
}


@pytest.mark.parametrize("limit", [1_000, 20_000, 100_000])
@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_a_cut_answer_fits_its_limit_matches_the_answer_schema_and_says_it_was_cut(
    name: str, limit: int
) -> None:
    answer = ANSWERS[name]
    capped = cap_answer(answer, limit)
    assert _size(capped) <= limit
    jsonschema.validate(capped, answer_schema())
    assert f"characters not sent; --max-result-chars {limit}]" in json.dumps(capped)
    assert capped["status"] == answer["status"]


def test_an_answer_within_the_limit_is_sent_as_it_is() -> None:
    answer = _answer(result={"a": [1, 2, 3]}, logs=[{"level": "log", "args": ["hi"]}])
    assert cap_answer(answer, 1_000) is answer
    result = answer_result(answer, False, 1_000)
    assert result.structured_content == answer
    assert json.loads(result.content[0].text) == answer  # type: ignore[union-attr]


def test_a_cut_string_keeps_its_start() -> None:
    capped = cap_answer(_answer(result="abc" * 10_000), 2_000)
    assert capped["result"].startswith("abcabc")
    assert capped["result"].endswith("of 30000 characters not sent; --max-result-chars 2000]")
    assert cut_text("t" * 5_000, 1_000).endswith(
        "of 5000 characters not sent; --max-result-chars 1000]"
    )
    assert len(cut_text("t" * 5_000, 1_000)) <= 1_000
    assert cut_text("short", 1_000) == "short"


def test_no_message_exceeds_the_limit_whatever_the_characters_and_the_flag() -> None:
    # four UTF-8 bytes per character, sent twice: 2 M characters would be 16 MB
    answer = _answer(result="\U0001f600" * 2_000_000)
    result = answer_result(answer, False, 100_000_000)
    assert message_bytes(result) <= MAX_MESSAGE_BYTES
    assert result.structured_content is not None
    assert "characters not sent" in result.structured_content["result"]


def test_a_tool_without_an_output_schema_sends_its_value_once() -> None:
    rendered = {
        "content": [{"type": "text", "text": '{"sum": 3}'}],
        "isError": False,
        "structuredContent": {"sum": 3},
    }
    result = fit_message(rendered, max_result_chars=1_000, structured=False, answer=False)
    assert result.structured_content is None
    assert [c.type for c in result.content] == ["text"]
    kept = fit_message(rendered, max_result_chars=1_000, structured=True, answer=False)
    assert kept.structured_content == {"sum": 3}


def test_a_too_large_value_of_a_tool_with_an_output_schema_is_an_error_with_its_start() -> None:
    value = {"rows": ["r" * 100] * 1_000}
    rendered = {
        "content": [{"type": "text", "text": json.dumps(value)}],
        "isError": False,
        "structuredContent": value,
    }
    result = fit_message(rendered, max_result_chars=5_000, structured=True, answer=False)
    assert result.is_error is True and result.structured_content is None
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(text) <= 5_000 and text.startswith("The result is too large to send whole")
    assert text.endswith("characters not sent; --max-result-chars 5000]")


def test_images_that_would_overflow_the_message_are_left_out_and_listed() -> None:
    image = {"type": "image", "data": "A" * (4 * 2**20), "mimeType": "image/png"}
    rendered = {"content": [{"type": "text", "text": "three images"}, *[image] * 3]}
    result = fit_message(rendered, max_result_chars=1_000, structured=False, answer=False)
    assert message_bytes(result) <= MAX_MESSAGE_BYTES
    assert [c.type for c in result.content] == ["text", "image", "image"]
    assert "1 of 3 images not sent" in result.content[0].text  # type: ignore[union-attr]


def test_a_failure_carries_structured_content_only_as_a_run_code_answer() -> None:
    failure = {
        "content": [{"type": "text", "text": "Error: no rows"}],
        "isError": True,
        "structuredContent": {"detail": "not in the output schema"},
    }
    result = fit_message(failure, max_result_chars=1_000, structured=True, answer=False)
    assert result.is_error is True and result.structured_content is None
    answer = _answer(
        status="error", error={"name": "E", "message": "m", "line": 1, "column": 1, "stack": None}
    )
    failed_run = {**failure, "structuredContent": answer}
    result = fit_message(failed_run, max_result_chars=1_000, structured=True, answer=True)
    assert result.structured_content == answer

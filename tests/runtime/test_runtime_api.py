"""The public surface and the exception tree."""

from __future__ import annotations

import inspect

from quickjail import runtime
from quickjail.runtime import errors as _errors

EXPECTED_ALL = [
    "AttachmentRef",
    "Message",
    "Runtime",
    "Thread",
    "ThreadState",
    "Tool",
    "ToolAttachment",
    "ToolResult",
    "ToolRuntimeError",
    "Variable",
    "code_mode_tool",
    "define_tool",
    "discover_tools",
    "errors",
    "export_tools",
    "helpers",
]
HELPERS = [
    "AbortSignal",
    "ExecutionState",
    "ImageContent",
    "RunCodeAnswer",
    "SqlResult",
    "TextContent",
    "ThreadStorage",
    "ToolContent",
    "answer_schema",
    "discovery_tools",
    "emit_thread_event",
    "get_messages",
    "inject_message",
    "invalid_answer",
    "queue_tool",
    "render_content",
    "render_results",
    "result_content",
    "run_code_answer",
]


def test_public_names_are_exactly_the_documented_surface() -> None:
    assert runtime.__all__ == EXPECTED_ALL
    assert runtime.helpers.__all__ == HELPERS
    for name in EXPECTED_ALL:
        assert hasattr(runtime, name)
    for name in HELPERS:
        assert hasattr(runtime.helpers, name)


def test_public_names_do_not_leak_private_modules() -> None:
    public = {n for n in vars(runtime) if not n.startswith("_")}
    # the connectors subpackage is public (quickjail.runtime.connectors.mcp, .openapi) but
    # left out of __all__, which stays small
    assert public == {*EXPECTED_ALL, "connectors"}


def test_every_runtime_error_derives_from_the_single_root() -> None:
    errors = [
        obj
        for obj in vars(_errors).values()
        if inspect.isclass(obj) and issubclass(obj, BaseException) and not issubclass(obj, Warning)
    ]
    # ThreadQuotaError (issue 28, item 8) is the 14th; the four approval errors (issue 26);
    # ConnectorError (issue 30)
    assert len(errors) == 19
    for error in errors:
        assert issubclass(error, runtime.ToolRuntimeError)


def test_errors_subclass_the_builtin_with_the_same_meaning() -> None:
    assert issubclass(_errors.ToolDefinitionError, ValueError)
    assert issubclass(_errors.ProviderFormatError, ValueError)
    assert issubclass(_errors.ToolValidationError, ValueError)
    assert issubclass(_errors.ThreadPathError, ValueError)
    assert issubclass(_errors.ThreadFileNotFoundError, FileNotFoundError)
    assert issubclass(_errors.ScopedVariableError, PermissionError)
    assert issubclass(_errors.MissingVariablesError, ValueError)
    assert issubclass(_errors.RuntimeClosedError, RuntimeError)


def test_exception_tree_is_drawn_in_the_errors_docstring() -> None:
    doc = _errors.__doc__ or ""
    for name in _errors.__all__:
        assert name in doc


def test_tool_name_warning_is_a_user_warning_not_an_error() -> None:
    assert issubclass(runtime.errors.ToolNameWarning, UserWarning)
    assert not issubclass(runtime.errors.ToolNameWarning, runtime.ToolRuntimeError)


def test_package_imports_no_event_loop_library_directly() -> None:
    import pathlib

    for path in pathlib.Path(runtime.__file__).parent.glob("*.py"):
        text = path.read_text()
        for banned in (
            "import asyncio",
            "import trio",
            "from asyncio",
            "from trio",
            "import wasmtime",
            "from wasmtime",
        ):
            assert banned not in text, f"{path.name} mentions {banned!r}"

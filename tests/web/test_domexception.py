"""DOMException behaves as Web IDL section 2.8 says: the name-to-code table, the legacy code
constants, an Error to ``instanceof`` and ``Error.isError``, and a run's error when uncaught."""

from __future__ import annotations

import pytest

import quickjail

# Web IDL's table of names with legacy codes; every other name has code 0
NAMES = {
    "IndexSizeError": 1,
    "HierarchyRequestError": 3,
    "WrongDocumentError": 4,
    "InvalidCharacterError": 5,
    "NoModificationAllowedError": 7,
    "NotFoundError": 8,
    "NotSupportedError": 9,
    "InUseAttributeError": 10,
    "InvalidStateError": 11,
    "SyntaxError": 12,
    "InvalidModificationError": 13,
    "NamespaceError": 14,
    "InvalidAccessError": 15,
    "TypeMismatchError": 17,
    "SecurityError": 18,
    "NetworkError": 19,
    "AbortError": 20,
    "URLMismatchError": 21,
    "QuotaExceededError": 22,
    "TimeoutError": 23,
    "InvalidNodeTypeError": 24,
    "DataCloneError": 25,
    "EncodingError": 0,
    "NotReadableError": 0,
    "OperationError": 0,
    "Error": 0,
    "abortError": 0,
}
CONSTANTS = {
    "INDEX_SIZE_ERR": 1,
    "DOMSTRING_SIZE_ERR": 2,
    "HIERARCHY_REQUEST_ERR": 3,
    "WRONG_DOCUMENT_ERR": 4,
    "INVALID_CHARACTER_ERR": 5,
    "NO_DATA_ALLOWED_ERR": 6,
    "NO_MODIFICATION_ALLOWED_ERR": 7,
    "NOT_FOUND_ERR": 8,
    "NOT_SUPPORTED_ERR": 9,
    "INUSE_ATTRIBUTE_ERR": 10,
    "INVALID_STATE_ERR": 11,
    "SYNTAX_ERR": 12,
    "INVALID_MODIFICATION_ERR": 13,
    "NAMESPACE_ERR": 14,
    "INVALID_ACCESS_ERR": 15,
    "VALIDATION_ERR": 16,
    "TYPE_MISMATCH_ERR": 17,
    "SECURITY_ERR": 18,
    "NETWORK_ERR": 19,
    "ABORT_ERR": 20,
    "URL_MISMATCH_ERR": 21,
    "QUOTA_EXCEEDED_ERR": 22,
    "TIMEOUT_ERR": 23,
    "INVALID_NODE_TYPE_ERR": 24,
    "DATA_CLONE_ERR": 25,
}


@pytest.mark.parametrize(("name", "code"), NAMES.items(), ids=list(NAMES))
def test_the_code_follows_the_name(name: str, code: int) -> None:
    r = quickjail.run_code_sync(
        "export default (n) => { const e = new DOMException('m', n);"
        " return [e.name, e.message, e.code] }",
        execute={"fn": "default", "args": [name]},
    )
    assert r.result == [name, "m", code]


def test_the_legacy_constants_are_on_the_constructor_and_the_prototype() -> None:
    r = quickjail.run_code_sync(
        """export default (names) => names.map((n) => {
          const d = Object.getOwnPropertyDescriptor(DOMException, n);
          return [DOMException[n], DOMException.prototype[n], d.writable, d.configurable];
        })""",
        execute={"fn": "default", "args": [list(CONSTANTS)]},
    )
    assert r.result == [[v, v, False, False] for v in CONSTANTS.values()]


CASES: list[tuple[str, str, object]] = [
    (
        "defaults",
        "const e = new DOMException(); return [e.name, e.message, e.code, DOMException.length]",
        ["Error", "", 0, 0],
    ),
    (
        "an_error_to_instanceof_is_error_and_to_string",
        """const e = new DOMException("gone", "NotFoundError");
        return [e instanceof DOMException, e instanceof Error, Error.isError(e), String(e),
                Object.prototype.toString.call(e), typeof e.stack]""",
        [True, True, True, "NotFoundError: gone", "[object DOMException]", "string"],
    ),
    (
        "name_message_and_code_are_prototype_getters",
        """const e = new DOMException("m", "AbortError"), p = DOMException.prototype;
        const own = Object.getOwnPropertyNames(e).filter((k) => k !== "stack");
        const d = Object.getOwnPropertyDescriptor(p, "code");
        return [own, typeof d.get, d.set === undefined,
                Object.getPrototypeOf(p) === Error.prototype]""",
        [[], "function", True, True],
    ),
    (
        "arguments_are_strings",
        "const e = new DOMException(42, { toString() { return 'AbortError' } });"
        " return [e.message, e.name, e.code]",
        ["42", "AbortError", 20],
    ),
    (
        "it_needs_new",
        "try { DOMException('x') } catch (e) { return e.name }",
        "TypeError",
    ),
    (
        "subclasses_work",
        """class Gone extends DOMException { constructor() { super("bye", "NotFoundError") } }
        const g = new Gone();
        return [g instanceof Gone, g instanceof DOMException, g.code, g.name]""",
        [True, True, 8, "NotFoundError"],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_domexception_follows_web_idl(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (() => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_an_uncaught_domexception_is_the_runs_error_and_logs_show_its_name() -> None:
    r = quickjail.run_code_sync(
        """console.error(new DOMException("quiet", "DataCloneError"));
        throw new DOMException("loud", "InvalidStateError")"""
    )
    assert r.status == "error" and r.error is not None
    assert (r.error.name, r.error.message, r.error.line) == ("InvalidStateError", "loud", 2)
    assert r.logs[0].args[0].startswith("DataCloneError: quiet")

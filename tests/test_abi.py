"""The host's copy of the guest ABI (``sandbox/_abi.py``) equals the C header, value by value.

The header ``_guest/quickjail.h`` is parsed (comments dropped, every ``enum`` member and every
``#define QJ_*`` evaluated), and each constant of ``_abi`` is compared with the header's of the
same name less the ``QJ_`` prefix. Any constant on either side without its counterpart fails too,
so a value cannot drift and a new one cannot be added on one side only.
"""

from __future__ import annotations

import ast
import operator
import re
import struct
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from quickjail.sandbox import _abi

HEADER = Path(_abi.__file__).resolve().parent / "_guest" / "quickjail.h"

# in the header only: the host never sees these
C_ONLY = re.compile(r"QJ_PHASE_\w+|QJ_OUTSIDE_GRAPH|QJ_NOT_FOUND")

CValue = int | bytes

_BINOPS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.LShift: operator.lshift,
    ast.BitOr: operator.or_,
}
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]+|[0-7]{1,3}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "?": "?"}


def _unescape(body: str) -> bytes:
    """The bytes of a C string or character literal's body."""

    def one(m: re.Match[str]) -> str:
        esc = m[1]
        if esc[0] == "x":
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8))
        return _SIMPLE_ESCAPES[esc]

    return _ESCAPE.sub(one, body).encode("latin-1")


def _arith(node: ast.expr, known: Mapping[str, CValue]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        value = known[node.id]
        assert isinstance(value, int), node.id
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arith(node.operand, known)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_arith(node.left, known), _arith(node.right, known))
    raise AssertionError(f"unsupported C expression: {ast.unparse(node)}")


def _c_value(expr: str, known: Mapping[str, CValue]) -> CValue:
    """Evaluate a constant expression of the header: string literals (adjacent ones joined),
    character literals, integers with suffixes, names defined earlier, + - * << |."""
    expr = expr.strip()
    if expr.startswith('"'):
        literal = r'"((?:[^"\\]|\\.)*)"'
        assert re.fullmatch(rf"(?:{literal}\s*)+", expr), expr
        return b"".join(_unescape(body) for body in re.findall(literal, expr))
    expr = re.sub(r"'((?:[^'\\]|\\.)+)'", lambda m: str(_unescape(m[1])[0]), expr)
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
    return _arith(ast.parse(expr, mode="eval").body, known)


def header_constants(text: str) -> dict[str, CValue]:
    """Every ``enum`` member (each must have an explicit value) and ``#define QJ_*`` constant."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    found: list[tuple[int, str, str]] = []
    for m in re.finditer(r"\benum\b[^{;]*\{(.*?)\}", text, re.S):
        for member in m[1].split(","):
            if member.strip():
                name, eq, expr = member.partition("=")
                assert eq, f"enum member {name.strip()} has no explicit value"
                found.append((m.start(), name.strip(), expr))
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(QJ_\w+)(?!\()[ \t]+(.+)$", text, re.M):
        found.append((m.start(), m[1], m[2]))
    out: dict[str, CValue] = {}
    for _, name, expr in sorted(found, key=lambda f: f[0]):
        assert name not in out, f"{name} is defined twice"
        out[name] = _c_value(expr, out)
    return out


def python_constants() -> dict[str, object]:
    """The public constants of ``_abi``."""
    return {k: v for k, v in vars(_abi).items() if k.isupper() and not k.startswith("_")}


def expected_header(py: Mapping[str, object]) -> dict[str, CValue]:
    """What the header must define, derived from the host's constants."""
    out: dict[str, CValue] = {}
    for name, value in py.items():
        if name == "RUN_HEADER":
            assert isinstance(value, struct.Struct)
            words = value.size // 4
            assert value.format == f"<{words}I", "the run header is little-endian u32 words"
            out["QJ_RUN_HEADER_WORDS"] = words
        elif name == "LOG_LEVELS":
            assert isinstance(value, tuple)
            out.update({f"QJ_LOG_{level.upper()}": i for i, level in enumerate(value)})
            out["QJ_LOG_LEVELS"] = len(value)
        else:
            c_name = name if name.startswith("QJ_") else f"QJ_{name}"
            if isinstance(value, bytes) and len(value) == 1:
                out[c_name] = value[0]  # a byte is a character constant in C
            elif isinstance(value, str):
                out[c_name] = value.encode("latin-1")
            else:
                assert isinstance(value, int), f"{name}: no C counterpart for {value!r}"
                out[c_name] = value
    return out


def mismatches(header: Mapping[str, object], py: Mapping[str, object]) -> list[str]:
    want = expected_header(py)
    out = [
        f"{name}: header {header.get(name, 'missing')!r}, _abi.py {value!r}"
        for name, value in want.items()
        if header.get(name) != value
    ]
    out += [
        f"{name}: in the header only (add it to _abi.py or to C_ONLY)"
        for name in header
        if name not in want and not C_ONLY.fullmatch(name)
    ]
    return out


def _drifted(value: object) -> object:
    """A different value of the same shape."""
    if isinstance(value, struct.Struct):
        return struct.Struct(f"<{value.size // 4 + 1}I")
    if isinstance(value, tuple):
        return value[1:] + value[:1]
    if isinstance(value, int):
        return value + 1
    if isinstance(value, bytes):
        return bytes((b + 1) % 256 for b in value)
    if isinstance(value, str):
        return value + "x"
    raise AssertionError(f"cannot drift {value!r}")


HEADER_CONSTANTS = header_constants(HEADER.read_text())
PYTHON_CONSTANTS = python_constants()


def test_every_abi_constant_equals_the_c_header() -> None:
    assert mismatches(HEADER_CONSTANTS, PYTHON_CONSTANTS) == []


def test_the_header_defines_every_kind_of_abi_constant() -> None:
    # a guard on the parser: each family of constants is really found in the header
    prefixes = ("QJ_OP_", "QJ_E_", "QJ_OUT_", "QJ_KIND_", "QJ_FLAG_", "QJ_HDR_", "QJ_MODULE_")
    for prefix in prefixes:
        assert any(name.startswith(prefix) for name in HEADER_CONSTANTS), prefix
    for name in ("QJ_DONE", "QJ_CALL_OK", "QJ_SCRATCH_SIZE", "QJ_RUN_HEADER_WORDS"):
        assert name in HEADER_CONSTANTS
    ints = {k: v for k, v in HEADER_CONSTANTS.items() if isinstance(v, int)}
    hdr = sorted(v for k, v in ints.items() if k.startswith("QJ_HDR_"))
    assert hdr == list(range(ints["QJ_RUN_HEADER_WORDS"]))
    assert sorted(v for k, v in ints.items() if k.startswith("QJ_PHASE_")) == [0, 1, 2, 3]


def test_a_drift_of_any_single_python_value_is_caught() -> None:
    uncaught = [
        name
        for name, value in PYTHON_CONSTANTS.items()
        if not mismatches(HEADER_CONSTANTS, {**PYTHON_CONSTANTS, name: _drifted(value)})
    ]
    assert uncaught == []


def test_a_drift_of_any_single_header_value_is_caught() -> None:
    shared = [name for name in HEADER_CONSTANTS if not C_ONLY.fullmatch(name)]
    assert len(shared) > 50
    uncaught = [
        name
        for name in shared
        if not mismatches(
            {**HEADER_CONSTANTS, name: _drifted(HEADER_CONSTANTS[name])}, PYTHON_CONSTANTS
        )
    ]
    assert uncaught == []


def test_a_header_constant_python_lacks_is_caught() -> None:
    assert mismatches({**HEADER_CONSTANTS, "QJ_OP_NEW": 10}, PYTHON_CONSTANTS)


def test_the_parser_reads_the_forms_the_header_uses() -> None:
    text = (
        "/* enum { QJ_IGNORED = 9 }; */\n"
        "#define QJ_SIZE (256 * 1024)\n"
        '#define QJ_KEY "\\x02" "fn"\n'
        "#define QJ_MARK '\\x01'\n"
        "#define QJ_CALL(x) x\n"
        "enum { QJ_A = 'S', QJ_B = -3, QJ_C = 1u << 4, // comment\n QJ_D = QJ_C | 1, };\n"
    )
    assert header_constants(text) == {
        "QJ_SIZE": 262144,
        "QJ_KEY": b"\x02fn",
        "QJ_MARK": 1,
        "QJ_A": ord("S"),
        "QJ_B": -3,
        "QJ_C": 16,
        "QJ_D": 17,
    }
    with pytest.raises(AssertionError, match="no explicit value"):
        header_constants("enum { QJ_X = 1, QJ_Y };")

"""The host's copy of the guest ABI matches the C header, so the two cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

from quickjail.sandbox import _abi

SHIM = Path(_abi.__file__).resolve().parent / "_guest" / "quickjail.c"


def _c_constants() -> dict[str, int]:
    text = SHIM.read_text()
    out = {name: int(value) for name, value in re.findall(r"\b(QJ_\w+) = (-?\d+)", text)}
    m = re.search(r"#define QJ_SCRATCH_SIZE \((\d+) \* (\d+)\)", text)
    assert m is not None
    out["QJ_SCRATCH_SIZE"] = int(m[1]) * int(m[2])
    m = re.search(r"#define RUN_HEADER_WORDS (\d+)", text)
    assert m is not None
    out["RUN_HEADER_WORDS"] = int(m[1])
    return out


def test_python_abi_constants_equal_the_c_header() -> None:
    c = _c_constants()
    assert (c["QJ_DONE"], c["QJ_PENDING"], c["QJ_FAIL"]) == (
        _abi.QJ_DONE,
        _abi.QJ_PENDING,
        _abi.QJ_FAIL,
    )
    ops = ["LOG", "REPORT", "RESULT", "OOM", "MODULE", "CALL", "FETCH", "REJECTION", "BYTECODE"]
    assert [c[f"QJ_OP_{op}"] for op in ops] == [getattr(_abi, f"OP_{op}") for op in ops]
    assert [c[f"QJ_OUT_{o}"] for o in ("VALUE", "ERROR", "LINK_ERROR")] == [
        _abi.OUT_VALUE,
        _abi.OUT_ERROR,
        _abi.OUT_LINK_ERROR,
    ]
    assert [c[f"QJ_E_{e}"] for e in ("HOST", "REFUSED", "PENDING")] == [
        _abi.E_HOST,
        _abi.E_REFUSED,
        _abi.E_PENDING,
    ]
    assert c["QJ_SCRATCH_SIZE"] == _abi.SCRATCH_SIZE
    assert c["RUN_HEADER_WORDS"] * 4 == _abi.RUN_HEADER.size

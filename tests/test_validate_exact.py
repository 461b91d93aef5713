"""A host function with plain ``int``/``float``/``str``/``bool`` hints takes arguments of exactly
those types without its pydantic model (the model would give them back unchanged); every other
argument still goes through the model. Either way the function gets what the model gives, and a
refusal reads the same.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import pytest

from quickjail.bridge import ArgumentError, _validate, run_code_sync, synchronous

INPUTS: list[Any] = [
    0,
    7,
    -(2**70),
    True,
    False,
    1.5,
    3.0,
    math.inf,
    "",
    "text",
    "12",
    "true",
    None,
    [],
    {"a": 1},
    b"x",
]


def _make(kind: str) -> Callable[..., Any]:
    """A fresh function each time (the analysis is cached per function)."""
    if kind == "int":

        def f(a: int, b: int) -> Any:
            return (a, b)

    elif kind == "mixed":

        def f(a: str, b: float, c: bool, d: Any, e=None) -> Any:  # type: ignore[no-untyped-def]
            return (a, b, c, d, e)

    else:

        def f(a: int, b: str = "default") -> Any:
            return (a, b)

    return f


def _outcome(validate: Callable[[list[Any]], tuple[Any, ...]], args: list[Any]) -> Any:
    try:
        return ("ok", [(type(v), v) for v in validate(args)])
    except ArgumentError as exc:
        return ("refused", str(exc))


def _same(a: Any, b: Any) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "refused":
        return bool(a[1] == b[1])
    return len(a[1]) == len(b[1]) and all(
        ta is tb and (va == vb or (va != va and vb != vb))
        for (ta, va), (tb, vb) in zip(a[1], b[1], strict=True)
    )


@pytest.mark.parametrize("kind", ["int", "mixed", "default"])
def test_the_exact_type_path_gives_what_the_model_gives(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _validate.build_validator(_make(kind), "f")
    with monkeypatch.context() as m:
        m.setattr(_validate, "_exact_types", lambda hints, names: None)
        reference = _validate.build_validator(_make(kind), "f")
    assert fast is not None and reference is not None
    width = {"int": 2, "mixed": 5, "default": 2}[kind]
    rng = random.Random(kind)
    for n in range(width + 2):
        for _ in range(600):
            args = [rng.choice(INPUTS) for _ in range(n)]
            assert _same(_outcome(fast, args), _outcome(reference, args)), args


def test_only_plain_hints_take_the_exact_path() -> None:
    def plain(a: int, b: str, c: Any, d) -> None:  # type: ignore[no-untyped-def]
        return None

    def optional(a: int | None) -> None:
        return None

    def listed(a: list[int]) -> None:
        return None

    def subclass(a: MyInt) -> None:
        return None

    assert _validate._analyse(plain, "plain").exact == (int, str, None, None)  # type: ignore[union-attr]
    for fn in (optional, listed, subclass):
        assert _validate._analyse(fn, fn.__name__).exact is None  # type: ignore[union-attr]


class MyInt(int):
    pass


def test_a_typed_host_function_gets_its_arguments_either_way() -> None:
    def add(a: int, b: float) -> float:
        return a + b

    r = run_code_sync(
        "export default [add(1, 2.5), add(2, 3), add('4', 1.5)]",
        globals={"add": synchronous(add)},
    )
    assert r.status == "success", r.error
    assert r.result == [3.5, 5, 5.5]  # 3 went through the model (int → float), '4' too

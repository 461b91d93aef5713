"""The fuzz phase: every bridged host function called with hostile arguments.

hypothesis draws the arguments (wrong types, megabyte strings and bytes, values nested 200
deep, lone surrogates, huge ints, NaN and infinities, forged host-function markers, long
argument lists); the canary's path tricks are always tried as explicit examples, and so are
the values only JS can build (:data:`JS_HOSTILE`: a DAG sharing its children, a Set of BigInts
colliding in CPython's hash, a sparse array of length 2**32 - 1, Map keys that are one in
Python, Dates outside Python's years, a 100,000-digit BigInt, 100,000 levels of nesting, a
host-function marker planted on ``Object.prototype``). Arguments the host codec refuses are
passed again as JSON text and parsed in JS. Only what the
function *throws* is scanned for host information; what it returns is its own business.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from quickjail._stress._bridge import Target
from quickjail._stress._report import Progress, TestCaseResult, Violation
from quickjail._stress._runner import Runner
from quickjail._stress._texts import show, texts_of

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["JS_HOSTILE", "run_fuzz"]


_FORGED: Final = (
    {"\x02fn": [0, False, "x"]},
    {"\x02fn": [0, True, "x"]},
    [{"\x02fn": [99999, False, ""]}],
    {"\x01": 1, "\x02": 2, "\x03": [0]},
)


# hostile arguments only JS can build: (name, expression); each is passed as the only argument
JS_HOSTILE: Final = (
    ("dag", "(() => { let d = []; for (let i = 0; i < 10; i++) d = [d, d, d]; return d })()"),
    (
        "colliding-set",
        "new Set(Array.from({length: 5000}, (_, i) => BigInt(i + 1) * (2n ** 61n - 1n)))",
    ),
    ("sparse", "(() => { const a = []; a.length = 2 ** 32 - 1; return a })()"),
    ("merging-map", "new Map([[1, 'a'], [true, 'b'], [1n, 'c']])"),
    ("out-of-range-date", "[new Date(8.64e15), new Date(-62167219200000)]"),
    ("huge-bigint", "2n ** 332193n"),
    ("deep", "(() => { let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a })()"),
    ("proto-marker", "(Object.prototype['\\x02fn'] = [0, 0, 'x'], {path: 'notes.txt'})"),
)


def _js_program(target: Target, expr: str) -> str:
    """A module that builds one hostile value in JS and passes it to the target."""
    return (
        target.prelude() + "export default await (async () => {\n"
        f"  let a;\n  try {{ a = {expr}; }} catch (e) {{ return {{built: String(e)}}; }}\n"
        "  try { return {ok: await __qj_target(a)}; }\n"
        "  catch (e) { return {err: String(e), stack: String(e && e.stack)}; }\n"
        "  finally { delete Object.prototype['\\x02fn']; }\n})();\n"
    )


def _nest_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _nest_dict(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _huge_text(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit.encode("utf-8", "surrogatepass")))


def _strategies(paths: Sequence[str], arity: int) -> SearchStrategy[list[Any]]:
    """Hostile argument lists: ``arity`` values, up to four, or up to 1000 small ones."""
    from hypothesis import strategies as st

    surrogates = st.one_of(
        st.text(st.characters(categories=["Cs"]), min_size=1, max_size=8),
        st.sampled_from(["a\ud800b", "\udfff", "\ud83d", "x\udc00\ud800y", "\ud800" * 1000]),
    )
    small = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(),
        st.text(max_size=40),
        st.binary(max_size=64),
        st.sampled_from(paths),
        surrogates,
    )
    large_int = st.one_of(
        st.integers(min_value=2**64, max_value=2**4096),
        st.integers(min_value=-(2**4096), max_value=-(2**64)),
    )
    special_float = st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324])
    huge_str = st.builds(
        _huge_text,
        st.sampled_from(["a", "../", "\u00e9", "\U0001f600", "\ud800", "\0"]),
        st.integers(min_value=1 << 20, max_value=5 << 20),
    )
    huge_bytes = st.integers(min_value=1 << 20, max_value=5 << 20).map(lambda n: b"\xff" * n)
    deep = st.one_of(
        st.integers(min_value=150, max_value=250).map(_nest_list),
        st.integers(min_value=150, max_value=250).map(_nest_dict),
    )
    nested = st.recursive(
        small,
        lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=10), c, max_size=5),
        max_leaves=12,
    )
    value = st.one_of(
        small,
        large_int,
        special_float,
        st.sampled_from(paths),
        huge_str,
        huge_bytes,
        deep,
        nested,
        st.sampled_from(_FORGED),
    )
    shapes = [st.lists(value, max_size=4), st.lists(small, min_size=64, max_size=1000)]
    if arity:
        shapes.insert(0, st.lists(value, min_size=arity, max_size=arity))
    return st.one_of(*shapes)


def _fuzz_program(target: Target, json_args: bool) -> str:
    """A module whose ``main`` calls the target and returns what it returned or threw."""
    call = "const a = JSON.parse(text);\n  " if json_args else ""
    params = "text" if json_args else "...a"
    return (
        target.prelude() + f"export async function main({params}) {{\n  {call}"
        "try { return {ok: await __qj_target(...a)}; }\n"
        "  catch (e) { return {err: String(e), stack: String(e && e.stack)}; }\n}\n"
    )


def _fuzz_target(
    runner: Runner, target: Target, examples: int, seed: int, on_step: Callable[[], None]
) -> TestCaseResult:
    """Fuzz one bridged function: the canary's path tricks, then ``examples`` drawn calls."""
    from hypothesis import HealthCheck, Verbosity, example, given, settings
    from hypothesis import Phase as HPhase
    from hypothesis import seed as hseed

    direct = _fuzz_program(target, json_args=False)
    via_json = _fuzz_program(target, json_args=True)
    violations: list[Violation] = []
    kinds: dict[str, int] = {}
    runs = 0
    start = time.perf_counter()

    def one(args: list[Any]) -> None:
        nonlocal runs
        if runner.hung:
            return
        outcome = runner.run(direct, {"fn": "main", "args": args})
        source = direct
        if outcome.refused is not None:
            try:
                text = json.dumps(args, allow_nan=True)
            except (TypeError, ValueError):
                on_step()
                return  # the host codec refused it and JSON cannot carry it: nothing ran
            outcome = runner.run(via_json, {"fn": "main", "args": [text]})
            source = via_json
            if outcome.refused is not None:
                on_step()
                return
        runs += 1
        runner.sample_rss(f"fuzz {target.label}")
        inputs = source + "\n" + "\n".join(texts_of(args))
        for v in runner.check("fuzz", target.label, outcome, inputs, show(args), errors_only=True):
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
            if kinds[v.kind] <= 3:  # a few examples of each kind are enough
                violations.append(v)
        on_step()

    for name, expr in JS_HOSTILE:
        if runner.hung:
            break
        source = _js_program(target, expr)
        outcome = runner.run(source)
        runs += 1
        runner.sample_rss(f"fuzz {target.label}")
        for v in runner.check(
            "fuzz", target.label, outcome, source, f"<JS {name}>", errors_only=True
        ):
            kinds[v.kind] = kinds.get(v.kind, 0) + 1
            if kinds[v.kind] <= 3:
                violations.append(v)
        on_step()

    test = given(_strategies(runner.canary.tricks, target.arity))(one)
    for trick in runner.canary.tricks:
        if runner.canary.secret not in trick:
            test = example([trick])(test)
            if target.arity >= 2:
                test = example([trick, "utf8"])(test)
    phases = [HPhase.explicit, HPhase.generate] if examples else [HPhase.explicit]
    test = settings(
        max_examples=max(1, examples),
        deadline=None,
        database=None,
        derandomize=False,
        phases=phases,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )(test)
    test = hseed(seed)(test)
    test()
    skipped = "a previous run hung" if runner.hung and runs == 0 else None
    return TestCaseResult(
        "fuzz",
        target.label,
        "quickjail.stress.fuzz",
        runs,
        time.perf_counter() - start,
        tuple(violations),
        skipped,
    )


def run_fuzz(
    runner: Runner,
    examples: int,
    seed: int,
    notify: Callable[[Progress], None],
    count: Callable[[], int],
) -> list[TestCaseResult]:
    """Fuzz every bridged host function; one result per function.

    Args:
        runner: Runs the programs and checks the shared invariants.
        examples: Generated calls per function, on top of the fixed path tricks.
        seed: The hypothesis seed of the first function (the next ones count up from it).
        notify: Receives the phase's progress events.
        count: Violations found so far in the whole stress run (for the events).

    Returns:
        One :class:`TestCaseResult` per bridged host function.
    """
    targets = runner.bridge.targets
    explicit = sum(1 + (t.arity >= 2) for t in targets) * len(runner.canary.tricks)
    explicit += len(JS_HOSTILE) * len(targets)
    total = examples * len(targets) + explicit
    done = 0
    notify(Progress("fuzz", "start", 0, total, violations=count()))
    results = []
    for i, target in enumerate(targets):

        def step(label: str = target.label) -> None:
            nonlocal done
            done += 1
            notify(Progress("fuzz", "step", done, total, label, count()))

        results.append(_fuzz_target(runner, target, examples, seed + i, step))
    notify(Progress("fuzz", "end", done, max(done, total), violations=count()))
    return results

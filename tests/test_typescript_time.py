"""Stripping TypeScript is bounded in time and leaves the GIL to other threads (issue 28 item 6).

tree-sitter holds the GIL through a whole parse, seconds for adversarial text, most of it in
one stretch no progress callback interrupts. Large sources are therefore stripped in a helper
process that the caller waits for without the GIL and kills at the run's deadline. No test here
asserts a duration: each bounds a status, a count or a process state.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from quickjail import run_code_sync
from quickjail.sandbox import _typescript, _typescript_process
from quickjail.sandbox._typescript import (
    IN_PROCESS_BYTES,
    MAX_TYPESCRIPT_BYTES,
    StripTimeout,
    TypeScriptError,
    strip_types,
)

# tree-sitter parses this in 3-4 s on an idle machine (7 us a byte), most of it at the end of
# the input: every `f<T>(x,` leaves a call and a type argument list open.
_UNIT = "f<T>(x,"
ADVERSARIAL = _UNIT * ((MAX_TYPESCRIPT_BYTES - 1024) // len(_UNIT))


def _typed_program(size: int) -> str:
    """Valid TypeScript of about `size` bytes with types to erase; its default export is 42."""
    lines: list[str] = []
    while sum(map(len, lines)) < size:
        n = len(lines)
        lines.append(
            f"function add{n}(a: number, b: number): number {{ return (a as number) + b; }}\n"
        )
    return "".join(lines) + "export default add0(40, 2) as number;\n"


def test_a_run_of_adversarial_typescript_ends_as_a_timeout_at_its_timeout() -> None:
    # The parse takes seconds: a run with a short timeout must end as a timeout (the status
    # and reason a guest's timeout gives) instead of running on after a parse past its
    # deadline. Before, it ran to the end (a RangeError of the engine, seconds later).
    result = run_code_sync(ADVERSARIAL, language="typescript", timeout=0.3)
    assert (result.status, result.reason) == ("terminated", "timeout")
    assert result.error is None


def test_other_threads_run_while_a_large_source_is_stripped() -> None:
    # A thread that ticks about once a millisecond whenever it holds the GIL. Stripping in
    # the caller's thread let it tick only in the Python walk after the parse (about 100
    # times for this source); waiting on a helper lets it tick all along (thousands).
    strip_types(_typed_program(IN_PROCESS_BYTES * 2))  # a helper is started and idle
    ticks: list[int] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        while not ticks:
            time.sleep(0.001)
        before = len(ticks)
        javascript = strip_types(ADVERSARIAL)
        during = len(ticks) - before
    finally:
        stop.set()
        thread.join()
    assert len(javascript) == len(ADVERSARIAL)
    assert during > 500, during


def test_a_helper_killed_at_the_deadline_leaves_stripping_working() -> None:
    source = _typed_program(IN_PROCESS_BYTES * 4)
    expected = _typescript._strip(source, "<run_code>")[0]
    assert strip_types(source) == expected  # through a helper, then idle
    idle = _typescript_process.helper_pids()
    with pytest.raises(StripTimeout):
        strip_types(ADVERSARIAL, deadline=time.monotonic() + 0.1)
    # The helper that was parsing (the last idle one) is killed and reaped, not kept.
    killed = idle[-1]
    assert killed not in _typescript_process.helper_pids()
    with pytest.raises(ProcessLookupError):
        os.kill(killed, 0)
    assert strip_types(source) == expected
    result = run_code_sync(source, timeout=60)
    assert (result.status, result.result) == ("success", 42)


def test_an_idle_helper_that_died_is_replaced() -> None:
    source = _typed_program(IN_PROCESS_BYTES * 2)
    expected = _typescript._strip(source, "<run_code>")[0]
    assert strip_types(source) == expected
    pids = _typescript_process.helper_pids()
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert strip_types(source) == expected
    assert not set(pids) & set(_typescript_process.helper_pids())


def test_a_refusal_in_a_large_source_names_its_line_and_column() -> None:
    source = "// a line\n" * (IN_PROCESS_BYTES // 10 + 1) + "  import a = N.b;\n"
    with pytest.raises(TypeScriptError) as caught:
        strip_types(source, filename="big.ts")
    error = caught.value
    assert (error.line, error.column, error.filename) == (IN_PROCESS_BYTES // 10 + 2, 3, "big.ts")
    assert "aliases" in error.message


# The larger source does not fit in a pipe buffer: the helper's end may show as a failed write.
@pytest.mark.parametrize("size", [IN_PROCESS_BYTES * 2, 2**17])
def test_where_no_helper_can_start_large_sources_are_stripped_in_process(
    size: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A helper that ends before it says it is ready (an interpreter that cannot import
    # quickjail) is the environment's doing, not the source's: strip as before, say so once.
    _typescript_process._end_idle_helpers()
    monkeypatch.setattr(_typescript_process, "_BOOT", "raise SystemExit(3)")
    monkeypatch.setattr(_typescript_process, "_cannot_start", False)
    source = _typed_program(size)
    expected = _typescript._strip(source, "<run_code>")[0]
    with caplog.at_level("WARNING", logger="quickjail"):
        assert strip_types(source) == expected
        assert strip_types(source) == expected
    warnings = [r.getMessage() for r in caplog.records if "helper" in r.getMessage()]
    assert len(warnings) == 1 and "not ready" in warnings[0], warnings
    assert _typescript_process.helper_pids() == []


@pytest.mark.parametrize(
    "answer",
    [
        b"",
        b"X",
        b"J" + b"x\nx",  # neither the source's length nor its lines
        b"J\xff\xfe",
        b"E" + b"not json",
        b"E" + json.dumps({"message": 1, "line": 1, "column": 1}).encode(),
        b"E" + json.dumps({"message": "m", "line": 0, "column": 1}).encode(),
        b"E" + json.dumps({"message": "m", "line": True, "column": 1}).encode(),
        b"E" + json.dumps(["m", 1, 1]).encode(),
    ],
)
def test_a_helper_answer_that_is_not_one_is_a_helper_failure(answer: bytes) -> None:
    with pytest.raises(_typescript_process._HelperFailed):
        _typescript_process._read_answer(answer, "x: T", "a.ts")


# Helpers that misbehave, each replacing the real one: what it does, what the strip raises.
FAKE_HELPERS = [
    (
        "a huge answer announced",
        "import sys; o = sys.stdout.buffer; o.write(b'R' + (2**31).to_bytes(4, 'big'));"
        " o.flush(); sys.stdin.buffer.read()",
        "announced an answer of 2147483648 bytes",
    ),
    (
        "an answer that is not one",
        "import sys; o = sys.stdout.buffer; o.write(b'R' + (3).to_bytes(4, 'big') + b'Jxy');"
        " o.flush(); sys.stdin.buffer.read()",
        "an answer that is not one",
    ),
    (
        "no answer ever",
        "import sys; o = sys.stdout.buffer; o.write(b'R'); o.flush(); sys.stdin.buffer.read()",
        "did not end within 0.5 s",
    ),
    (
        "the end after it was ready",
        "import sys; o = sys.stdout.buffer; o.write(b'R'); o.flush()",
        "helper process failed",
    ),
]


@pytest.mark.parametrize(
    ("boot", "words"), [f[1:] for f in FAKE_HELPERS], ids=[f[0] for f in FAKE_HELPERS]
)
def test_a_misbehaving_helper_is_killed_and_the_strip_fails_naming_why(
    boot: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _typescript_process._end_idle_helpers()
    monkeypatch.setattr(_typescript_process, "_BOOT", boot)
    monkeypatch.setattr(_typescript_process, "HELPER_TIME_LIMIT", 0.5)
    with pytest.raises(TypeScriptError) as caught:
        strip_types(_typed_program(IN_PROCESS_BYTES * 2), filename="m.ts")
    assert words in caught.value.message and caught.value.filename == "m.ts"
    assert _typescript_process.helper_pids() == []  # killed, not kept

"""Large values cross the boundary exactly, both ways, however they travel: a 1 MiB ASCII
string (copied into the guest from the str's own characters), a non-ASCII one (encoded), one
with a lone surrogate, in process and through the process pool; and the arguments are the
ones ``run_code`` was called with, whatever the caller does to them afterwards."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest

import quickjail
from quickjail import bridge, sandbox
from quickjail.executors import ProcessPool, _wire
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._program import Program
from quickjail.sandbox._values import MAX_TRANSFER_BYTES

MiB = 2**20
ASCII = ("0123456789abcdefghijklmnopqrstuvwxyz-_ ~" * (MiB // 40 + 1))[:MiB]
NON_ASCII = ("é😀жx" * (MiB // 4 + 1))[:MiB]
SURROGATE = ASCII[: MiB // 2] + "\ud800" + ASCII[MiB // 2 :]
TEXTS = {"ascii": ASCII, "non-ascii": NON_ASCII}
ECHO = "export function echo(...v) { return v.length === 1 ? v[0] : v }"
GENEROUS = 120.0  # seconds: far more than any run here takes on a loaded machine


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPool]:
    with ProcessPool(workers=1) as p:
        yield p


def _runs(pool: ProcessPool | None) -> list[Any]:
    """The public ways to run with args: the root, the bridge, and the bridge on ``pool``."""
    if pool is not None:
        return [lambda src, **kw: bridge.run_code_sync(src, executor=pool, **kw)]
    return [quickjail.run_code_sync, bridge.run_code_sync]


def _echo(run: Any, *args: Any) -> Any:
    r = run(ECHO, execute={"fn": "echo", "args": list(args)}, timeout=GENEROUS)
    assert r.status == "success", r.error
    return r.result


@pytest.mark.parametrize("where", ["in-process", "pool"])
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_mebibyte_string_round_trips_exactly(where: str, name: str, request: Any) -> None:
    pool = request.getfixturevalue("pool") if where == "pool" else None
    text = TEXTS[name]
    for run in _runs(pool):
        got = _echo(run, text)
        assert type(got) is str and got == text


@pytest.mark.parametrize("where", ["in-process", "pool"])
def test_long_strings_among_other_blobs_keep_their_places(where: str, request: Any) -> None:
    pool = request.getfixturevalue("pool") if where == "pool" else None
    value = {"a": ASCII, "b": [b"\x00\xff" * 3000, NON_ASCII[:5000], "y" * 1024], "c": "z" * 2000}
    for run in _runs(pool):
        assert _echo(run, value, ASCII[:4096], 7) == [value, ASCII[:4096], 7]


@pytest.mark.parametrize("where", ["in-process", "pool"])
def test_a_lone_surrogate_arrives_exactly_and_leaves_as_replacement(
    where: str, request: Any
) -> None:
    # the guest sends lone surrogates as U+FFFD (documented in _values); what it received is
    # checked in the guest, code unit by code unit at the surrogate
    pool = request.getfixturevalue("pool") if where == "pool" else None
    src = """export function look(s) {
        return [s.length, s.charCodeAt(s.length >> 1), s.slice(0, 40), s.slice(-40), s] }"""
    for run in _runs(pool):
        r = run(src, execute={"fn": "look", "args": [SURROGATE]}, timeout=GENEROUS)
        assert r.status == "success", r.error
        length, unit, head, tail, back = r.result
        assert (length, unit, head, tail) == (MiB + 1, 0xD800, ASCII[:40], ASCII[-40:])
        assert back == SURROGATE.replace("\ud800", "\ufffd")


@pytest.mark.parametrize("where", ["in-process", "pool"])
def test_a_mebibyte_string_made_in_the_guest_comes_out_exactly(where: str, request: Any) -> None:
    pool = request.getfixturevalue("pool") if where == "pool" else None
    for run in _runs(pool):
        r = run('export default ["x".repeat(1048576), "é😀".repeat(300000)]', timeout=GENEROUS)
        assert r.status == "success", r.error
        assert r.result == ["x" * MiB, "é😀" * 300_000]


@pytest.mark.parametrize("where", ["in-process", "pool"])
def test_args_are_a_snapshot_taken_when_run_code_is_called(where: str, request: Any) -> None:
    pool = request.getfixturevalue("pool") if where == "pool" else None
    inner = {"k": "v" * 2000, "n": [1, 2]}
    data = bytearray(b"\x01" * 4096)
    args: list[Any] = [inner, data, "w" * 3000]
    if pool is None:
        execution = sandbox.run_code(ECHO, execute={"fn": "echo", "args": args})
    else:
        execution = bridge.run_code(ECHO, execute={"fn": "echo", "args": args}, executor=pool)
    inner["k"] = "changed"
    inner["n"].append(3)
    data[:] = b"\x02" * 10
    args.append("late")
    args[2] = "replaced"
    r = execution.run_sync()
    assert r.status == "success", r.error
    assert r.result == [{"k": "v" * 2000, "n": [1, 2]}, b"\x01" * 4096, "w" * 3000]


def test_texts_and_bytes_made_in_the_guest_keep_their_order_and_content() -> None:
    # the guest copies long texts straight into the message and bytes at once: interleaved,
    # with a lone surrogate (a replaced copy) and in a log (a cut copy), each lands in place
    src = """
        const u = new Uint8Array(3000).fill(7);
        console.log("L".repeat(300000));  // cut at 256 KiB
        export default ["a".repeat(5000), new Uint8Array([1, 2, 3]), "é".repeat(3000),
            "b".repeat(1024) + "\\ud800", u, "c".repeat(1024), {k: "d".repeat(70000)}, u.buffer]
    """
    r = quickjail.run_code_sync(src, timeout=GENEROUS)
    assert r.status == "success", r.error
    assert r.result == [
        "a" * 5000,
        b"\x01\x02\x03",
        "é" * 3000,
        "b" * 1024 + "\ufffd",
        b"\x07" * 3000,
        "c" * 1024,
        {"k": "d" * 70000},
        sandbox.TypedArray("ArrayBuffer", b"\x07" * 3000),
    ]
    (entry,) = r.logs
    text = entry.args[0]
    assert text.startswith("L" * 1000) and text.endswith("more bytes]"), text[-40:]


class _StartFrames:
    """An executor that only makes the start frame a worker would get."""

    def execution(self, opts: RunOptions, program: Program) -> bytes:
        return _wire.start_frame(opts, program)


def test_a_worker_takes_start_arguments_as_sent_and_only_framed_within_the_cap() -> None:
    run: Any = sandbox.run_code
    frame = run(ECHO, execute={"fn": "echo", "args": [ASCII, b"\x01"]}, executor=_StartFrames())
    kind, fields, (glob, args) = _wire.unpack(frame, head_cap=_wire.MAX_FRAME_BYTES)
    message = _wire.start_from(frame).opts.args_message
    assert message is not None and message.tobytes() == args  # passed on, never re-encoded
    huge = MAX_TRANSFER_BYTES + 1
    over = struct.pack("<BI", 0, 2) + b"[]" + struct.pack("<II", 1, huge) + bytes(huge)
    for bad in (args[:-1], args + b"\0", args[:7], over):
        tampered = _wire.pack(kind, fields, [glob, bad])
        with pytest.raises(_wire.ProtocolError, match="not a value message"):
            _wire.start_from(tampered)


RESULTS: dict[str, Any] = {
    "ascii": ASCII,
    "non-ascii": NON_ASCII,
    "bytes": bytes(range(256)) * (MiB // 256),
    "mixed": {"a": ASCII, "b": [b"\x00\xff" * 3000, NON_ASCII[:5000]], "c": "y" * 1024},
    "short": "x" * 100,  # a short reply takes the joined path
}
# how each kind of host function is bound: the value returned reaches the program through a
# sync reply (possibly fetched), a settled promise, or qj_resume after an await
MODES = ["synchronous", "promise", "async"]


def _host_function(mode: str, value: Any) -> Any:
    def give() -> Any:
        return value

    async def give_async() -> Any:
        return value

    if mode == "synchronous":
        return bridge.synchronous(give)
    return give_async if mode == "async" else give


@pytest.mark.parametrize("where", ["in-process", "pool"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(RESULTS))
def test_a_large_host_function_result_reaches_the_program_exactly(
    where: str, mode: str, name: str, request: Any
) -> None:
    pool = request.getfixturevalue("pool") if where == "pool" else None
    value = RESULTS[name]
    call = "give()" if mode == "synchronous" else "await give()"
    src = f"const v = {call}; report(v); export default 1"
    for run in _runs(pool):
        r = run(
            src,
            globals={"give": _host_function(mode, value)},
            timeout=GENEROUS,
            output_limits=sandbox.OutputLimits(max_report_bytes=64 * MiB),
        )
        assert r.status == "success", r.error
        assert r.reports == [value]

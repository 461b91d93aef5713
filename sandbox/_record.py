"""The run record: what ``qj_run`` reads to start a run (its layout is in ``quickjail.h``).

The record carries the options the guest needs (kind, flags, limits, the entry's name and
source or bytecode, the arguments and the globals) and the run's seeds: ``Math.random``'s,
the key of the ChaCha20 stream behind ``crypto``, and the clocks' origins. Its parts are copied
straight into guest memory by the run, never joined on the host.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
from collections.abc import Callable
from typing import Any, Final

from quickjail.sandbox import _engine, _values
from quickjail.sandbox._abi import (
    FLAG_ARGS,
    FLAG_BYTECODE,
    FLAG_DYNAMIC,
    HDR_ENTROPY_0,
    HDR_ENTROPY_7,
    KIND_AUTO,
    KIND_MODULE,
    KIND_SCRIPT,
    OUT_ERROR,
    RUN_HEADER,
)
from quickjail.sandbox._bytecode import compile_missing
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._program import Program

__all__ = ["DETERMINISTIC_EPOCH_NS", "Record", "run_record"]

DETERMINISTIC_EPOCH_NS: Final = 1_735_689_600_000_000_000  # 2025-01-01T00:00:00Z
_KINDS: Final = {"module": KIND_MODULE, "script": KIND_SCRIPT, "auto": KIND_AUTO}
_ENTROPY_WORDS: Final = struct.Struct(f"<{HDR_ENTROPY_7 - HDR_ENTROPY_0 + 1}I")


class Record:
    """A run record in parts (``total`` bytes), and what compiling its modules found."""

    __slots__ = ("bytecode_hits", "compiled_now", "parts", "total")

    def __init__(
        self, parts: tuple[Any, ...], total: int, bytecode_hits: int, compiled_now: set[bytes]
    ) -> None:
        self.parts = parts
        self.total = total
        self.bytecode_hits = bytecode_hits
        self.compiled_now = compiled_now


def run_record(
    engine: _engine.EngineState,
    o: RunOptions,
    p: Program,
    should_stop: Callable[[], bool],
) -> Record | tuple[int, Any]:
    """The record that starts this run, or the outcome that ends it at once (an
    ``(OUT_ERROR, error record)`` the run sends itself)."""
    try:
        fn = o.fn.encode()
    except UnicodeEncodeError:
        # an export name is well-formed Unicode, so no module exports this one; refused
        # here because no UTF-8 encoding of it names what the caller asked for
        message = f"the module has no export named {o.fn!r} (it is not valid Unicode)"
        return (OUT_ERROR, {"name": "ReferenceError", "message": message})
    bytecode = None
    hits = 0
    compiled_now: set[bytes] = set()
    soft = soft_limit(o.memory_limit_bytes, engine.guest.stack_size)
    if o.kind != "script":
        # kind auto's entry is parsed in the run, where the guest reads its shape; JSON
        # modules are data, never compiled
        code = {k: v for k, v in p.modules.items() if not k.endswith(".json")}
        bytecode, hits, compiled_now = compile_missing(
            engine,
            (o.filename, p.source) if o.kind == "module" else None,
            code,
            memory_limit=o.memory_limit_bytes,
            soft_limit=soft,
            should_stop=should_stop,
        )
    filename = o.filename.encode("utf-8", "replace")
    source = bytecode if bytecode is not None else p.source.encode("utf-8", "surrogatepass")
    args = o.args_message if o.args_message is not None else _values.Message(())
    glob = p.globals_message
    if o.seed is None and not o.deterministic:
        fresh = os.urandom(8 + _ENTROPY_WORDS.size)  # one read for the seed and the key
        seed, entropy = int.from_bytes(fresh[:8], "little"), fresh[8:]
    else:
        seed = o.seed if o.seed is not None else 0
        entropy = crypto_key(seed)
    if o.deterministic:
        mono = wall = DETERMINISTIC_EPOCH_NS
    else:
        mono, wall = time.monotonic_ns(), time.time_ns()
    flags = (
        (FLAG_DYNAMIC if o.dynamic_code else 0)
        | (FLAG_ARGS if o.args_message is not None else 0)
        | (FLAG_BYTECODE if bytecode is not None else 0)
    )
    header = RUN_HEADER.pack(
        _KINDS[o.kind],
        flags,
        seed & 0xFFFFFFFF,
        (seed >> 32) & 0xFFFFFFFF,
        soft,
        engine.js_stack_limit,
        len(filename),
        len(source),
        len(fn),
        args.size,
        len(glob),
        mono & 0xFFFFFFFF,
        mono >> 32,
        wall & 0xFFFFFFFF,
        wall >> 32,
        *_ENTROPY_WORDS.unpack(entropy),
    )
    parts = (header, filename, source, fn, *args.parts, glob)
    total = sum(len(part) for part in parts)  # a str part is ASCII (Message)
    return Record(parts, total, hits, compiled_now)


def crypto_key(seed: int) -> bytes:
    """The key of the run's ChaCha20 stream behind ``crypto`` (256 bits) in a seeded or
    deterministic run, derived from the seed so that the run repeats its random bytes."""
    return hashlib.sha256(b"quickjail crypto seed\0" + seed.to_bytes(8, "little")).digest()


def soft_limit(hard: int, stack: int) -> int:
    """QuickJS's own cap: below the hard cap by the stack, static data and a reserve."""
    reserve = max(4 * 2**20, hard // 8)
    return max(1 * 2**20, min(hard - stack - reserve, 0xFFFFFFFF))

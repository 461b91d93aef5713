"""The guest ABI as the host sees it: every constant the C header ``_guest/quickjail.h`` defines.

Defined once here and nowhere else in Python; ``tests/test_abi.py`` checks each value against
the header, so the two cannot drift. A name here is the header's with its ``QJ_`` prefix dropped
(``OP_LOG`` is ``QJ_OP_LOG``; the statuses keep it); ``RUN_HEADER`` holds ``QJ_RUN_HEADER_WORDS``
words and ``LOG_LEVELS`` is indexed by ``QJ_LOG_*``. Only the guest's phases,
``QJ_OUTSIDE_GRAPH`` and ``QJ_NOT_FOUND`` are C-only: the host never looks at them. The
header's comment says who owns which buffer and what each message holds.
"""

from __future__ import annotations

import struct
from typing import Final, Literal

# statuses of qj_run / qj_resume
QJ_DONE: Final = 0
QJ_PENDING: Final = 1
QJ_FAIL: Final = 2

# operations of the one host import, qj.host(op, a, b, c, d)
OP_LOG: Final = 1
OP_REPORT: Final = 2
OP_RESULT: Final = 3
OP_OOM: Final = 4
OP_MODULE: Final = 5
OP_CALL: Final = 6
OP_FETCH: Final = 7
OP_REJECTION: Final = 8
OP_BYTECODE: Final = 9
OP_SLEEP: Final = 10
OP_TIMERS: Final = 11

# negative replies of qj.host
E_HOST: Final = -1
E_REFUSED: Final = -2
E_PENDING: Final = -3
# refusals of OP_REPORT / OP_LOG that say why, with a detail in the scratch buffer: the limit as
# a little-endian u64, or (E_UNTRANSFERABLE) a u32 length and that many bytes of UTF-8 reason
E_REPORT_COUNT: Final = -4
E_REPORT_BYTES: Final = -5
E_UNTRANSFERABLE: Final = -6
REFUSAL_TEXT_MAX: Final = 192

# outcome kinds of OP_RESULT
OUT_VALUE: Final = 0
OUT_ERROR: Final = 1
OUT_LINK_ERROR: Final = 2

# run kinds and flags of the run record
KIND_MODULE: Final = 0
KIND_SCRIPT: Final = 1
KIND_COMPILE: Final = 2
KIND_AUTO: Final = 3
FLAG_DYNAMIC: Final = 1
FLAG_ARGS: Final = 2
FLAG_BYTECODE: Final = 4

# the run record's header: RUN_HEADER_WORDS little-endian u32, in this order
RUN_HEADER: Final = struct.Struct("<23I")
(
    HDR_KIND,
    HDR_FLAGS,
    HDR_SEED_LO,
    HDR_SEED_HI,
    HDR_SOFT_LIMIT,
    HDR_STACK_LIMIT,
    HDR_FILENAME_LEN,
    HDR_SOURCE_LEN,
    HDR_FN_LEN,
    HDR_ARGS_LEN,
    HDR_GLOBALS_LEN,
    HDR_MONO_LO,
    HDR_MONO_HI,
    HDR_WALL_LO,
    HDR_WALL_HI,
    HDR_ENTROPY_0,
    HDR_ENTROPY_1,
    HDR_ENTROPY_2,
    HDR_ENTROPY_3,
    HDR_ENTROPY_4,
    HDR_ENTROPY_5,
    HDR_ENTROPY_6,
    HDR_ENTROPY_7,
) = range(23)

# the first byte of an OP_MODULE reply: JS source, QuickJS bytecode, or a host module
MODULE_SOURCE: Final = b"S"
MODULE_BYTECODE: Final = b"B"
MODULE_HOST: Final = b"H"
# OP_MODULE's a: a JS module (source or bytecode), or a JSON module's text as written
MODULE_WANT_CODE: Final = 0
MODULE_WANT_TEXT: Final = 1
# OP_MODULE's a, or'ed in: the specifier was bare (a host module), else relative (the graph)
MODULE_BARE: Final = 2

# the first byte of a sync OP_CALL reply (an async call is settled through qj_resume's ok)
CALL_OK: Final = b"\x01"
CALL_ERROR: Final = b"\x00"

# value messages: the flags byte's bit for "tagged values may be present", and the key of the
# object that stands for a host function ({FN_KEY: [id, mode, name]})
MSG_TAGGED: Final = 1
FN_KEY: Final = "\x02fn"
# a global namespace's fallback host function, called as (name, ...args) for missing names
NS_FALLBACK_KEY: Final = "\x02missing"
# a global whose name starts with this is put on the web files' `native`, not on globalThis
HIDDEN_GLOBAL: Final = "\x02"

# a host function marker's mode: returns the value, an async call, a promise of a sync reply
FN_VALUE: Final = 0
FN_ASYNC: Final = 1
FN_PROMISE: Final = 2

# the guest's scratch buffer for host → guest data that fits
SCRATCH_SIZE: Final = 256 * 1024

# OP_LOG's reply when the log is full: the guest stops sending logs for the rest of the run
LOG_CLOSED: Final = 1

# OP_LOG's level argument indexes this tuple (QJ_LOG_LOG .. QJ_LOG_DEBUG, QJ_LOG_LEVELS of them)
LOG_LEVELS: Final[tuple[Literal["log", "info", "warn", "error", "debug"], ...]] = (
    "log",
    "info",
    "warn",
    "error",
    "debug",
)

# WASI errno the guest's stubbed WASI imports answer with
WASI_EBADF: Final = 8

/*
 * quickjail.h: the guest ABI, all of it, in one place.
 *
 * The guest is QuickJS-ng plus this shim, compiled to wasm32-wasi (reactor) and run by the
 * host (sandbox/_native.py, _engine.py, _run.py, _values.py) in wasmtime. sandbox/_abi.py
 * holds the host's copy of every constant below; tests/test_abi.py checks each value against
 * this file, so the two cannot drift. Everything else in _guest/ is private (guest.h).
 *
 * Exports (every status is an int32: QJ_DONE, QJ_PENDING or QJ_FAIL)
 * -------
 *   qj_alloc(size) -> ptr        guest malloc. The host writes inputs that do not fit the
 *                                scratch buffer there; the guest takes ownership on qj_run /
 *                                qj_resume and frees them.
 *   qj_scratch() -> ptr          address of a static buffer of QJ_SCRATCH_SIZE bytes. The host
 *                                writes inputs and host-call replies there; the guest copies
 *                                out of it before the next crossing.
 *   qj_init() -> status          builds the runtime, the context and the bootstrap. Called once
 *                                at build time; its memory is then baked into the module as the
 *                                snapshot (sandbox/_snapshot.py), so it is never called on a
 *                                restored instance.
 *   qj_run(ptr, len) -> status   starts a run described by a run record (below). ptr 0 means
 *                                "in the scratch buffer". One run per instance: qj_run is
 *                                refused (QJ_FAIL) unless the guest is idle.
 *   qj_resume(id, ok, ptr, len) -> status
 *                                settles async host call `id` with a value message (ok=1) or
 *                                an error message (ok=0), then runs jobs. ptr 0 = scratch.
 *                                id 0 settles nothing: time passed (the wake-up QJ_OP_SLEEP
 *                                asked for), so due timers fire, then jobs run.
 *   status: QJ_DONE (the host got the outcome through QJ_OP_RESULT), QJ_PENDING (waiting for
 *   async host calls or timers), QJ_FAIL (the guest could not proceed; the host drops the
 *   instance).
 *
 * The run loop: the guest runs jobs (microtasks) until none is left, then fires the next due
 * timer, and again, until the entry settles. Jobs queued before it settled still run (to an
 * empty queue); then timers still pending are cancelled and counted (QJ_OP_TIMERS), and the
 * outcome is sent. When nothing is runnable and timers are pending, the guest asks the host
 * with QJ_OP_SLEEP: either time passed at once (virtual time) and it goes on, or it returns
 * QJ_PENDING and the host resumes it at the due time, or earlier when a host call settles.
 *
 * Import (module "qj", one function)
 * ------
 *   host(op, a, b, c, d) -> i64
 *     op is a QJ_OP_*; the comments of the QJ_OP_* constants say what a..d hold.
 *     Inputs passed as (ptr, len) are guest-owned and valid only during the call: the host
 *     copies them. A reply that fits is written by the host into the scratch buffer and its
 *     length returned; a longer reply returns its length and stays with the host until the
 *     guest fetches it with QJ_OP_FETCH into a buffer it allocated. A negative value is an
 *     error code (QJ_E_*). The host never calls back into the guest from inside `host`.
 *   The only other imports are WASI's (wasi_snapshot_preview1, pulled in by wasi-libc): the
 *   host answers clock_time_get with its clock and every other one with QJ_WASI_EBADF.
 *
 * Value messages (both directions)
 * --------------
 *   u8 flags | u32 json_len | json | u32 nblobs | (u32 len, bytes)*, little-endian.
 *   flags & QJ_MSG_TAGGED means the JSON may hold tagged values: an object whose only key is
 *   "\0" holds [tag, payload]:
 *     u undefined            b bytes (a Uint8Array), payload: blob index
 *     a another typed array, an ArrayBuffer or a DataView, payload: [kind, blob index], kind
 *       its constructor's name ("Float64Array", "ArrayBuffer"...), the blob its viewed bytes
 *       (little-endian elements, a whole number of them)
 *     n BigInt, payload: hexadecimal digits with an optional leading '-'
 *     d Date, payload: ms since the epoch, null for an invalid date
 *     m Map, payload: [key, value] entries     s Set, payload: its values
 *     f a number JSON cannot hold: "NaN", "Infinity", "-Infinity" or "-0"
 *     t a long string, payload: blob index of its UTF-8 bytes
 *   Object keys that start with "\0" carry one extra leading "\0". An error message is a value
 *   message holding {name, message} from the host, or from the guest (the outcomes
 *   QJ_OUT_ERROR and QJ_OUT_LINK_ERROR) {name, message, stack} for an Error and {thrown} for
 *   anything else, each with {uncatchable, oom}: oom is true only when the value is the one
 *   the last allocation failure threw (sandbox/_guest/oom.c), whatever the value looks like.
 *   Strings in it (and in logs) are cut to their start with a "… [N more bytes]" note.
 *
 * Run record (the input of qj_run)
 * ----------
 *   QJ_RUN_HEADER_WORDS little-endian u32, indexed by QJ_HDR_*:
 *     kind (QJ_KIND_*) | flags (QJ_FLAG_*) | seed_lo | seed_hi | soft memory limit (bytes, 0 =
 *     none) | stack limit (bytes) | filename_len | source_len | fn_len | args_len | globals_len
 *     | mono_lo | mono_hi | wall_lo | wall_hi | entropy (8 words)
 *   seed is Math.random's; entropy is the key of the run's ChaCha20 stream behind `crypto`
 *   (256 bits: fresh, or derived from the seed when one is given); mono and wall are the
 *   host's monotonic and wall clocks (ns) when it started the run, the origin of
 *   performance.now() and performance.timeOrigin.
 *   then the byte fields in this order: filename, source (or the entry module's bytecode with
 *   QJ_FLAG_BYTECODE), fn (the export to call), args (with QJ_FLAG_ARGS: a value message
 *   holding an array), globals (when globals_len > 0: a value message holding an object whose
 *   properties become frozen globals). Host functions inside globals and host modules are
 *   objects {QJ_FN_KEY: [id, mode, name]} (mode: QJ_FN_*); the guest turns them into
 *   closures.
 *   With QJ_KIND_COMPILE the source field is a compile batch: u32 count, then (u32 name_len,
 *   name, u32 src_len, src)*. Each module that compiles is sent back as bytecode with
 *   QJ_OP_BYTECODE; none of its code runs, and its imports resolve to empty stubs. The host
 *   sends one module per instance and accepts one reply, for index 0 (sandbox/_bytecode.py
 *   says why). The soft memory limit and the stack limit apply to a compile too.
 */
#ifndef QUICKJAIL_H
#define QUICKJAIL_H

#include <stdint.h>

/* the guest's scratch buffer for host -> guest data that fits */
#define QJ_SCRATCH_SIZE (256 * 1024)

/* statuses of qj_init, qj_run and qj_resume */
enum { QJ_DONE = 0, QJ_PENDING = 1, QJ_FAIL = 2 };

/* operations of the import; (ptr, len) pairs are guest memory, valid during the call */
enum {
    QJ_OP_LOG = 1,        /* a=level (QJ_LOG_*), (b,c)=value message of the args array;
                           * reply 0: taken; QJ_LOG_CLOSED: over the log limits, dropped,
                           * and so will every later log be (the guest stops sending);
                           * QJ_E_UNTRANSFERABLE when it cannot take the value */
    QJ_OP_REPORT = 2,     /* (b,c)=value message; <0 when refused: QJ_E_REPORT_COUNT,
                           * QJ_E_REPORT_BYTES or QJ_E_UNTRANSFERABLE */
    QJ_OP_RESULT = 3,     /* a=outcome (QJ_OUT_*), (b,c)=value or error message */
    QJ_OP_OOM = 4,        /* a=bytes requested; the allocator failed */
    QJ_OP_MODULE = 5,     /* (b,c)=module name, a=QJ_MODULE_WANT_*; reply: a QJ_MODULE_*
                           * byte then the module, or <0 when the host has no such module */
    QJ_OP_CALL = 6,       /* a=function id, (b,c)=args message, d=call id (0 for a
                           * QJ_FN_VALUE call); reply: see QJ_CALL_OK. A QJ_FN_PROMISE call
                           * names the id its promise takes if the host answers QJ_E_PENDING
                           * (the call was paused): qj_resume settles it later, as an async
                           * call's */
    QJ_OP_FETCH = 7,      /* copy the pending reply into (b, c) */
    QJ_OP_REJECTION = 8,  /* (b,c)=value message of an unhandled rejection's reason */
    QJ_OP_BYTECODE = 9,   /* a=index in the compile batch, (b,c)=the module's bytecode */
    QJ_OP_SLEEP = 10,     /* a=ms until the next timer is due, b=async host calls in flight;
                           * reply 0: the guest clock advanced by a (virtual time), go on;
                           * QJ_E_PENDING: return QJ_PENDING, qj_resume comes later */
    QJ_OP_TIMERS = 11,    /* a=timer callbacks run, b=timers cancelled when the entry settled */
};

/* negative replies of the import */
enum {
    QJ_E_HOST = -1,       /* the host could not serve the request */
    QJ_E_REFUSED = -2,    /* over a limit, or no such module */
    QJ_E_PENDING = -3,    /* an async QJ_OP_CALL was accepted: qj_resume settles it later */
    /* Refusals of QJ_OP_REPORT / QJ_OP_LOG that say why, with a detail in the scratch buffer
     * (copy it out before the next crossing): */
    QJ_E_REPORT_COUNT = -4,   /* max_reports reports were taken; scratch: the limit, u64 LE */
    QJ_E_REPORT_BYTES = -5,   /* over max_report_bytes in all; scratch: the limit, u64 LE */
    QJ_E_UNTRANSFERABLE = -6, /* the host cannot take the value; scratch: u32 LE length, then
                               * that many bytes (at most QJ_REFUSAL_TEXT_MAX) of UTF-8
                               * saying why */
};

/* the longest reason the host puts in the scratch buffer with QJ_E_UNTRANSFERABLE (it and
 * the guest's prefix fit the 256 bytes QuickJS formats an error message into) */
#define QJ_REFUSAL_TEXT_MAX 192

/* the outcome of a run (QJ_OP_RESULT's a) */
enum { QJ_OUT_VALUE = 0, QJ_OUT_ERROR = 1, QJ_OUT_LINK_ERROR = 2 };

/* QJ_OP_LOG's reply when the log is full: the console methods return at once from now on */
#define QJ_LOG_CLOSED 1

/* QJ_OP_LOG's level: the console method that logged */
enum {
    QJ_LOG_LOG = 0,
    QJ_LOG_INFO = 1,
    QJ_LOG_WARN = 2,
    QJ_LOG_ERROR = 3,
    QJ_LOG_DEBUG = 4,
    QJ_LOG_LEVELS = 5,    /* how many levels */
};

/* the run record: kinds, flags and header word indices */
/* QJ_KIND_AUTO: the guest's parser picks the code shape (sandbox/_guest/entry.c) */
enum { QJ_KIND_MODULE = 0, QJ_KIND_SCRIPT = 1, QJ_KIND_COMPILE = 2, QJ_KIND_AUTO = 3 };
enum {
    QJ_FLAG_DYNAMIC = 1,  /* eval and Function work in this run */
    QJ_FLAG_ARGS = 2,     /* the args field is given: call fn with them */
    QJ_FLAG_BYTECODE = 4, /* the source field is the entry module's bytecode */
};
enum {
    QJ_HDR_KIND = 0,
    QJ_HDR_FLAGS = 1,
    QJ_HDR_SEED_LO = 2,
    QJ_HDR_SEED_HI = 3,
    QJ_HDR_SOFT_LIMIT = 4,
    QJ_HDR_STACK_LIMIT = 5,
    QJ_HDR_FILENAME_LEN = 6,
    QJ_HDR_SOURCE_LEN = 7,
    QJ_HDR_FN_LEN = 8,
    QJ_HDR_ARGS_LEN = 9,
    QJ_HDR_GLOBALS_LEN = 10,
    QJ_HDR_MONO_LO = 11,
    QJ_HDR_MONO_HI = 12,
    QJ_HDR_WALL_LO = 13,
    QJ_HDR_WALL_HI = 14,
    QJ_HDR_ENTROPY_0 = 15,
    QJ_HDR_ENTROPY_1 = 16,
    QJ_HDR_ENTROPY_2 = 17,
    QJ_HDR_ENTROPY_3 = 18,
    QJ_HDR_ENTROPY_4 = 19,
    QJ_HDR_ENTROPY_5 = 20,
    QJ_HDR_ENTROPY_6 = 21,
    QJ_HDR_ENTROPY_7 = 22,
    QJ_RUN_HEADER_WORDS = 23,
};

/* the first byte of a QJ_OP_MODULE reply */
enum {
    QJ_MODULE_SOURCE = 'S',   /* then the module's JS source (UTF-8) */
    QJ_MODULE_BYTECODE = 'B', /* then bytecode a compile batch produced */
    QJ_MODULE_HOST = 'H',     /* then a value message: an object whose keys are the exports */
};
/* QJ_OP_MODULE's a: what the import asks for. A JSON module (`with { type: "json" }`) wants
 * the module's text as written: the reply is QJ_MODULE_SOURCE, never bytecode. The bit
 * QJ_MODULE_BARE says the specifier was bare: the host answers it from the host modules
 * only, and a relative one (no bit) from the module graph only. */
enum { QJ_MODULE_WANT_CODE = 0, QJ_MODULE_WANT_TEXT = 1, QJ_MODULE_BARE = 2 };
/* A relative specifier that climbs above the graph's root is normalized to this byte followed
 * by the specifier: no module has such a name, so the host refuses it, and the guest reports
 * the module as outside the graph. */
#define QJ_OUTSIDE_GRAPH '\x01'
/* A specifier of one namespace whose name is already a module of the other (a relative "./lib"
 * after the host module "lib", or the reverse) is normalized to this byte followed by the
 * specifier: the guest reports the module as not found. */
#define QJ_NOT_FOUND '\x02'

/* the first byte of a sync QJ_OP_CALL reply, then a value message (the result) or an error
 * message (thrown in the program). An async call's reply, if any, is an error message: the
 * call was refused at once. */
enum { QJ_CALL_ERROR = 0, QJ_CALL_OK = 1 };

/* value messages: the flags byte, and the key that marks a host function */
enum { QJ_MSG_TAGGED = 1 };
#define QJ_FN_KEY "\x02" "fn"
/* A global object holding a host function under this key is a namespace with a fallback: a
 * missing string property reads as a function calling the fallback with (name, ...args). */
#define QJ_NS_FALLBACK_KEY "\x02" "missing"
/* A global whose name starts with this is not defined on the global object: it is put on the
 * web files' `native` object, for a web global to read at call time (the bridge's Fetch hands
 * the guest's fetch its host function this way). No program can reach it. */
#define QJ_HIDDEN_GLOBAL "\x02"

/* how a host function answers in JS (its marker's mode) */
enum {
    QJ_FN_VALUE = 0,      /* sync: the call returns the value or throws (the opt-in) */
    QJ_FN_ASYNC = 1,      /* async: a promise qj_resume settles (QJ_OP_CALL with a call id) */
    QJ_FN_PROMISE = 2,    /* sync on the host, a promise already settled with the reply */
};

/* the errno the host answers the stubbed WASI imports with (__WASI_ERRNO_BADF) */
#define QJ_WASI_EBADF 8

/* Where the guest is (never sent to the host): qj_run is refused unless idle; qj_resume is
 * refused when idle and answers QJ_DONE once done. */
enum {
    QJ_PHASE_IDLE = 0,           /* no run yet */
    QJ_PHASE_EVALUATING = 1,     /* the module or script body is evaluating */
    QJ_PHASE_AWAITING_CALL = 2,  /* the entry export was called and returned a promise */
    QJ_PHASE_DONE = 3,           /* the outcome was sent */
};

/* A guest address as the import carries it: a wasm32 pointer is 32 bits. The native build of
 * the guest C (fuzz/, under AddressSanitizer) needs the whole 64-bit pointer, so there it is
 * pointer-wide; on wasm it is exactly the int32 the import declares. */
#ifdef __wasm__
typedef int32_t qj_addr_t;
#else
typedef intptr_t qj_addr_t;
#endif
#define QJ_ADDR(p) ((qj_addr_t)(uintptr_t)(p))

__attribute__((import_module("qj"), import_name("host")))
extern int64_t qj_host(int32_t op, int32_t a, qj_addr_t b, int32_t c, int32_t d);

__attribute__((export_name("qj_alloc"))) void *qj_alloc(uint32_t size);
__attribute__((export_name("qj_scratch"))) uint8_t *qj_scratch(void);
__attribute__((export_name("qj_init"))) int32_t qj_init(void);
__attribute__((export_name("qj_run"))) int32_t qj_run(uint8_t *rec, uint32_t len);
__attribute__((export_name("qj_resume")))
int32_t qj_resume(uint32_t id, int32_t ok, uint8_t *data, uint32_t len);

#endif

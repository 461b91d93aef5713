/*
 * The guest's clock, answered natively: WASI clock_time_get as a wasmtime host function written
 * in C, so a Date.now() or performance.now() in the guest costs no Python crossing (no GIL, no
 * ctypes callback). Built for the host machine with the same pinned zig as the guest
 * (sandbox/_build.py), loaded by sandbox/_hostlib.py and registered on the engine's linker as
 * an unchecked host function (sandbox/_engine.py).
 *
 * The library does not link against wasmtime and includes none of its headers: the few
 * wasmtime C API functions it calls are handed over once by qj_host_init (ctypes loads
 * wasmtime's library privately), and the few types it needs are declared here with the layouts
 * sandbox/_capi.py declares.
 *
 * Per-run state is a qj_clock_t owned by the host (a ctypes Structure, sandbox/_hostlib.py)
 * whose address is the store's data pointer. Everything the guest passes is hostile: the
 * 8 bytes of the answer are written only inside the caller's own linear memory.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* WASI errno for "bad file descriptor": what the host answers a call it cannot serve
 * (QJ_WASI_EBADF of _guest/quickjail.h, the guest's header, which this file does not include) */
#define WASI_EBADF 8

/* qj_clock_t.mode */
#define MODE_REAL 0          /* id 0: CLOCK_REALTIME, any other id: CLOCK_MONOTONIC */
#define MODE_DETERMINISTIC 1 /* base_ns + reads * 1 ms + virtual_ns, any id */
#define MODE_ZERO 2          /* always 0 (compile-only instances) */

/* wasmtime_memory_t: { struct { u64 store_id; u32 }; u32 } (24 bytes) */
typedef struct {
    struct {
        uint64_t store_id;
        uint32_t private1;
    } inner;
    uint32_t private2;
} qj_memory_t;

/* wasmtime_val_raw_t: 16 bytes, of which this import uses i32 and i64 */
typedef union {
    int32_t i32;
    int64_t i64;
    uint8_t v128[16];
} qj_val_raw_t;

/* the run's clock, at the store's data pointer (mirrored by sandbox/_hostlib.py ClockState) */
typedef struct {
    uint32_t mode;
    uint32_t pad;
    uint64_t reads;      /* deterministic reads so far */
    uint64_t base_ns;    /* deterministic start */
    uint64_t virtual_ns; /* how far deterministic time jumped for timers */
    qj_memory_t memory;  /* the instance's memory; store_id 0 until it is known */
} qj_clock_t;

_Static_assert(sizeof(qj_memory_t) == 24, "wasmtime_memory_t is 24 bytes");
_Static_assert(sizeof(qj_val_raw_t) == 16, "wasmtime_val_raw_t is 16 bytes");
_Static_assert(offsetof(qj_clock_t, memory) == 32, "ClockState layout");
_Static_assert(sizeof(qj_clock_t) == 56, "ClockState layout");

typedef void *(*caller_context_fn)(void *caller);
typedef void *(*context_get_data_fn)(const void *context);
typedef uint8_t *(*memory_data_fn)(const void *context, const qj_memory_t *memory);
typedef size_t (*memory_data_size_fn)(const void *context, const qj_memory_t *memory);

static caller_context_fn caller_context;
static context_get_data_fn context_get_data;
static memory_data_fn memory_data;
static memory_data_size_fn memory_data_size;

/* Hand over the wasmtime C API functions this library calls (addresses in the library the
 * host loaded). Returns 0, or -1 when one is missing. */
EXPORT int qj_host_init(void *caller_context_addr, void *context_get_data_addr,
                        void *memory_data_addr, void *memory_data_size_addr)
{
    if (!caller_context_addr || !context_get_data_addr || !memory_data_addr ||
        !memory_data_size_addr)
        return -1;
    caller_context = (caller_context_fn)caller_context_addr;
    context_get_data = (context_get_data_fn)context_get_data_addr;
    memory_data = (memory_data_fn)memory_data_addr;
    memory_data_size = (memory_data_size_fn)memory_data_size_addr;
    return 0;
}

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The answer for clock `id` (wrapping modulo 2**64, as the guest reads a u64). */
static uint64_t clock_value(qj_clock_t *clock, int32_t id)
{
    if (clock->mode == MODE_DETERMINISTIC) {
        /* a fixed start that advances by one millisecond per reading */
        clock->reads += 1;
        return clock->base_ns + clock->reads * 1000000u + clock->virtual_ns;
    }
    if (clock->mode == MODE_ZERO)
        return 0;
    return read_clock(id == 0 ? CLOCK_REALTIME : CLOCK_MONOTONIC);
}

/* Write `value` little-endian at `out`, byte by byte (wasm memory is little-endian whatever
 * the host's byte order). */
static void put_u64(uint8_t *out, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(value >> (8 * i));
}

/* WASI clock_time_get(id: i32, precision: i64, out: i32) -> errno: i32, as a wasmtime unchecked
 * host function (env, caller, args and results, their count). `out` is a guest pointer: the
 * answer goes there only when all 8 bytes lie inside the caller's memory; otherwise, and for a
 * store with no clock, the answer is WASI_EBADF and nothing is written. Never traps. */
EXPORT void *qj_clock_time_get(void *env, void *caller, qj_val_raw_t *args, size_t n)
{
    (void)env;
    if (n < 3) {
        if (n > 0)
            args[0].i32 = WASI_EBADF;
        return NULL;
    }
    int32_t id = args[0].i32;
    uint32_t out = (uint32_t)args[2].i32;
    void *context = caller_context ? caller_context(caller) : NULL;
    qj_clock_t *clock = context ? (qj_clock_t *)context_get_data(context) : NULL;
    if (!clock || clock->memory.inner.store_id == 0) {
        args[0].i32 = WASI_EBADF;
        return NULL;
    }
    /* read first, as the Python import did: a deterministic read counts even when the guest
     * then names a bad pointer */
    uint64_t value = clock_value(clock, id);
    uint8_t *base = memory_data(context, &clock->memory);
    size_t size = memory_data_size(context, &clock->memory);
    if (!base || size < 8 || (size_t)out > size - 8) {
        args[0].i32 = WASI_EBADF;
        return NULL;
    }
    put_u64(base + out, value);
    args[0].i32 = 0;
    return NULL;
}

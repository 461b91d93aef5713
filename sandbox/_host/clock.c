/*
 * The guest's clock, answered natively: WASI clock_time_get as a wasmtime host function written
 * in C, so a Date.now() or performance.now() in the guest costs no Python crossing (no GIL, no
 * ctypes callback). Built for the host machine with the same pinned zig as the guest
 * (sandbox/_build.py), loaded by sandbox/_hostlib.py and registered on the engine's linker as
 * an unchecked host function (sandbox/_engine.py).
 *
 * The library does not link against wasmtime and includes none of its headers: the few
 * wasmtime C API functions it calls are handed over once by qj_host_init (ctypes loads
 * wasmtime's library privately), and the few types it needs are declared in host.h with the
 * layouts sandbox/_capi.py declares.
 *
 * Per-run state is the store's data (qj_store_t, host.h), owned by the host. Everything the
 * guest passes is hostile: the 8 bytes of the answer are written only inside the caller's own
 * linear memory.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <time.h>
#include "host.h"

/* WASI errno for "bad file descriptor": what the host answers a call it cannot serve
 * (QJ_WASI_EBADF of _guest/quickjail.h, the guest's header, which this file does not include) */
#define WASI_EBADF 8

/* qj_store_t.mode */
#define MODE_REAL 0          /* id 0: CLOCK_REALTIME, any other: CLOCK_MONOTONIC + virtual_ns */
#define MODE_DETERMINISTIC 1 /* base_ns + reads * 1 ms + virtual_ns, any id, saturating */
#define MODE_ZERO 2          /* always 0 (compile-only instances) */

caller_context_fn caller_context;
context_get_data_fn context_get_data;
memory_data_fn memory_data;
memory_data_size_fn memory_data_size;

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

/* a + b, or UINT64_MAX when the sum does not fit */
static uint64_t add_saturating(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The answer for clock `id`. The deterministic clock saturates at UINT64_MAX ns (the most a
 * WASI clock can say, in the year 2554) and then stands still: wrapping to 0 would move it
 * backwards, and a timer due past the wrap would never come (the guest treats every timer as
 * due once the clock has reached its end, _guest/timers.c). */
static uint64_t clock_value(qj_store_t *clock, int32_t id)
{
    if (clock->mode == MODE_DETERMINISTIC) {
        /* a fixed start that advances by one millisecond per reading */
        if (clock->reads < UINT64_MAX)
            clock->reads += 1;
        uint64_t read_ns = clock->reads > UINT64_MAX / 1000000u ? UINT64_MAX
                                                                 : clock->reads * 1000000u;
        return add_saturating(add_saturating(clock->base_ns, read_ns), clock->virtual_ns);
    }
    if (clock->mode == MODE_ZERO)
        return 0;
    /* virtual_ns shifts the monotonic clock (wrapping): a resumed run's clock goes on from
     * where it paused, in any process on any machine */
    if (id == 0)
        return read_clock(CLOCK_REALTIME);
    return read_clock(CLOCK_MONOTONIC) + clock->virtual_ns;
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
    void *context;
    qj_store_t *clock = caller_store(caller, &context);
    if (!clock) {
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

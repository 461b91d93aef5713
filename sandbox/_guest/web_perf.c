/*
 * The C side of `performance` and console.time (_guest/web/performance.js, console.js): the
 * run's time origin. The snapshot was built in another process at another time, so the origin
 * comes from each run record (QJ_HDR_MONO_*, QJ_HDR_WALL_*: the host's monotonic and wall
 * clocks when it started the run); performance.now() counts from it on the monotonic clock,
 * which the host answers (fixed, +1 ms per read, when the run is deterministic).
 */
#include <time.h>
#include "guest.h"

/* Called by qj_run with the run record's clock words. */
void perf_start(uint64_t mono_ns, uint64_t wall_ns)
{
    g.mono_origin_ns = mono_ns;
    g.wall_origin_ns = wall_ns;
}

/* now() -> ms since the run's start on the monotonic clock, coarsened to 100 µs as High
 * Resolution Time says for contexts that are not cross-origin isolated (a finer clock only
 * helps timing attacks); never below 0 */
static JSValue js_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    struct timespec ts;
    uint64_t ns = 0;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
        ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t since = ns > g.mono_origin_ns ? ns - g.mono_origin_ns : 0;
    return JS_NewFloat64(ctx, (double)(since - since % 100000) / 1e6);
}

/* timeOrigin() -> the run's start as ms since the Unix epoch (wall clock) */
static JSValue js_time_origin(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    return JS_NewFloat64(ctx, (double)(g.wall_origin_ns / 1000) / 1000.0);
}

int web_perf_natives(JSContext *ctx, JSValueConst native)
{
    if (JS_SetPropertyStr(ctx, native, "now", JS_NewCFunction(ctx, js_now, "now", 0)) < 0 ||
        JS_SetPropertyStr(ctx, native, "timeOrigin",
                          JS_NewCFunction(ctx, js_time_origin, "timeOrigin", 0)) < 0)
        return -1;
    return 0;
}

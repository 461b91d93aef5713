/*
 * Timers: the table behind setTimeout/setInterval (web/timers.js) and the internal timers
 * other web globals use (native.setTimer/clearTimer, e.g. AbortSignal.timeout). Due times are
 * read from the guest's monotonic clock, which the host answers with real time, or with
 * virtual time under deterministic=True. run.c fires the due ones between jobs and, when
 * nothing is due, asks the host to wake it (QJ_OP_SLEEP). Timers still pending when the run's
 * entry settles are cancelled; the counts go to the host with QJ_OP_TIMERS. Once the clock
 * has reached its end (virtual time saturates there) every pending timer is due.
 */
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include "guest.h"

/* pending timers a run may hold at once: the table is scanned linearly, so this bounds the
 * work of each call by construction */
#define MAX_TIMERS 10000
/* HTML: past this nesting level, a timeout below MIN_NESTED_MS is raised to it */
#define MAX_NESTING 5
#define MIN_NESTED_MS 4

typedef struct {
    uint32_t id;
    int internal;     /* native.setTimer's (its own id space), not setTimeout's */
    int repeat;       /* setInterval */
    int nesting;      /* the HTML timer nesting level */
    int32_t ms;       /* the clamped timeout */
    double due;       /* guest monotonic clock, ms */
    uint64_t seq;     /* among equal due times, the order they were set */
    JSValue handler;  /* a function, or the source of a string handler (dynamic code only) */
    JSValue args;     /* an array, or undefined */
} Timer;

static Timer *timers;
static uint32_t ntimers, timers_cap;
static uint32_t next_id[2] = { 1, 1 }; /* public, internal */
static uint64_t next_seq;
static uint32_t fired, cancelled;
/* the timer whose callback is running: its nesting level, and whether it was cleared */
static uint32_t firing_id;
static int firing_internal, firing_nesting = -1, firing_cleared;

/* ms on the guest clock from a timespec (one formula, so equal readings compare equal) */
static double clock_ms(int64_t sec, int64_t nsec)
{
    return (double)sec * 1000.0 + (double)nsec / 1e6;
}

double timers_now(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts))
        return 0;
    return clock_ms(ts.tv_sec, ts.tv_nsec);
}

/* The clock has reached its end: a WASI clock says at most UINT64_MAX ns, and the host's
 * deterministic clock saturates there and stands still (it never wraps). Every pending timer
 * is then due, earliest first, so none waits for a time that cannot come. */
static int clock_ended(double now)
{
    return now >= clock_ms((int64_t)(UINT64_MAX / 1000000000u),
                           (int64_t)(UINT64_MAX % 1000000000u));
}

static int add_timer(JSContext *ctx, Timer *t)
{
    if (ntimers >= MAX_TIMERS) {
        JS_ThrowRangeError(ctx, "too many pending timers (the limit is %d)", MAX_TIMERS);
        return -1;
    }
    if (ntimers == timers_cap) {
        uint32_t cap = timers_cap ? timers_cap * 2 : 16;
        Timer *p = js_realloc(ctx, timers, sizeof(*p) * cap);
        if (!p)
            return -1;
        timers = p;
        timers_cap = cap;
    }
    t->seq = next_seq++;
    timers[ntimers++] = *t;
    return 0;
}

static void free_timer(JSContext *ctx, Timer *t)
{
    JS_FreeValue(ctx, t->handler);
    JS_FreeValue(ctx, t->args);
}

/* Set a timer; returns its id (> 0) or -1 with a pending exception. Consumes handler, args. */
static int64_t set_timer(JSContext *ctx, int internal, JSValue handler, JSValueConst msv,
                         int repeat, JSValue args)
{
    int32_t ms = 0;
    if (!JS_IsUndefined(msv) && JS_ToInt32(ctx, &ms, msv)) {
        JS_FreeValue(ctx, handler);
        JS_FreeValue(ctx, args);
        return -1;
    }
    if (ms < 0)
        ms = 0;
    int nesting = firing_nesting >= 0 ? firing_nesting + 1 : 0;
    if (nesting > MAX_NESTING && ms < MIN_NESTED_MS)
        ms = MIN_NESTED_MS;
    Timer t = { 0 };
    t.internal = internal;
    t.id = next_id[internal];
    t.repeat = repeat;
    t.nesting = nesting;
    t.ms = ms;
    t.due = timers_now() + ms;
    t.handler = handler;
    t.args = args;
    if (add_timer(ctx, &t)) {
        free_timer(ctx, &t);
        return -1;
    }
    next_id[internal] = next_id[internal] >= INT32_MAX ? 1 : next_id[internal] + 1;
    return t.id;
}

static void clear_timer(JSContext *ctx, int internal, JSValueConst idv)
{
    int32_t id = 0;
    if (JS_ToInt32(ctx, &id, idv) || id <= 0) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return;
    }
    if ((uint32_t)id == firing_id && internal == firing_internal)
        firing_cleared = 1;
    for (uint32_t i = 0; i < ntimers; i++) {
        if (timers[i].id == (uint32_t)id && timers[i].internal == internal) {
            free_timer(ctx, &timers[i]);
            timers[i] = timers[--ntimers];
            return;
        }
    }
}

/* native.setTimeout(handler, ms, repeat, args) -> id: setTimeout and setInterval */
static JSValue js_set_timeout(JSContext *ctx, JSValueConst this_val, int argc,
                              JSValueConst *argv)
{
    (void)this_val;
    if (argc < 4)
        return JS_ThrowTypeError(ctx, "setTimeout: missing arguments");
    JSValue handler;
    if (JS_IsFunction(ctx, argv[0])) {
        handler = JS_DupValue(ctx, argv[0]);
    } else {
        /* HTML compiles a string handler as a script: that is dynamic code */
        handler = JS_ToString(ctx, argv[0]);
        if (JS_IsException(handler))
            return handler;
        if (!g.dynamic) {
            JS_FreeValue(ctx, handler);
            return JS_ThrowTypeError(ctx, "a string handler is code evaluated at run time, "
                                          "which needs dynamic_code=True; pass a function");
        }
    }
    int64_t id = set_timer(ctx, 0, handler, argv[1], JS_ToBool(ctx, argv[2]),
                           JS_DupValue(ctx, argv[3]));
    return id < 0 ? JS_EXCEPTION : JS_NewInt64(ctx, id);
}

static JSValue js_clear_timeout(JSContext *ctx, JSValueConst this_val, int argc,
                                JSValueConst *argv)
{
    (void)this_val;
    if (argc > 0)
        clear_timer(ctx, 0, argv[0]);
    return JS_UNDEFINED;
}

/* native.setTimer(callback, ms) -> id: an internal timer, in its own id space, so a program
 * clearing ids it guesses cannot cancel it */
static JSValue js_set_timer(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    if (argc < 1 || !JS_IsFunction(ctx, argv[0]))
        return JS_ThrowTypeError(ctx, "setTimer: the callback is not a function");
    int64_t id = set_timer(ctx, 1, JS_DupValue(ctx, argv[0]), argc > 1 ? argv[1] : JS_UNDEFINED,
                           0, JS_UNDEFINED);
    return id < 0 ? JS_EXCEPTION : JS_NewInt64(ctx, id);
}

static JSValue js_clear_timer(JSContext *ctx, JSValueConst this_val, int argc,
                              JSValueConst *argv)
{
    (void)this_val;
    if (argc > 0)
        clear_timer(ctx, 1, argv[0]);
    return JS_UNDEFINED;
}

int web_timers_natives(JSContext *ctx, JSValueConst native)
{
    static const struct {
        const char *name;
        JSCFunction *fn;
        int length;
    } fns[] = {
        { "setTimeout", js_set_timeout, 4 },
        { "clearTimeout", js_clear_timeout, 1 },
        { "setTimer", js_set_timer, 2 },
        { "clearTimer", js_clear_timer, 1 },
    };
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        JSValue f = JS_NewCFunction(ctx, fns[i].fn, fns[i].name, fns[i].length);
        if (JS_IsException(f) || JS_SetPropertyStr(ctx, native, fns[i].name, f) < 0)
            return -1;
    }
    return 0;
}

uint32_t timers_pending(void)
{
    return ntimers;
}

/* Index of the timer to fire next: the earliest due, then the first set. ntimers > 0. */
static uint32_t next_timer(void)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < ntimers; i++) {
        if (timers[i].due < timers[best].due ||
            (timers[i].due == timers[best].due && timers[i].seq < timers[best].seq))
            best = i;
    }
    return best;
}

int32_t timers_wait_ms(double now)
{
    if (!ntimers)
        return -1;
    double wait = ceil(timers[next_timer()].due - now);
    return wait < 1 ? 1 : wait > INT32_MAX ? INT32_MAX : (int32_t)wait;
}

static JSValue call_handler(JSContext *ctx, Timer *t)
{
    if (JS_IsString(t->handler)) {
        size_t len;
        const char *src = JS_ToCStringLen(ctx, &len, t->handler);
        if (!src)
            return JS_EXCEPTION;
        JSValue r = JS_Eval(ctx, src, len, "<timer>", JS_EVAL_TYPE_GLOBAL);
        JS_FreeCString(ctx, src);
        return r;
    }
    int64_t argc = 0;
    if (JS_IsArray(t->args) && JS_GetLength(ctx, t->args, &argc))
        return JS_EXCEPTION;
    if (argc > 65535)
        argc = 65535;
    JSValue *argv = js_malloc(ctx, sizeof(JSValue) * (size_t)(argc ? argc : 1));
    if (!argv)
        return JS_EXCEPTION;
    for (int64_t i = 0; i < argc; i++)
        argv[i] = JS_GetPropertyInt64(ctx, t->args, i);
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue r = JS_Call(ctx, t->handler, global, (int)argc, (JSValueConst *)argv);
    JS_FreeValue(ctx, global);
    for (int64_t i = 0; i < argc; i++)
        JS_FreeValue(ctx, argv[i]);
    js_free(ctx, argv);
    return r;
}

int timers_fire_one(JSContext *ctx, double now)
{
    if (!ntimers)
        return 0;
    uint32_t i = next_timer();
    if (timers[i].due > now && !clock_ended(now))
        return 0;
    Timer t = timers[i];
    timers[i] = timers[--ntimers];
    fired++;
    firing_id = t.id;
    firing_internal = t.internal;
    firing_nesting = t.nesting;
    firing_cleared = 0;
    JSValue r = call_handler(ctx, &t);
    firing_nesting = -1;
    firing_id = 0;
    int failed = JS_IsException(r);
    JS_FreeValue(ctx, r);
    if (t.repeat && !firing_cleared && g.phase != QJ_PHASE_DONE) {
        /* an interval goes on with the same id and the next nesting level */
        if (t.nesting < MAX_NESTING + 1)
            t.nesting++;
        if (t.nesting > MAX_NESTING && t.ms < MIN_NESTED_MS)
            t.ms = MIN_NESTED_MS;
        t.due = timers_now() + t.ms;
        if (!add_timer(ctx, &t))
            return failed ? -1 : 1;
        /* out of memory re-arming it: the interval ends with the error */
        failed = 1;
    }
    free_timer(ctx, &t);
    return failed ? -1 : 1;
}

void timers_end(JSContext *ctx)
{
    cancelled += ntimers;
    for (uint32_t i = 0; i < ntimers; i++)
        free_timer(ctx, &timers[i]);
    ntimers = 0;
    qj_host(QJ_OP_TIMERS, (int32_t)fired, (int32_t)cancelled, 0, 0);
}

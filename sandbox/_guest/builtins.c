/*
 * The builtins every run gets: console, report, a seeded Math.random; the switch that
 * keeps eval and Function off unless a run asks for them; namespaces with a fallback.
 */
#include <stdio.h>
#include <string.h>
#include "guest.h"

static const char *const console_levels[QJ_LOG_LEVELS] = {
    [QJ_LOG_LOG] = "log",     [QJ_LOG_INFO] = "info",   [QJ_LOG_WARN] = "warn",
    [QJ_LOG_ERROR] = "error", [QJ_LOG_DEBUG] = "debug",
};

/* The message of the last refusal over a limit, shared by every error that reports it: a
 * program that keeps a flood of them (10 000 rejected promises) holds one string, not one per
 * error. Keyed by the code and the limit. */
static struct {
    int64_t code;
    uint64_t limit;
    JSValue message;
} refusal;

/* Throw a RangeError for a refusal over the limit output_limits.<field> (its value is in
 * scratch): "<what> refused: more than <limit> <unit> (output_limits.<field>)" */
static JSValue throw_over_limit(JSContext *ctx, const char *what, int64_t code, const char *unit,
                                const char *field)
{
    uint64_t limit;
    memcpy(&limit, scratch, sizeof(limit));
    if (refusal.code != code || refusal.limit != limit) {
        char text[256];
        snprintf(text, sizeof(text), "%s refused: more than %llu %s (output_limits.%s)", what,
                 (unsigned long long)limit, unit, field);
        JSValue message = JS_NewString(ctx, text);
        if (JS_IsException(message))
            return JS_EXCEPTION;
        if (refusal.code)
            JS_FreeValue(ctx, refusal.message);
        refusal.code = code;
        refusal.limit = limit;
        refusal.message = message;
    }
    JSValue err = JS_NewRangeError(ctx, "%s", "");
    if (JS_IsException(err))
        return JS_EXCEPTION;
    JS_DefinePropertyValueStr(ctx, err, "message", JS_DupValue(ctx, refusal.message),
                              JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    return JS_Throw(ctx, err);
}

/* A report or log the host refused (r < 0): the error saying why, from the code and the
 * detail the host left in scratch (quickjail.h, QJ_E_REPORT_COUNT and after) */
static JSValue throw_refused(JSContext *ctx, const char *what, int64_t r)
{
    uint32_t n;
    switch (r) {
    case QJ_E_REPORT_COUNT:
        return throw_over_limit(ctx, what, r, "reports", "max_reports");
    case QJ_E_REPORT_BYTES:
        return throw_over_limit(ctx, what, r, "bytes of reports in all", "max_report_bytes");
    case QJ_E_UNTRANSFERABLE:
        memcpy(&n, scratch, sizeof(n));
        if (n > QJ_REFUSAL_TEXT_MAX)
            n = QJ_REFUSAL_TEXT_MAX;
        return JS_ThrowTypeError(ctx, "%s refused: %.*s", what, (int)n,
                                 (const char *)scratch + sizeof(n));
    default:
        return JS_ThrowInternalError(ctx, "%s failed: the host could not take it", what);
    }
}

/* Once the host says the log is full (QJ_LOG_CLOSED), every later console call is dropped
 * before its arguments are read (js_console answers true, and web/console.js stops calling
 * it): a program logging in a loop past the cap costs no crossing per call. Once max_reports is reached, report() is refused here the same way. Both
 * are per run (each run is a fresh instance); the host enforces its caps whatever the guest
 * does. */
static int logs_closed;
static int reports_full;
static uint64_t reports_limit;

/* console.<level>(...args): magic is the level */
static JSValue js_console(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                          int magic)
{
    (void)this_val;
    if (logs_closed)
        return JS_TRUE;
    JSValue arr = JS_NewArray(ctx);
    for (int i = 0; i < argc; i++)
        JS_SetPropertyUint32(ctx, arr, (uint32_t)i, JS_DupValue(ctx, argv[i]));
    Buf m;
    int rc = encode_message(ctx, arr, 1, "console", &m);
    JS_FreeValue(ctx, arr);
    if (rc) {
        /* a lenient encoding only fails when out of memory or over the size cap */
        return JS_EXCEPTION;
    }
    int64_t r = qj_host(QJ_OP_LOG, magic, QJ_ADDR(m.p), (int32_t)m.len, 0);
    buf_free(&m);
    if (r < 0) {
        char what[16];
        snprintf(what, sizeof(what), "console.%s", console_levels[magic]);
        return throw_refused(ctx, what, r);
    }
    if (r == QJ_LOG_CLOSED) {
        logs_closed = 1;
        return JS_TRUE; /* console.js stops calling */
    }
    return JS_UNDEFINED;
}

static JSValue js_report(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    Buf m;
    JSValueConst v = argc > 0 ? argv[0] : JS_UNDEFINED;
    if (encode_message(ctx, v, 0, "value", &m))
        return JS_EXCEPTION;
    if (reports_full) {
        /* the value was encoded first, so it fails as it would have at the host */
        buf_free(&m);
        memcpy(scratch, &reports_limit, sizeof(reports_limit));
        return throw_refused(ctx, "report", QJ_E_REPORT_COUNT);
    }
    int64_t r = qj_host(QJ_OP_REPORT, 0, QJ_ADDR(m.p), (int32_t)m.len, 0);
    buf_free(&m);
    if (r == QJ_E_REPORT_COUNT) {
        reports_full = 1;
        memcpy(&reports_limit, scratch, sizeof(reports_limit));
    }
    if (r < 0)
        return throw_refused(ctx, "report", r);
    return JS_UNDEFINED;
}

/* Math.random: xorshift128+, seeded by each run record (the same seed repeats the sequence) */
static uint64_t rng[2];

static uint64_t rng_next(void)
{
    /* xorshift128+ */
    uint64_t s1 = rng[0];
    const uint64_t s0 = rng[1];
    rng[0] = s0;
    s1 ^= s1 << 23;
    rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return rng[1] + s0;
}

static JSValue js_random(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    return JS_NewFloat64(ctx, (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0));
}

static JSValue js_no_dynamic_code(JSContext *ctx, JSValueConst this_val, int argc,
                                  JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    return JS_ThrowTypeError(ctx, "dynamic code evaluation is disabled in this sandbox");
}

void rng_seed(uint32_t seed_lo, uint32_t seed_hi)
{
    rng[0] = ((uint64_t)seed_hi << 32 | seed_lo) ^ 0x9E3779B97F4A7C15ull;
    rng[1] = ((uint64_t)seed_lo << 32 | seed_hi) ^ 0xD1B54A32D192ED03ull;
    if (!rng[0] && !rng[1])
        rng[1] = 1;
    for (int i = 0; i < 8; i++)
        rng_next();
}

/* Dynamic code is off in the snapshot; a run that enables it restores the originals. */
void enable_dynamic_code(JSContext *ctx)
{
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "enableDynamic");
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 0, NULL);
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, fn);
}

int disable_dynamic_code(JSContext *ctx)
{
    JSValue thrower = JS_NewCFunction(ctx, js_no_dynamic_code, "Function", 1);
    JSValue evalt = JS_NewCFunction(ctx, js_no_dynamic_code, "eval", 1);
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "disableDynamic");
    JSValue argv[2] = { thrower, evalt };
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 2, (JSValueConst *)argv);
    int failed = JS_IsException(r);
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, fn);
    JS_FreeValue(ctx, thrower);
    JS_FreeValue(ctx, evalt);
    return failed ? -1 : 0;
}

/* A global namespace object with an own QJ_NS_FALLBACK_KEY function becomes a frozen copy
 * behind a proxy: reading a missing string property gives a function that calls the
 * fallback with the property's name and its arguments (code mode's `tools.nope()` rejects
 * naming the tool). Anything else is returned as it is. */
JSValue wrap_namespace(JSContext *ctx, JSValue v)
{
    if (!JS_IsObject(v) || JS_IsFunction(ctx, v))
        return v;
    JSAtom key = JS_NewAtom(ctx, QJ_NS_FALLBACK_KEY);
    int has = key == JS_ATOM_NULL ? -1 : JS_GetOwnProperty(ctx, NULL, v, key);
    JS_FreeAtom(ctx, key);
    if (has <= 0) {
        if (has < 0)
            JS_FreeValue(ctx, JS_GetException(ctx));
        return v;
    }
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "namespace");
    JSValue argv[2] = { v, JS_NewString(ctx, QJ_NS_FALLBACK_KEY) };
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 2, (JSValueConst *)argv);
    JS_FreeValue(ctx, fn);
    JS_FreeValue(ctx, argv[1]);
    if (JS_IsException(r)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return v;
    }
    JS_FreeValue(ctx, v);
    return r;
}

/* Called once by qj_init: the globals above, with eval and Function off. */
int install_builtins(JSContext *ctx)
{
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue console = JS_NewObject(ctx);
    for (int i = 0; i < QJ_LOG_LEVELS; i++)
        JS_SetPropertyStr(ctx, console, console_levels[i],
                          JS_NewCFunctionMagic(ctx, js_console, console_levels[i], 0,
                                               JS_CFUNC_generic_magic, i));
    JS_SetPropertyStr(ctx, global, "console", console);
    JS_SetPropertyStr(ctx, global, "report", JS_NewCFunction(ctx, js_report, "report", 1));
    JSValue math = JS_GetPropertyStr(ctx, global, "Math");
    JS_SetPropertyStr(ctx, math, "random", JS_NewCFunction(ctx, js_random, "random", 0));
    JS_FreeValue(ctx, math);
    JS_FreeValue(ctx, global);
    return disable_dynamic_code(ctx);
}

/*
 * The builtins every run gets: console, report, a seeded Math.random; the switch that
 * keeps eval and Function off unless a run asks for them; namespaces with a fallback.
 */
#include "guest.h"

static const char *const console_levels[QJ_LOG_LEVELS] = {
    [QJ_LOG_LOG] = "log",     [QJ_LOG_INFO] = "info",   [QJ_LOG_WARN] = "warn",
    [QJ_LOG_ERROR] = "error", [QJ_LOG_DEBUG] = "debug",
};

/* console.<level>(...args): magic is the level */
static JSValue js_console(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                          int magic)
{
    (void)this_val;
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
    int64_t r = qj_host(QJ_OP_LOG, magic, (int32_t)(uintptr_t)m.p, (int32_t)m.len, 0);
    buf_free(&m);
    if (r < 0)
        return JS_ThrowRangeError(ctx, "log limit reached");
    return JS_UNDEFINED;
}

static JSValue js_report(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    Buf m;
    JSValueConst v = argc > 0 ? argv[0] : JS_UNDEFINED;
    if (encode_message(ctx, v, 0, "value", &m))
        return JS_EXCEPTION;
    int64_t r = qj_host(QJ_OP_REPORT, 0, (int32_t)(uintptr_t)m.p, (int32_t)m.len, 0);
    buf_free(&m);
    if (r < 0)
        return JS_ThrowRangeError(ctx, "report limit reached");
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

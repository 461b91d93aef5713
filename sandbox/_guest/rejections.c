/*
 * Unhandled promise rejections and reported exceptions, through web/global.js's helpers: a
 * rejection still unhandled after a microtask checkpoint fires "unhandledrejection" at the
 * global; those still unhandled (and not cancelled) at the end are told to the host
 * (QJ_OP_REJECTION), which records them. An exception a callback threw fires "error".
 */
#include "guest.h"

/* a rejection was tracked since the last checkpoint: rejections_notify has work */
static int fresh;

/* A rejection counts as unhandled only if no handler was attached by the end of the run
 * (and it is not the run's own error): remember them until then. */
void rejection_tracker(JSContext *ctx, JSValueConst promise, JSValueConst reason,
                       bool is_handled, void *opaque)
{
    (void)opaque;
    if (!is_handled)
        fresh = 1;
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, is_handled ? "rejDel" : "rejAdd");
    JSValueConst argv[2] = { promise, reason };
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, is_handled ? 1 : 2, argv);
    if (JS_IsException(r))
        JS_FreeValue(ctx, JS_GetException(ctx));
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, fn);
}

/* An exception that ends the run (uncatchable, or the allocator's failure) stays pending: -1.
 * Any other is dropped: 0. */
static int keep_fatal(JSContext *ctx)
{
    JSValue ex = JS_GetException(ctx);
    if (JS_IsUncatchableError(ex) || oom_is_last_failure(ex)) {
        JS_Throw(ctx, ex);
        return -1;
    }
    JS_FreeValue(ctx, ex);
    return 0;
}

int rejections_notify(void)
{
    if (!fresh)
        return 0;
    fresh = 0;
    JSContext *ctx = g.ctx;
    JSValue argv[3] = { g.promise, JS_FALSE, JS_UNDEFINED };
    if (JS_IsPromise(g.promise) && JS_PromiseState(ctx, g.promise) == JS_PROMISE_REJECTED) {
        argv[1] = JS_TRUE;
        argv[2] = JS_PromiseResult(ctx, g.promise);
    }
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "rejNotify");
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 3, (JSValueConst *)argv);
    JS_FreeValue(ctx, fn);
    JS_FreeValue(ctx, argv[2]);
    if (JS_IsException(r))
        return keep_fatal(ctx);
    int fired = JS_ToBool(ctx, r) > 0;
    JS_FreeValue(ctx, r);
    return fired;
}

int report_exception(JSValueConst ex)
{
    JSContext *ctx = g.ctx;
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "reportException");
    JSValueConst argv[2] = { ex, JS_UNDEFINED };
    JSValue prefix = JS_NewString(ctx, "Uncaught exception in a callback:");
    argv[1] = prefix;
    JSValue r = JS_IsException(prefix) ? JS_EXCEPTION : JS_Call(ctx, fn, JS_UNDEFINED, 2, argv);
    JS_FreeValue(ctx, prefix);
    JS_FreeValue(ctx, fn);
    if (JS_IsException(r))
        return keep_fatal(ctx) < 0 ? -1 : 1;
    JS_FreeValue(ctx, r);
    return 0;
}

/* Tell the host about rejections still unhandled; `error` (if has_error) is the run's own. */
void report_rejections(int has_error, JSValueConst error)
{
    JSContext *ctx = g.ctx;
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "rejTake");
    JSValueConst argv[2] = { JS_NewBool(ctx, has_error), error };
    JSValue list = JS_Call(ctx, fn, JS_UNDEFINED, 2, argv);
    JS_FreeValue(ctx, fn);
    if (JS_IsException(list)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return;
    }
    int64_t n = 0;
    JS_GetLength(ctx, list, &n);
    for (int64_t i = 0; i < n; i++) {
        JSValue reason = JS_GetPropertyInt64(ctx, list, i);
        Buf m;
        if (encode_message(ctx, reason, 1, "reason", &m) == 0) {
            qj_host(QJ_OP_REJECTION, 0, QJ_ADDR(m.p), (int32_t)m.len, 0);
            buf_free(&m);
        } else {
            JS_FreeValue(ctx, JS_GetException(ctx));
        }
        JS_FreeValue(ctx, reason);
    }
    JS_FreeValue(ctx, list);
}

/* native.helpers({name: fn, ...}): global.js hands over the functions above call, which join
 * the bootstrap's on g.helpers (build time only: no program reaches `native`) */
static JSValue js_helpers(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    static const char *const names[] = { "rejAdd", "rejDel", "rejNotify", "rejTake",
                                         "reportException" };
    if (argc < 1 || !JS_IsObject(argv[0]))
        return JS_ThrowTypeError(ctx, "helpers: not an object");
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        JSValue f = JS_GetPropertyStr(ctx, argv[0], names[i]);
        if (JS_IsException(f))
            return f;
        if (!JS_IsFunction(ctx, f)) {
            JS_FreeValue(ctx, f);
            return JS_ThrowTypeError(ctx, "helpers: %s is not a function", names[i]);
        }
        if (JS_SetPropertyStr(ctx, g.helpers, names[i], f) < 0)
            return JS_EXCEPTION;
    }
    return JS_UNDEFINED;
}

int web_global_natives(JSContext *ctx, JSValueConst native)
{
    JSValue f = JS_NewCFunction(ctx, js_helpers, "helpers", 1);
    if (JS_IsException(f) || JS_SetPropertyStr(ctx, native, "helpers", f) < 0)
        return -1;
    return 0;
}

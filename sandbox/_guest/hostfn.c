/*
 * Host functions (the bridge): each is a C closure over its id that calls the host with
 * QJ_OP_CALL. By its mode (QJ_FN_*) a call returns a promise: settled at once with a sync
 * function's reply, or later by qj_resume for an async one; or, opted into, the value itself.
 */
#include <stdlib.h>
#include "guest.h"

/* The value of a sync call's reply (QJ_CALL_OK + value message), or an exception: what the
 * function threw (QJ_CALL_ERROR + error message), or the guest's own failure. */
static JSValue sync_reply(JSContext *ctx, int64_t r)
{
    if (r < 0)
        return JS_ThrowInternalError(ctx, "host call failed");
    uint8_t *owned;
    const uint8_t *p = reply_bytes(r, &owned);
    if (!p || r < 1) { free(owned); return JS_ThrowOutOfMemory(ctx); }
    int ok = p[0] != QJ_CALL_ERROR;
    JSValue v = decode_message(ctx, p + 1, (size_t)r - 1);
    free(owned);
    if (JS_IsException(v) || ok)
        return v;
    return JS_Throw(ctx, make_error(ctx, v));
}

/* The pending exception ends the run rather than rejecting a promise: uncatchable (a stop) or
 * the allocator's failure. */
static int is_fatal(JSContext *ctx)
{
    JSValue ex = JS_GetException(ctx);
    int fatal = JS_IsUncatchableError(ex) || oom_is_last_failure(ex);
    JS_Throw(ctx, ex);
    return fatal;
}

/* A promise rejected with the pending exception (which it takes). */
static JSValue rejected_with_exception(JSContext *ctx)
{
    if (is_fatal(ctx))
        return JS_EXCEPTION;
    JSValue ex = JS_GetException(ctx);
    JSValue rejected = JS_NewSettledPromise(ctx, true, ex);
    JS_FreeValue(ctx, ex);
    return rejected;
}

/* Room for one more pending call in g.calls (its index is g.ncalls): made before the host
 * hears of the call, so a call the host parked always has its slot. 0, or -1 out of memory. */
static int reserve_call(void)
{
    if (g.ncalls < g.calls_cap)
        return 0;
    uint32_t cap = g.calls_cap ? g.calls_cap * 2 : 16;
    PendingCall *c = realloc(g.calls, sizeof(*c) * cap);
    if (!c)
        return -1;
    g.calls = c;
    g.calls_cap = cap;
    return 0;
}

/* A sync call the host parked (QJ_E_PENDING for call id g.ncalls + 1): a pending promise
 * registered under that id, which qj_resume settles as an async call's. */
static JSValue parked_promise(JSContext *ctx)
{
    JSValue funcs[2];
    JSValue promise = JS_NewPromiseCapability(ctx, funcs);
    if (JS_IsException(promise))
        return promise;
    uint32_t id = g.ncalls;
    g.calls[id].resolve = funcs[0];
    g.calls[id].reject = funcs[1];
    g.calls[id].used = 1;
    g.ncalls++;
    g.pending++;
    return promise;
}

/* magic = function id << 2 | mode (QJ_FN_*), so an id is at most MAX_FN_ID */
#define MAX_FN_ID (INT32_MAX >> 2)
static JSValue js_host_fn(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                          int magic, JSValueConst *func_data)
{
    (void)this_val; (void)func_data;
    int mode = magic & 3;
    int is_async = mode == QJ_FN_ASYNC;
    int32_t fn_id = magic >> 2;
    JSValue arr = JS_NewArray(ctx);
    for (int i = 0; i < argc; i++)
        JS_SetPropertyUint32(ctx, arr, (uint32_t)i, JS_DupValue(ctx, argv[i]));
    Buf m;
    int rc = encode_message(ctx, arr, 0, "args", &m);
    JS_FreeValue(ctx, arr);
    if (rc)
        return mode == QJ_FN_VALUE ? JS_EXCEPTION : rejected_with_exception(ctx);
    if (mode != QJ_FN_VALUE && reserve_call() < 0) {
        buf_free(&m);
        return JS_ThrowOutOfMemory(ctx);
    }
    if (is_async) {
        /* register a promise under a fresh call id, then tell the host */
        uint32_t id = g.ncalls;
        JSValue funcs[2];
        JSValue promise = JS_NewPromiseCapability(ctx, funcs);
        if (JS_IsException(promise)) { buf_free(&m); return promise; }
        int64_t r = qj_host(QJ_OP_CALL, fn_id, QJ_ADDR(m.p), (int32_t)m.len,
                            (int32_t)(id + 1));
        buf_free(&m);
        if (r == QJ_E_PENDING) {
            g.calls[id].resolve = funcs[0];
            g.calls[id].reject = funcs[1];
            g.calls[id].used = 1;
            g.ncalls++;
            g.pending++;
            return promise;
        }
        JS_FreeValue(ctx, funcs[0]);
        JS_FreeValue(ctx, funcs[1]);
        JS_FreeValue(ctx, promise);
        if (r >= 0) {
            /* the host refused at once: the promise is rejected with its error */
            uint8_t *owned;
            const uint8_t *p = reply_bytes(r, &owned);
            if (!p) return JS_ThrowOutOfMemory(ctx);
            JSValue err = make_error(ctx, decode_message(ctx, p, (size_t)r));
            free(owned);
            if (JS_IsException(err)) return err;
            JSValue rejected = JS_NewSettledPromise(ctx, true, err);
            JS_FreeValue(ctx, err);
            return rejected;
        }
        return JS_ThrowInternalError(ctx, "host call failed");
    }
    /* QJ_FN_PROMISE names the call id its promise would take if the host parks the call
     * (QJ_E_PENDING: a host function paused it); QJ_FN_VALUE cannot wait, so it names none */
    int32_t call_id = mode == QJ_FN_PROMISE ? (int32_t)(g.ncalls + 1) : 0;
    int64_t r = qj_host(QJ_OP_CALL, fn_id, QJ_ADDR(m.p), (int32_t)m.len, call_id);
    buf_free(&m);
    if (r == QJ_E_PENDING && call_id > 0)
        return parked_promise(ctx);
    JSValue v = sync_reply(ctx, r);
    if (mode == QJ_FN_VALUE || (JS_IsException(v) && is_fatal(ctx)))
        return v;
    /* QJ_FN_PROMISE: the reply settles a promise now, with no round trip through the host */
    if (JS_IsException(v))
        return rejected_with_exception(ctx);
    JSValue settled = JS_NewSettledPromise(ctx, false, v);
    JS_FreeValue(ctx, v);
    return settled;
}

/* The marker of a host function: an own data property QJ_FN_KEY holding an array. Own only:
 * a program that put QJ_FN_KEY on Object.prototype must not turn the host's plain objects into
 * host functions of its choosing. Returns the marker, or JS_UNDEFINED. */
static JSValue own_marker(JSContext *ctx, JSValueConst v)
{
    JSAtom key = JS_NewAtomLen(ctx, QJ_FN_KEY, sizeof(QJ_FN_KEY) - 1);
    if (key == JS_ATOM_NULL) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return JS_UNDEFINED;
    }
    JSPropertyDescriptor desc;
    int has = JS_GetOwnProperty(ctx, &desc, v, key);
    JS_FreeAtom(ctx, key);
    if (has < 0)
        JS_FreeValue(ctx, JS_GetException(ctx));
    if (has <= 0)
        return JS_UNDEFINED;
    JS_FreeValue(ctx, desc.getter);
    JS_FreeValue(ctx, desc.setter);
    if ((desc.flags & JS_PROP_GETSET) || !JS_IsArray(desc.value)) {
        JS_FreeValue(ctx, desc.value);
        return JS_UNDEFINED;
    }
    return desc.value;
}

/* Host values (globals, host modules) hold each host function as an object
 * {QJ_FN_KEY: [id, mode, name]}: replace those by closures. Objects (not arrays) are
 * searched down to 32 levels and frozen on the way. Consumes v. */
JSValue bind_host_values(JSContext *ctx, JSValue v, int depth)
{
    if (!JS_IsObject(v) || JS_IsArray(v) || depth > 32)
        return v;
    JSValue marker = own_marker(ctx, v);
    if (JS_IsArray(marker)) {
        JSValue idv = JS_GetPropertyUint32(ctx, marker, 0);
        JSValue asv = JS_GetPropertyUint32(ctx, marker, 1);
        JSValue namev = JS_GetPropertyUint32(ctx, marker, 2);
        double idd = -1;
        int32_t mode = QJ_FN_PROMISE;
        if (JS_ToFloat64(ctx, &idd, idv))
            JS_FreeValue(ctx, JS_GetException(ctx));
        JS_ToInt32(ctx, &mode, asv);
        if (mode < QJ_FN_VALUE || mode > QJ_FN_PROMISE)
            mode = QJ_FN_PROMISE;
        JS_FreeValue(ctx, idv);
        JS_FreeValue(ctx, asv);
        JS_FreeValue(ctx, marker);
        if (!(idd >= 0 && idd <= MAX_FN_ID && idd == (int32_t)idd)) {
            /* not an id the magic can hold: shifted into it, a negative one was undefined
             * behaviour and a large one lost its top bits and called another function (found
             * by fuzz/). The object stays a plain value. */
            JS_FreeValue(ctx, namev);
            goto walk;
        }
        int32_t id = (int32_t)idd;
        const char *name = JS_ToCString(ctx, namev);
        JS_FreeValue(ctx, namev);
        JS_FreeValue(ctx, v);
        JSValue fn = JS_NewCFunctionData2(ctx, js_host_fn, name ? name : "", 0,
                                          (id << 2) | mode, 0, NULL);
        if (name) JS_FreeCString(ctx, name);
        return fn;
    }
    JS_FreeValue(ctx, marker);
walk:;
    JSPropertyEnum *tab;
    uint32_t n;
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, v, JS_GPN_STRING_MASK) == 0) {
        for (uint32_t i = 0; i < n; i++) {
            JSValue item = JS_GetProperty(ctx, v, tab[i].atom);
            item = bind_host_values(ctx, item, depth + 1);
            JS_SetProperty(ctx, v, tab[i].atom, item);
        }
        JS_FreePropertyEnum(ctx, tab, n);
    }
    JS_FreezeObject(ctx, v);
    return v;
}

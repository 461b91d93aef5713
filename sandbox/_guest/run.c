/*
 * Runs: qj_run reads the run record (quickjail.h), evaluates the module or script, calls the
 * entry export and awaits it, running jobs and firing timers (timers.c) until it settles;
 * qj_resume settles async host calls, or wakes the guest for its timers, and continues. The
 * outcome goes to the host with QJ_OP_RESULT.
 */
#include <stdlib.h>
#include <string.h>
#include "guest.h"

static void send_result(int outcome, const Buf *m)
{
    qj_host(QJ_OP_RESULT, outcome, QJ_ADDR(m->p), (int32_t)m->len, 0);
}

/* Report the pending exception as the run's error outcome. */
static int32_t finish_with_exception(int outcome)
{
    JSContext *ctx = g.ctx;
    mem_finishing();
    JSValue ex = JS_GetException(ctx);
    timers_end(ctx);
    /* before any more program code runs (getters, toString), which could fail an allocation */
    int oom = oom_is_last_failure(ex);
    report_rejections(1, ex);
    /* defined, never set, on an object without a prototype: a setter the program put on
     * Object.prototype cannot see or forge a field */
    JSValue info = JS_NewObjectProto(ctx, JS_NULL);
    if (JS_IsError(ex)) {
        static const char *const fields[] = { "name", "message", "stack" };
        for (int i = 0; i < 3; i++) {
            JSValue f = JS_GetPropertyStr(ctx, ex, fields[i]);
            if (JS_IsException(f)) {
                JS_FreeValue(ctx, JS_GetException(ctx));
                f = JS_UNDEFINED;
            }
            if (!JS_IsUndefined(f)) {
                JSValue s = JS_ToString(ctx, f);
                if (JS_IsException(s)) {
                    JS_FreeValue(ctx, JS_GetException(ctx));
                    s = JS_NewString(ctx, "");
                }
                JS_DefinePropertyValueStr(ctx, info, fields[i], s, JS_PROP_C_W_E);
            }
            JS_FreeValue(ctx, f);
        }
    } else {
        JS_DefinePropertyValueStr(ctx, info, "thrown", JS_DupValue(ctx, ex), JS_PROP_C_W_E);
        JSValue name = thrown_name(ctx, ex);
        if (!JS_IsUndefined(name))
            JS_DefinePropertyValueStr(ctx, info, "name", name, JS_PROP_C_W_E);
    }
    JS_DefinePropertyValueStr(ctx, info, "uncatchable", JS_NewBool(ctx, JS_IsUncatchableError(ex)),
                              JS_PROP_C_W_E);
    /* a fact of ours, not a property of the value: the program cannot forge it */
    JS_DefinePropertyValueStr(ctx, info, "oom", JS_NewBool(ctx, oom),
                              JS_PROP_C_W_E);
    JS_FreeValue(ctx, ex);
    Buf m;
    if (JS_IsException(info) || encode_message(ctx, info, 1, "error", &m)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        JS_FreeValue(ctx, info);
        /* out of memory while describing the error: send the bare minimum */
        static const char json[] =
            "{\"name\":\"InternalError\",\"message\":\"out of memory\",\"oom\":true}";
        static uint8_t minimal[5 + sizeof(json) - 1 + 4];
        uint32_t jl = sizeof(json) - 1;
        minimal[0] = 0;
        minimal[1] = jl & 0xff; minimal[2] = (jl >> 8) & 0xff; minimal[3] = 0; minimal[4] = 0;
        memcpy(minimal + 5, json, jl);
        memset(minimal + 5 + jl, 0, 4);
        Buf mm = { minimal, sizeof(minimal), sizeof(minimal), 0 };
        send_result(outcome, &mm);
        g.phase = QJ_PHASE_DONE;
        return QJ_DONE;
    }
    JS_FreeValue(ctx, info);
    send_result(outcome, &m);
    buf_free(&m);
    g.phase = QJ_PHASE_DONE;
    return QJ_DONE;
}

static int32_t finish_with_value(JSValueConst v)
{
    mem_finishing();
    timers_end(g.ctx);
    report_rejections(0, JS_UNDEFINED);
    Buf m;
    if (encode_message(g.ctx, v, 0, "result", &m))
        return finish_with_exception(QJ_OUT_ERROR);
    send_result(QJ_OUT_VALUE, &m);
    buf_free(&m);
    g.phase = QJ_PHASE_DONE;
    return QJ_DONE;
}

/* An exception a job or a timer threw (a FinalizationRegistry, queueMicrotask or setTimeout
 * callback): as browsers do, it is reported (report_exception: an "error" event, then an error
 * log), and the run carries on. This is the log when the event could not be made. */
static void log_uncaught(JSValueConst ex)
{
    JSContext *ctx = g.ctx;
    JSValue args = JS_NewArray(ctx);
    if (JS_IsException(args)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return;
    }
    JS_SetPropertyUint32(ctx, args, 0, JS_NewString(ctx, "Uncaught exception in a callback:"));
    JS_SetPropertyUint32(ctx, args, 1, JS_DupValue(ctx, ex));
    Buf m;
    if (encode_message(ctx, args, 1, "console", &m) == 0) {
        qj_host(QJ_OP_LOG, QJ_LOG_ERROR, QJ_ADDR(m.p), (int32_t)m.len, 0);
        buf_free(&m);
    } else {
        JS_FreeValue(ctx, JS_GetException(ctx));
    }
    JS_FreeValue(ctx, args);
}

/* A callback (job or timer) threw: log it and go on (0), unless what it threw is uncatchable
 * or the allocator's failure, which ends the run (-1, the exception pending again). */
static int callback_threw(void)
{
    JSValue ex = JS_GetException(g.ctx);
    if (JS_IsUncatchableError(ex) || oom_is_last_failure(ex)) {
        JS_Throw(g.ctx, ex);
        return -1;
    }
    int r = report_exception(ex);
    if (r > 0)
        log_uncaught(ex);
    JS_FreeValue(g.ctx, ex);
    return r < 0 ? -1 : 0;
}

/* Run jobs until none is left, even once the awaited promise settled: work the program queued
 * before then is not dropped (the run's limits still stop a queue that never empties). */
static int drain_jobs(void)
{
    JSContext *pctx;
    for (;;) {
        int r = JS_ExecutePendingJob(g.rt, &pctx);
        if (r < 0 && callback_threw() < 0)
            return -1;
        if (r == 0) {
            /* a microtask checkpoint: "unhandledrejection" listeners may queue more jobs */
            int n = rejections_notify();
            if (n <= 0)
                return n;
        }
    }
}

/* Nothing is runnable and the entry is pending: fire the next due timer (1), or ask the host
 * to wake us when one is due (0: return QJ_PENDING), or go on when no timer is pending (2). */
static int run_timers(void)
{
    for (;;) {
        if (!timers_pending())
            return 2;
        double now = timers_now();
        int r = timers_fire_one(g.ctx, now);
        if (r < 0)
            return callback_threw() < 0 ? -1 : 1;
        if (r > 0)
            return 1;
        int64_t s = qj_host(QJ_OP_SLEEP, timers_wait_ms(now), (int32_t)g.pending, 0, 0);
        if (s != 0)
            return 0;
        /* virtual time: the clock jumped, the timer is due now */
    }
}

static int32_t call_entry(void);

/* Advance the state machine after jobs ran. */
static int32_t step(void)
{
    JSContext *ctx = g.ctx;
    for (;;) {
        if (drain_jobs() < 0)
            return finish_with_exception(QJ_OUT_ERROR);
        JSPromiseStateEnum st = JS_PromiseState(ctx, g.promise);
        if (st == JS_PROMISE_PENDING) {
            int t = run_timers();
            if (t < 0)
                return finish_with_exception(QJ_OUT_ERROR);
            if (t == 1)
                continue;
            if (t == 0 || g.pending > 0)
                return QJ_PENDING;
            JS_ThrowInternalError(ctx, "the program is waiting for a promise that can never settle");
            return finish_with_exception(QJ_OUT_ERROR);
        }
        JSValue res = JS_PromiseResult(ctx, g.promise);
        if (st == JS_PROMISE_REJECTED) {
            JS_Throw(ctx, res);
            return finish_with_exception(QJ_OUT_ERROR);
        }
        if (g.phase == QJ_PHASE_EVALUATING) {
            JS_FreeValue(ctx, res);
            int32_t r = call_entry();
            if (r != QJ_PENDING || g.phase == QJ_PHASE_DONE)
                return r;
            continue; /* now awaiting the call's promise */
        }
        int32_t r = finish_with_value(res);
        JS_FreeValue(ctx, res);
        return r;
    }
}

/* The entry's value: a promise is awaited, anything else is final (takes `value`). */
static int32_t settle_entry(JSValue value)
{
    JSContext *ctx = g.ctx;
    /* await a promise result; anything else is final */
    if (JS_IsPromise(value)) {
        JS_FreeValue(ctx, g.promise);
        g.promise = value;
        g.phase = QJ_PHASE_AWAITING_CALL;
        return QJ_PENDING;
    }
    /* the entry settled with a plain value: what it queued before still runs */
    if (drain_jobs() < 0) {
        JS_FreeValue(ctx, value);
        return finish_with_exception(QJ_OUT_ERROR);
    }
    int32_t r = finish_with_value(value);
    JS_FreeValue(ctx, value);
    return r;
}

/* Call the entry function (taking `fn`) with execute's args and settle on what it gives. */
static int32_t call_value(JSValue fn)
{
    JSContext *ctx = g.ctx;
    int64_t argc = 0;
    JSValue *argv = NULL;
    if (g.has_args) {
        JS_GetLength(ctx, g.args, &argc);
        argv = malloc(sizeof(JSValue) * (size_t)(argc ? argc : 1));
        if (!argv) {
            JS_FreeValue(ctx, fn);
            JS_ThrowOutOfMemory(ctx);
            return finish_with_exception(QJ_OUT_ERROR);
        }
        for (int64_t i = 0; i < argc; i++)
            argv[i] = JS_GetPropertyInt64(ctx, g.args, i);
    }
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, (int)argc, (JSValueConst *)argv);
    for (int64_t i = 0; i < argc; i++)
        JS_FreeValue(ctx, argv[i]);
    free(argv);
    JS_FreeValue(ctx, fn);
    if (JS_IsException(r)) {
        /* the entry threw: what it queued before still runs */
        JSValue ex = JS_GetException(ctx);
        if (drain_jobs() == 0)
            JS_Throw(ctx, ex);
        else
            JS_FreeValue(ctx, ex);
        return finish_with_exception(QJ_OUT_ERROR);
    }
    return settle_entry(r);
}

/* The module body has run: pick the export and call it. */
static int32_t call_entry(void)
{
    JSContext *ctx = g.ctx;
    JSValue value;
    if (g.kind == QJ_KIND_SCRIPT) {
        JSValue res = JS_PromiseResult(ctx, g.promise);
        value = JS_GetPropertyStr(ctx, res, "value");
        JS_FreeValue(ctx, res);
        if (g.has_args) {
            JS_FreeValue(ctx, value);
            JS_ThrowTypeError(ctx, "execute args are not allowed with kind=\"script\"");
            return finish_with_exception(QJ_OUT_ERROR);
        }
        /* kind auto: statements whose completion value is a function (helpers, then a final
         * arrow or function expression) meant that function as the program: call it */
        if (g.auto_kind && JS_IsFunction(ctx, value))
            return call_value(value);
    } else {
        JSModuleDef *m = JS_VALUE_GET_PTR(g.module_val);
        JSValue ns = JS_GetModuleNamespace(ctx, m);
        if (JS_IsException(ns))
            return finish_with_exception(QJ_OUT_ERROR);
        JSAtom a = JS_NewAtom(ctx, g.fn_name);
        int has = JS_HasProperty(ctx, ns, a);
        value = has > 0 ? JS_GetProperty(ctx, ns, a) : JS_UNDEFINED;
        JS_FreeAtom(ctx, a);
        JS_FreeValue(ctx, ns);
        /* kind auto: a module without a default export ran for its effects (undefined) */
        if (has <= 0 && !(g.auto_kind && strcmp(g.fn_name, "default") == 0 && !g.has_args)) {
            JS_ThrowReferenceError(ctx, "the module has no export named '%s'", g.fn_name);
            return finish_with_exception(QJ_OUT_ERROR);
        }
        if (JS_IsException(value))
            return finish_with_exception(QJ_OUT_ERROR);
        if (JS_IsFunction(ctx, value))
            return call_value(value);
        if (g.has_args) {
            JS_FreeValue(ctx, value);
            JS_ThrowTypeError(ctx, "the export '%s' is not a function, so it cannot take args",
                              g.fn_name);
            return finish_with_exception(QJ_OUT_ERROR);
        }
    }
    return settle_entry(value);
}

int32_t qj_run(uint8_t *rec, uint32_t len)
{
    JSContext *ctx = g.ctx;
    uint8_t *owned = rec;
    if (!rec)
        rec = scratch;
    if (len < QJ_RUN_HEADER_WORDS * 4 || g.phase != QJ_PHASE_IDLE) {
        free(owned);
        return QJ_FAIL;
    }
    uint32_t h[QJ_RUN_HEADER_WORDS];
    for (int i = 0; i < QJ_RUN_HEADER_WORDS; i++)
        h[i] = rd_u32(rec + 4 * i);
    uint32_t filename_len = h[QJ_HDR_FILENAME_LEN], source_len = h[QJ_HDR_SOURCE_LEN];
    uint32_t fn_len = h[QJ_HDR_FN_LEN], args_len = h[QJ_HDR_ARGS_LEN];
    uint32_t globals_len = h[QJ_HDR_GLOBALS_LEN];
    uint64_t total = (uint64_t)QJ_RUN_HEADER_WORDS * 4 + filename_len + source_len + fn_len +
                     args_len + globals_len;
    if (total > len) {
        free(owned);
        return QJ_FAIL;
    }
    const char *filename_p = (const char *)rec + QJ_RUN_HEADER_WORDS * 4;
    const char *source_p = filename_p + filename_len;
    const char *fn_p = source_p + source_len;
    const uint8_t *args_p = (const uint8_t *)fn_p + fn_len;
    const uint8_t *globals_p = args_p + args_len;

    /* a compile batch parses under the same memory and stack limits as a run */
    mem_set_soft_limit(h[QJ_HDR_SOFT_LIMIT]);
    JS_UpdateStackTop(g.rt);
    JS_SetMaxStackSize(g.rt, h[QJ_HDR_STACK_LIMIT]);
    if (h[QJ_HDR_KIND] == QJ_KIND_COMPILE) {
        int32_t r = compile_batch((const uint8_t *)source_p, source_len);
        free(owned);
        return r;
    }
    uint32_t flags = h[QJ_HDR_FLAGS];
    g.kind = (int)h[QJ_HDR_KIND];
    g.auto_kind = g.kind == QJ_KIND_AUTO;
    g.dynamic = (flags & QJ_FLAG_DYNAMIC) != 0;
    g.has_args = (flags & QJ_FLAG_ARGS) != 0;
    rng_seed(h[QJ_HDR_SEED_LO], h[QJ_HDR_SEED_HI]);
    crypto_seed(h + QJ_HDR_ENTROPY_0);
    perf_start((uint64_t)h[QJ_HDR_MONO_HI] << 32 | h[QJ_HDR_MONO_LO],
               (uint64_t)h[QJ_HDR_WALL_HI] << 32 | h[QJ_HDR_WALL_LO]);

    char *filename = malloc((size_t)filename_len + 1);
    char *source = malloc((size_t)source_len + 1);
    g.fn_name = malloc((size_t)fn_len + 1);
    if (!filename || !source || !g.fn_name) {
        free(owned);
        return QJ_FAIL;
    }
    memcpy(filename, filename_p, filename_len);
    filename[filename_len] = 0;
    memcpy(source, source_p, source_len);
    source[source_len] = 0;
    memcpy(g.fn_name, fn_p, fn_len);
    g.fn_name[fn_len] = 0;
    g.args = g.has_args ? decode_message(ctx, args_p, args_len) : JS_UNDEFINED;
    JSValue globals = globals_len ? decode_message(ctx, globals_p, globals_len) : JS_UNDEFINED;
    free(owned);
    g.phase = QJ_PHASE_EVALUATING;
    if (JS_IsException(g.args) || JS_IsException(globals)) {
        free(filename);
        free(source);
        return finish_with_exception(QJ_OUT_ERROR);
    }

    if (flags & QJ_FLAG_DYNAMIC)
        enable_dynamic_code(ctx);
    if (JS_IsObject(globals)) {
        JSValue global = JS_GetGlobalObject(ctx);
        JSPropertyEnum *tab;
        uint32_t n;
        if (JS_GetOwnPropertyNames(ctx, &tab, &n, globals, JS_GPN_STRING_MASK) == 0) {
            for (uint32_t i = 0; i < n; i++) {
                JSValue item = JS_GetProperty(ctx, globals, tab[i].atom);
                item = wrap_namespace(ctx, bind_host_values(ctx, item, 0));
                const char *key = JS_AtomToCString(ctx, tab[i].atom);
                int hidden = key && key[0] == QJ_HIDDEN_GLOBAL[0];
                JS_FreeCString(ctx, key);
                if (hidden && JS_IsObject(g.native))
                    JS_DefinePropertyValue(ctx, g.native, tab[i].atom, item, 0);
                else if (hidden)
                    JS_FreeValue(ctx, item);
                else
                    JS_DefinePropertyValue(ctx, global, tab[i].atom, item, JS_PROP_ENUMERABLE);
            }
            JS_FreePropertyEnum(ctx, tab, n);
        }
        JS_FreeValue(ctx, global);
    }
    JS_FreeValue(ctx, globals);

    int outcome;
    JSValue p = entry_start(ctx, source, source_len, filename, (flags & QJ_FLAG_BYTECODE) != 0,
                            &outcome);
    free(source);
    free(filename);
    if (JS_IsException(p))
        return finish_with_exception(outcome);
    g.promise = p;
    return step();
}

int32_t qj_resume(uint32_t id, int32_t ok, uint8_t *data, uint32_t len)
{
    JSContext *ctx = g.ctx;
    uint8_t *owned = data;
    if (!data)
        data = scratch;
    if (g.phase == QJ_PHASE_DONE || g.phase == QJ_PHASE_IDLE || id > g.ncalls ||
        (id > 0 && !g.calls[id - 1].used)) {
        free(owned);
        return g.phase == QJ_PHASE_DONE ? QJ_DONE : QJ_FAIL;
    }
    if (id == 0) {
        /* a wake-up: the time QJ_OP_SLEEP asked for passed */
        free(owned);
        return step();
    }
    PendingCall *c = &g.calls[id - 1];
    c->used = 0;
    g.pending--;
    JSValue v = decode_message(ctx, data, len);
    free(owned);
    if (!ok && !JS_IsException(v))
        v = make_error(ctx, v);
    if (JS_IsException(v)) {
        v = JS_GetException(ctx);
        ok = 0;
    }
    JSValue r = JS_Call(ctx, ok ? c->resolve : c->reject, JS_UNDEFINED, 1, (JSValueConst *)&v);
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, v);
    JS_FreeValue(ctx, c->resolve);
    JS_FreeValue(ctx, c->reject);
    return step();
}

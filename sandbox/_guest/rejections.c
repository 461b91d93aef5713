/*
 * Unhandled promise rejections are told to the host (QJ_OP_REJECTION), which records them.
 */
#include "guest.h"

/* A rejection counts as unhandled only if no handler was attached by the end of the run
 * (and it is not the run's own error): remember them until then. */
void rejection_tracker(JSContext *ctx, JSValueConst promise, JSValueConst reason,
                       bool is_handled, void *opaque)
{
    (void)opaque;
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, is_handled ? "rejDel" : "rejAdd");
    JSValueConst argv[2] = { promise, reason };
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, is_handled ? 1 : 2, argv);
    if (JS_IsException(r))
        JS_FreeValue(ctx, JS_GetException(ctx));
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, fn);
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

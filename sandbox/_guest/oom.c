/*
 * Which value an allocation failure threw. Our patch to quickjs.c (sandbox/_patches/) calls
 * qj_oom_thrown with the error JS_ThrowOutOfMemory just threw, and throws qj_oom_fallback
 * (an error made at init, so it needs no memory) where QuickJS would throw null because even
 * an error object could not be allocated. A run's error counts as running out of memory only
 * when it is that very value: a program that caught one and threw null or its own
 * InternalError('out of memory') has an ordinary error.
 */
#include "guest.h"

static JSValue fallback; /* a frozen InternalError('out of memory'), made by oom_init */
static JSValue last;     /* a reference to the last value an allocation failure threw */
static int ready;

static void remember(JSContext *ctx, JSValueConst v)
{
    JSValue old = last;
    last = JS_DupValue(ctx, v);
    JS_FreeValue(ctx, old);
}

void oom_init(JSContext *ctx)
{
    JSValue e = JS_NewInternalError(ctx, "out of memory");
    if (JS_IsException(e)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return;
    }
    JS_DefinePropertyValueStr(ctx, e, "stack", JS_NewString(ctx, ""), JS_PROP_CONFIGURABLE);
    JS_FreezeObject(ctx, e);
    fallback = e;
    last = JS_UNDEFINED;
    ready = 1;
}

JSValue qj_oom_fallback(JSContext *ctx)
{
    if (!ready)
        return JS_NULL;
    remember(ctx, fallback);
    return JS_DupValue(ctx, fallback);
}

void qj_oom_thrown(JSContext *ctx, JSValueConst exception)
{
    if (ready && JS_IsObject(exception))
        remember(ctx, exception);
}

int oom_is_last_failure(JSValueConst v)
{
    return ready && JS_IsObject(v) && JS_IsObject(last) &&
           JS_VALUE_GET_PTR(v) == JS_VALUE_GET_PTR(last);
}

/*
 * The C side of structuredClone (_guest/web/clone.js): which internal class an object has.
 * JavaScript cannot tell a WeakMap, a Promise or a Proxy from a plain object without running
 * the program's code (Symbol.toStringTag, getters, traps); the class id can, and costs nothing.
 */
#include "guest.h"

/* native.classOf(v) -> the class id of an object, -1 for anything else */
static JSValue js_class_of(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)ctx;
    (void)this_val;
    (void)argc;
    if (!JS_IsObject(argv[0]))
        return JS_NewInt32(ctx, -1);
    return JS_NewInt32(ctx, (int32_t)JS_GetClassID(argv[0]));
}

static const JSCFunctionListEntry clone_natives[] = {
    JS_CFUNC_DEF("classOf", 1, js_class_of),
};

int web_clone_natives(JSContext *ctx, JSValueConst native)
{
    return JS_SetPropertyFunctionList(ctx, native, clone_natives,
                                      sizeof clone_natives / sizeof clone_natives[0]);
}

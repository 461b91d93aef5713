/*
 * qj_init (snapshot time): the runtime, the context, the bootstrap and the builtins. It runs
 * once, at build time; the memory it leaves is baked into the module (sandbox/_snapshot.py).
 */
#include "guest.h"

Guest g;

/* a run's first arena of each small-block size class (see JS_SealArenas) */
#define FIRST_ARENA_SIZE 256

/* bootstrap.js, which sandbox/_build.py turns into a C string literal in the build folder */
static const char bootstrap_src[] =
#include "bootstrap.js.inc"
    ;

int32_t qj_init(void)
{
    g.rt = JS_NewRuntime2(&qj_malloc_funcs, NULL);
    if (!g.rt)
        return QJ_FAIL;
    JSContext *ctx = JS_NewContextRaw(g.rt);
    if (!ctx)
        return QJ_FAIL;
    g.ctx = ctx;
    /* the explicit list of intrinsics: ECMAScript, plus DOMException and atob/btoa (HTML), no
     * quickjs-libc */
    if (JS_AddIntrinsicBaseObjects(ctx) || JS_AddIntrinsicDate(ctx) || JS_AddIntrinsicEval(ctx) ||
        JS_AddIntrinsicRegExp(ctx) || JS_AddIntrinsicJSON(ctx) || JS_AddIntrinsicProxy(ctx) ||
        JS_AddIntrinsicMapSet(ctx) || JS_AddIntrinsicTypedArrays(ctx) ||
        JS_AddIntrinsicPromise(ctx) || JS_AddIntrinsicBigInt(ctx) || JS_AddIntrinsicWeakRef(ctx) ||
        JS_AddIntrinsicDOMException(ctx) || JS_AddIntrinsicAToB(ctx))
        return QJ_FAIL;
    JS_SetModuleLoaderFunc2(g.rt, module_normalize, module_loader, module_check_attributes,
                            NULL);
    JS_SetHostPromiseRejectionTracker(g.rt, rejection_tracker, NULL);

    g.helpers = JS_Eval(ctx, bootstrap_src, sizeof(bootstrap_src) - 1, "<quickjail>",
                        JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(g.helpers))
        return QJ_FAIL;
    JSValue global = JS_GetGlobalObject(ctx);
    g.ctors = JS_NewObject(ctx);
    {
        static const char *const names[] = { "Error", "TypeError", "RangeError", "SyntaxError",
                                             "ReferenceError", "EvalError" };
        for (int i = 0; i < 6; i++)
            JS_SetPropertyStr(ctx, g.ctors, names[i], JS_GetPropertyStr(ctx, global, names[i]));
    }
    JS_FreeValue(ctx, global);

    if (install_builtins(ctx) || install_web(ctx))
        return QJ_FAIL;
    oom_init(ctx);
    mem_hold_reserves();
    g.module_val = JS_UNDEFINED;
    g.promise = JS_UNDEFINED;
    g.args = JS_UNDEFINED;
    /* settle the heap so the snapshot holds no garbage */
    JS_RunGC(g.rt);
    /* every run makes a promise (its evaluation's), which writes the Promise prototype: the
     * first object a run allocates is linked after it, on that page, not on another's */
    JSValue global_obj = JS_GetGlobalObject(ctx);
    JSValue promise = JS_GetPropertyStr(ctx, global_obj, "Promise");
    JSValue promise_proto = JS_GetPropertyStr(ctx, promise, "prototype");
    JS_MoveToGCListEnd(ctx, promise_proto);
    JS_FreeValue(ctx, promise_proto);
    JS_FreeValue(ctx, promise);
    JS_FreeValue(ctx, global_obj);
    /* a run's new atoms (its global names, its file name) take neighbouring slots */
    JS_SortFreeAtoms(g.rt);
    JS_SealArenas(g.rt, FIRST_ARENA_SIZE);
    heap_seal();
    return QJ_DONE;
}

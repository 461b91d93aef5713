/*
 * The web-platform globals every run has (the WinterTC minimum common API: encoding, URL,
 * timers, events, crypto, ...). Each _guest/web/<name>.js is one expression whose value is a
 * function of one argument, `native`, that installs its globals; qj_init runs them once, in
 * name order, at build time, so what they build lives in the snapshot and costs a run nothing.
 * `native` holds the C functions the files need (each web_*_natives below adds its own); no
 * program can reach it afterwards except through the closures the files keep.
 */
#include <stdio.h>
#include "guest.h"

typedef struct {
    const char *name;
    const char *src;
    size_t len;
} WebFile;

/* sandbox/_build.py writes one {name, source, length} per _guest/web/*.js, in name order */
static const WebFile web_files[] = {
#include "web.js.inc"
    { NULL, NULL, 0 },
};

/* the C side of the web globals: each adds its functions to `native` */
typedef int (*AddNatives)(JSContext *ctx, JSValueConst native);
static const AddNatives add_natives[] = {
    web_timers_natives,
    web_crypto_natives,
    web_perf_natives,
    web_encoding_natives,
    web_clone_natives,
    web_idna_natives,
    web_collate_natives,
    web_fetch_natives,
    web_compress_natives,
    web_intl_natives,
    web_global_natives,
    NULL,
};

/* Compile source and evaluate it as bytecode without its source text: QuickJS keeps a copy of
 * every function's source (nested ones overlap), which would only grow the snapshot and the
 * pages a run touches; Function.prototype.toString then shows no source, as for built-ins.
 * Line numbers stay, for the frames. `src[len]` must be NUL (JS_Eval needs it): a C string
 * literal has it. Also used for Intl's code (web_intl.c), compiled on a run's first use. */
JSValue web_eval_stripped(JSContext *ctx, const char *src, size_t len, const char *filename)
{
    JSValue fn = JS_Eval(ctx, src, len, filename, JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
    if (JS_IsException(fn))
        return fn;
    size_t n;
    uint8_t *bc = JS_WriteObject(ctx, &n, fn, JS_WRITE_OBJ_BYTECODE | JS_WRITE_OBJ_STRIP_SOURCE);
    JS_FreeValue(ctx, fn);
    if (!bc)
        return JS_EXCEPTION;
    fn = JS_ReadObject(ctx, bc, n, JS_READ_OBJ_BYTECODE);
    js_free(ctx, bc);
    if (JS_IsException(fn))
        return fn;
    return JS_EvalFunction(ctx, fn);
}

int install_web(JSContext *ctx)
{
    JSValue native = JS_NewObject(ctx);
    if (JS_IsException(native))
        return -1;
    int rc = 0;
    for (size_t i = 0; add_natives[i] && !rc; i++)
        rc = add_natives[i](ctx, native);
    for (size_t i = 0; web_files[i].name && !rc; i++) {
        char filename[96];
        snprintf(filename, sizeof filename, "<quickjail:web/%s>", web_files[i].name);
        JSValue install = web_eval_stripped(ctx, web_files[i].src, web_files[i].len, filename);
        if (JS_IsException(install)) {
            rc = -1;
            break;
        }
        JSValue r = JS_Call(ctx, install, JS_UNDEFINED, 1, (JSValueConst *)&native);
        rc = JS_IsException(r) ? -1 : 0;
        JS_FreeValue(ctx, r);
        JS_FreeValue(ctx, install);
    }
    g.native = native; /* kept: a run's hidden globals are put on it (run.c) */
    return rc;
}

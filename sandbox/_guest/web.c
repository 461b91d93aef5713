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
    web_encoding_natives,
    web_clone_natives,
    NULL,
};

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
        /* JS_Eval needs the byte after the source to be NUL: a C string literal has it */
        JSValue install = JS_Eval(ctx, web_files[i].src, web_files[i].len, filename,
                                  JS_EVAL_TYPE_GLOBAL);
        if (JS_IsException(install)) {
            rc = -1;
            break;
        }
        JSValue r = JS_Call(ctx, install, JS_UNDEFINED, 1, (JSValueConst *)&native);
        rc = JS_IsException(r) ? -1 : 0;
        JS_FreeValue(ctx, r);
        JS_FreeValue(ctx, install);
    }
    JS_FreeValue(ctx, native);
    return rc;
}

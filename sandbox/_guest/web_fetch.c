/*
 * The C side of the fetch family (_guest/web/fetch_body.js): finding a byte string in a body.
 * A multipart/form-data body is searched for its boundary; a hostile body and boundary must not
 * make that quadratic, so the search is musl's memmem (two-way: linear in the body).
 */
#define _GNU_SOURCE
#include <string.h>
#include "guest.h"

/* native.indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from) -> index | -1 */
static JSValue js_index_of_bytes(JSContext *ctx, JSValueConst this_val, int argc,
                                 JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    int64_t from;
    if (JS_ToInt64(ctx, &from, argv[2])) /* first: it may run code */
        return JS_EXCEPTION;
    size_t n, m;
    const uint8_t *h = JS_GetUint8Array(ctx, &n, argv[0]);
    if (!h)
        return JS_EXCEPTION;
    const uint8_t *k = JS_GetUint8Array(ctx, &m, argv[1]);
    if (!k)
        return JS_EXCEPTION;
    if (from < 0)
        from = 0;
    if ((uint64_t)from > n)
        return JS_NewInt32(ctx, -1);
    if (m == 0)
        return JS_NewInt64(ctx, from);
    const uint8_t *p = memmem(h + from, n - (size_t)from, k, m);
    return JS_NewInt64(ctx, p ? (int64_t)(p - h) : -1);
}

static const JSCFunctionListEntry fetch_natives[] = {
    JS_CFUNC_DEF("indexOfBytes", 3, js_index_of_bytes),
};

int web_fetch_natives(JSContext *ctx, JSValueConst native)
{
    return JS_SetPropertyFunctionList(ctx, native, fetch_natives,
                                      sizeof fetch_natives / sizeof fetch_natives[0]);
}

/*
 * Compile batches (QJ_KIND_COMPILE): modules compiled to bytecode for the host's cache.
 */
#include <stdlib.h>
#include <string.h>
#include "guest.h"

/* Compile batch: u32 count, then (u32 name_len, name, u32 src_len, src)*. Each module that
 * compiles is sent to the host as bytecode (QJ_OP_BYTECODE); none of its code runs. */
int32_t compile_batch(const uint8_t *p, size_t n)
{
    JSContext *ctx = g.ctx;
    g.compile_only = 1;
    if (n < 4)
        return QJ_FAIL;
    uint32_t count = rd_u32(p);
    size_t pos = 4;
    for (uint32_t i = 0; i < count; i++) {
        if (n - pos < 4) return QJ_FAIL;
        uint32_t nl = rd_u32(p + pos); pos += 4;
        if (n - pos < nl) return QJ_FAIL;
        const uint8_t *name_p = p + pos; pos += nl;
        if (n - pos < 4) return QJ_FAIL;
        uint32_t sl = rd_u32(p + pos); pos += 4;
        if (n - pos < sl) return QJ_FAIL;
        const uint8_t *src_p = p + pos; pos += sl;
        char *name = malloc((size_t)nl + 1);
        char *src = malloc((size_t)sl + 1);
        if (!name || !src) { free(name); free(src); return QJ_FAIL; }
        memcpy(name, name_p, nl); name[nl] = 0;
        memcpy(src, src_p, sl); src[sl] = 0;
        g.saw_attributes = 0;
        JSValue v = JS_Eval(ctx, src, sl, name, JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
        free(src);
        free(name);
        if (JS_IsException(v)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
            continue;
        }
        if (g.saw_attributes) {
            /* QuickJS's bytecode does not keep import attributes: a module importing JSON
             * read back from it would import the JSON as JavaScript, so it is not cached */
            JS_FreeValue(ctx, v);
            continue;
        }
        size_t blen;
        uint8_t *bc = JS_WriteObject(ctx, &blen, v, JS_WRITE_OBJ_BYTECODE);
        JS_FreeValue(ctx, v);
        if (!bc) {
            JS_FreeValue(ctx, JS_GetException(ctx));
            continue;
        }
        /* only hand out bytecode that reads back: some module shapes do not round-trip
         * (re-exports in QuickJS-ng 0.17); those modules are simply parsed every time */
        JSValue back = JS_ReadObject(ctx, bc, blen, JS_READ_OBJ_BYTECODE);
        if (JS_IsException(back)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
        } else {
            JS_FreeValue(ctx, back);
            qj_host(QJ_OP_BYTECODE, (int32_t)i, QJ_ADDR(bc), (int32_t)blen, 0);
        }
        js_free(ctx, bc);
    }
    g.phase = QJ_PHASE_DONE;
    return QJ_DONE;
}

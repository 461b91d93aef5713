/*
 * The C side of the URL host parser's UTS #46 processing (_guest/web/idna.js): the IDNA data
 * (mapping table, Bidi classes, viramas, joining types), generated at build time from the
 * pinned idna wheel by sandbox/_idna_tables.py as one JSON text. It stays in the module's data
 * until a run parses its first non-ASCII host and calls native.idnaData(), so a run that never
 * does touches none of its pages.
 */
#include "guest.h"

/* JSON text, ASCII only; the literal's NUL ends it */
static const char idna_data[] =
#include "idna.json.inc"
    ;

/* idnaData() -> the IDNA data as JSON text (a new string each call: idna.js keeps what it
 * decodes for the rest of the run) */
static JSValue js_idna_data(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    return JS_NewStringLen(ctx, idna_data, sizeof idna_data - 1);
}

int web_idna_natives(JSContext *ctx, JSValueConst native)
{
    return JS_SetPropertyStr(ctx, native, "idnaData",
                             JS_NewCFunction(ctx, js_idna_data, "idnaData", 0)) < 0 ? -1 : 0;
}

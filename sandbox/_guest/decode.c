/*
 * The decoder: value message -> JS value (the format is in quickjail.h), and host error
 * records -> JS errors.
 */
#include <stdlib.h>
#include <string.h>
#include "guest.h"

typedef struct {
    JSContext *ctx;
    uint32_t nblobs;
    const uint8_t **blob_ptr;
    uint32_t *blob_len;
} Dec;

static JSValue dec_revive(Dec *d, JSValue v, int depth);

/* Tag "a": [kind, blob index] -> a typed array of that kind, an ArrayBuffer or a DataView
 * over a copy of the blob, which must hold a whole number of elements. */
static JSValue dec_typed(Dec *d, JSValueConst payload)
{
    JSContext *ctx = d->ctx;
    JSValue k = JS_GetPropertyUint32(ctx, payload, 0), i = JS_GetPropertyUint32(ctx, payload, 1);
    const char *kind = JS_IsString(k) ? JS_ToCString(ctx, k) : NULL;
    int32_t idx = -1;
    if (JS_IsNumber(i))
        JS_ToInt32(ctx, &idx, i);
    JS_FreeValue(ctx, k);
    JS_FreeValue(ctx, i);
    int type = -3; /* -1 ArrayBuffer, -2 DataView, else a JSTypedArrayEnum */
    if (kind && !strcmp(kind, "ArrayBuffer"))
        type = -1;
    else if (kind && !strcmp(kind, "DataView"))
        type = -2;
    for (int t = 0; kind && type == -3 && t < QJ_TYPED_KINDS; t++)
        if (!strcmp(kind, qj_typed_kinds[t]))
            type = t;
    if (kind)
        JS_FreeCString(ctx, kind);
    size_t size = type >= 0 ? qj_typed_sizes[type] : 1;
    if (type == -3 || idx < 0 || (uint32_t)idx >= d->nblobs || d->blob_len[idx] % size)
        return JS_ThrowTypeError(ctx, "malformed host value");
    JSValue buffer = JS_NewArrayBufferCopy(ctx, d->blob_ptr[idx], d->blob_len[idx]);
    if (JS_IsException(buffer) || type == -1)
        return buffer;
    JSValue out;
    if (type == -2) {
        JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "newDataView");
        out = JS_Call(ctx, fn, JS_UNDEFINED, 1, (JSValueConst *)&buffer);
        JS_FreeValue(ctx, fn);
    } else {
        out = JS_NewTypedArray(ctx, 1, (JSValueConst *)&buffer, (JSTypedArrayEnum)type);
    }
    JS_FreeValue(ctx, buffer);
    return out;
}

static JSValue dec_tagged(Dec *d, JSValue arr, int depth)
{
    JSContext *ctx = d->ctx;
    JSValue tagv = JS_GetPropertyUint32(ctx, arr, 0);
    JSValue payload = JS_GetPropertyUint32(ctx, arr, 1);
    const char *tag = JS_ToCString(ctx, tagv);
    JS_FreeValue(ctx, tagv);
    JSValue out = JS_UNDEFINED;
    if (!tag) {
        out = JS_EXCEPTION;
    } else if (!strcmp(tag, "u")) {
        out = JS_UNDEFINED;
    } else if (!strcmp(tag, "b")) {
        int32_t idx = -1;
        JS_ToInt32(ctx, &idx, payload);
        if (idx < 0 || (uint32_t)idx >= d->nblobs)
            out = JS_ThrowTypeError(ctx, "malformed host value");
        else
            out = JS_NewUint8ArrayCopy(ctx, d->blob_ptr[idx], d->blob_len[idx]);
    } else if (!strcmp(tag, "a")) {
        out = dec_typed(d, payload);
    } else if (!strcmp(tag, "t")) {
        int32_t idx = -1;
        JS_ToInt32(ctx, &idx, payload);
        if (idx < 0 || (uint32_t)idx >= d->nblobs)
            out = JS_ThrowTypeError(ctx, "malformed host value");
        else
            out = JS_NewStringLen(ctx, (const char *)d->blob_ptr[idx], d->blob_len[idx]);
    } else if (!strcmp(tag, "n")) {
        JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "fromHex");
        out = JS_Call(ctx, fn, JS_UNDEFINED, 1, (JSValueConst *)&payload);
        JS_FreeValue(ctx, fn);
    } else if (!strcmp(tag, "d")) {
        double ms = 0;
        if (JS_IsNull(payload))
            ms = 0.0 / 0.0;
        else
            JS_ToFloat64(ctx, &ms, payload);
        out = JS_NewDate(ctx, ms);
    } else if (!strcmp(tag, "f")) {
        const char *s = JS_ToCString(ctx, payload);
        double dv = 0.0 / 0.0;
        if (s) {
            if (!strcmp(s, "Infinity")) dv = 1.0 / 0.0;
            else if (!strcmp(s, "-Infinity")) dv = -1.0 / 0.0;
            else if (!strcmp(s, "-0")) dv = -0.0;
            JS_FreeCString(ctx, s);
        }
        out = JS_NewFloat64(ctx, dv);
    } else if (!strcmp(tag, "m") || !strcmp(tag, "s")) {
        payload = dec_revive(d, payload, depth + 1);
        if (JS_IsException(payload)) {
            out = JS_EXCEPTION;
        } else {
            JSValue fn = JS_GetPropertyStr(ctx, g.helpers, tag[0] == 'm' ? "newMap" : "newSet");
            out = JS_Call(ctx, fn, JS_UNDEFINED, 1, (JSValueConst *)&payload);
            JS_FreeValue(ctx, fn);
        }
    } else {
        out = JS_ThrowTypeError(ctx, "malformed host value");
    }
    if (tag)
        JS_FreeCString(ctx, tag);
    JS_FreeValue(ctx, payload);
    return out;
}

/* Replace tagged objects and unescape keys, in place where possible. Consumes v. */
static JSValue dec_revive(Dec *d, JSValue v, int depth)
{
    JSContext *ctx = d->ctx;
    if (!JS_IsObject(v))
        return v;
    if (depth > 1000) {
        JS_FreeValue(ctx, v);
        return JS_ThrowRangeError(ctx, "host value nested too deeply");
    }
    if (JS_IsArray(v)) {
        int64_t len;
        if (JS_GetLength(ctx, v, &len)) goto fail;
        for (int64_t i = 0; i < len; i++) {
            JSValue item = JS_GetPropertyInt64(ctx, v, i);
            if (!JS_IsObject(item)) { JS_FreeValue(ctx, item); continue; }
            item = dec_revive(d, item, depth + 1);
            if (JS_IsException(item)) goto fail;
            if (JS_SetPropertyInt64(ctx, v, i, item) < 0) goto fail;
        }
        return v;
    }
    JSPropertyEnum *tab;
    uint32_t n;
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, v, JS_GPN_STRING_MASK))
        goto fail;
    if (n == 1) {
        size_t klen;
        const char *k = JS_AtomToCStringLen(ctx, &klen, tab[0].atom);
        int is_tag = k && klen == 1 && k[0] == '\0';
        if (k) JS_FreeCString(ctx, k);
        if (is_tag) {
            JSValue arr = JS_GetProperty(ctx, v, tab[0].atom);
            JS_FreePropertyEnum(ctx, tab, n);
            JS_FreeValue(ctx, v);
            JSValue out = dec_tagged(d, arr, depth);
            JS_FreeValue(ctx, arr);
            return out;
        }
    }
    int rc = 0;
    JSValue copy = JS_UNDEFINED;
    int needs_copy = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t klen;
        const char *k = JS_AtomToCStringLen(ctx, &klen, tab[i].atom);
        if (k && klen > 0 && k[0] == '\0') needs_copy = 1;
        if (k) JS_FreeCString(ctx, k);
    }
    if (needs_copy)
        copy = JS_NewObject(ctx);
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        JSValue item = JS_GetProperty(ctx, v, tab[i].atom);
        item = dec_revive(d, item, depth + 1);
        if (JS_IsException(item)) { rc = -1; break; }
        if (needs_copy) {
            size_t klen;
            const char *k = JS_AtomToCStringLen(ctx, &klen, tab[i].atom);
            if (!k) { JS_FreeValue(ctx, item); rc = -1; break; }
            const char *key = k;
            if (klen > 0 && k[0] == '\0') { key++; klen--; }
            JSAtom a = JS_NewAtomLen(ctx, key, klen);
            rc = JS_DefinePropertyValue(ctx, copy, a, item, JS_PROP_C_W_E) < 0 ? -1 : 0;
            JS_FreeAtom(ctx, a);
            JS_FreeCString(ctx, k);
        } else {
            rc = JS_SetProperty(ctx, v, tab[i].atom, item) < 0 ? -1 : 0;
        }
    }
    JS_FreePropertyEnum(ctx, tab, n);
    if (rc) { JS_FreeValue(ctx, copy); goto fail; }
    if (needs_copy) { JS_FreeValue(ctx, v); return copy; }
    return v;
fail:
    JS_FreeValue(ctx, v);
    return JS_EXCEPTION;
}

/* Decode a value message (host-written, so hostile-until-checked: every length is checked). */
JSValue decode_message(JSContext *ctx, const uint8_t *p, size_t n)
{
    if (n < 5)
        return JS_ThrowTypeError(ctx, "malformed host value");
    uint8_t flags = p[0];
    uint32_t jlen = rd_u32(p + 1);
    if ((size_t)jlen > n - 5 || n - 5 - jlen < 4)
        return JS_ThrowTypeError(ctx, "malformed host value");
    const uint8_t *json = p + 5;
    const uint8_t *bp = json + jlen;
    size_t brem = n - 5 - jlen;
    uint32_t nblobs = rd_u32(bp);
    bp += 4;
    brem -= 4;
    if (nblobs > brem / 4)
        return JS_ThrowTypeError(ctx, "malformed host value");
    const uint8_t **ptrs = NULL;
    uint32_t *lens = NULL;
    if (nblobs) {
        ptrs = malloc(sizeof(*ptrs) * nblobs);
        lens = malloc(sizeof(*lens) * nblobs);
        if (!ptrs || !lens) { free(ptrs); free(lens); return JS_ThrowOutOfMemory(ctx); }
        for (uint32_t i = 0; i < nblobs; i++) {
            if (brem < 4) goto bad;
            uint32_t bl = rd_u32(bp);
            bp += 4; brem -= 4;
            if (bl > brem) goto bad;
            ptrs[i] = bp; lens[i] = bl;
            bp += bl; brem -= bl;
        }
    }
    /* JS_ParseJSON needs a NUL after the text */
    char *text = malloc((size_t)jlen + 1);
    if (!text) { free(ptrs); free(lens); return JS_ThrowOutOfMemory(ctx); }
    memcpy(text, json, jlen);
    text[jlen] = 0;
    JSValue v = JS_ParseJSON(ctx, text, jlen, "<host>");
    free(text);
    if (!JS_IsException(v) && (flags & QJ_MSG_TAGGED)) {
        Dec d = { ctx, nblobs, ptrs, lens };
        v = dec_revive(&d, v, 0);
    }
    free(ptrs);
    free(lens);
    return v;
bad:
    free(ptrs);
    free(lens);
    return JS_ThrowTypeError(ctx, "malformed host value");
}

/* Turn a host error record {name, message} into a JS Error. Consumes rec. Built in C so the
 * error's stack shows only the program's own frames. */
JSValue make_error(JSContext *ctx, JSValue rec)
{
    if (JS_IsException(rec))
        return rec;
    JSValue name = JS_GetPropertyStr(ctx, rec, "name");
    JSValue msg = JS_GetPropertyStr(ctx, rec, "message");
    JS_FreeValue(ctx, rec);
    const char *n = JS_IsString(name) ? JS_ToCString(ctx, name) : NULL;
    static const char *const kinds[] = { "TypeError", "RangeError", "SyntaxError",
                                         "ReferenceError", "EvalError", NULL };
    JSValue ctor = JS_UNDEFINED;
    int custom = n && strcmp(n, "Error") != 0;
    for (int i = 0; n && kinds[i]; i++) {
        if (!strcmp(n, kinds[i])) {
            ctor = JS_GetPropertyStr(ctx, g.ctors, kinds[i]);
            custom = 0;
        }
    }
    if (JS_IsUndefined(ctor))
        ctor = JS_GetPropertyStr(ctx, g.ctors, "Error");
    JSValue text = JS_IsUndefined(msg) ? JS_NewString(ctx, "") : JS_ToString(ctx, msg);
    JSValue e = JS_IsException(text) ? text
                                     : JS_CallConstructor(ctx, ctor, 1, (JSValueConst *)&text);
    if (custom && !JS_IsException(e))
        JS_DefinePropertyValueStr(ctx, e, "name", JS_DupValue(ctx, name),
                                  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    if (n)
        JS_FreeCString(ctx, n);
    JS_FreeValue(ctx, text);
    JS_FreeValue(ctx, ctor);
    JS_FreeValue(ctx, name);
    JS_FreeValue(ctx, msg);
    return e;
}

/*
 * The C side of TextEncoder and TextDecoder (_guest/web/encoding.js): the UTF-8 loops, which
 * are too slow in interpreted JavaScript for megabyte buffers. The bytes and strings are the
 * program's own (guest data inside the guest), yet every index is checked against its length,
 * and no JavaScript runs between taking a buffer's pointer and the last use of it.
 */
#include <string.h>
#include "guest.h"

/* the replacement character U+FFFD, for ill-formed input */
#define REPLACEMENT 0xFFFD

/* the memory of the Uint8Arrays utf8Encode returns: QuickJS's own allocator (size 0 frees) */
static void *realloc_bytes(JSRuntime *rt, void *opaque, void *ptr, size_t size)
{
    (void)opaque;
    return js_realloc_rt(rt, ptr, size);
}

/*
 * Decode one UTF-8 sequence at p[i..n) (WHATWG Encoding's UTF-8 decoder): *cp gets the code
 * point, or -1 for an ill-formed maximal subpart; returns the bytes used, or 0 when the input
 * ends inside a sequence that could still be completed (the caller decides: more to come, or
 * one U+FFFD for the valid prefix).
 */
static size_t utf8_step(const uint8_t *p, size_t i, size_t n, int32_t *cp, size_t *prefix)
{
    uint8_t b = p[i];
    uint32_t c, need, lo = 0x80, hi = 0xBF;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
        c = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        c = b & 0x0F;
        if (b == 0xE0)
            lo = 0xA0;
        if (b == 0xED)
            hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        c = b & 0x07;
        if (b == 0xF0)
            lo = 0x90;
        if (b == 0xF4)
            hi = 0x8F;
    } else {
        *cp = -1;
        return 1;
    }
    size_t j = i + 1;
    for (uint32_t k = 0; k < need; k++, j++) {
        if (j >= n) {
            *prefix = j - i;
            return 0;
        }
        if (p[j] < lo || p[j] > hi) {
            *cp = -1; /* the offending byte starts the next step */
            return j - i;
        }
        lo = 0x80;
        hi = 0xBF;
        c = (c << 6) | (p[j] & 0x3F);
    }
    *cp = (int32_t)c;
    return j - i;
}

/*
 * native.utf8Decode(bytes: Uint8Array, fatal: boolean, stream: boolean) -> [string, used]:
 * `used` < bytes.length only when streaming and the input ends inside a sequence (its bytes
 * wait for the next chunk). With `fatal`, ill-formed input gives null instead of a string.
 */
static JSValue js_utf8_decode(JSContext *ctx, JSValueConst this_val, int argc,
                              JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    size_t n;
    const uint8_t *p = JS_GetUint8Array(ctx, &n, argv[0]);
    if (!p)
        return JS_EXCEPTION;
    int fatal = JS_ToBool(ctx, argv[1]);
    int stream = JS_ToBool(ctx, argv[2]);
    size_t i = 0;
    while (i < n && p[i] < 0x80)
        i++;
    JSValue str;
    size_t used = n;
    if (i == n) {
        str = JS_NewStringLen(ctx, (const char *)p, n); /* ASCII: a one-byte string */
    } else {
        /* each byte gives at most one UTF-16 unit; a four-byte sequence gives two */
        uint16_t *out = js_malloc(ctx, n * sizeof(uint16_t));
        if (!out)
            return JS_EXCEPTION;
        size_t o = 0;
        for (size_t k = 0; k < i; k++)
            out[o++] = p[k];
        int bad = 0;
        while (i < n) {
            int32_t cp;
            size_t prefix = 0;
            size_t step = utf8_step(p, i, n, &cp, &prefix);
            if (!step) {
                if (stream) {
                    used = i;
                    break;
                }
                cp = -1;
                step = prefix;
            }
            i += step;
            if (cp < 0) {
                bad = 1;
                if (fatal)
                    break;
                out[o++] = REPLACEMENT;
            } else if (cp >= 0x10000) {
                cp -= 0x10000;
                out[o++] = (uint16_t)(0xD800 | (cp >> 10));
                out[o++] = (uint16_t)(0xDC00 | (cp & 0x3FF));
            } else {
                out[o++] = (uint16_t)cp;
            }
        }
        str = fatal && bad ? JS_NULL : JS_NewStringUTF16(ctx, out, o);
        js_free(ctx, out);
    }
    if (JS_IsException(str))
        return str;
    JSValue pair = JS_NewArray(ctx);
    if (JS_IsException(pair)) {
        JS_FreeValue(ctx, str);
        return pair;
    }
    JS_SetPropertyUint32(ctx, pair, 0, str);
    JS_SetPropertyUint32(ctx, pair, 1, JS_NewInt64(ctx, (int64_t)used));
    return pair;
}

/* the code point at s[i] (a lone surrogate is U+FFFD) and, in *units, how many units it takes */
static uint32_t utf16_at(const uint16_t *s, size_t i, size_t n, size_t *units)
{
    uint32_t c = s[i];
    *units = 1;
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] <= 0xDFFF) {
        *units = 2;
        return 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00);
    }
    return c >= 0xD800 && c <= 0xDFFF ? REPLACEMENT : c;
}

static size_t utf8_len(uint32_t c)
{
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

static size_t utf8_put(uint8_t *q, uint32_t c)
{
    if (c < 0x80) {
        q[0] = (uint8_t)c;
        return 1;
    }
    if (c < 0x800) {
        q[0] = (uint8_t)(0xC0 | (c >> 6));
        q[1] = (uint8_t)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        q[0] = (uint8_t)(0xE0 | (c >> 12));
        q[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
        q[2] = (uint8_t)(0x80 | (c & 0x3F));
        return 3;
    }
    q[0] = (uint8_t)(0xF0 | (c >> 18));
    q[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    q[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    q[3] = (uint8_t)(0x80 | (c & 0x3F));
    return 4;
}

/* native.utf8Encode(s: string) -> Uint8Array (lone surrogates become U+FFFD) */
static JSValue js_utf8_encode(JSContext *ctx, JSValueConst this_val, int argc,
                              JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    size_t n, units, len = 0;
    const uint16_t *s = JS_ToCStringLenUTF16(ctx, &n, argv[0]);
    if (!s)
        return JS_EXCEPTION;
    for (size_t i = 0; i < n; i += units)
        len += utf8_len(utf16_at(s, i, n, &units));
    uint8_t *q = js_malloc(ctx, len ? len : 1);
    if (!q) {
        JS_FreeCStringUTF16(ctx, s);
        return JS_EXCEPTION;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i += units)
        o += utf8_put(q + o, utf16_at(s, i, n, &units));
    JS_FreeCStringUTF16(ctx, s);
    JSValue r = JS_NewUint8Array(ctx, q, len, realloc_bytes, NULL, false);
    if (JS_IsException(r))
        js_free(ctx, q);
    return r;
}

/*
 * native.utf8EncodeInto(s: string, dest: Uint8Array) -> [read, written]: whole code points
 * only, stopping at the first that does not fit; `read` counts UTF-16 units.
 */
static JSValue js_utf8_encode_into(JSContext *ctx, JSValueConst this_val, int argc,
                                   JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    size_t n, units = 0, cap;
    const uint16_t *s = JS_ToCStringLenUTF16(ctx, &n, argv[0]);
    if (!s)
        return JS_EXCEPTION;
    /* taken after the string: nothing below runs JavaScript or frees the buffer */
    uint8_t *q = JS_GetUint8Array(ctx, &cap, argv[1]);
    if (!q) {
        JS_FreeCStringUTF16(ctx, s);
        return JS_EXCEPTION;
    }
    size_t i = 0, o = 0;
    for (; i < n; i += units) {
        uint32_t c = utf16_at(s, i, n, &units);
        if (utf8_len(c) > cap - o)
            break;
        o += utf8_put(q + o, c);
    }
    JS_FreeCStringUTF16(ctx, s);
    JSValue pair = JS_NewArray(ctx);
    if (JS_IsException(pair))
        return pair;
    JS_SetPropertyUint32(ctx, pair, 0, JS_NewInt64(ctx, (int64_t)i));
    JS_SetPropertyUint32(ctx, pair, 1, JS_NewInt64(ctx, (int64_t)o));
    return pair;
}

static const JSCFunctionListEntry encoding_natives[] = {
    JS_CFUNC_DEF("utf8Decode", 3, js_utf8_decode),
    JS_CFUNC_DEF("utf8Encode", 1, js_utf8_encode),
    JS_CFUNC_DEF("utf8EncodeInto", 2, js_utf8_encode_into),
};

int web_encoding_natives(JSContext *ctx, JSValueConst native)
{
    if (JS_SetPropertyFunctionList(ctx, native, encoding_natives,
                                   sizeof encoding_natives / sizeof encoding_natives[0]) < 0)
        return -1;
    return web_encoding_legacy_natives(ctx, native);
}

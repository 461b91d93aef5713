/*
 * The encoder: JS value -> value message (the format is in quickjail.h), and the growable
 * byte buffer it writes into.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "guest.h"

/* ------------------------------------------------------------------ */
/* growable byte buffer */

static int buf_reserve(Buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) {
        if (cap > SIZE_MAX / 2) { b->failed = 1; return -1; }
        cap *= 2;
    }
    uint8_t *p = realloc(b->p, cap);
    if (!p) { b->failed = 1; return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

static void buf_put(Buf *b, const void *data, size_t n)
{
    if (buf_reserve(b, n))
        return;
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void buf_putc(Buf *b, char c)
{
    if (b->len < b->cap) { b->p[b->len++] = (uint8_t)c; return; }
    buf_put(b, &c, 1);
}

static void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_u32(Buf *b, uint32_t v)
{
    uint8_t le[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0xff };
    buf_put(b, le, 4);
}

void buf_free(Buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------------------------ */
/* encoder */

#define ENC_MAX_DEPTH 128
#define ENC_MAX_BYTES (64u * 1024 * 1024)

/* A long text's bytes, not copied until the message is assembled: they go into the message
 * at offset `at` of the blobs buffer (which holds the rest of the blobs and every length). */
typedef struct {
    size_t at;
    const uint8_t *p;
    size_t n;
    const char *cstr;     /* JS_FreeCString when done (the string's own bytes, or a copy) */
    char *copy;           /* free when done (the text with lone surrogates replaced) */
} TextRef;

typedef struct {
    JSContext *ctx;
    Buf json;
    Buf blobs;
    Buf texts;            /* TextRef[]: the long texts, copied once, into the message */
    size_t text_bytes;
    uint32_t nblobs;
    int tagged;
    int lenient;          /* logs: describe what cannot be transferred instead of failing */
    int depth;
    void *stack[ENC_MAX_DEPTH + 1];
    char path[512];       /* where we are, for error messages */
    size_t path_len;
} Enc;

static void enc_json_string(Buf *b, const char *s, size_t n, int escape_nul_key)
{
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(b, n + 8))
        return;
    buf_putc(b, '"');
    if (escape_nul_key && n > 0 && s[0] == '\0')
        buf_puts(b, "\\u0000");
    size_t run = 0; /* start of the pending run of bytes that need no escaping */
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c != 0xED)
            continue;
        if (c == 0xED && !(i + 2 < n && (uint8_t)s[i + 1] >= 0xA0))
            continue; /* an ordinary 3-byte character */
        buf_put(b, s + run, i - run);
        if (c == '"' || c == '\\') {
            buf_putc(b, '\\');
            buf_putc(b, (char)c);
        } else if (c < 0x20) {
            char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
            buf_put(b, esc, 6);
        } else {
            /* a lone surrogate, which QuickJS encodes as 3 bytes: replace with U+FFFD */
            buf_put(b, "\xEF\xBF\xBD", 3);
            i += 2;
        }
        run = i + 1;
    }
    buf_put(b, s + run, n - run);
    buf_putc(b, '"');
}

/* Long strings travel as raw UTF-8 blobs (tag "t"): no escaping on either side. */
#define ENC_TEXT_BLOB_MIN 1024
/* console.* arguments: longer strings are cut (the host caps log bytes anyway) */
#define ENC_LOG_STRING_MAX (256 * 1024)

static void path_push(Enc *e, const char *seg, size_t n, size_t *saved)
{
    *saved = e->path_len;
    size_t room = sizeof(e->path) - 1 - e->path_len;
    if (n > room)
        n = room;
    memcpy(e->path + e->path_len, seg, n);
    e->path_len += n;
    e->path[e->path_len] = 0;
}

static void path_pop(Enc *e, size_t saved)
{
    e->path_len = saved;
    e->path[saved] = 0;
}

static int enc_fail(Enc *e, const char *what)
{
    JS_ThrowTypeError(e->ctx, "cannot transfer %s at %s", what, e->path_len ? e->path : "value");
    return -1;
}

static int enc_value(Enc *e, JSValueConst v);

static int enc_describe(Enc *e, const char *text)
{
    /* lenient mode: a readable stand-in for something that cannot cross */
    enc_json_string(&e->json, text, strlen(text), 0);
    return 0;
}

/* Lenient mode: reading a value threw (a getter, say). Describe that instead of failing the
 * log, as "[<how>: <the Error's name>]", unless what was thrown must go on: an uncatchable
 * error (the run is being stopped) or the value an allocation failure threw. */
static int enc_describe_thrown(Enc *e, const char *how)
{
    JSContext *ctx = e->ctx;
    JSValue ex = JS_GetException(ctx);
    if (JS_IsUncatchableError(ex) || oom_is_last_failure(ex)) {
        JS_Throw(ctx, ex);
        return -1;
    }
    char text[96];
    const char *name = NULL;
    JSValue n = JS_IsError(ex) ? JS_GetPropertyStr(ctx, ex, "name") : JS_UNDEFINED;
    JS_FreeValue(ctx, ex);
    if (JS_IsException(n)) {
        /* the name itself threw: the same rules for that */
        JSValue ex2 = JS_GetException(ctx);
        if (JS_IsUncatchableError(ex2) || oom_is_last_failure(ex2)) {
            JS_Throw(ctx, ex2);
            return -1;
        }
        JS_FreeValue(ctx, ex2);
    } else if (JS_IsString(n)) {
        name = JS_ToCString(ctx, n);
    }
    if (name && name[0] && strlen(name) <= 40)
        snprintf(text, sizeof(text), "[%s: %s]", how, name);
    else
        snprintf(text, sizeof(text), "[%s]", how);
    if (name)
        JS_FreeCString(ctx, name);
    JS_FreeValue(ctx, n);
    return enc_describe(e, text);
}

static void enc_tag_open(Enc *e, const char *tag)
{
    e->tagged = 1;
    buf_puts(&e->json, "{\"\\u0000\":[\"");
    buf_puts(&e->json, tag);
    buf_puts(&e->json, "\"");
}

static void enc_tag_close(Enc *e) { buf_puts(&e->json, "]}"); }

static int enc_number(Enc *e, double d)
{
    if (d != d) { enc_tag_open(e, "f"); buf_puts(&e->json, ",\"NaN\""); enc_tag_close(e); return 0; }
    if (d == 1.0 / 0.0) { enc_tag_open(e, "f"); buf_puts(&e->json, ",\"Infinity\""); enc_tag_close(e); return 0; }
    if (d == -1.0 / 0.0) { enc_tag_open(e, "f"); buf_puts(&e->json, ",\"-Infinity\""); enc_tag_close(e); return 0; }
    if (d == 0 && 1.0 / d < 0) { enc_tag_open(e, "f"); buf_puts(&e->json, ",\"-0\""); enc_tag_close(e); return 0; }
    JSValue n = JS_NewFloat64(e->ctx, d);
    size_t len;
    const char *s = JS_ToCStringLen(e->ctx, &len, n);
    if (!s)
        return -1;
    buf_put(&e->json, s, len);
    JS_FreeCString(e->ctx, s);
    return 0;
}

static int enc_int(Enc *e, int32_t v)
{
    char tmp[16];
    int i = 15;
    uint32_t u = v < 0 ? (uint32_t)(-(int64_t)v) : (uint32_t)v;
    tmp[i] = 0;
    do { tmp[--i] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) tmp[--i] = '-';
    buf_put(&e->json, tmp + i, (size_t)(15 - i));
    return 0;
}

/* Stop as soon as the message is over the size cap or a buffer could not grow: checked after
 * every element, so no value is walked past the point where it can no longer be sent. */
static int enc_check_size(Enc *e)
{
    if (e->json.failed || e->blobs.failed) {
        JS_ThrowOutOfMemory(e->ctx);
        return -1;
    }
    if (e->json.len + e->blobs.len + e->text_bytes > ENC_MAX_BYTES)
        return enc_fail(e, "a value larger than the size cap");
    return 0;
}

/* The tag of the next blob, of n bytes, and its length in the blobs buffer; with a kind
 * (tag "a") the payload is [kind, index]. */
static int enc_blob_head(Enc *e, const char *tag, const char *kind, size_t n)
{
    if (n > ENC_MAX_BYTES || e->json.len + e->blobs.len + e->text_bytes + n > ENC_MAX_BYTES)
        return enc_fail(e, "a binary value larger than the size cap");
    enc_tag_open(e, tag);
    buf_putc(&e->json, ',');
    if (kind) {
        buf_puts(&e->json, "[\"");
        buf_puts(&e->json, kind);
        buf_puts(&e->json, "\",");
    }
    enc_int(e, (int32_t)e->nblobs);
    if (kind)
        buf_putc(&e->json, ']');
    enc_tag_close(e);
    buf_u32(&e->blobs, (uint32_t)n);
    e->nblobs++;
    return 0;
}

/* Bytes are copied at once: program code may run before the message is assembled (helpers,
 * getters) and detach or resize their buffer. */
static int enc_blob(Enc *e, const char *tag, const char *kind, const uint8_t *data, size_t n)
{
    if (enc_blob_head(e, tag, kind, n))
        return -1;
    buf_put(&e->blobs, data, n);
    return 0;
}

/* A long text goes in by reference (a string's bytes never change while it is held): it is
 * copied once, into the message. Takes cstr and copy, freed with the encoder. */
static int enc_text(Enc *e, const char *text, size_t n, const char *cstr, char *copy)
{
    TextRef ref = { 0, (const uint8_t *)text, n, cstr, copy };
    if (enc_blob_head(e, "t", NULL, n) == 0) {
        ref.at = e->blobs.len;
        buf_put(&e->texts, &ref, sizeof(ref));
        if (!e->texts.failed) {
            e->text_bytes += n;
            return 0;
        }
        JS_ThrowOutOfMemory(e->ctx);
    }
    free(copy);
    JS_FreeCString(e->ctx, cstr);
    return -1;
}

static void enc_free_texts(Enc *e)
{
    const TextRef *refs = (const TextRef *)e->texts.p;
    size_t count = e->texts.len / sizeof(TextRef);
    for (size_t i = 0; i < count; i++) {
        free(refs[i].copy);
        JS_FreeCString(e->ctx, refs[i].cstr);
    }
    buf_free(&e->texts);
}

/* The blobs buffer into out with each long text at its place. */
static void enc_put_blobs(Enc *e, Buf *out)
{
    const TextRef *refs = (const TextRef *)e->texts.p;
    size_t count = e->texts.len / sizeof(TextRef), from = 0;
    for (size_t i = 0; i < count; i++) {
        if (refs[i].at > from)
            buf_put(out, e->blobs.p + from, refs[i].at - from);
        buf_put(out, refs[i].p, refs[i].n);
        from = refs[i].at;
    }
    if (e->blobs.len > from)
        buf_put(out, e->blobs.p + from, e->blobs.len - from);
}

static int enc_call_helper(Enc *e, const char *name, JSValueConst arg, JSValue *out)
{
    JSValue fn = JS_GetPropertyStr(e->ctx, g.helpers, name);
    *out = JS_Call(e->ctx, fn, JS_UNDEFINED, 1, &arg);
    JS_FreeValue(e->ctx, fn);
    return JS_IsException(*out) ? -1 : 0;
}

/* The JavaScript names of the typed-array kinds, by JSTypedArrayEnum, and their element
 * sizes; a Uint8Array travels as tag "b", every other kind (and ArrayBuffer, DataView) as
 * tag "a" with its name. */
const char *const qj_typed_kinds[QJ_TYPED_KINDS] = {
    "Uint8ClampedArray", "Int8Array", "Uint8Array", "Int16Array", "Uint16Array", "Int32Array",
    "Uint32Array", "BigInt64Array", "BigUint64Array", "Float16Array", "Float32Array",
    "Float64Array",
};
const uint8_t qj_typed_sizes[QJ_TYPED_KINDS] = { 1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 4, 8 };

/* An ArrayBuffer, a typed array or a DataView: only the bytes it views, read through the
 * original getters (taView, dvView: a length-tracking view's current length, 0 for a detached
 * or out-of-bounds typed array) and copied at once. A detached ArrayBuffer is empty, as its
 * byteLength says; a DataView whose buffer is detached or too short is the getter's
 * TypeError. */
static int enc_binary(Enc *e, JSValueConst v)
{
    JSContext *ctx = e->ctx;
    int type = JS_GetTypedArrayType(v);
    const char *kind = type >= 0 ? qj_typed_kinds[type]
                       : JS_IsDataView(v) ? "DataView" : "ArrayBuffer";
    JSValue buffer = JS_UNDEFINED, parts = JS_UNDEFINED;
    int64_t offset = 0, length = -1;
    if (type >= 0 || JS_IsDataView(v)) {
        if (enc_call_helper(e, type >= 0 ? "taView" : "dvView", v, &parts))
            return e->lenient ? enc_describe_thrown(e, kind) : -1;
        buffer = JS_GetPropertyUint32(ctx, parts, 0);
        JSValue o = JS_GetPropertyUint32(ctx, parts, 1), l = JS_GetPropertyUint32(ctx, parts, 2);
        JS_ToInt64(ctx, &offset, o);
        JS_ToInt64(ctx, &length, l);
        JS_FreeValue(ctx, parts);
    } else {
        buffer = JS_DupValue(ctx, v);
    }
    size_t size;
    uint8_t *data = JS_GetArrayBuffer(ctx, &size, buffer);
    JS_FreeValue(ctx, buffer);
    if (!data && JS_HasException(ctx)) {
        /* a detached buffer, the only one that cannot be read: it has no bytes (its
         * byteLength reads 0, as does a typed array's over it) */
        JS_FreeValue(ctx, JS_GetException(ctx));
        size = 0;
    }
    if (length < 0)
        length = (int64_t)size;
    if (offset < 0 || (uint64_t)offset > size || (uint64_t)length > size - (uint64_t)offset)
        return e->lenient ? enc_describe(e, "[out of bounds]") : enc_fail(e, "a view out of bounds");
    const uint8_t *bytes = data ? data + offset : data;
    if (type == JS_TYPED_ARRAY_UINT8)
        return enc_blob(e, "b", NULL, bytes, (size_t)length);
    return enc_blob(e, "a", kind, bytes, (size_t)length);
}

static int enc_array_items(Enc *e, JSValueConst arr)
{
    int64_t len;
    if (JS_GetLength(e->ctx, arr, &len))
        return -1;
    /* every element takes at least two bytes (itself and a comma): a longer array cannot fit,
     * so it is refused before its first element (a sparse array's length costs nothing) */
    if (len > ENC_MAX_BYTES / 2)
        return e->lenient ? enc_describe(e, "[Array too long]")
                          : enc_fail(e, "an array longer than the size cap allows");
    buf_putc(&e->json, '[');
    for (int64_t i = 0; i < len; i++) {
        if (i)
            buf_putc(&e->json, ',');
        char seg[32];
        int sn = 0;
        {
            char tmp[24];
            int k = 23;
            uint64_t u = (uint64_t)i;
            tmp[k] = 0;
            do { tmp[--k] = (char)('0' + u % 10); u /= 10; } while (u);
            seg[sn++] = '[';
            memcpy(seg + sn, tmp + k, (size_t)(23 - k));
            sn += 23 - k;
            seg[sn++] = ']';
        }
        size_t saved;
        path_push(e, seg, (size_t)sn, &saved);
        JSValue item = JS_GetPropertyInt64(e->ctx, arr, i);
        int r;
        if (!JS_IsException(item))
            r = enc_value(e, item);
        else
            r = e->lenient ? enc_describe_thrown(e, "getter threw") : -1;
        JS_FreeValue(e->ctx, item);
        path_pop(e, saved);
        if (r || enc_check_size(e))
            return -1;
    }
    buf_putc(&e->json, ']');
    return 0;
}

static int enc_object(Enc *e, JSValueConst obj)
{
    JSPropertyEnum *tab;
    uint32_t n;
    if (JS_GetOwnPropertyNames(e->ctx, &tab, &n, obj, JS_GPN_STRING_MASK | JS_GPN_ENUM_ONLY))
        return -1;
    int rc = 0, first = 1;
    buf_putc(&e->json, '{');
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        JSValue val = JS_GetProperty(e->ctx, obj, tab[i].atom);
        int threw = JS_IsException(val);
        if (threw && !e->lenient) { rc = -1; break; }
        size_t klen;
        const char *k = JS_AtomToCStringLen(e->ctx, &klen, tab[i].atom);
        if (!k) { JS_FreeValue(e->ctx, val); rc = -1; break; }
        if (!first)
            buf_putc(&e->json, ',');
        first = 0;
        if (klen > 0 && k[0] == '\0')
            e->tagged = 1;
        enc_json_string(&e->json, k, klen, 1);
        buf_putc(&e->json, ':');
        size_t saved;
        path_push(e, ".", 1, &saved);
        size_t s2;
        path_push(e, k, klen, &s2);
        JS_FreeCString(e->ctx, k);
        rc = threw ? enc_describe_thrown(e, "getter threw") : enc_value(e, val);
        path_pop(e, saved);
        JS_FreeValue(e->ctx, val);
        if (rc == 0)
            rc = enc_check_size(e);
    }
    JS_FreePropertyEnum(e->ctx, tab, n);
    if (rc == 0)
        buf_putc(&e->json, '}');
    return rc;
}

/* A string: JSON text when short, a "t" blob when long. Lenient encodings (logs, error
 * descriptions) keep the start of a huge string and say how much was left out; the string is
 * cut to ENC_LOG_STRING_MAX characters *before* it is copied out, so describing it never needs
 * memory in proportion to its size. The bytes QuickJS hands out may be the string's own (an
 * ASCII string), so they are never written to: edits happen in a copy. */
static int enc_string(Enc *e, JSValueConst v)
{
    JSContext *ctx = e->ctx;
    JSValue head = JS_UNDEFINED;
    int64_t chars = 0, dropped = 0;
    if (e->lenient && JS_GetLength(ctx, v, &chars) == 0 && chars > ENC_LOG_STRING_MAX) {
        JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "cut");
        JSValueConst argv[2] = { v, JS_NewInt32(ctx, ENC_LOG_STRING_MAX) };
        head = JS_Call(ctx, fn, JS_UNDEFINED, 2, argv);
        JS_FreeValue(ctx, fn);
        if (JS_IsException(head))
            return -1;
        dropped = chars - ENC_LOG_STRING_MAX;
    }
    size_t len;
    const char *s = JS_ToCStringLen(ctx, &len, JS_IsUndefined(head) ? v : head);
    JS_FreeValue(ctx, head);
    if (!s)
        return -1;
    if (len > ENC_MAX_BYTES) {
        JS_FreeCString(ctx, s);
        return enc_fail(e, "a string larger than the size cap");
    }
    size_t cut = len;
    char note[80];
    size_t note_len = 0;
    if (e->lenient && (dropped > 0 || len > ENC_LOG_STRING_MAX)) {
        /* cut on a character boundary; a character left out is at least one byte */
        if (cut > ENC_LOG_STRING_MAX) {
            cut = ENC_LOG_STRING_MAX;
            while (cut > 0 && ((uint8_t)s[cut] & 0xC0) == 0x80)
                cut--;
        }
        note_len = (size_t)snprintf(note, sizeof(note), "… [%s%zu more bytes]",
                                    dropped > 0 ? "at least " : "",
                                    (size_t)(len - cut) + (size_t)dropped);
    }
    char *copy = NULL;
    if (note_len || (cut >= ENC_TEXT_BLOB_MIN && memchr(s, 0xED, cut))) {
        copy = malloc(cut + note_len + 1);
        if (!copy) {
            JS_FreeCString(ctx, s);
            JS_ThrowOutOfMemory(ctx);
            return -1;
        }
        memcpy(copy, s, cut);
        memcpy(copy + cut, note, note_len);
        copy[cut + note_len] = 0;
        len = cut + note_len;
    }
    const char *text = copy ? copy : s;
    if (len >= ENC_TEXT_BLOB_MIN) {
        /* a blob is raw UTF-8: replace lone surrogates (3-byte ED A0..BF xx) with U+FFFD, same
         * length (only ever in the copy: an ASCII string has no 0xED byte) */
        if (copy) {
            for (char *q = memchr(copy, 0xED, len); q;
                 q = memchr(q + 1, 0xED, len - (size_t)(q + 1 - copy))) {
                size_t at = (size_t)(q - copy);
                if (at + 2 < len && (uint8_t)q[1] >= 0xA0) {
                    q[0] = (char)0xEF; q[1] = (char)0xBF; q[2] = (char)0xBD;
                }
                if (at + 1 >= len) break;
            }
        }
        return enc_text(e, text, len, s, copy);
    }
    enc_json_string(&e->json, text, len, 0);
    free(copy);
    JS_FreeCString(ctx, s);
    return 0;
}

static int enc_value(Enc *e, JSValueConst v)
{
    JSContext *ctx = e->ctx;
    int tag = JS_VALUE_GET_NORM_TAG(v);
    switch (tag) {
    case JS_TAG_INT:
        return enc_int(e, JS_VALUE_GET_INT(v));
    case JS_TAG_FLOAT64:
        return enc_number(e, JS_VALUE_GET_FLOAT64(v));
    case JS_TAG_BOOL:
        buf_puts(&e->json, JS_VALUE_GET_BOOL(v) ? "true" : "false");
        return 0;
    case JS_TAG_NULL:
        buf_puts(&e->json, "null");
        return 0;
    case JS_TAG_UNDEFINED:
        enc_tag_open(e, "u");
        enc_tag_close(e);
        return 0;
    case JS_TAG_STRING:
    case JS_TAG_STRING_ROPE:
        return enc_string(e, v);
    case JS_TAG_BIG_INT:
    case JS_TAG_SHORT_BIG_INT: {
        /* hexadecimal: linear to convert on both sides, whatever the size */
        JSValue hex;
        if (enc_call_helper(e, "bigHex", v, &hex))
            return -1;
        size_t len;
        const char *s = JS_ToCStringLen(ctx, &len, hex);
        JS_FreeValue(ctx, hex);
        if (!s)
            return -1;
        enc_tag_open(e, "n");
        buf_putc(&e->json, ',');
        enc_json_string(&e->json, s, len, 0);
        enc_tag_close(e);
        JS_FreeCString(ctx, s);
        return 0;
    }
    case JS_TAG_SYMBOL:
        return e->lenient ? enc_describe(e, "[Symbol]") : enc_fail(e, "a symbol");
    case JS_TAG_OBJECT:
        break;
    default:
        return e->lenient ? enc_describe(e, "[unknown]") : enc_fail(e, "an engine-internal value");
    }

    /* objects */
    void *ptr = JS_VALUE_GET_PTR(v);
    for (int i = 0; i < e->depth; i++)
        if (e->stack[i] == ptr)
            return e->lenient ? enc_describe(e, "[Circular]") : enc_fail(e, "a circular reference");
    if (e->depth >= ENC_MAX_DEPTH)
        return e->lenient ? enc_describe(e, "[Too deep]")
                          : enc_fail(e, "a value nested deeper than the depth cap");
    if (JS_IsProxy(v))
        return e->lenient ? enc_describe(e, "[Proxy]") : enc_fail(e, "a Proxy");
    if (JS_IsFunction(ctx, v))
        return e->lenient ? enc_describe(e, "[Function]") : enc_fail(e, "a function");

    e->stack[e->depth++] = ptr;
    int rc = 0;
    JSValue tmp = JS_UNDEFINED;
    if (JS_IsArray(v)) {
        rc = enc_array_items(e, v);
    } else if (JS_GetTypedArrayType(v) >= 0 || JS_IsDataView(v) || JS_IsArrayBuffer(v)) {
        rc = enc_binary(e, v);
    } else if (JS_IsDate(v)) {
        rc = enc_call_helper(e, "time", v, &tmp);
        if (rc == 0) {
            double d;
            JS_ToFloat64(ctx, &d, tmp);
            enc_tag_open(e, "d");
            buf_putc(&e->json, ',');
            if (d != d)
                buf_puts(&e->json, "null");
            else
                enc_number(e, d);
            enc_tag_close(e);
        }
    } else if (JS_IsMap(v) || JS_IsSet(v)) {
        int is_map = JS_IsMap(v);
        rc = enc_call_helper(e, "keyCheck", v, &tmp);
        if (rc == 0 && !JS_IsUndefined(tmp)) {
            /* Python needs hashable keys and members: primitives and Dates only */
            rc = e->lenient ? enc_describe(e, is_map ? "[Map]" : "[Set]")
                            : enc_fail(e, is_map ? "a Map with an object key"
                                                 : "a Set with an object member");
        } else if (rc == 0) {
            JS_FreeValue(ctx, tmp);
            rc = enc_call_helper(e, is_map ? "mapEntries" : "setValues", v, &tmp);
            if (rc == 0) {
                enc_tag_open(e, is_map ? "m" : "s");
                buf_putc(&e->json, ',');
                rc = enc_array_items(e, tmp);
                enc_tag_close(e);
            }
        }
    } else if (JS_IsPromise(v)) {
        rc = e->lenient ? enc_describe(e, "[Promise]") : enc_fail(e, "a Promise");
    } else if (JS_IsError(v) && e->lenient) {
        JSValue s = JS_ToString(ctx, v);
        size_t len;
        const char *cs = JS_IsException(s) ? NULL : JS_ToCStringLen(ctx, &len, s);
        if (cs) {
            enc_json_string(&e->json, cs, len, 0);
            JS_FreeCString(ctx, cs);
        } else if (JS_IsException(s)) {
            rc = enc_describe_thrown(e, "Error whose toString threw");
        } else {
            rc = -1;
        }
        JS_FreeValue(ctx, s);
    } else {
        rc = enc_object(e, v);
    }
    JS_FreeValue(ctx, tmp);
    e->depth--;
    /* a lenient encoding describes what threw where it was read (enc_describe_thrown); what
     * still fails (the size cap, memory, a stopped run) fails with its own pending error */
    return rc;
}

/* Encode v into a message in out (owned by the caller). Returns -1 with a pending exception. */
int encode_message(JSContext *ctx, JSValueConst v, int lenient, const char *root, Buf *out)
{
    Enc e;
    memset(&e, 0, sizeof(e));
    e.ctx = ctx;
    e.lenient = lenient;
    size_t unused;
    path_push(&e, root, strlen(root), &unused);
    int rc = enc_value(&e, v);
    if (rc == 0 && (e.json.failed || e.blobs.failed)) {
        JS_ThrowOutOfMemory(ctx);
        rc = -1;
    }
    if (rc == 0) {
        memset(out, 0, sizeof(*out));
        buf_reserve(out, 9 + e.json.len + e.blobs.len + e.text_bytes);
        uint8_t flags = (uint8_t)(e.tagged ? QJ_MSG_TAGGED : 0);
        buf_put(out, &flags, 1);
        buf_u32(out, (uint32_t)e.json.len);
        buf_put(out, e.json.p, e.json.len);
        buf_u32(out, e.nblobs);
        enc_put_blobs(&e, out);
        if (out->failed) {
            buf_free(out);
            JS_ThrowOutOfMemory(ctx);
            rc = -1;
        }
    }
    enc_free_texts(&e);
    buf_free(&e.json);
    buf_free(&e.blobs);
    return rc;
}

/* Own data property `name` of obj as a new value, or JS_UNDEFINED (accessors, proxies and
 * missing properties give nothing: no program code runs). */
static JSValue own_data(JSContext *ctx, JSValueConst obj, const char *name)
{
    if (!JS_IsObject(obj) || JS_IsProxy(obj))
        return JS_UNDEFINED;
    JSAtom a = JS_NewAtom(ctx, name);
    JSPropertyDescriptor d;
    int has = a == JS_ATOM_NULL ? -1 : JS_GetOwnProperty(ctx, &d, obj, a);
    JS_FreeAtom(ctx, a);
    if (has < 0)
        JS_FreeValue(ctx, JS_GetException(ctx));
    if (has <= 0)
        return JS_UNDEFINED;
    JS_FreeValue(ctx, d.getter);
    JS_FreeValue(ctx, d.setter);
    if (d.flags & JS_PROP_GETSET) {
        JS_FreeValue(ctx, d.value);
        return JS_UNDEFINED;
    }
    return d.value;
}

JSValue thrown_name(JSContext *ctx, JSValueConst v)
{
    if (!JS_IsObject(v) || JS_IsProxy(v))
        return JS_UNDEFINED;
    JSValue proto = JS_GetPrototype(ctx, v);
    if (JS_IsException(proto)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return JS_UNDEFINED;
    }
    JSValue ctor = own_data(ctx, proto, "constructor");
    JS_FreeValue(ctx, proto);
    JSValue name = JS_IsFunction(ctx, ctor) ? own_data(ctx, ctor, "name") : JS_UNDEFINED;
    JS_FreeValue(ctx, ctor);
    if (!JS_IsString(name)) {
        JS_FreeValue(ctx, name);
        return JS_UNDEFINED;
    }
    return name;
}

/*
 * quickjail guest: a small shim over QuickJS-ng, compiled to wasm32-wasi (reactor).
 *
 * ABI (every export is prefixed qj_; every status is an int32)
 * -------------------------------------------------------------
 * Exports
 *   qj_alloc(size) -> ptr        guest malloc. The host writes inputs that do not fit the
 *                                scratch buffer there; the guest takes ownership on qj_run /
 *                                qj_resume and frees them.
 *   qj_scratch() -> ptr          address of a static buffer of QJ_SCRATCH_SIZE bytes. The host
 *                                writes inputs and host-call replies there; the guest copies
 *                                out of it before the next crossing.
 *   qj_init() -> status          builds the runtime, the context and the bootstrap. Called once
 *                                at build time; its memory is then baked into the module as the
 *                                snapshot, so it is never called on a restored instance.
 *   qj_run(ptr, len) -> status   starts a run described by a run record (see RunHeader). ptr 0
 *                                means "in the scratch buffer".
 *   qj_resume(id, ok, ptr, len) -> status
 *                                settles async host call `id` with a value message (ok=1) or
 *                                an error message (ok=0), then runs jobs. ptr 0 = scratch.
 *   status: QJ_DONE (the host got the outcome through QJ_OP_RESULT), QJ_PENDING (waiting for
 *   async host calls), QJ_FAIL (the guest could not proceed; the host drops the instance).
 *
 * Import (module "qj", one function)
 *   host(op, a, b, c, d) -> i64
 *     Inputs passed as (ptr, len) are guest-owned and valid only during the call: the host
 *     copies them. A reply that fits is written by the host into the scratch buffer and its
 *     length returned; a longer reply returns its length and stays with the host until the
 *     guest fetches it with QJ_OP_FETCH into a buffer it allocated. A negative value is an
 *     error code (QJ_E_*). The host never calls back into the guest from inside `host`.
 *
 * Value messages (both directions): u8 flags | u32 json_len | json | u32 nblobs | (u32 len,
 * bytes)*. flags bit 0 means the JSON holds tagged values: an object whose only key is "\0"
 * holds [tag, payload] (u undefined, b bytes blob index, n BigInt decimal, d Date ms, m Map
 * entries, s Set values, f non-finite or negative zero number); object keys that start with
 * "\0" carry one extra leading "\0".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <stdio.h>
#include "quickjs.h"

#define QJ_SCRATCH_SIZE (256 * 1024)

enum { QJ_DONE = 0, QJ_PENDING = 1, QJ_FAIL = 2 };

enum {
    QJ_OP_LOG = 1,        /* a=level, (b,c)=message of the args array */
    QJ_OP_REPORT = 2,     /* (b,c)=value message; returns <0 when refused */
    QJ_OP_RESULT = 3,     /* a=outcome, (b,c)=value or error message */
    QJ_OP_OOM = 4,        /* a=bytes requested; the allocator failed */
    QJ_OP_MODULE = 5,     /* (b,c)=module name; reply: source, or <0 when unknown */
    QJ_OP_CALL = 6,       /* a=function id, (b,c)=args message, d=call id (0 = sync) */
    QJ_OP_FETCH = 7,      /* copy the pending reply into (b, c) */
    QJ_OP_REJECTION = 8,  /* (b,c)=error message of an unhandled rejection */
    QJ_OP_BYTECODE = 9,   /* a=index in the compile batch, (b,c)=the module's bytecode */
};

enum { QJ_OUT_VALUE = 0, QJ_OUT_ERROR = 1, QJ_OUT_LINK_ERROR = 2 };

/* reply codes of QJ_OP_CALL */
enum { QJ_E_HOST = -1, QJ_E_REFUSED = -2, QJ_E_PENDING = -3 };

__attribute__((import_module("qj"), import_name("host")))
extern int64_t qj_host(int32_t op, int32_t a, int32_t b, int32_t c, int32_t d);

static uint8_t scratch[QJ_SCRATCH_SIZE];

/* ------------------------------------------------------------------ */
/* allocator: our own malloc functions so the soft cap and OOM signal are ours */

typedef struct {
    size_t used;
    size_t soft_limit; /* 0 = none */
    size_t grace;      /* extra room granted once the soft cap was hit, so `catch` can run */
    int in_grace;
    void *emergency;   /* a block held back from the heap, released at the first failure */
    void *finish_reserve; /* held back for reporting the outcome, released when finishing */
} MemState;


static MemState mem;

/* The program is done: lift the soft cap and release the last reserve so its outcome can be
 * encoded even when it left the heap full (wasmtime's hard cap still holds). */
static void mem_finishing(void)
{
    mem.soft_limit = 0;
    free(mem.finish_reserve);
    mem.finish_reserve = NULL;
}

static void *mem_fail(size_t size)
{
    /* when linear memory itself is exhausted, give back the emergency block so the error
     * object and the program's `catch` block can still allocate */
    if (mem.emergency) {
        free(mem.emergency);
        mem.emergency = NULL;
    }
    qj_host(QJ_OP_OOM, (int32_t)(size > INT32_MAX ? INT32_MAX : size), 0, 0, 0);
    return NULL;
}

/* The effective cap: the soft limit, plus the grace reserve after a failure at the soft limit
 * (re-armed once usage falls back below the soft limit). */
static size_t mem_cap(void)
{
    if (!mem.soft_limit)
        return SIZE_MAX;
    if (mem.in_grace && mem.used + mem.grace / 2 < mem.soft_limit)
        mem.in_grace = 0;
    return mem.in_grace ? mem.soft_limit + mem.grace : mem.soft_limit;
}

static void *mem_fail_soft(size_t size)
{
    mem.in_grace = 1;
    return mem_fail(size);
}

static void *qj_js_malloc(void *opaque, size_t size)
{
    (void)opaque;
    if (mem.used + size > mem_cap())
        return mem_fail_soft(size);
    void *p = malloc(size);
    if (!p)
        return mem_fail(size);
    mem.used += malloc_usable_size(p);
    return p;
}

static void *qj_js_calloc(void *opaque, size_t count, size_t size)
{
    (void)opaque;
    if (size && count > SIZE_MAX / size)
        return mem_fail(SIZE_MAX);
    size_t total = count * size;
    if (mem.used + total > mem_cap())
        return mem_fail_soft(total);
    void *p = calloc(count, size);
    if (!p)
        return mem_fail(total);
    mem.used += malloc_usable_size(p);
    return p;
}

static void qj_js_free(void *opaque, void *ptr)
{
    (void)opaque;
    if (!ptr)
        return;
    mem.used -= malloc_usable_size(ptr);
    free(ptr);
}

static void *qj_js_realloc(void *opaque, void *ptr, size_t size)
{
    (void)opaque;
    size_t old = ptr ? malloc_usable_size(ptr) : 0;
    if (size > old && mem.used - old + size > mem_cap())
        return mem_fail_soft(size);
    void *p = realloc(ptr, size);
    if (!p && size)
        return mem_fail(size);
    mem.used = mem.used - old + (p ? malloc_usable_size(p) : 0);
    return p;
}

static size_t qj_js_usable(const void *ptr)
{
    return malloc_usable_size((void *)ptr);
}

static const JSMallocFunctions qj_malloc_funcs = {
    qj_js_calloc, qj_js_malloc, qj_js_free, qj_js_realloc, qj_js_usable,
};

/* ------------------------------------------------------------------ */
/* global state: one runtime and one context per instance */

typedef struct {
    JSValue resolve, reject;
    int used;
} PendingCall;

typedef struct {
    JSRuntime *rt;
    JSContext *ctx;
    JSValue helpers;      /* bootstrap helpers object (original builtins) */
    JSValue ctors;        /* the intrinsic error constructors, for host errors */
    /* run state */
    int phase;            /* 0 idle, 1 module evaluating, 2 awaiting call, 3 done */
    int kind;             /* 0 module, 1 script */
    JSValue module_val;   /* JSModuleDef as value, for the namespace */
    JSValue promise;      /* what we are waiting on */
    char *fn_name;
    JSValue args;
    int has_args;
    int link_failed;
    int compile_only;     /* compile batches: imports resolve to empty stubs, nothing runs */
    uint64_t rng[2];
    PendingCall *calls;
    uint32_t ncalls, calls_cap;
    uint32_t pending;     /* async host calls in flight */
} Guest;

static Guest g;

/* ------------------------------------------------------------------ */
/* growable byte buffer */

typedef struct {
    uint8_t *p;
    size_t len, cap;
    int failed;
} Buf;

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

static void buf_free(Buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

static uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* ------------------------------------------------------------------ */
/* encoder: JS value -> value message */

#define ENC_MAX_DEPTH 128
#define ENC_MAX_BYTES (64u * 1024 * 1024)

typedef struct {
    JSContext *ctx;
    Buf json;
    Buf blobs;
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

static int enc_blob(Enc *e, const char *tag, const uint8_t *data, size_t n)
{
    if (n > ENC_MAX_BYTES)
        return enc_fail(e, "a binary value larger than the size cap");
    enc_tag_open(e, tag);
    buf_putc(&e->json, ',');
    enc_int(e, (int32_t)e->nblobs);
    enc_tag_close(e);
    buf_u32(&e->blobs, (uint32_t)n);
    buf_put(&e->blobs, data, n);
    e->nblobs++;
    return 0;
}

static int enc_call_helper(Enc *e, const char *name, JSValueConst arg, JSValue *out)
{
    JSValue fn = JS_GetPropertyStr(e->ctx, g.helpers, name);
    *out = JS_Call(e->ctx, fn, JS_UNDEFINED, 1, &arg);
    JS_FreeValue(e->ctx, fn);
    return JS_IsException(*out) ? -1 : 0;
}

static int enc_array_items(Enc *e, JSValueConst arr)
{
    int64_t len;
    if (JS_GetLength(e->ctx, arr, &len))
        return -1;
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
        int r = JS_IsException(item) ? -1 : enc_value(e, item);
        JS_FreeValue(e->ctx, item);
        path_pop(e, saved);
        if (r)
            return -1;
        if (e->json.len > ENC_MAX_BYTES)
            return enc_fail(e, "a value larger than the size cap");
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
        if (JS_IsException(val)) { rc = -1; break; }
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
        rc = enc_value(e, val);
        path_pop(e, saved);
        JS_FreeValue(e->ctx, val);
        if (rc == 0 && e->json.len > ENC_MAX_BYTES)
            rc = enc_fail(e, "a value larger than the size cap");
    }
    JS_FreePropertyEnum(e->ctx, tab, n);
    if (rc == 0)
        buf_putc(&e->json, '}');
    return rc;
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
    case JS_TAG_STRING_ROPE: {
        size_t len;
        const char *s = JS_ToCStringLen(ctx, &len, v);
        if (!s)
            return -1;
        if (len > ENC_MAX_BYTES) {
            JS_FreeCString(ctx, s);
            return enc_fail(e, "a string larger than the size cap");
        }
        char note[64];
        size_t note_len = 0;
        if (e->lenient && len > ENC_LOG_STRING_MAX) {
            /* logs keep the start of a huge string (on a character boundary) and say so */
            size_t cut = ENC_LOG_STRING_MAX;
            while (cut > 0 && ((uint8_t)s[cut] & 0xC0) == 0x80)
                cut--;
            note_len = (size_t)snprintf(note, sizeof(note), "… [%zu more bytes]", len - cut);
            memcpy((char *)s + cut, note, note_len);
            len = cut + note_len;
        }
        if (len >= ENC_TEXT_BLOB_MIN) {
            /* replace lone surrogates (3-byte ED A0..BF xx) in place: same length */
            char *w = (char *)s;
            for (char *q = memchr(w, 0xED, len); q; q = memchr(q + 1, 0xED, len - (size_t)(q + 1 - w))) {
                size_t at = (size_t)(q - w);
                if (at + 2 < len && (uint8_t)q[1] >= 0xA0) {
                    q[0] = (char)0xEF; q[1] = (char)0xBF; q[2] = (char)0xBD;
                }
                if (at + 1 >= len) break;
            }
            int r = enc_blob(e, "t", (const uint8_t *)s, len);
            JS_FreeCString(ctx, s);
            return r;
        }
        enc_json_string(&e->json, s, len, 0);
        JS_FreeCString(ctx, s);
        return 0;
    }
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
    } else if (JS_GetTypedArrayType(v) >= 0) {
        if (JS_GetTypedArrayType(v) != JS_TYPED_ARRAY_UINT8) {
            rc = e->lenient ? enc_describe(e, "[TypedArray]")
                            : enc_fail(e, "a typed array other than Uint8Array");
        } else {
            size_t n;
            uint8_t *data = JS_GetUint8Array(ctx, &n, v);
            rc = data || n == 0 ? enc_blob(e, "b", data, n) : -1;
        }
    } else if (JS_IsArrayBuffer(v)) {
        size_t n;
        uint8_t *data = JS_GetArrayBuffer(ctx, &n, v);
        rc = data || n == 0 ? enc_blob(e, "b", data, n) : -1;
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
        } else {
            rc = -1;
        }
        JS_FreeValue(ctx, s);
    } else {
        rc = enc_object(e, v);
    }
    JS_FreeValue(ctx, tmp);
    e->depth--;
    if (rc && e->lenient && !e->json.failed) {
        /* never let a log fail: drop the pending exception and describe instead */
        JSValue ex = JS_GetException(ctx);
        JS_FreeValue(ctx, ex);
        return -1;
    }
    return rc;
}

/* Encode v into a message in out (owned by the caller). Returns -1 with a pending exception. */
static int encode_message(JSContext *ctx, JSValueConst v, int lenient, const char *root,
                          Buf *out)
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
        buf_reserve(out, 9 + e.json.len + e.blobs.len);
        uint8_t flags = (uint8_t)(e.tagged ? 1 : 0);
        buf_put(out, &flags, 1);
        buf_u32(out, (uint32_t)e.json.len);
        buf_put(out, e.json.p, e.json.len);
        buf_u32(out, e.nblobs);
        buf_put(out, e.blobs.p, e.blobs.len);
        if (out->failed) {
            buf_free(out);
            JS_ThrowOutOfMemory(ctx);
            rc = -1;
        }
    }
    buf_free(&e.json);
    buf_free(&e.blobs);
    return rc;
}

/* ------------------------------------------------------------------ */
/* decoder: value message -> JS value */

typedef struct {
    JSContext *ctx;
    uint32_t nblobs;
    const uint8_t **blob_ptr;
    uint32_t *blob_len;
} Dec;

static JSValue dec_revive(Dec *d, JSValue v, int depth);

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
static JSValue decode_message(JSContext *ctx, const uint8_t *p, size_t n)
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
    if (!JS_IsException(v) && (flags & 1)) {
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
static JSValue make_error(JSContext *ctx, JSValue rec)
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

/* ------------------------------------------------------------------ */
/* host replies */

/* Fetch a reply of length n (already in scratch when it fits). Caller frees *owned. */
static const uint8_t *reply_bytes(int64_t n, uint8_t **owned)
{
    *owned = NULL;
    if (n <= QJ_SCRATCH_SIZE)
        return scratch;
    uint8_t *p = malloc((size_t)n);
    if (!p)
        return NULL;
    qj_host(QJ_OP_FETCH, 0, (int32_t)(uintptr_t)p, (int32_t)n, 0);
    *owned = p;
    return p;
}

/* ------------------------------------------------------------------ */
/* builtins given to every run: console, report, Math.random */

static JSValue js_console(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                          int magic)
{
    (void)this_val;
    JSValue arr = JS_NewArray(ctx);
    for (int i = 0; i < argc; i++)
        JS_SetPropertyUint32(ctx, arr, (uint32_t)i, JS_DupValue(ctx, argv[i]));
    Buf m;
    int rc = encode_message(ctx, arr, 1, "console", &m);
    JS_FreeValue(ctx, arr);
    if (rc) {
        /* a lenient encoding only fails when out of memory or over the size cap */
        return JS_EXCEPTION;
    }
    int64_t r = qj_host(QJ_OP_LOG, magic, (int32_t)(uintptr_t)m.p, (int32_t)m.len, 0);
    buf_free(&m);
    if (r < 0)
        return JS_ThrowRangeError(ctx, "log limit reached");
    return JS_UNDEFINED;
}

static JSValue js_report(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    Buf m;
    JSValueConst v = argc > 0 ? argv[0] : JS_UNDEFINED;
    if (encode_message(ctx, v, 0, "value", &m))
        return JS_EXCEPTION;
    int64_t r = qj_host(QJ_OP_REPORT, 0, (int32_t)(uintptr_t)m.p, (int32_t)m.len, 0);
    buf_free(&m);
    if (r < 0)
        return JS_ThrowRangeError(ctx, "report limit reached");
    return JS_UNDEFINED;
}

static uint64_t rng_next(void)
{
    /* xorshift128+ */
    uint64_t s1 = g.rng[0];
    const uint64_t s0 = g.rng[1];
    g.rng[0] = s0;
    s1 ^= s1 << 23;
    g.rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return g.rng[1] + s0;
}

static JSValue js_random(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    return JS_NewFloat64(ctx, (double)(rng_next() >> 11) * (1.0 / 9007199254740992.0));
}

static JSValue js_no_dynamic_code(JSContext *ctx, JSValueConst this_val, int argc,
                                  JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    return JS_ThrowTypeError(ctx, "dynamic code evaluation is disabled in this sandbox");
}

/* ------------------------------------------------------------------ */
/* host functions (bridge): each is a C closure over its id */

static JSValue js_host_fn(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                          int magic, JSValueConst *func_data)
{
    (void)this_val; (void)func_data;
    int is_async = magic & 1;
    int32_t fn_id = magic >> 1;
    JSValue arr = JS_NewArray(ctx);
    for (int i = 0; i < argc; i++)
        JS_SetPropertyUint32(ctx, arr, (uint32_t)i, JS_DupValue(ctx, argv[i]));
    Buf m;
    int rc = encode_message(ctx, arr, 0, "args", &m);
    JS_FreeValue(ctx, arr);
    if (rc)
        return JS_EXCEPTION;
    if (is_async) {
        /* register a promise under a fresh call id, then tell the host */
        if (g.ncalls == g.calls_cap) {
            uint32_t cap = g.calls_cap ? g.calls_cap * 2 : 16;
            PendingCall *c = realloc(g.calls, sizeof(*c) * cap);
            if (!c) { buf_free(&m); return JS_ThrowOutOfMemory(ctx); }
            g.calls = c;
            g.calls_cap = cap;
        }
        uint32_t id = g.ncalls;
        JSValue funcs[2];
        JSValue promise = JS_NewPromiseCapability(ctx, funcs);
        if (JS_IsException(promise)) { buf_free(&m); return promise; }
        int64_t r = qj_host(QJ_OP_CALL, fn_id, (int32_t)(uintptr_t)m.p, (int32_t)m.len,
                            (int32_t)(id + 1));
        buf_free(&m);
        if (r == QJ_E_PENDING) {
            g.calls[id].resolve = funcs[0];
            g.calls[id].reject = funcs[1];
            g.calls[id].used = 1;
            g.ncalls++;
            g.pending++;
            return promise;
        }
        JS_FreeValue(ctx, funcs[0]);
        JS_FreeValue(ctx, funcs[1]);
        JS_FreeValue(ctx, promise);
        if (r >= 0) {
            /* the host refused at once: the promise is rejected with its error */
            uint8_t *owned;
            const uint8_t *p = reply_bytes(r, &owned);
            if (!p) return JS_ThrowOutOfMemory(ctx);
            JSValue err = make_error(ctx, decode_message(ctx, p, (size_t)r));
            free(owned);
            if (JS_IsException(err)) return err;
            JSValue rejected = JS_NewSettledPromise(ctx, true, err);
            JS_FreeValue(ctx, err);
            return rejected;
        }
        return JS_ThrowInternalError(ctx, "host call failed");
    }
    int64_t r = qj_host(QJ_OP_CALL, fn_id, (int32_t)(uintptr_t)m.p, (int32_t)m.len, 0);
    buf_free(&m);
    if (r < 0)
        return JS_ThrowInternalError(ctx, "host call failed");
    /* reply: u8 ok | value or error message */
    uint8_t *owned;
    const uint8_t *p = reply_bytes(r, &owned);
    if (!p || r < 1) { free(owned); return JS_ThrowOutOfMemory(ctx); }
    int ok = p[0];
    JSValue v = decode_message(ctx, p + 1, (size_t)r - 1);
    free(owned);
    if (JS_IsException(v))
        return v;
    if (!ok)
        return JS_Throw(ctx, make_error(ctx, v));
    return v;
}

/* ------------------------------------------------------------------ */
/* module loader: every module source comes from the host */

static char *module_normalize(JSContext *ctx, const char *base, const char *name, void *opaque)
{
    (void)opaque;
    /* relative specifiers resolve against the importing module; bare ones stay as they are */
    if (name[0] != '.')
        return js_strdup(ctx, name);
    const char *slash = strrchr(base, '/');
    size_t blen = slash ? (size_t)(slash - base) : 0;
    size_t nlen = strlen(name);
    char *out = js_malloc(ctx, blen + nlen + 3);
    if (!out)
        return NULL;
    /* build "<dir>/<name>" then fold "." and ".." segments */
    size_t o = 0;
    if (blen) { memcpy(out, base, blen); o = blen; }
    const char *s = name;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t sl = e ? (size_t)(e - s) : strlen(s);
        if (sl == 1 && s[0] == '.') {
            /* skip */
        } else if (sl == 2 && s[0] == '.' && s[1] == '.') {
            if (o == 0) {
                /* escaping the graph root: keep a marker the host refuses */
                js_free(ctx, out);
                size_t l = strlen(name);
                char *esc = js_malloc(ctx, l + 2);
                if (!esc) return NULL;
                esc[0] = '\x01';
                memcpy(esc + 1, name, l + 1);
                return esc;
            }
            char *p = memrchr(out, '/', o);
            o = p ? (size_t)(p - out) : 0;
        } else {
            if (o) out[o++] = '/';
            memcpy(out + o, s, sl);
            o += sl;
        }
        if (!e) break;
        s = e + 1;
    }
    out[o] = 0;
    return out;
}

static int host_module_init(JSContext *ctx, JSModuleDef *m);

static int stub_module_init(JSContext *ctx, JSModuleDef *m)
{
    (void)ctx; (void)m;
    return 0;
}

/* Read a module from bytecode the host cached (produced by a compile batch of ours). */
static JSModuleDef *module_from_bytecode(JSContext *ctx, const uint8_t *p, size_t n)
{
    JSValue v = JS_ReadObject(ctx, p, n, JS_READ_OBJ_BYTECODE);
    if (JS_IsException(v))
        return NULL;
    if (JS_VALUE_GET_TAG(v) != JS_TAG_MODULE) {
        JS_FreeValue(ctx, v);
        JS_ThrowInternalError(ctx, "cached bytecode is not a module");
        return NULL;
    }
    JSModuleDef *m = JS_VALUE_GET_PTR(v);
    JS_FreeValue(ctx, v);
    return m;
}

static JSModuleDef *module_loader(JSContext *ctx, const char *name, void *opaque)
{
    (void)opaque;
    if (g.compile_only)
        return JS_NewCModule(ctx, name, stub_module_init);
    size_t nlen = strlen(name);
    int64_t r = qj_host(QJ_OP_MODULE, 0, (int32_t)(uintptr_t)name, (int32_t)nlen, 0);
    if (r < 0) {
        g.link_failed = 1;
        if (name[0] == '\x01')
            JS_ThrowReferenceError(ctx, "module '%s' is outside the module graph", name + 1);
        else
            JS_ThrowReferenceError(ctx, "cannot find module '%s'", name);
        return NULL;
    }
    uint8_t *owned;
    const uint8_t *p = reply_bytes(r, &owned);
    if (!p || r < 1) { free(owned); JS_ThrowOutOfMemory(ctx); return NULL; }
    JSModuleDef *m = NULL;
    if (p[0] == 'S') {
        /* 'S' + JS source */
        char *src = malloc((size_t)r);
        if (src) {
            memcpy(src, p + 1, (size_t)r - 1);
            src[r - 1] = 0;
            JSValue fv = JS_Eval(ctx, src, (size_t)r - 1, name,
                                 JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
            free(src);
            if (!JS_IsException(fv)) {
                m = JS_VALUE_GET_PTR(fv);
                JS_FreeValue(ctx, fv);
            }
        } else {
            JS_ThrowOutOfMemory(ctx);
        }
    } else if (p[0] == 'B') {
        /* reading a module resolves its imports, which calls this loader again and reuses the
         * scratch buffer: read from a private copy */
        uint8_t *copy = malloc((size_t)r);
        if (copy) {
            memcpy(copy, p + 1, (size_t)r - 1);
            m = module_from_bytecode(ctx, copy, (size_t)r - 1);
            free(copy);
        } else {
            JS_ThrowOutOfMemory(ctx);
        }
    } else if (p[0] == 'H') {
        /* 'H' + value message: a host module whose exports are the keys of the value */
        JSValue ns = decode_message(ctx, p + 1, (size_t)r - 1);
        if (!JS_IsException(ns)) {
            m = JS_NewCModule(ctx, name, host_module_init);
            if (m) {
                JSPropertyEnum *tab;
                uint32_t n;
                if (JS_GetOwnPropertyNames(ctx, &tab, &n, ns, JS_GPN_STRING_MASK) == 0) {
                    for (uint32_t i = 0; i < n; i++) {
                        const char *k = JS_AtomToCString(ctx, tab[i].atom);
                        if (k) { JS_AddModuleExport(ctx, m, k); JS_FreeCString(ctx, k); }
                    }
                    JS_FreePropertyEnum(ctx, tab, n);
                }
                JS_AddModuleExport(ctx, m, "default");
                JS_SetModulePrivateValue(ctx, m, ns);
            } else {
                JS_FreeValue(ctx, ns);
            }
        }
    }
    free(owned);
    return m;
}

/* Host values arrive with functions as {"\0":["h", id]}-free placeholders: the bridge sends
 * functions as objects {"\u0000fn": [id, async]} which bind_host_values turns into closures. */
static JSValue bind_host_values(JSContext *ctx, JSValue v, int depth)
{
    if (!JS_IsObject(v) || JS_IsArray(v) || depth > 32)
        return v;
    JSValue marker = JS_GetPropertyStr(ctx, v, "\x02" "fn");
    if (JS_IsArray(marker)) {
        JSValue idv = JS_GetPropertyUint32(ctx, marker, 0);
        JSValue asv = JS_GetPropertyUint32(ctx, marker, 1);
        JSValue namev = JS_GetPropertyUint32(ctx, marker, 2);
        int32_t id = 0, as = 0;
        JS_ToInt32(ctx, &id, idv);
        as = JS_ToBool(ctx, asv);
        const char *name = JS_ToCString(ctx, namev);
        JS_FreeValue(ctx, idv);
        JS_FreeValue(ctx, asv);
        JS_FreeValue(ctx, namev);
        JS_FreeValue(ctx, marker);
        JS_FreeValue(ctx, v);
        JSValue fn = JS_NewCFunctionData2(ctx, js_host_fn, name ? name : "", 0,
                                          (id << 1) | (as ? 1 : 0), 0, NULL);
        if (name) JS_FreeCString(ctx, name);
        return fn;
    }
    JS_FreeValue(ctx, marker);
    JSPropertyEnum *tab;
    uint32_t n;
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, v, JS_GPN_STRING_MASK) == 0) {
        for (uint32_t i = 0; i < n; i++) {
            JSValue item = JS_GetProperty(ctx, v, tab[i].atom);
            item = bind_host_values(ctx, item, depth + 1);
            JS_SetProperty(ctx, v, tab[i].atom, item);
        }
        JS_FreePropertyEnum(ctx, tab, n);
    }
    JS_FreezeObject(ctx, v);
    return v;
}

static int host_module_init(JSContext *ctx, JSModuleDef *m)
{
    JSValue ns = JS_GetModulePrivateValue(ctx, m);
    ns = bind_host_values(ctx, ns, 0);
    JSPropertyEnum *tab;
    uint32_t n;
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, ns, JS_GPN_STRING_MASK) == 0) {
        for (uint32_t i = 0; i < n; i++) {
            const char *k = JS_AtomToCString(ctx, tab[i].atom);
            if (k) {
                JS_SetModuleExport(ctx, m, k, JS_GetProperty(ctx, ns, tab[i].atom));
                JS_FreeCString(ctx, k);
            }
        }
        JS_FreePropertyEnum(ctx, tab, n);
    }
    JS_SetModuleExport(ctx, m, "default", ns);
    return 0;
}

/* ------------------------------------------------------------------ */
/* unhandled rejections are told to the host (it records them) */

/* A rejection counts as unhandled only if no handler was attached by the end of the run
 * (and it is not the run's own error): remember them until then. */
static void rejection_tracker(JSContext *ctx, JSValueConst promise, JSValueConst reason,
                              bool is_handled, void *opaque)
{
    (void)opaque;
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, is_handled ? "rejDel" : "rejAdd");
    JSValueConst argv[2] = { promise, reason };
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, is_handled ? 1 : 2, argv);
    if (JS_IsException(r))
        JS_FreeValue(ctx, JS_GetException(ctx));
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, fn);
}

/* Tell the host about rejections still unhandled; `error` (if has_error) is the run's own. */
static void report_rejections(int has_error, JSValueConst error)
{
    JSContext *ctx = g.ctx;
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "rejTake");
    JSValueConst argv[2] = { JS_NewBool(ctx, has_error), error };
    JSValue list = JS_Call(ctx, fn, JS_UNDEFINED, 2, argv);
    JS_FreeValue(ctx, fn);
    if (JS_IsException(list)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return;
    }
    int64_t n = 0;
    JS_GetLength(ctx, list, &n);
    for (int64_t i = 0; i < n; i++) {
        JSValue reason = JS_GetPropertyInt64(ctx, list, i);
        Buf m;
        if (encode_message(ctx, reason, 1, "reason", &m) == 0) {
            qj_host(QJ_OP_REJECTION, 0, (int32_t)(uintptr_t)m.p, (int32_t)m.len, 0);
            buf_free(&m);
        } else {
            JS_FreeValue(ctx, JS_GetException(ctx));
        }
        JS_FreeValue(ctx, reason);
    }
    JS_FreeValue(ctx, list);
}

/* ------------------------------------------------------------------ */
/* init (snapshot time) */

static const char bootstrap_src[] =
    "(() => {\n"
    "  const entries = Map.prototype.entries, values = Set.prototype.values;\n"
    "  const getTime = Date.prototype.getTime, from = Array.from;\n"
    "  const B = BigInt, D = Date, M = Map, S = Set, dp = Object.defineProperty, gp = Object.getPrototypeOf;\n"
    "  const rej = new Map();\n"
    "  const G = globalThis, F = Function, E = G.eval;\n"
    "  const protos = [gp(function(){}), gp(async function(){}), gp(function*(){}),\n"
    "                  gp(async function*(){})];\n"
    "  const ctors = protos.map((p) => p.constructor);\n"
    "  return {\n"
    "    mapEntries: (m) => from(entries.call(m)),\n"
    "    setValues: (s) => from(values.call(s)),\n"
    "    keyCheck: (c) => { const it = c instanceof M ? from(entries.call(c), (p) => p[0]) : from(values.call(c));\n"
    "      for (const k of it) if (k !== null && (typeof k === 'object' || typeof k === 'function') && !(k instanceof D)) return true; },\n"
    "    time: (d) => getTime.call(d),\n"
    "    newMap: (a) => new M(a),\n"
    "    newSet: (a) => new S(a),\n"
    "    bigHex: (b) => b < 0n ? '-' + (-b).toString(16) : b.toString(16),\n"
    "    fromHex: (s) => { s = String(s); return s[0] === '-' ? -B('0x' + s.slice(1)) : B('0x' + s); },\n"
    "    rejAdd: (p, r) => { if (rej.size < 10000) rej.set(p, r); },\n"
    "    rejDel: (p) => { rej.delete(p); },\n"
    "    rejTake: (has, e) => { const out = []; for (const r of rej.values()) if (!has || r !== e) out.push(r); rej.clear(); return out; },\n"
    "    disableDynamic: (t, e) => {\n"
    "      dp(t, 'prototype', { value: F.prototype });\n"
    "      for (const p of protos) dp(p, 'constructor', { value: t, writable: true, configurable: true });\n"
    "      dp(G, 'Function', { value: t, writable: true, configurable: true });\n"
    "      dp(G, 'eval', { value: e, writable: true, configurable: true });\n"
    "    },\n"
    "    enableDynamic: () => {\n"
    "      protos.forEach((p, i) => dp(p, 'constructor', { value: ctors[i], writable: true, configurable: true }));\n"
    "      dp(G, 'Function', { value: F, writable: true, configurable: true });\n"
    "      dp(G, 'eval', { value: E, writable: true, configurable: true });\n"
    "    },\n"
    "  };\n"
    "})()";

static int disable_dynamic_code(JSContext *ctx);

static const char *const console_levels[] = { "log", "info", "warn", "error", "debug" };

__attribute__((export_name("qj_scratch")))
uint8_t *qj_scratch(void) { return scratch; }

__attribute__((export_name("qj_alloc")))
void *qj_alloc(uint32_t size) { return malloc(size ? size : 1); }

__attribute__((export_name("qj_free")))
void qj_free(void *p) { free(p); }

__attribute__((export_name("qj_init")))
int32_t qj_init(void)
{
    g.rt = JS_NewRuntime2(&qj_malloc_funcs, NULL);
    if (!g.rt)
        return QJ_FAIL;
    JSContext *ctx = JS_NewContextRaw(g.rt);
    if (!ctx)
        return QJ_FAIL;
    g.ctx = ctx;
    /* the explicit list of intrinsics: ECMAScript only, no quickjs-libc */
    if (JS_AddIntrinsicBaseObjects(ctx) || JS_AddIntrinsicDate(ctx) || JS_AddIntrinsicEval(ctx) ||
        JS_AddIntrinsicRegExp(ctx) || JS_AddIntrinsicJSON(ctx) || JS_AddIntrinsicProxy(ctx) ||
        JS_AddIntrinsicMapSet(ctx) || JS_AddIntrinsicTypedArrays(ctx) ||
        JS_AddIntrinsicPromise(ctx) || JS_AddIntrinsicBigInt(ctx) || JS_AddIntrinsicWeakRef(ctx))
        return QJ_FAIL;
    JS_SetModuleLoaderFunc(g.rt, module_normalize, module_loader, NULL);
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

    JSValue console = JS_NewObject(ctx);
    for (int i = 0; i < 5; i++)
        JS_SetPropertyStr(ctx, console, console_levels[i],
                          JS_NewCFunctionMagic(ctx, js_console, console_levels[i], 0,
                                               JS_CFUNC_generic_magic, i));
    JS_SetPropertyStr(ctx, global, "console", console);
    JS_SetPropertyStr(ctx, global, "report", JS_NewCFunction(ctx, js_report, "report", 1));
    JSValue math = JS_GetPropertyStr(ctx, global, "Math");
    JS_SetPropertyStr(ctx, math, "random", JS_NewCFunction(ctx, js_random, "random", 0));
    JS_FreeValue(ctx, math);
    JS_FreeValue(ctx, global);
    if (disable_dynamic_code(ctx))
        return QJ_FAIL;
    /* the reserves are part of the snapshot: allocated once, never touched, so a fresh
     * instance has them for free */
    mem.emergency = malloc(1024 * 1024);
    mem.finish_reserve = malloc(256 * 1024);
    g.module_val = JS_UNDEFINED;
    g.promise = JS_UNDEFINED;
    g.args = JS_UNDEFINED;
    /* settle the heap so the snapshot holds no garbage */
    JS_RunGC(g.rt);
    return QJ_DONE;
}

/* ------------------------------------------------------------------ */
/* runs */

/* Run record (little-endian u32 fields, then the byte fields in this order):
 *   kind (0 module, 1 script, 2 compile batch) | flags (bit0 dynamic code, bit1 args given,
 *   bit2 the source field is the entry's bytecode) | seed_lo | seed_hi
 *   | soft_mem_limit | stack_limit | filename_len | source_len | fn_len | args_len | globals_len
 *   then filename, source, fn, args (a value message holding an array), globals (a value
 *   message holding an object whose properties become frozen globals; host functions in it are
 *   objects {"\x02" "fn": [id, is_async, name]}). */
#define RUN_HEADER_WORDS 11

/* Dynamic code is off in the snapshot; a run that enables it restores the originals. */
static void enable_dynamic_code(JSContext *ctx)
{
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "enableDynamic");
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 0, NULL);
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, fn);
}

static int disable_dynamic_code(JSContext *ctx)
{
    JSValue thrower = JS_NewCFunction(ctx, js_no_dynamic_code, "Function", 1);
    JSValue evalt = JS_NewCFunction(ctx, js_no_dynamic_code, "eval", 1);
    JSValue fn = JS_GetPropertyStr(ctx, g.helpers, "disableDynamic");
    JSValue argv[2] = { thrower, evalt };
    JSValue r = JS_Call(ctx, fn, JS_UNDEFINED, 2, (JSValueConst *)argv);
    int failed = JS_IsException(r);
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, fn);
    JS_FreeValue(ctx, thrower);
    JS_FreeValue(ctx, evalt);
    return failed ? -1 : 0;
}

static void send_result(int outcome, const Buf *m)
{
    qj_host(QJ_OP_RESULT, outcome, (int32_t)(uintptr_t)m->p, (int32_t)m->len, 0);
}

/* Report the pending exception as the run's error outcome. */
static int32_t finish_with_exception(int outcome)
{
    JSContext *ctx = g.ctx;
    mem_finishing();
    JSValue ex = JS_GetException(ctx);
    report_rejections(1, ex);
    JSValue info = JS_NewObject(ctx);
    if (JS_IsError(ex)) {
        static const char *const fields[] = { "name", "message", "stack" };
        for (int i = 0; i < 3; i++) {
            JSValue f = JS_GetPropertyStr(ctx, ex, fields[i]);
            if (JS_IsException(f)) {
                JS_FreeValue(ctx, JS_GetException(ctx));
                f = JS_UNDEFINED;
            }
            if (!JS_IsUndefined(f)) {
                JSValue s = JS_ToString(ctx, f);
                if (JS_IsException(s)) {
                    JS_FreeValue(ctx, JS_GetException(ctx));
                    s = JS_NewString(ctx, "");
                }
                JS_SetPropertyStr(ctx, info, fields[i], s);
            }
            JS_FreeValue(ctx, f);
        }
    } else {
        JS_SetPropertyStr(ctx, info, "thrown", JS_DupValue(ctx, ex));
    }
    JS_SetPropertyStr(ctx, info, "uncatchable", JS_NewBool(ctx, JS_IsUncatchableError(ex)));
    JS_FreeValue(ctx, ex);
    Buf m;
    if (encode_message(ctx, info, 1, "error", &m)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        JS_FreeValue(ctx, info);
        /* out of memory while describing the error: send the bare minimum */
        static const char json[] = "{\"name\":\"InternalError\",\"message\":\"out of memory\"}";
        static uint8_t minimal[5 + sizeof(json) - 1 + 4];
        uint32_t jl = sizeof(json) - 1;
        minimal[0] = 0;
        minimal[1] = jl & 0xff; minimal[2] = (jl >> 8) & 0xff; minimal[3] = 0; minimal[4] = 0;
        memcpy(minimal + 5, json, jl);
        memset(minimal + 5 + jl, 0, 4);
        Buf mm = { minimal, sizeof(minimal), sizeof(minimal), 0 };
        send_result(outcome, &mm);
        g.phase = 3;
        return QJ_DONE;
    }
    JS_FreeValue(ctx, info);
    send_result(outcome, &m);
    buf_free(&m);
    g.phase = 3;
    return QJ_DONE;
}

static int32_t finish_with_value(JSValueConst v)
{
    mem_finishing();
    report_rejections(0, JS_UNDEFINED);
    Buf m;
    if (encode_message(g.ctx, v, 0, "result", &m))
        return finish_with_exception(QJ_OUT_ERROR);
    send_result(QJ_OUT_VALUE, &m);
    buf_free(&m);
    g.phase = 3;
    return QJ_DONE;
}

/* Run jobs until the awaited promise settles or nothing more can happen. */
static int drain_jobs(void)
{
    JSContext *pctx;
    for (;;) {
        if (JS_PromiseState(g.ctx, g.promise) != JS_PROMISE_PENDING)
            return 0;
        int r = JS_ExecutePendingJob(g.rt, &pctx);
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
    }
}

static int32_t call_entry(void);

/* Advance the state machine after jobs ran. */
static int32_t step(void)
{
    JSContext *ctx = g.ctx;
    for (;;) {
        if (drain_jobs() < 0)
            return finish_with_exception(QJ_OUT_ERROR);
        JSPromiseStateEnum st = JS_PromiseState(ctx, g.promise);
        if (st == JS_PROMISE_PENDING) {
            if (g.pending > 0)
                return QJ_PENDING;
            JS_ThrowInternalError(ctx, "the program is waiting for a promise that can never settle");
            return finish_with_exception(QJ_OUT_ERROR);
        }
        JSValue res = JS_PromiseResult(ctx, g.promise);
        if (st == JS_PROMISE_REJECTED) {
            JS_Throw(ctx, res);
            return finish_with_exception(QJ_OUT_ERROR);
        }
        if (g.phase == 1) {
            JS_FreeValue(ctx, res);
            int32_t r = call_entry();
            if (r != QJ_PENDING || g.phase == 3)
                return r;
            continue; /* phase 2 now waits on the call's promise */
        }
        int32_t r = finish_with_value(res);
        JS_FreeValue(ctx, res);
        return r;
    }
}

/* The module body has run: pick the export and call it. */
static int32_t call_entry(void)
{
    JSContext *ctx = g.ctx;
    JSValue value;
    if (g.kind == 1) {
        JSValue res = JS_PromiseResult(ctx, g.promise);
        value = JS_GetPropertyStr(ctx, res, "value");
        JS_FreeValue(ctx, res);
        if (g.has_args) {
            JS_FreeValue(ctx, value);
            JS_ThrowTypeError(ctx, "execute args are not allowed with kind=\"script\"");
            return finish_with_exception(QJ_OUT_ERROR);
        }
    } else {
        JSModuleDef *m = JS_VALUE_GET_PTR(g.module_val);
        JSValue ns = JS_GetModuleNamespace(ctx, m);
        if (JS_IsException(ns))
            return finish_with_exception(QJ_OUT_ERROR);
        JSAtom a = JS_NewAtom(ctx, g.fn_name);
        int has = JS_HasProperty(ctx, ns, a);
        value = has > 0 ? JS_GetProperty(ctx, ns, a) : JS_UNDEFINED;
        JS_FreeAtom(ctx, a);
        JS_FreeValue(ctx, ns);
        if (has <= 0) {
            JS_ThrowReferenceError(ctx, "the module has no export named '%s'", g.fn_name);
            return finish_with_exception(QJ_OUT_ERROR);
        }
        if (JS_IsException(value))
            return finish_with_exception(QJ_OUT_ERROR);
        if (JS_IsFunction(ctx, value)) {
            int64_t argc = 0;
            JSValue *argv = NULL;
            if (g.has_args) {
                JS_GetLength(ctx, g.args, &argc);
                argv = malloc(sizeof(JSValue) * (size_t)(argc ? argc : 1));
                for (int64_t i = 0; i < argc; i++)
                    argv[i] = JS_GetPropertyInt64(ctx, g.args, i);
            }
            JSValue r = JS_Call(ctx, value, JS_UNDEFINED, (int)argc, (JSValueConst *)argv);
            for (int64_t i = 0; i < argc; i++)
                JS_FreeValue(ctx, argv[i]);
            free(argv);
            JS_FreeValue(ctx, value);
            if (JS_IsException(r))
                return finish_with_exception(QJ_OUT_ERROR);
            value = r;
        } else if (g.has_args) {
            JS_FreeValue(ctx, value);
            JS_ThrowTypeError(ctx, "the export '%s' is not a function, so it cannot take args",
                              g.fn_name);
            return finish_with_exception(QJ_OUT_ERROR);
        }
    }
    /* await a promise result; anything else is final */
    if (JS_IsPromise(value)) {
        JS_FreeValue(ctx, g.promise);
        g.promise = value;
        g.phase = 2;
        return QJ_PENDING;
    }
    int32_t r = finish_with_value(value);
    JS_FreeValue(ctx, value);
    return r;
}

/* Compile batch: u32 count, then (u32 name_len, name, u32 src_len, src)*. Each module that
 * compiles is sent to the host as bytecode (QJ_OP_BYTECODE); none of its code runs. */
static int32_t compile_batch(const uint8_t *p, size_t n)
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
        JSValue v = JS_Eval(ctx, src, sl, name, JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
        free(src);
        free(name);
        if (JS_IsException(v)) {
            JS_FreeValue(ctx, JS_GetException(ctx));
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
            qj_host(QJ_OP_BYTECODE, (int32_t)i, (int32_t)(uintptr_t)bc, (int32_t)blen, 0);
        }
        js_free(ctx, bc);
    }
    g.phase = 3;
    return QJ_DONE;
}

__attribute__((export_name("qj_run")))
int32_t qj_run(uint8_t *rec, uint32_t len)
{
    JSContext *ctx = g.ctx;
    uint8_t *owned = rec;
    if (!rec)
        rec = scratch;
    if (len < RUN_HEADER_WORDS * 4 || g.phase != 0) {
        free(owned);
        return QJ_FAIL;
    }
    uint32_t h[RUN_HEADER_WORDS];
    for (int i = 0; i < RUN_HEADER_WORDS; i++)
        h[i] = rd_u32(rec + 4 * i);
    uint64_t total = (uint64_t)RUN_HEADER_WORDS * 4 + h[6] + h[7] + h[8] + h[9] + h[10];
    if (total > len) {
        free(owned);
        return QJ_FAIL;
    }
    const char *filename_p = (const char *)rec + RUN_HEADER_WORDS * 4;
    const char *source_p = filename_p + h[6];
    const char *fn_p = source_p + h[7];
    const uint8_t *args_p = (const uint8_t *)fn_p + h[8];
    const uint8_t *globals_p = args_p + h[9];

    if (h[0] == 2) {
        int32_t r = compile_batch((const uint8_t *)source_p, h[7]);
        free(owned);
        return r;
    }
    g.kind = (int)h[0];
    g.has_args = (h[1] & 2) != 0;
    g.rng[0] = ((uint64_t)h[3] << 32 | h[2]) ^ 0x9E3779B97F4A7C15ull;
    g.rng[1] = ((uint64_t)h[2] << 32 | h[3]) ^ 0xD1B54A32D192ED03ull;
    if (!g.rng[0] && !g.rng[1])
        g.rng[1] = 1;
    for (int i = 0; i < 8; i++)
        rng_next();
    mem.soft_limit = h[4];
    mem.grace = h[4] / 16 > (1u << 20) ? h[4] / 16 : (1u << 20);
    mem.in_grace = 0;

    JS_UpdateStackTop(g.rt);
    JS_SetMaxStackSize(g.rt, h[5]);

    char *filename = malloc((size_t)h[6] + 1);
    char *source = malloc((size_t)h[7] + 1);
    g.fn_name = malloc((size_t)h[8] + 1);
    if (!filename || !source || !g.fn_name) {
        free(owned);
        return QJ_FAIL;
    }
    memcpy(filename, filename_p, h[6]);
    filename[h[6]] = 0;
    memcpy(source, source_p, h[7]);
    source[h[7]] = 0;
    memcpy(g.fn_name, fn_p, h[8]);
    g.fn_name[h[8]] = 0;
    g.args = g.has_args ? decode_message(ctx, args_p, h[9]) : JS_UNDEFINED;
    JSValue globals = h[10] ? decode_message(ctx, globals_p, h[10]) : JS_UNDEFINED;
    free(owned);
    g.phase = 1;
    if (JS_IsException(g.args) || JS_IsException(globals)) {
        free(filename);
        free(source);
        return finish_with_exception(QJ_OUT_ERROR);
    }

    if (h[1] & 1)
        enable_dynamic_code(ctx);
    if (JS_IsObject(globals)) {
        JSValue global = JS_GetGlobalObject(ctx);
        JSPropertyEnum *tab;
        uint32_t n;
        if (JS_GetOwnPropertyNames(ctx, &tab, &n, globals, JS_GPN_STRING_MASK) == 0) {
            for (uint32_t i = 0; i < n; i++) {
                JSValue item = JS_GetProperty(ctx, globals, tab[i].atom);
                item = bind_host_values(ctx, item, 0);
                JS_DefinePropertyValue(ctx, global, tab[i].atom, item, JS_PROP_ENUMERABLE);
            }
            JS_FreePropertyEnum(ctx, tab, n);
        }
        JS_FreeValue(ctx, global);
    }
    JS_FreeValue(ctx, globals);

    JSValue v;
    if (g.kind == 1) {
        v = JS_Eval(ctx, source, h[7], filename, JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC);
        free(source);
        free(filename);
        if (JS_IsException(v))
            return finish_with_exception(QJ_OUT_ERROR);
        g.promise = v;
    } else {
        if (h[1] & 4) {
            /* the entry arrives as bytecode from the host's cache */
            JSModuleDef *m = module_from_bytecode(ctx, (const uint8_t *)source, h[7]);
            v = m ? JS_DupValue(ctx, JS_MKPTR(JS_TAG_MODULE, m)) : JS_EXCEPTION;
            if (m && JS_ResolveModule(ctx, v) < 0) {
                JS_FreeValue(ctx, v);
                v = JS_EXCEPTION;
            }
        } else {
            v = JS_Eval(ctx, source, h[7], filename,
                        JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
        }
        free(source);
        free(filename);
        if (JS_IsException(v))
            return finish_with_exception(g.link_failed ? QJ_OUT_LINK_ERROR : QJ_OUT_ERROR);
        g.module_val = JS_DupValue(ctx, v);
        JSValue p = JS_EvalFunction(ctx, v);
        if (JS_IsException(p))
            return finish_with_exception(QJ_OUT_LINK_ERROR);
        g.promise = p;
    }
    return step();
}

__attribute__((export_name("qj_resume")))
int32_t qj_resume(uint32_t id, int32_t ok, uint8_t *data, uint32_t len)
{
    JSContext *ctx = g.ctx;
    uint8_t *owned = data;
    if (!data)
        data = scratch;
    if (g.phase == 3 || g.phase == 0 || id == 0 || id > g.ncalls || !g.calls[id - 1].used) {
        free(owned);
        return g.phase == 3 ? QJ_DONE : QJ_FAIL;
    }
    PendingCall *c = &g.calls[id - 1];
    c->used = 0;
    g.pending--;
    JSValue v = decode_message(ctx, data, len);
    free(owned);
    if (!ok && !JS_IsException(v))
        v = make_error(ctx, v);
    if (JS_IsException(v)) {
        v = JS_GetException(ctx);
        ok = 0;
    }
    JSValue r = JS_Call(ctx, ok ? c->resolve : c->reject, JS_UNDEFINED, 1, (JSValueConst *)&v);
    JS_FreeValue(ctx, r);
    JS_FreeValue(ctx, v);
    JS_FreeValue(ctx, c->resolve);
    JS_FreeValue(ctx, c->reject);
    return step();
}

/*
 * The C side of CompressionStream and DecompressionStream (_guest/web/compression.js): zlib's
 * deflate and inflate (the pinned zlib, see sandbox/_build.py) over one z_stream per stream.
 *
 * Every byte zlib holds (its state, its window, our input copy and output buffer) comes from
 * QuickJS's allocator, so it counts against the run's memory limit, and is freed when the
 * stream ends, fails, or its handle is collected (the class finalizer). Output leaves in pieces
 * of at most CHUNK bytes, one per call of native.zlibStep, so the JavaScript loop that enqueues
 * them pays fuel for each: a decompression bomb is bounded by the run's fuel and memory, never
 * by the host. The input is copied before any JavaScript runs again, so a program that
 * detaches or resizes its buffer between two pieces cannot touch what zlib reads.
 */
#define Z_SOLO
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include "zlib.h"
#include "guest.h"

#define CHUNK (64 * 1024)

enum { FORMAT_DEFLATE, FORMAT_DEFLATE_RAW, FORMAT_GZIP };

typedef struct {
    z_stream z;
    JSRuntime *rt;
    uint8_t *in;   /* our copy of the current chunk (zlib reads it through z.next_in) */
    uint8_t *out;  /* CHUNK bytes, made at the first step */
    int inflating; /* 1: DecompressionStream, 0: CompressionStream */
    int live;      /* z holds state that deflateEnd/inflateEnd must free */
    int ended;     /* the compressed stream ended (deflate: Z_FINISH done; inflate: its end) */
    int full;      /* the last step filled its output: zlib may have more without new input */
} Zlib;

static JSClassID zlib_class_id;

static voidpf zlib_alloc(voidpf opaque, uInt items, uInt size)
{
    if (size && items > SIZE_MAX / size)
        return Z_NULL;
    return js_malloc_rt((JSRuntime *)opaque, (size_t)items * size);
}

static void zlib_free(voidpf opaque, voidpf p)
{
    js_free_rt((JSRuntime *)opaque, p);
}

/* free everything but the record itself (idempotent) */
static void zlib_release(Zlib *s)
{
    if (s->live) {
        if (s->inflating)
            inflateEnd(&s->z);
        else
            deflateEnd(&s->z);
        s->live = 0;
    }
    js_free_rt(s->rt, s->in);
    js_free_rt(s->rt, s->out);
    s->in = s->out = NULL;
    s->z.next_in = Z_NULL;
    s->z.avail_in = 0;
}

static void zlib_finalizer(JSRuntime *rt, JSValueConst val)
{
    Zlib *s = JS_GetOpaque(val, zlib_class_id);
    if (s) {
        zlib_release(s);
        js_free_rt(rt, s);
    }
}

static JSClassDef zlib_class = {
    "Zlib",
    .finalizer = zlib_finalizer,
};

static Zlib *zlib_get(JSContext *ctx, JSValueConst v)
{
    return JS_GetOpaque2(ctx, v, zlib_class_id);
}

/* native.zlibNew(inflate: boolean, format: 0 deflate | 1 deflate-raw | 2 gzip) -> handle */
static JSValue js_zlib_new(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    int inflating = JS_ToBool(ctx, argv[0]);
    int32_t format;
    if (JS_ToInt32(ctx, &format, argv[1]))
        return JS_EXCEPTION;
    /* zlib's windowBits: 15 with a zlib wrapper, -15 raw, 15 + 16 with a gzip wrapper */
    int bits = format == FORMAT_DEFLATE_RAW ? -15 : format == FORMAT_GZIP ? 31 : 15;
    JSValue obj = JS_NewObjectClass(ctx, (int)zlib_class_id);
    if (JS_IsException(obj))
        return obj;
    JSRuntime *rt = JS_GetRuntime(ctx);
    Zlib *s = js_mallocz_rt(rt, sizeof *s);
    if (!s) {
        JS_FreeValue(ctx, obj);
        return JS_ThrowOutOfMemory(ctx);
    }
    s->rt = rt;
    s->inflating = inflating;
    s->z.zalloc = zlib_alloc;
    s->z.zfree = zlib_free;
    s->z.opaque = rt;
    JS_SetOpaque(obj, s); /* from here the finalizer frees s */
    int rc = inflating ? inflateInit2(&s->z, bits)
                       : deflateInit2(&s->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, bits, 8,
                                      Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) {
        JS_FreeValue(ctx, obj);
        return rc == Z_MEM_ERROR ? JS_ThrowOutOfMemory(ctx)
                                 : JS_ThrowInternalError(ctx, "zlib: cannot start a stream");
    }
    s->live = 1;
    return obj;
}

/* native.zlibWrite(handle, bytes: Uint8Array): the next input, copied; the previous one must
 * have been consumed (the JavaScript side steps until zlibStep gives null) */
static JSValue js_zlib_write(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    Zlib *s = zlib_get(ctx, argv[0]);
    if (!s)
        return JS_EXCEPTION;
    size_t n;
    const uint8_t *p = JS_GetUint8Array(ctx, &n, argv[1]);
    if (!p)
        return JS_EXCEPTION;
    if (!s->live)
        return JS_ThrowTypeError(ctx, "the stream has ended");
    if (n == 0)
        return JS_UNDEFINED;
    if (s->ended && s->inflating)
        return JS_ThrowTypeError(ctx, "DecompressionStream: data after the end of the compressed stream");
    if (s->z.avail_in)
        return JS_ThrowInternalError(ctx, "zlib: the previous input is not consumed");
    if (n > UINT_MAX)
        return JS_ThrowRangeError(ctx, "zlib: a chunk of 4 GiB or more");
    js_free_rt(s->rt, s->in);
    s->in = js_malloc_rt(s->rt, n);
    s->z.next_in = s->in;
    s->z.avail_in = 0;
    if (!s->in)
        return JS_ThrowOutOfMemory(ctx);
    memcpy(s->in, p, n);
    s->z.avail_in = (uInt)n;
    return JS_UNDEFINED;
}

static JSValue corrupt(JSContext *ctx, Zlib *s, const char *what)
{
    const char *who = s->inflating ? "DecompressionStream" : "CompressionStream";
    zlib_release(s);
    return JS_ThrowTypeError(ctx, "%s: %s", who, what);
}

/*
 * native.zlibStep(handle, finish: boolean) -> Uint8Array | null: the next piece of output (at
 * most CHUNK bytes), or null when there is none until more input comes (or, with `finish`,
 * none at all: the stream is then complete and its memory freed). Throws a TypeError for
 * corrupt compressed input, data after its end, or (with `finish`) an input cut short.
 */
static JSValue js_zlib_step(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    Zlib *s = zlib_get(ctx, argv[0]);
    if (!s)
        return JS_EXCEPTION;
    int finish = JS_ToBool(ctx, argv[1]);
    if (!s->live)
        return JS_NULL;
    if (s->ended) {
        if (s->inflating && s->z.avail_in)
            return corrupt(ctx, s, "data after the end of the compressed stream");
        if (finish)
            zlib_release(s);
        return JS_NULL;
    }
    if (!finish && !s->z.avail_in && !s->full)
        return JS_NULL;
    if (!s->out) {
        s->out = js_malloc_rt(s->rt, CHUNK);
        if (!s->out)
            return JS_ThrowOutOfMemory(ctx);
    }
    s->z.next_out = s->out;
    s->z.avail_out = CHUNK;
    int rc = s->inflating ? inflate(&s->z, Z_NO_FLUSH)
                          : deflate(&s->z, finish ? Z_FINISH : Z_NO_FLUSH);
    size_t made = CHUNK - s->z.avail_out;
    s->full = s->z.avail_out == 0;
    if (rc == Z_STREAM_END) {
        s->ended = 1;
        if (s->inflating && s->z.avail_in)
            return corrupt(ctx, s, "data after the end of the compressed stream");
    } else if (rc == Z_MEM_ERROR) {
        zlib_release(s);
        return JS_ThrowOutOfMemory(ctx);
    } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR) {
        return corrupt(ctx, s, s->z.msg ? s->z.msg : "the compressed data is corrupt");
    } /* Z_OK, or Z_BUF_ERROR: no progress was possible (no input, or no more output) */
    if (made)
        return JS_NewUint8ArrayCopy(ctx, s->out, made);
    if (finish) {
        if (s->inflating && !s->ended)
            return corrupt(ctx, s, "the compressed data ends too early");
        zlib_release(s);
    }
    return JS_NULL;
}

/* native.zlibEnd(handle): free the stream's memory now (it was cancelled or failed) */
static JSValue js_zlib_end(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    Zlib *s = zlib_get(ctx, argv[0]);
    if (!s)
        return JS_EXCEPTION;
    zlib_release(s);
    return JS_UNDEFINED;
}

static const JSCFunctionListEntry compress_natives[] = {
    JS_CFUNC_DEF("zlibNew", 2, js_zlib_new),
    JS_CFUNC_DEF("zlibWrite", 2, js_zlib_write),
    JS_CFUNC_DEF("zlibStep", 2, js_zlib_step),
    JS_CFUNC_DEF("zlibEnd", 1, js_zlib_end),
};

int web_compress_natives(JSContext *ctx, JSValueConst native)
{
    JSRuntime *rt = JS_GetRuntime(ctx);
    JS_NewClassID(rt, &zlib_class_id);
    if (JS_NewClass(rt, zlib_class_id, &zlib_class) < 0)
        return -1;
    return JS_SetPropertyFunctionList(ctx, native, compress_natives,
                                      sizeof compress_natives / sizeof compress_natives[0]);
}

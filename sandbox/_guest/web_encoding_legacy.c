/*
 * The legacy decoders of TextDecoder (_guest/web/encoding.js): every encoding of the WHATWG
 * Encoding Standard but UTF-8 (web_encoding.c) — UTF-16LE/BE, the single-byte encodings,
 * x-user-defined, gb18030/gbk, Big5, EUC-JP, ISO-2022-JP, Shift_JIS, EUC-KR — and the label
 * lookup. The labels and indexes are static tables generated at build time from a pinned
 * package (sandbox/_encoding_tables.py), so only a run that decodes such an encoding touches
 * their pages. Each decoder follows the Standard's algorithm byte by byte; its state between
 * streaming chunks lives in a small Uint8Array the TextDecoder keeps (checked on every use),
 * and "prepend to the queue" is a stack of at most three bytes. Each byte is read at most
 * three times and gives at most two UTF-16 units, so the work is linear in the input and the
 * output buffer (grown by doubling) within a small multiple of it.
 */
#include <string.h>
#include "guest.h"

struct encoding_label {
    const char *label;
    uint8_t id;
};

#include "encoding_tables.inc"

#define REPLACEMENT 0xFFFD
#define EOQ (-1) /* end of queue: the input ends and the decoder is flushed */

enum { CONTINUE, ERROR, FINISHED };

/* ISO-2022-JP's decoder states */
enum { ISO_ASCII, ISO_ROMAN, ISO_KATAKANA, ISO_LEAD, ISO_TRAIL, ISO_ESC_START, ISO_ESC };

/* What a decoder keeps between chunks; stored byte for byte in the TextDecoder's Uint8Array. */
typedef struct {
    uint8_t enc;       /* the encoding's id (encoding_names) */
    uint8_t lead;      /* gb18030 first, or the lead byte of the other multi-byte decoders */
    uint8_t second;    /* gb18030 second */
    uint8_t third;     /* gb18030 third */
    uint8_t flag;      /* EUC-JP jis0212; ISO-2022-JP output; UTF-16 has a lead byte */
    uint8_t iso;       /* ISO-2022-JP decoder state */
    uint8_t iso_out;   /* ISO-2022-JP output state */
    uint8_t unused;
    uint16_t surrogate; /* UTF-16 lead surrogate, 0 for none */
} DecoderState;

typedef struct {
    JSContext *ctx;
    uint16_t *p;
    size_t n, cap;
    int pre[8]; /* bytes prepended to the queue: a stack, the next byte on top */
    int npre;
} Out;

/* room for `units` more UTF-16 units; -1 when the buffer cannot grow (thrown) */
static int reserve(Out *o, size_t units)
{
    if (units > o->cap - o->n) {
        size_t cap = o->cap * 2 > o->n + units ? o->cap * 2 : o->n + units;
        uint16_t *p = cap > o->cap ? js_realloc(o->ctx, o->p, cap * sizeof *p) : NULL;
        if (!p)
            return -1;
        o->p = p;
        o->cap = cap;
    }
    return CONTINUE;
}

/* append a code point (one or two UTF-16 units); -1 when the buffer cannot grow (thrown) */
static int emit(Out *o, uint32_t cp)
{
    if (reserve(o, 2) < 0)
        return -1;
    if (cp >= 0x10000) {
        cp -= 0x10000;
        o->p[o->n++] = (uint16_t)(0xD800 | (cp >> 10));
        o->p[o->n++] = (uint16_t)(0xDC00 | (cp & 0x3FF));
    } else {
        o->p[o->n++] = (uint16_t)cp;
    }
    return CONTINUE;
}

/* prepend bytes to the queue: the first argument is read next */
static void prepend(Out *o, int a, int b, int c, int count)
{
    int bytes[3] = {a, b, c};
    for (int k = count - 1; k >= 0 && o->npre < (int)(sizeof o->pre / sizeof o->pre[0]); k--)
        o->pre[o->npre++] = bytes[k]; /* at most three deep: each step reads one */
}

/* index[pointer], or 0 (no code point) for a pointer outside the index */
#define LOOKUP(index, pointer) \
    ((pointer) >= 0 && (size_t)(pointer) < sizeof(index) / sizeof((index)[0]) ? (index)[pointer] : 0)

static int is_ascii(int b) { return b >= 0 && b < 0x80; }
static int in_range(int b, int lo, int hi) { return b >= lo && b <= hi; }

/* a code point found by a pointer: emitted, or an error (prepending an ASCII byte) for none */
static int found(Out *o, uint32_t cp, int byte)
{
    if (cp)
        return emit(o, cp);
    if (is_ascii(byte))
        prepend(o, byte, 0, 0, 1);
    return ERROR;
}

static uint32_t gb18030_ranges_cp(uint32_t pointer)
{
    if ((pointer > 39419 && pointer < 189000) || pointer > 1237575)
        return 0;
    if (pointer == 7457)
        return 0xE7C7;
    if (pointer >= 189000)
        return 0x10000 + pointer - 189000;
    size_t lo = 0, hi = sizeof gb18030_ranges / sizeof gb18030_ranges[0] / 2;
    while (hi - lo > 1) { /* the last range whose pointer is <= pointer (the first is 0) */
        size_t mid = (lo + hi) / 2;
        if (gb18030_ranges[2 * mid] <= pointer)
            lo = mid;
        else
            hi = mid;
    }
    return gb18030_ranges[2 * lo + 1] + pointer - gb18030_ranges[2 * lo];
}

/* The input ended: a lead byte still waiting for its trail is an error (the decoders whose
 * whole state is one lead byte). */
static int end_of_queue(DecoderState *s)
{
    if (!s->lead)
        return FINISHED;
    s->lead = 0;
    return ERROR;
}

static int gb18030_step(DecoderState *s, Out *o, int byte)
{
    if (byte == EOQ) {
        if (!s->lead && !s->second && !s->third)
            return FINISHED;
        s->lead = s->second = s->third = 0;
        return ERROR;
    }
    if (s->third) {
        if (!in_range(byte, 0x30, 0x39)) {
            prepend(o, s->second, s->third, byte, 3);
            s->lead = s->second = s->third = 0;
            return ERROR;
        }
        uint32_t pointer = (((uint32_t)(s->lead - 0x81) * 10 + (s->second - 0x30)) * 126 +
                            (s->third - 0x81)) * 10 + (uint32_t)(byte - 0x30);
        s->lead = s->second = s->third = 0;
        uint32_t cp = gb18030_ranges_cp(pointer);
        return cp ? emit(o, cp) : ERROR;
    }
    if (s->second) {
        if (in_range(byte, 0x81, 0xFE)) {
            s->third = (uint8_t)byte;
            return CONTINUE;
        }
        prepend(o, s->second, byte, 0, 2);
        s->lead = s->second = 0;
        return ERROR;
    }
    if (s->lead) {
        if (in_range(byte, 0x30, 0x39)) {
            s->second = (uint8_t)byte;
            return CONTINUE;
        }
        int lead = s->lead, offset = byte < 0x7F ? 0x40 : 0x41;
        s->lead = 0;
        uint32_t cp = 0;
        if (in_range(byte, 0x40, 0x7E) || in_range(byte, 0x80, 0xFE))
            cp = LOOKUP(index_gb18030, (lead - 0x81) * 190 + (byte - offset));
        return found(o, cp, byte);
    }
    if (is_ascii(byte))
        return emit(o, (uint32_t)byte);
    if (byte == 0x80)
        return emit(o, 0x20AC);
    if (in_range(byte, 0x81, 0xFE)) {
        s->lead = (uint8_t)byte;
        return CONTINUE;
    }
    return ERROR;
}

static int big5_step(DecoderState *s, Out *o, int byte)
{
    if (byte == EOQ)
        return end_of_queue(s);
    if (s->lead) {
        int lead = s->lead, offset = byte < 0x7F ? 0x40 : 0x62;
        s->lead = 0;
        if (!in_range(byte, 0x40, 0x7E) && !in_range(byte, 0xA1, 0xFE))
            return found(o, 0, byte);
        int pointer = (lead - 0x81) * 157 + (byte - offset);
        if (pointer == 1133 || pointer == 1135 || pointer == 1164 || pointer == 1166) {
            if (emit(o, pointer < 1164 ? 0x00CA : 0x00EA) < 0)
                return -1;
            return emit(o, pointer == 1133 || pointer == 1164 ? 0x0304 : 0x030C);
        }
        return found(o, LOOKUP(index_big5, pointer), byte);
    }
    if (is_ascii(byte))
        return emit(o, (uint32_t)byte);
    if (in_range(byte, 0x81, 0xFE)) {
        s->lead = (uint8_t)byte;
        return CONTINUE;
    }
    return ERROR;
}

static int euc_jp_step(DecoderState *s, Out *o, int byte)
{
    if (byte == EOQ)
        return end_of_queue(s);
    if (s->lead == 0x8E && in_range(byte, 0xA1, 0xDF)) {
        s->lead = 0;
        return emit(o, (uint32_t)(0xFF61 - 0xA1 + byte));
    }
    if (s->lead == 0x8F && in_range(byte, 0xA1, 0xFE)) {
        s->flag = 1;
        s->lead = (uint8_t)byte;
        return CONTINUE;
    }
    if (s->lead) {
        int lead = s->lead, jis0212 = s->flag;
        s->lead = 0;
        s->flag = 0;
        uint32_t cp = 0;
        if (in_range(lead, 0xA1, 0xFE) && in_range(byte, 0xA1, 0xFE)) {
            int pointer = (lead - 0xA1) * 94 + byte - 0xA1;
            cp = jis0212 ? LOOKUP(index_jis0212, pointer) : LOOKUP(index_jis0208, pointer);
        }
        return found(o, cp, byte);
    }
    if (is_ascii(byte))
        return emit(o, (uint32_t)byte);
    if (byte == 0x8E || byte == 0x8F || in_range(byte, 0xA1, 0xFE)) {
        s->lead = (uint8_t)byte;
        return CONTINUE;
    }
    return ERROR;
}

/* ISO-2022-JP: s->flag is the Standard's "iso-2022-jp output" */
static int iso2022jp_step(DecoderState *s, Out *o, int byte)
{
    int escape = byte == 0x1B;
    switch (s->iso) {
    case ISO_ASCII:
    case ISO_ROMAN:
    case ISO_KATAKANA:
    case ISO_LEAD:
        if (escape) {
            s->iso = ISO_ESC_START;
            return CONTINUE;
        }
        if (byte == EOQ)
            return FINISHED;
        s->flag = 0;
        if (s->iso == ISO_KATAKANA)
            return in_range(byte, 0x21, 0x5F) ? emit(o, (uint32_t)(0xFF61 - 0x21 + byte)) : ERROR;
        if (s->iso == ISO_LEAD) {
            if (!in_range(byte, 0x21, 0x7E))
                return ERROR;
            s->lead = (uint8_t)byte;
            s->iso = ISO_TRAIL;
            return CONTINUE;
        }
        if (!is_ascii(byte) || byte == 0x0E || byte == 0x0F)
            return ERROR;
        if (s->iso == ISO_ROMAN && (byte == 0x5C || byte == 0x7E))
            return emit(o, byte == 0x5C ? 0x00A5 : 0x203E);
        return emit(o, (uint32_t)byte);
    case ISO_TRAIL:
        if (escape) {
            s->iso = ISO_ESC_START;
            return ERROR;
        }
        s->iso = ISO_LEAD;
        if (in_range(byte, 0x21, 0x7E)) {
            uint32_t cp = LOOKUP(index_jis0208, (s->lead - 0x21) * 94 + byte - 0x21);
            return cp ? emit(o, cp) : ERROR;
        }
        if (byte == EOQ)
            prepend(o, EOQ, 0, 0, 1);
        return ERROR;
    case ISO_ESC_START:
        if (byte == 0x24 || byte == 0x28) {
            s->lead = (uint8_t)byte;
            s->iso = ISO_ESC;
            return CONTINUE;
        }
        prepend(o, byte, 0, 0, 1);
        s->flag = 0;
        s->iso = s->iso_out;
        return ERROR;
    default: { /* ISO_ESC */
        int lead = s->lead, state = -1;
        s->lead = 0;
        if (lead == 0x28 && byte == 0x42)
            state = ISO_ASCII;
        else if (lead == 0x28 && byte == 0x4A)
            state = ISO_ROMAN;
        else if (lead == 0x28 && byte == 0x49)
            state = ISO_KATAKANA;
        else if (lead == 0x24 && (byte == 0x40 || byte == 0x42))
            state = ISO_LEAD;
        if (state >= 0) {
            int output = s->flag;
            s->iso = s->iso_out = (uint8_t)state;
            s->flag = 1;
            return output ? ERROR : CONTINUE;
        }
        prepend(o, lead, byte, 0, 2); /* byte may be EOQ: it is read again */
        s->flag = 0;
        s->iso = s->iso_out;
        return ERROR;
    }
    }
}

static int shift_jis_step(DecoderState *s, Out *o, int byte)
{
    if (byte == EOQ)
        return end_of_queue(s);
    if (s->lead) {
        int lead = s->lead, offset = byte < 0x7F ? 0x40 : 0x41;
        int lead_offset = lead < 0xA0 ? 0x81 : 0xC1;
        s->lead = 0;
        uint32_t cp = 0;
        if (in_range(byte, 0x40, 0x7E) || in_range(byte, 0x80, 0xFC)) {
            int pointer = (lead - lead_offset) * 188 + byte - offset;
            if (pointer >= 8836 && pointer <= 10715)
                return emit(o, (uint32_t)(0xE000 - 8836 + pointer));
            cp = LOOKUP(index_jis0208, pointer);
        }
        return found(o, cp, byte);
    }
    if (is_ascii(byte) || byte == 0x80)
        return emit(o, (uint32_t)byte);
    if (in_range(byte, 0xA1, 0xDF))
        return emit(o, (uint32_t)(0xFF61 - 0xA1 + byte));
    if (in_range(byte, 0x81, 0x9F) || in_range(byte, 0xE0, 0xFC)) {
        s->lead = (uint8_t)byte;
        return CONTINUE;
    }
    return ERROR;
}

static int euc_kr_step(DecoderState *s, Out *o, int byte)
{
    if (byte == EOQ)
        return end_of_queue(s);
    if (s->lead) {
        int lead = s->lead;
        s->lead = 0;
        uint32_t cp = 0;
        if (in_range(byte, 0x41, 0xFE))
            cp = LOOKUP(index_euc_kr, (lead - 0x81) * 190 + (byte - 0x41));
        return found(o, cp, byte);
    }
    if (is_ascii(byte))
        return emit(o, (uint32_t)byte);
    if (in_range(byte, 0x81, 0xFE)) {
        s->lead = (uint8_t)byte;
        return CONTINUE;
    }
    return ERROR;
}

/* UTF-16BE/LE: s->flag says s->lead holds a lead byte */
static int utf16_step(DecoderState *s, Out *o, int byte, int big_endian)
{
    if (byte == EOQ) {
        if (!s->flag && !s->surrogate)
            return FINISHED;
        s->flag = 0;
        s->surrogate = 0;
        return ERROR;
    }
    if (!s->flag) {
        s->lead = (uint8_t)byte;
        s->flag = 1;
        return CONTINUE;
    }
    uint32_t unit = big_endian ? (uint32_t)(s->lead << 8 | byte) : (uint32_t)(byte << 8 | s->lead);
    s->flag = 0;
    if (s->surrogate) {
        uint32_t lead = s->surrogate;
        s->surrogate = 0;
        if (unit >= 0xDC00 && unit <= 0xDFFF)
            return emit(o, 0x10000 + ((lead - 0xD800) << 10) + (unit - 0xDC00));
        int hi = (int)(unit >> 8), lo = (int)(unit & 0xFF);
        prepend(o, big_endian ? hi : lo, big_endian ? lo : hi, 0, 2);
        return ERROR;
    }
    if (unit >= 0xD800 && unit <= 0xDBFF) {
        s->surrogate = (uint16_t)unit;
        return CONTINUE;
    }
    if (unit >= 0xDC00 && unit <= 0xDFFF)
        return ERROR;
    return emit(o, unit);
}

static int step(DecoderState *s, Out *o, int byte)
{
    int enc = s->enc;
    if (enc >= ENC_IBM866 && enc <= ENC_X_MAC_CYRILLIC) {
        if (byte == EOQ)
            return FINISHED;
        if (is_ascii(byte))
            return emit(o, (uint32_t)byte);
        uint32_t cp = single_byte[enc - ENC_IBM866][byte - 0x80];
        return cp ? emit(o, cp) : ERROR;
    }
    switch (enc) {
    case ENC_GBK:
    case ENC_GB18030:
        return gb18030_step(s, o, byte);
    case ENC_BIG5:
        return big5_step(s, o, byte);
    case ENC_EUC_JP:
        return euc_jp_step(s, o, byte);
    case ENC_ISO_2022_JP:
        return iso2022jp_step(s, o, byte);
    case ENC_SHIFT_JIS:
        return shift_jis_step(s, o, byte);
    case ENC_EUC_KR:
        return euc_kr_step(s, o, byte);
    case ENC_UTF_16BE:
    case ENC_UTF_16LE:
        return utf16_step(s, o, byte, enc == ENC_UTF_16BE);
    case ENC_X_USER_DEFINED:
        if (byte == EOQ)
            return FINISHED;
        return emit(o, is_ascii(byte) ? (uint32_t)byte : (uint32_t)(0xF780 + byte - 0x80));
    default:
        return FINISHED;
    }
}

/* whether the decoder, in its present state, gives each ASCII byte as itself (and keeps that
 * state): so a run of them can be copied without a step each */
static int ascii_passes(const DecoderState *s)
{
    switch (s->enc) {
    case ENC_ISO_2022_JP: /* ESC, SO and SI are not themselves; the output flag changes */
    case ENC_UTF_16BE:
    case ENC_UTF_16LE:
        return 0;
    default: /* single-byte, x-user-defined; the multi-byte ones between characters */
        return !s->lead;
    }
}

/* the DecoderState in a state array, or NULL (with a TypeError) when it is not one */
static uint8_t *state_of(JSContext *ctx, JSValueConst v, DecoderState *s)
{
    size_t n;
    uint8_t *p = JS_GetUint8Array(ctx, &n, v);
    if (!p)
        return NULL;
    if (n != sizeof *s) {
        JS_ThrowTypeError(ctx, "not a decoder state");
        return NULL;
    }
    memcpy(s, p, sizeof *s);
    if (s->enc == ENC_UTF_8 || s->enc == ENC_REPLACEMENT || s->enc >= ENC_COUNT ||
        s->iso > ISO_ESC || s->iso_out > ISO_LEAD) {
        JS_ThrowTypeError(ctx, "not a decoder state");
        return NULL;
    }
    return p;
}

/* native.decoderState(id) -> a fresh state (Uint8Array) of a legacy decoder */
static JSValue js_decoder_state(JSContext *ctx, JSValueConst this_val, int argc,
                                JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    int32_t id;
    if (JS_ToInt32(ctx, &id, argv[0]))
        return JS_EXCEPTION;
    if (id <= ENC_UTF_8 || id >= ENC_COUNT || id == ENC_REPLACEMENT)
        return JS_ThrowRangeError(ctx, "no legacy decoder for this encoding");
    DecoderState s = {0};
    s.enc = (uint8_t)id;
    JSValue a = JS_NewUint8ArrayCopy(ctx, (const uint8_t *)&s, sizeof s);
    return a;
}

/*
 * native.legacyDecode(state, bytes: Uint8Array, fatal, flush) -> string, or null when `fatal`
 * and the input is ill-formed. The state is updated in place; without `flush` a sequence
 * left incomplete at the end waits in it for the next chunk.
 */
static JSValue js_legacy_decode(JSContext *ctx, JSValueConst this_val, int argc,
                                JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    int fatal = JS_ToBool(ctx, argv[2]);
    int flush = JS_ToBool(ctx, argv[3]);
    DecoderState s;
    /* both pointers taken with no JavaScript run after: nothing below can free them */
    uint8_t *sp = state_of(ctx, argv[0], &s);
    if (!sp)
        return JS_EXCEPTION;
    size_t n;
    const uint8_t *in = JS_GetUint8Array(ctx, &n, argv[1]);
    if (!in)
        return JS_EXCEPTION;
    if (n > SIZE_MAX / sizeof(uint16_t) / 4)
        return JS_ThrowRangeError(ctx, "input too large");
    Out o = {0};
    o.ctx = ctx;
    o.cap = n + 16; /* about a unit a byte; emit() grows it for more */
    o.p = js_malloc(ctx, o.cap * sizeof(uint16_t));
    if (!o.p)
        return JS_EXCEPTION;
    size_t i = 0;
    int bad = 0, r = CONTINUE;
    for (;;) {
        int byte;
        if (!o.npre && i < n && in[i] < 0x80 && ascii_passes(&s)) {
            size_t end = i;
            while (end < n && in[end] < 0x80)
                end++;
            if (reserve(&o, end - i) < 0) {
                r = -1;
                break;
            }
            while (i < end)
                o.p[o.n++] = in[i++];
            continue;
        }
        if (o.npre)
            byte = o.pre[--o.npre];
        else if (i < n)
            byte = in[i++];
        else if (flush)
            byte = EOQ;
        else
            break;
        r = step(&s, &o, byte);
        if (r < 0)
            break;
        if (r == ERROR) {
            bad = 1;
            if (fatal || emit(&o, REPLACEMENT) < 0)
                break;
        } else if (r == FINISHED) {
            break;
        }
    }
    JSValue str;
    if (r < 0)
        str = JS_EXCEPTION; /* out of memory, thrown by js_realloc */
    else
        str = fatal && bad ? JS_NULL : JS_NewStringUTF16(ctx, o.p, o.n);
    js_free(ctx, o.p);
    memcpy(sp, &s, sizeof s);
    return str;
}

/* native.encodingFind(label) -> [id, name] of the label's encoding, or null (the Standard's
 * "get an encoding": ASCII whitespace trimmed, ASCII case-insensitive) */
static JSValue js_encoding_find(JSContext *ctx, JSValueConst this_val, int argc,
                                JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    size_t n;
    const char *s = JS_ToCStringLen(ctx, &n, argv[0]);
    if (!s)
        return JS_EXCEPTION;
    size_t a = 0, b = n;
    while (a < b && strchr("\t\n\f\r ", s[a]) && s[a])
        a++;
    while (b > a && strchr("\t\n\f\r ", s[b - 1]) && s[b - 1])
        b--;
    char key[32];
    int id = -1;
    if (b - a < sizeof key) {
        for (size_t k = a; k < b; k++)
            key[k - a] = s[k] >= 'A' && s[k] <= 'Z' ? (char)(s[k] + 32) : s[k];
        key[b - a] = 0;
        for (size_t k = 0; k < sizeof encoding_labels / sizeof encoding_labels[0]; k++) {
            if (strlen(encoding_labels[k].label) == b - a && !memcmp(encoding_labels[k].label, key, b - a)) {
                id = encoding_labels[k].id;
                break;
            }
        }
    }
    JS_FreeCString(ctx, s);
    if (id < 0)
        return JS_NULL;
    JSValue pair = JS_NewArray(ctx);
    if (JS_IsException(pair))
        return pair;
    JS_SetPropertyUint32(ctx, pair, 0, JS_NewInt32(ctx, id));
    JS_SetPropertyUint32(ctx, pair, 1, JS_NewString(ctx, encoding_names[id]));
    return pair;
}

static const JSCFunctionListEntry legacy_natives[] = {
    JS_CFUNC_DEF("encodingFind", 1, js_encoding_find),
    JS_CFUNC_DEF("decoderState", 1, js_decoder_state),
    JS_CFUNC_DEF("legacyDecode", 4, js_legacy_decode),
};

int web_encoding_legacy_natives(JSContext *ctx, JSValueConst native)
{
    return JS_SetPropertyFunctionList(ctx, native, legacy_natives,
                                      sizeof legacy_natives / sizeof legacy_natives[0]);
}

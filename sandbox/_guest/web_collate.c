/*
 * The compare of Intl.Collator (_guest/web/intl_collator.js): the Unicode Collation Algorithm
 * (UTS #10) over the root table (DUCET 10.0.0 from the pinned pyuca wheel, turned into
 * collation.inc by sandbox/_collation_tables.py at build time), its levels compared one
 * after the other: primary, then secondary (accents), then tertiary (case and variants) or a
 * case level, as the collator's sensitivity asks (no quaternary or identical level: ICU
 * compares none by default either). A few letters of es, pl and tr are tailored, ru, ar,
 * hi, ko, ja and zh put their scripts first, ja's kana variants differ less, and fr-CA
 * compares accents from the end (below).
 *
 * Each level is one pass over both strings' collation elements, produced on the fly (longest
 * contiguous contraction, or one of two code points that takes an unblocked mark further on;
 * expansions; implicit weights for code points the table does not list): linear in the input,
 * with no allocation but the strings' code points (NFD, by QuickJS's own normalizer, for a
 * string that is not ASCII). ASCII needs neither normalizing nor contractions, so two ASCII
 * strings are compared straight from their bytes. The tables are read-only data that
 * only a compare of non-ASCII text reads much of.
 */
#include <string.h>
#include "guest.h"
#include "libunicode.h"
#include "collation.inc"

#define COLL_INDIRECT 0x80000000u
#define COLL_HEAD 0x40000000u

/* flags from intl_collator.js */
#define COLL_NUMERIC 1      /* digit runs compare by value */
#define COLL_SHIFTED 2      /* ignorePunctuation: variable elements are ignored */
#define COLL_UPPER_FIRST 4  /* caseFirst "upper" */
#define COLL_LOWER_FIRST 8  /* caseFirst "lower" */
/* bits 4-5: the locale's tailoring (TAILORINGS); bits 6-8 its reordering (REORDERINGS) */
#define COLL_BACKWARDS 0x200 /* fr-CA: accents compared from the end */

/* sensitivities */
enum { SENS_BASE, SENS_ACCENT, SENS_CASE, SENS_VARIANT };
enum { LEVEL_PRIMARY, LEVEL_SECONDARY, LEVEL_TERTIARY, LEVEL_CASE };

/* A primary is the table's shifted left by COLL_TAILOR_BITS: a locale's tailoring puts its
 * letters between two of the table's primaries (base primary + rank). */
#define COLL_TAILOR_BITS 8

typedef struct {
    uint16_t first, second; /* the letter in NFD: a code point, and a mark or 0 */
    uint16_t base;          /* the letter it sorts after (rank > 0), before (< 0) or as (0) */
    int8_t rank;
    bool upper;
} CollTailoring;

/* CLDR's tailorings of the shipped locales that give a letter a primary of its own (a letter
 * with a mark before the same letter alone) */
static const CollTailoring TAILOR_ES[] = {
    { 'n', 0x303, 'n', 1, false }, { 'N', 0x303, 'n', 1, true }, /* ñ after n */
    { 0, 0, 0, 0, false },
};
static const CollTailoring TAILOR_PL[] = {
    { 'a', 0x328, 'a', 1, false }, { 'A', 0x328, 'a', 1, true },     /* ą */
    { 'c', 0x301, 'c', 1, false }, { 'C', 0x301, 'c', 1, true },     /* ć */
    { 'e', 0x328, 'e', 1, false }, { 'E', 0x328, 'e', 1, true },     /* ę */
    { 0x142, 0, 'l', 1, false },   { 0x141, 0, 'l', 1, true },       /* ł */
    { 'n', 0x301, 'n', 1, false }, { 'N', 0x301, 'n', 1, true },     /* ń */
    { 'o', 0x301, 'o', 1, false }, { 'O', 0x301, 'o', 1, true },     /* ó */
    { 's', 0x301, 's', 1, false }, { 'S', 0x301, 's', 1, true },     /* ś */
    { 'z', 0x301, 'z', 1, false }, { 'Z', 0x301, 'z', 1, true },     /* ź */
    { 'z', 0x307, 'z', 2, false }, { 'Z', 0x307, 'z', 2, true },     /* ż after ź */
    { 0, 0, 0, 0, false },
};
static const CollTailoring TAILOR_TR[] = {
    { 'c', 0x327, 'c', 1, false }, { 'C', 0x327, 'c', 1, true },     /* ç */
    { 'g', 0x306, 'g', 1, false }, { 'G', 0x306, 'g', 1, true },     /* ğ */
    { 'I', 0x307, 'i', 0, true },                                    /* İ: the capital of i */
    { 0x131, 0, 'i', -1, false },  { 'I', 0, 'i', -1, true },        /* ı, its capital I */
    { 'o', 0x308, 'o', 1, false }, { 'O', 0x308, 'o', 1, true },     /* ö */
    { 's', 0x327, 's', 1, false }, { 'S', 0x327, 's', 1, true },     /* ş */
    { 'u', 0x308, 'u', 1, false }, { 'U', 0x308, 'u', 1, true },     /* ü */
    { 0, 0, 0, 0, false },
};
/* CLDR's [reorder ...] of a locale: up to three scripts (COLL_SCRIPTS: 0 Latn, 1 Cyrl, 2 Arab,
 * 3 Deva, 4 Hang, 5 Kana, 6 Hani) go, in this order, before every other script's letters;
 * by the flags' reordering number (intl_collator.js: 1 ru, 2 ar, 3 hi, 4 ko, 5 ja, 6 zh) */
static const int8_t REORDERINGS[][3] = {
    { -1, -1, -1 }, { 1, -1, -1 }, { 2, -1, -1 }, { 3, -1, -1 },
    { 4, 6, -1 },   { 0, 5, 6 },   { 6, -1, -1 },
};
#define COLL_REORDERING(flags) (((flags) >> 6) & 7)

/* by the flags' tailoring number (intl_collator.js: 1 es, 2 pl, 3 tr) */
static const CollTailoring *const TAILORINGS[] = { NULL, TAILOR_ES, TAILOR_PL, TAILOR_TR };
#define COLL_TAILORING(flags) (((flags) >> 4) & 3)

typedef struct {
    uint32_t p; /* 32 bits: a number's length is one primary */
    uint16_t s, t;
    bool variable;
} CollElement;

typedef struct {
    const uint8_t *u8;   /* ASCII input, or */
    const uint32_t *u32; /* code points, NFD */
    size_t n, i;
    size_t number_end;   /* inside a digit run before this index */
    size_t skip;         /* a mark a discontiguous contraction took (0: none) */
    const uint32_t *expansion;
    uint32_t expansion_n;
    CollElement extra[2]; /* implicit weights or a number's two leading elements */
    uint32_t extra_n, extra_i;
    int flags;
    const CollTailoring *tailoring;
    const int8_t *reordering; /* NULL: the table's order */
    bool kana_alike;          /* ja: hiragana, katakana and halfwidth kana alike (tertiary) */
    bool after_variable;
} CollIter;

static uint32_t coll_lookup(uint32_t c)
{
    if ((c >> COLL_BLOCK_BITS) >= COLL_INDEX_SIZE)
        return 0;
    return COLL_BLOCKS[((uint32_t)COLL_INDEX[c >> COLL_BLOCK_BITS] << COLL_BLOCK_BITS) |
                       (c & ((1u << COLL_BLOCK_BITS) - 1))];
}

/* a table primary as the iterator's: reordered (the group's rank above the table's 16 bits),
 * then shifted for the tailorings */
static uint32_t coll_p(const CollIter *it, uint32_t p)
{
    if (it->reordering && p >= COLL_LETTERS) {
        uint32_t rank = 4;
        for (uint32_t k = 0; k < 3 && it->reordering[k] >= 0; k++) {
            const uint32_t *range = &COLL_SCRIPTS[2 * it->reordering[k]];
            if (p >= range[0] && p <= range[1]) {
                rank = k + 1;
                break;
            }
        }
        p |= rank << 16;
    }
    return p << COLL_TAILOR_BITS;
}

static CollElement coll_unpack(const CollIter *it, uint32_t v)
{
    CollElement e = { coll_p(it, v >> 15), (v >> 6) & 0x1FF, (v >> 1) & 0x1F, v & 1 };
    return e;
}

static bool coll_is_han(uint32_t c)
{
    for (int i = 0; i < COLL_HAN_RANGES; i++)
        if (c >= COLL_HAN[2 * i] && c <= COLL_HAN[2 * i + 1])
            return true;
    return false;
}

/* the value of the range of `table` (start, end, value triples) holding c, or 0 */
static uint32_t coll_range(const uint32_t *table, int count, uint32_t c)
{
    int lo = 0, hi = count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (c < table[3 * mid])
            hi = mid - 1;
        else if (c > table[3 * mid + 1])
            lo = mid + 1;
        else
            return table[3 * mid + 2];
    }
    return 0;
}

static uint32_t coll_ccc(uint32_t c)
{
    return c < 0x300 ? 0 : coll_range(COLL_CCC, COLL_CCC_RANGES, c);
}

/* UTS #10 section 10.1.3: the two elements of a code point the table does not list */
static void coll_implicit(CollIter *it, uint32_t c)
{
    uint32_t base, rest;
    if (c >= 0x17000 && c <= 0x18AFF) {
        base = 0xFB00; /* Tangut */
        rest = c - 0x17000;
    } else if (c >= 0x1B170 && c <= 0x1B2FF) {
        base = 0xFB01; /* Nushu */
        rest = c - 0x1B170;
    } else {
        bool han = coll_is_han(c);
        bool core = (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF);
        base = (han ? (core ? 0xFB40 : 0xFB80) : 0xFBC0) + (c >> 15);
        rest = c & 0x7FFF;
    }
    it->extra[0] = (CollElement){ coll_p(it, base), 0x20, 0x02, false };
    it->extra[1] = (CollElement){ (rest | 0x8000) << COLL_TAILOR_BITS, 0, 0, false };
    it->extra_n = 2;
    it->extra_i = 0;
}

static inline uint32_t coll_at(const CollIter *it, size_t i)
{
    return it->u8 ? it->u8[i] : it->u32[i];
}

/* the digit value of a code point and its table value, or -1: a decimal digit (Nd) only, so
 * that superscripts and circled digits stay symbols, as in ICU */
static int coll_digit(uint32_t c, uint32_t v)
{
    if (!v || (v & COLL_INDIRECT))
        return -1;
    if (c >= 0x80 && !coll_range(COLL_DECIMAL, COLL_DECIMAL_RANGES, c))
        return -1;
    uint32_t p = v >> 15;
    return p >= COLL_DIGIT_ZERO && p <= COLL_DIGIT_ZERO + 9 ? (int)(p - COLL_DIGIT_ZERO) : -1;
}

/* Numeric collation: a run of digits becomes one element standing for "a number", one whose
 * primary is its count of significant digits, then the significant digits themselves, so
 * that numbers compare by value and leading zeros count for nothing. */
static void coll_number(CollIter *it, uint32_t first)
{
    size_t i = it->i, end = i;
    while (end < it->n && coll_digit(coll_at(it, end), coll_lookup(coll_at(it, end))) >= 0)
        end++;
    while (i < end && coll_digit(coll_at(it, i), coll_lookup(coll_at(it, i))) == 0)
        i++;
    CollElement digit = coll_unpack(it, first);
    it->extra[0] = (CollElement){ COLL_DIGIT_ZERO << COLL_TAILOR_BITS, digit.s, digit.t, false };
    it->extra[1] = (CollElement){ (uint32_t)(end - i) + 1, 0x20, 0x02, false };
    it->extra_n = 2;
    it->extra_i = 0;
    it->i = i;
    it->number_end = end;
}

/* UTS #10 S2.1.1-S2.1.3: the index of `mark` among the non-starters after the starter `c` at
 * the input's position, when no mark between blocks it (NFD orders marks by combining class,
 * so only one of the same class right before it can), or 0. A mark already taken this way,
 * a starter that is not one, and a mark past the 30 that stream-safe text allows are not
 * searched: linear whatever the input. */
static size_t coll_discontiguous(const CollIter *it, uint32_t c, uint32_t mark)
{
    if (it->skip || it->u8 || coll_ccc(c) || it->i + 2 >= it->n)
        return 0;
    uint32_t prev = coll_ccc(coll_at(it, it->i + 1));
    for (size_t j = it->i + 2; prev && j < it->n && j < it->i + 32; j++) {
        uint32_t d = coll_at(it, j), cc = coll_ccc(d);
        if (!cc)
            return 0;
        if (cc != prev && d == mark)
            return j;
        prev = cc;
    }
    return 0;
}

/* the table's primary of a letter (its first element's) */
static uint32_t coll_primary(uint32_t c)
{
    uint32_t v = coll_lookup(c);
    if ((v & COLL_INDIRECT) && (v & COLL_HEAD))
        v = COLL_HEADS[3 * (v & (COLL_HEAD - 1))];
    if ((v & COLL_INDIRECT) && (v & 31))
        v = COLL_CES[(v >> 5) & 0x1FFFFFF];
    return v & COLL_INDIRECT ? 0 : v >> 15;
}

/* the element of a tailored letter at the input's position (which it then passes), if any */
static bool coll_tailored(CollIter *it, uint32_t c, CollElement *out)
{
    const CollTailoring *t = it->tailoring;
    for (; t->first; t++) {
        if (t->first != c)
            continue;
        size_t len = t->second ? 2 : 1, j = 0;
        if (t->second && (it->i + 1 >= it->n || coll_at(it, it->i + 1) != t->second)) {
            j = coll_discontiguous(it, c, t->second);
            if (!j)
                continue;
            len = 1;
        }
        if (j)
            it->skip = j;
        uint32_t base = coll_primary(t->base);
        *out = (CollElement){ coll_p(it, base) + t->rank, 0x20, t->upper ? 0x08 : 0x02,
                              false };
        it->i += len;
        return true;
    }
    return false;
}

/* the next collation element; false at the end */
static bool coll_next(CollIter *it, CollElement *out)
{
    for (;;) {
        if (it->extra_i < it->extra_n) {
            *out = it->extra[it->extra_i++];
            return true;
        }
        if (it->expansion_n) {
            it->expansion_n--;
            *out = coll_unpack(it, *it->expansion++);
            return true;
        }
        if (it->skip && it->i == it->skip) {
            it->skip = 0;
            it->i++;
            continue;
        }
        if (it->i >= it->n)
            return false;
        uint32_t c = coll_at(it, it->i);
        if (it->tailoring && coll_tailored(it, c, out))
            return true;
        uint32_t v = coll_lookup(c);
        size_t used = 1;
        if ((v & COLL_INDIRECT) && (v & COLL_HEAD)) {
            const uint32_t *head = &COLL_HEADS[3 * (v & (COLL_HEAD - 1))];
            v = head[0];
            for (uint32_t k = 0; k < head[2]; k++) {
                const uint32_t *m = &COLL_CONTRACTIONS[3 * (head[1] + k)];
                size_t len = m[1] ? 3 : 2;
                if (it->i + len <= it->n && coll_at(it, it->i + 1) == m[0] &&
                    (len == 2 || coll_at(it, it->i + 2) == m[1])) {
                    v = m[2];
                    used = len;
                    break;
                }
            }
            for (uint32_t k = 0; used == 1 && k < head[2]; k++) {
                const uint32_t *m = &COLL_CONTRACTIONS[3 * (head[1] + k)];
                size_t j = m[1] ? 0 : coll_discontiguous(it, c, m[0]);
                if (j) {
                    v = m[2];
                    it->skip = j;
                }
                if (j)
                    break;
            }
        }
        if ((it->flags & COLL_NUMERIC) && it->i >= it->number_end && coll_digit(c, v) >= 0) {
            coll_number(it, v);
            continue;
        }
        it->i += used;
        if (!v) {
            coll_implicit(it, c);
        } else if (!(v & COLL_INDIRECT)) {
            *out = coll_unpack(it, v);
            return true;
        } else {
            it->expansion = &COLL_CES[(v >> 5) & 0x1FFFFFF];
            it->expansion_n = v & 31;
        }
    }
}

/* UTS #10's tertiary weights of upper-case variants */
static bool coll_upper(uint32_t t)
{
    return (t >= 0x08 && t <= 0x0C) || t == 0x1E;
}

/* ja's tertiary weight of kana: CLDR's ja tailoring makes hiragana, katakana and halfwidth
 * katakana differ at the quaternary level only (which is not compared), small and normal
 * kana still at the tertiary */
static uint32_t coll_kana_tertiary(uint32_t t)
{
    if (t == 0x0F || t == 0x10)
        return 0x0D; /* small katakana, small halfwidth katakana: as small hiragana */
    if (t == 0x11 || t == 0x12)
        return 0x0E; /* katakana, halfwidth katakana: as hiragana */
    return t;
}

/* the next non-zero weight of the level; 0 at the end */
static uint32_t coll_weight(CollIter *it, int level)
{
    CollElement e;
    while (coll_next(it, &e)) {
        if (it->flags & COLL_SHIFTED) {
            if (e.p == 0 && it->after_variable)
                continue;
            if (e.variable && e.p <= (COLL_VARIABLE_TOP << COLL_TAILOR_BITS)) {
                it->after_variable = true;
                continue;
            }
            if (e.p)
                it->after_variable = false;
        }
        uint32_t w;
        switch (level) {
        case LEVEL_PRIMARY:
            w = e.p;
            break;
        case LEVEL_SECONDARY:
            w = e.s;
            break;
        case LEVEL_TERTIARY:
            w = e.t;
            if (it->kana_alike)
                w = coll_kana_tertiary(w);
            if (w && (it->flags & COLL_UPPER_FIRST))
                w |= coll_upper(e.t) ? 0 : 0x20;
            else if (w && (it->flags & COLL_LOWER_FIRST))
                w |= coll_upper(e.t) ? 0x20 : 0;
            break;
        default: /* the case level: lower first unless upper first */
            w = e.p ? (coll_upper(e.t) == !(it->flags & COLL_UPPER_FIRST) ? 2 : 1) : 0;
            break;
        }
        if (w)
            return w;
    }
    return 0;
}

static int coll_level(const CollIter *a0, const CollIter *b0, int level)
{
    CollIter a = *a0, b = *b0;
    for (;;) {
        uint32_t wa = coll_weight(&a, level), wb = coll_weight(&b, level);
        if (wa != wb)
            return wa < wb ? -1 : 1;
        if (!wa)
            return 0;
    }
}

/* the secondary weights of a string, into out (when not NULL); their count */
static size_t coll_secondaries(const CollIter *it0, uint16_t *out)
{
    CollIter it = *it0;
    size_t n = 0;
    for (uint32_t w; (w = coll_weight(&it, LEVEL_SECONDARY)); n++)
        if (out)
            out[n] = (uint16_t)w;
    return n;
}

/* the secondary level compared from the end (fr-CA's [backwards 2]); the weights are kept
 * (at most one per collation element, so proportional to the input); -2 when out of memory */
static int coll_backwards(JSContext *ctx, const CollIter *a, const CollIter *b)
{
    size_t na = coll_secondaries(a, NULL), nb = coll_secondaries(b, NULL);
    uint16_t *w = js_malloc(ctx, (na + nb + 1) * sizeof *w);
    if (!w)
        return -2;
    coll_secondaries(a, w);
    coll_secondaries(b, w + na);
    int r = 0;
    size_t i = na, j = nb;
    for (; i && j && !r; i--, j--)
        if (w[i - 1] != w[na + j - 1])
            r = w[i - 1] < w[na + j - 1] ? -1 : 1;
    if (!r && (i || j))
        r = i ? 1 : -1;
    js_free(ctx, w);
    return r;
}

/* -1, 0 or 1; -2 when out of memory (an exception is pending) */
static int coll_compare(JSContext *ctx, const CollIter *a, const CollIter *b, int sensitivity)
{
    int r = coll_level(a, b, LEVEL_PRIMARY);
    if (r || sensitivity == SENS_BASE)
        return r;
    if (sensitivity == SENS_CASE)
        return coll_level(a, b, LEVEL_CASE);
    r = (a->flags & COLL_BACKWARDS) ? coll_backwards(ctx, a, b) : coll_level(a, b, LEVEL_SECONDARY);
    if (r || sensitivity == SENS_ACCENT)
        return r;
    return coll_level(a, b, LEVEL_TERTIARY);
}

static bool coll_ascii(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80)
            return false;
    return true;
}

/* the normalizer's allocator: the run's, so its memory limit bounds it */
static void *coll_realloc(void *opaque, void *ptr, size_t size)
{
    return js_realloc(opaque, ptr, size);
}

/* the string's code points in NFD (*out, to free with js_free), or -1 with an exception */
static int coll_nfd(JSContext *ctx, const uint16_t *s, size_t n, uint32_t **out)
{
    *out = NULL;
    if (n > INT32_MAX / 4) {
        JS_ThrowRangeError(ctx, "string too long to compare");
        return -1;
    }
    uint32_t *cps = js_malloc(ctx, (n ? n : 1) * sizeof *cps);
    if (!cps)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = s[i];
        if (c >= 0xD800 && c < 0xDC00 && i + 1 < n && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000)
            c = 0x10000 + ((c - 0xD800) << 10) + (s[++i] - 0xDC00);
        cps[m++] = c;
    }
    if (!m) {
        js_free(ctx, cps);
        return 0;
    }
    int r = unicode_normalize(out, cps, (int)m, UNICODE_NFD, ctx, coll_realloc);
    js_free(ctx, cps);
    if (r < 0 && !JS_HasException(ctx))
        JS_ThrowOutOfMemory(ctx);
    return r;
}

/* two strings that are not both ASCII: their code points in NFD, compared */
static int coll_compare_text(JSContext *ctx, CollIter *a, CollIter *b, JSValueConst *argv,
                             int sensitivity)
{
    size_t na, nb;
    const uint16_t *sa = JS_ToCStringLenUTF16(ctx, &na, argv[0]);
    if (!sa)
        return -2;
    const uint16_t *sb = JS_ToCStringLenUTF16(ctx, &nb, argv[1]);
    if (!sb) {
        JS_FreeCStringUTF16(ctx, sa);
        return -2;
    }
    uint32_t *ca = NULL, *cb = NULL;
    int la = coll_nfd(ctx, sa, na, &ca);
    int lb = la < 0 ? -1 : coll_nfd(ctx, sb, nb, &cb);
    JS_FreeCStringUTF16(ctx, sa);
    JS_FreeCStringUTF16(ctx, sb);
    int r = -2;
    if (la >= 0 && lb >= 0) {
        a->u32 = ca;
        a->n = (size_t)la;
        b->u32 = cb;
        b->n = (size_t)lb;
        r = coll_compare(ctx, a, b, sensitivity);
    }
    js_free(ctx, ca);
    js_free(ctx, cb);
    return r;
}

/* native.collate(a: string, b: string, sensitivity: 0-3, flags) -> -1 | 0 | 1 */
static JSValue js_collate(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    (void)argc;
    int32_t sensitivity, flags;
    if (JS_ToInt32(ctx, &sensitivity, argv[2]) || JS_ToInt32(ctx, &flags, argv[3]))
        return JS_EXCEPTION;
    CollIter a, b;
    memset(&a, 0, sizeof a);
    a.flags = flags;
    a.tailoring = TAILORINGS[COLL_TAILORING(flags)];
    a.kana_alike = COLL_REORDERING(flags) == 5;
    a.reordering = COLL_REORDERING(flags) && COLL_REORDERING(flags) < 7
                       ? REORDERINGS[COLL_REORDERING(flags)]
                       : NULL;
    b = a;
    /* ASCII first: QuickJS hands out an ASCII string's own bytes, without a copy */
    size_t na, nb;
    const char *sa = JS_ToCStringLen(ctx, &na, argv[0]);
    if (!sa)
        return JS_EXCEPTION;
    const char *sb = JS_ToCStringLen(ctx, &nb, argv[1]);
    if (!sb) {
        JS_FreeCString(ctx, sa);
        return JS_EXCEPTION;
    }
    int r;
    if (coll_ascii((const uint8_t *)sa, na) && coll_ascii((const uint8_t *)sb, nb)) {
        a.u8 = (const uint8_t *)sa;
        a.n = na;
        b.u8 = (const uint8_t *)sb;
        b.n = nb;
        r = coll_compare(ctx, &a, &b, sensitivity);
        JS_FreeCString(ctx, sa);
        JS_FreeCString(ctx, sb);
    } else {
        JS_FreeCString(ctx, sa);
        JS_FreeCString(ctx, sb);
        r = coll_compare_text(ctx, &a, &b, argv, sensitivity);
    }
    return r == -2 ? JS_EXCEPTION : JS_NewInt32(ctx, r);
}

int web_collate_natives(JSContext *ctx, JSValueConst native)
{
    return JS_SetPropertyStr(ctx, native, "collate",
                             JS_NewCFunction(ctx, js_collate, "collate", 4)) < 0 ? -1 : 0;
}

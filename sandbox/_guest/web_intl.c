/*
 * The C side of Intl (_guest/web/intl.js): the formatjs polyfills and their CLDR data, as
 * sandbox/_intl_data.py generated them at build time from the pinned npm packages. Each entry
 * stays in the module's data until a run asks for it with native.intlLoad(name), so a run that
 * never uses Intl touches none of its pages, and one that does touches only what it loads.
 *
 * The 'b' entries (the modules a first number format loads) are compiled at build time
 * (web_intl_natives runs in qj_init) into QuickJS bytecode without source text, kept in plain
 * heap blocks (the snapshot holds them; a run that does not load them never touches their
 * pages): reading bytecode is faster than parsing the source, which the first
 * toLocaleString of a run would otherwise pay. The others are compiled when loaded: compiling
 * them all at build time left ~6 MB of the compiler's garbage in the linear memory every run
 * starts with. The JSON entries are parsed when loaded. Every entry is stored LZ77-packed
 * (about 2.7x smaller: the static data is linear memory, which a run's memory limit counts)
 * and expanded into a temporary block when loaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "guest.h"

typedef struct {
    const char *name;
    char type; /* 'b' a module (a function's source) compiled at build time, 'm' one compiled
                  when loaded, 'e' an expression, 'j' JSON text */
    const char *text; /* the entry, in sandbox/_intl_data.py's LZ77 format */
    size_t len;
    size_t raw; /* its size expanded */
} IntlEntry;

/* sorted by name (strcmp order), for the binary search */
static const IntlEntry intl_entries[] = {
#include "intl.inc"
};
#define N_ENTRIES (sizeof intl_entries / sizeof intl_entries[0])

/* each code entry's bytecode (malloc'd at build time, never freed), by index */
static struct {
    uint8_t *bc;
    size_t len;
} intl_bytecode[N_ENTRIES];

static const IntlEntry *find_entry(const char *name)
{
    size_t lo = 0, hi = N_ENTRIES;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, intl_entries[mid].name);
        if (!c)
            return &intl_entries[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static size_t varint(const uint8_t *p, size_t n, size_t *pos, int *bad)
{
    size_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*pos >= n) {
            *bad = 1;
            return 0;
        }
        uint8_t b = p[(*pos)++];
        v |= (size_t)(b & 0x7F) << shift;
        if (b < 0x80)
            return v;
    }
    *bad = 1;
    return 0;
}

/* The entry's text, expanded into a new NUL-terminated block (free() it); NULL if it does not
 * expand to its size (the table is generated at build time: a bug, never the program) */
static char *lz_expand(const IntlEntry *e)
{
    const uint8_t *p = (const uint8_t *)e->text;
    char *out = malloc(e->raw + 1);
    if (!out)
        return NULL;
    size_t pos = 0, o = 0;
    int bad = 0;
    for (;;) {
        size_t count = varint(p, e->len, &pos, &bad);
        if (bad || count > e->len - pos || count > e->raw - o)
            break;
        memcpy(out + o, p + pos, count);
        pos += count;
        o += count;
        if (pos == e->len) {
            if (o != e->raw)
                break;
            out[o] = 0;
            return out;
        }
        size_t m = varint(p, e->len, &pos, &bad);
        size_t d = varint(p, e->len, &pos, &bad);
        if (bad || d == 0 || d > o || m > e->raw - o)
            break;
        for (size_t k = 0; k < m; k++, o++) /* overlapping copies repeat: byte by byte */
            out[o] = out[o - d];
    }
    free(out);
    return NULL;
}

/* intlLoad(name) -> the entry's value: a module's function, an expression's value or the
 * parsed JSON; undefined for a name the table does not have. Compiled without its source text
 * kept (web_eval_stripped), as the web files are. */
static JSValue js_intl_load(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    if (argc < 1 || !JS_IsString(argv[0]))
        return JS_UNDEFINED;
    const char *name = JS_ToCString(ctx, argv[0]);
    if (!name)
        return JS_EXCEPTION;
    const IntlEntry *e = find_entry(name);
    JSValue r = JS_UNDEFINED;
    char *text = NULL;
    if (e && e->type != 'b' && !(text = lz_expand(e))) {
        JS_FreeCString(ctx, name);
        return JS_ThrowInternalError(ctx, "Intl data could not be read");
    }
    if (e && e->type == 'j') {
        r = JS_ParseJSON(ctx, text, e->raw, "<quickjail:intl>");
    } else if (e && e->type == 'b') {
        size_t i = (size_t)(e - intl_entries);
        JSValue fn = JS_ReadObject(ctx, intl_bytecode[i].bc, intl_bytecode[i].len,
                                   JS_READ_OBJ_BYTECODE);
        r = JS_IsException(fn) ? fn : JS_EvalFunction(ctx, fn);
    } else if (e) {
        char filename[128];
        snprintf(filename, sizeof filename, "<quickjail:intl/%s>", e->name);
        r = web_eval_stripped(ctx, text, e->raw, filename);
    }
    free(text);
    JS_FreeCString(ctx, name);
    return r;
}

/* Compile the 'b' entries to bytecode (build time); a syntax error fails the build. */
static int precompile(JSContext *ctx)
{
    for (size_t i = 0; i < N_ENTRIES; i++) {
        const IntlEntry *e = &intl_entries[i];
        if (e->type != 'b')
            continue;
        char filename[128];
        snprintf(filename, sizeof filename, "<quickjail:intl/%s>", e->name);
        char *text = lz_expand(e);
        if (!text)
            return -1;
        JSValue fn = JS_Eval(ctx, text, e->raw, filename,
                             JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
        free(text);
        if (JS_IsException(fn))
            return -1;
        size_t n;
        uint8_t *bc = JS_WriteObject(ctx, &n, fn,
                                     JS_WRITE_OBJ_BYTECODE | JS_WRITE_OBJ_STRIP_SOURCE);
        JS_FreeValue(ctx, fn);
        if (!bc)
            return -1;
        /* a plain block: not counted as the runtime's (a run's memory limit) */
        intl_bytecode[i].bc = malloc(n);
        if (!intl_bytecode[i].bc) {
            js_free(ctx, bc);
            return -1;
        }
        memcpy(intl_bytecode[i].bc, bc, n);
        intl_bytecode[i].len = n;
        js_free(ctx, bc);
    }
    return 0;
}

int web_intl_natives(JSContext *ctx, JSValueConst native)
{
    if (precompile(ctx))
        return -1;
    return JS_SetPropertyStr(ctx, native, "intlLoad",
                             JS_NewCFunction(ctx, js_intl_load, "intlLoad", 1)) < 0 ? -1 : 0;
}

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
 * starts with. The JSON entries are parsed when loaded. Every entry is stored as raw deflate
 * (about 4x smaller: the static data is linear memory, which a run's memory limit counts, and
 * the more of it, the more an idle sandbox costs) and inflated into a temporary block when
 * loaded, with the zlib CompressionStream uses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zlib.h"
#include "guest.h"

typedef struct {
    const char *name;
    char type; /* 'b' a module (a function's source) compiled at build time, 'm' one compiled
                  when loaded, 'e' an expression, 'j' JSON text */
    const char *text; /* the entry, raw deflate (sandbox/_intl_data.py's pack) */
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

static voidpf intl_zalloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return items && size > SIZE_MAX / items ? NULL : malloc((size_t)items * size);
}

static void intl_zfree(voidpf opaque, voidpf p)
{
    (void)opaque;
    free(p);
}

/* The entry's text, inflated (zlib's raw deflate, the pinned zlib CompressionStream uses) into
 * a new NUL-terminated block (free() it); NULL if memory ran out or it does not inflate to its
 * size (the table is generated at build time: a bug, never the program) */
static char *entry_text(const IntlEntry *e)
{
    char *out = malloc(e->raw + 1);
    if (!out)
        return NULL;
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = intl_zalloc;
    z.zfree = intl_zfree;
    if (inflateInit2(&z, -15) != Z_OK) {
        free(out);
        return NULL;
    }
    z.next_in = (Bytef *)e->text;
    z.avail_in = (uInt)e->len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)e->raw;
    int rc = inflate(&z, Z_FINISH);
    size_t got = e->raw - z.avail_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || got != e->raw) {
        free(out);
        return NULL;
    }
    out[e->raw] = 0;
    return out;
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
    if (e && e->type != 'b' && !(text = entry_text(e))) {
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
        char *text = entry_text(e);
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

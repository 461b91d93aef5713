/*
 * Modules: every module comes from the host (QJ_OP_MODULE) as source, as bytecode of a
 * compile batch, as a host module whose exports are host values, or, imported
 * `with { type: "json" }`, as a JSON module parsed from the text the host holds.
 */
#include <string.h>
#include <stdlib.h>
#include "guest.h"

/* Append the "/"-separated segments of s[0..n) to out[0..*o), folding "." and ".." (and
 * empty segments). Returns -1 when ".." climbs above the graph's root. */
static int fold_segments(char *out, size_t *o, const char *s, size_t n)
{
    size_t i = 0;
    for (;;) {
        const char *e = memchr(s + i, '/', n - i);
        size_t sl = e ? (size_t)(e - (s + i)) : n - i;
        const char *seg = s + i;
        if (sl == 0 || (sl == 1 && seg[0] == '.')) {
            /* skip */
        } else if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
            if (*o == 0)
                return -1;
            char *p = memrchr(out, '/', *o);
            *o = p ? (size_t)(p - out) : 0;
        } else {
            if (*o)
                out[(*o)++] = '/';
            memcpy(out + *o, seg, sl);
            *o += sl;
        }
        if (!e)
            return 0;
        i += sl + 1;
    }
}

/* Two namespaces share QuickJS's module names: a bare specifier names a host module (the
 * run's imports) and a relative one a module of the graph, so "./lib" and "lib" both become
 * "lib". The host answers each load from the namespace of the specifier's form
 * (QJ_MODULE_BARE), and a name already loaded from one namespace is never the other's: a
 * specifier of the other form normalizes to QJ_NOT_FOUND + the specifier. */
enum { FROM_GRAPH = 0, FROM_HOST = 1 };
/* the form module_normalize resolved last: QuickJS calls the loader right after it, for that
 * name, when no module of the name is loaded yet */
static int last_form;
typedef struct {
    char *name;
    int form;
} Loaded;
static Loaded *loaded; /* every module loaded in this run, with its namespace */
static uint32_t nloaded, loaded_cap;

/* The namespace the module `name` was loaded from, or -1 when none is loaded. */
static int loaded_form(const char *name)
{
    for (uint32_t i = 0; i < nloaded; i++)
        if (strcmp(loaded[i].name, name) == 0)
            return loaded[i].form;
    return -1;
}

/* Remember that `name` was loaded from `form`'s namespace. Returns -1 (an exception pending)
 * when out of memory: the load fails rather than leave a name whose namespace is unknown. */
int module_remember(JSContext *ctx, const char *name, int from_host)
{
    if (loaded_form(name) >= 0)
        return 0;
    if (nloaded == loaded_cap) {
        uint32_t cap = loaded_cap ? loaded_cap * 2 : 8;
        Loaded *p = js_realloc(ctx, loaded, sizeof(*p) * cap);
        if (!p)
            return -1;
        loaded = p;
        loaded_cap = cap;
    }
    char *copy = js_strdup(ctx, name);
    if (!copy)
        return -1;
    loaded[nloaded].name = copy;
    loaded[nloaded].form = from_host ? FROM_HOST : FROM_GRAPH;
    nloaded++;
    return 0;
}

/* `marker` followed by the specifier: a name no module has, which the loader refuses. */
static char *refused_name(JSContext *ctx, char marker, const char *name)
{
    size_t nlen = strlen(name);
    char *esc = js_malloc(ctx, nlen + 2);
    if (!esc)
        return NULL;
    esc[0] = marker;
    memcpy(esc + 1, name, nlen + 1);
    return esc;
}

/* QuickJS's name normalizer. */
char *module_normalize(JSContext *ctx, const char *base, const char *name, void *opaque)
{
    (void)opaque;
    /* relative specifiers resolve against the importing module; bare ones stay as they are */
    if (name[0] != '.') {
        if (loaded_form(name) == FROM_GRAPH)
            return refused_name(ctx, QJ_NOT_FOUND, name);
        last_form = FROM_HOST;
        return js_strdup(ctx, name);
    }
    const char *slash = strrchr(base, '/');
    size_t blen = slash ? (size_t)(slash - base) : 0;
    size_t nlen = strlen(name);
    char *out = js_malloc(ctx, blen + nlen + 3);
    if (!out)
        return NULL;
    /* "<dir of base>/<name>" with "." and ".." folded in both: an entry named "./main.js"
     * imports "./util.js" as "util.js", the key the host gave it */
    size_t o = 0;
    if (fold_segments(out, &o, base, blen) < 0 || fold_segments(out, &o, name, nlen) < 0) {
        /* escaping the graph root: a name the host refuses */
        js_free(ctx, out);
        return refused_name(ctx, QJ_OUTSIDE_GRAPH, name);
    }
    out[o] = 0;
    if (loaded_form(out) == FROM_HOST) {
        /* a host module has this name, no module of the graph */
        js_free(ctx, out);
        return refused_name(ctx, QJ_NOT_FOUND, name);
    }
    last_form = FROM_GRAPH;
    return out;
}

/* compile batches resolve every import to an empty module: nothing of it is needed */
static int stub_module_init(JSContext *ctx, JSModuleDef *m)
{
    (void)ctx; (void)m;
    return 0;
}

/* Read a module from bytecode the host cached (produced by a compile batch of ours). */
JSModuleDef *module_from_bytecode(JSContext *ctx, const uint8_t *p, size_t n)
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

/* A host module's exports: the keys of its value, and "default" for the whole value. */
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

/* Whether an import's attributes ask for a JSON module (`with { type: "json" }`). */
static int wants_json(JSContext *ctx, JSValueConst attributes)
{
    if (!JS_IsObject(attributes))
        return 0;
    JSValue t = JS_GetPropertyStr(ctx, attributes, "type");
    const char *s = JS_IsString(t) ? JS_ToCString(ctx, t) : NULL;
    JS_FreeValue(ctx, t);
    int json = s && strcmp(s, "json") == 0;
    if (s)
        JS_FreeCString(ctx, s);
    if (JS_HasException(ctx))
        JS_FreeValue(ctx, JS_GetException(ctx));
    return json;
}

/* QuickJS's check of an import's attributes, at parse time: `type` is the only key, and
 * "json" its only value (QuickJS-ng 0.17 passes attributes to the loader but implements no
 * module type itself; text and bytes imports are proposals it does not know). */
int module_check_attributes(JSContext *ctx, void *opaque, JSValueConst attributes)
{
    (void)opaque;
    JSPropertyEnum *tab;
    uint32_t n;
    if (JS_GetOwnPropertyNames(ctx, &tab, &n, attributes, JS_GPN_STRING_MASK) < 0)
        return -1;
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        const char *k = JS_AtomToCString(ctx, tab[i].atom);
        if (!k) {
            rc = -1;
        } else if (strcmp(k, "type") != 0) {
            JS_ThrowSyntaxError(ctx, "the import attribute '%s' is not supported (only type)", k);
            rc = -1;
        } else if (!wants_json(ctx, attributes)) {
            JSValue t = JS_GetPropertyStr(ctx, attributes, "type");
            const char *v = JS_ToCString(ctx, t);
            JS_FreeValue(ctx, t);
            JS_ThrowTypeError(ctx, "the import type '%s' is not supported (only \"json\")",
                              v ? v : "?");
            if (v)
                JS_FreeCString(ctx, v);
            rc = -1;
        }
        if (k)
            JS_FreeCString(ctx, k);
    }
    JS_FreePropertyEnum(ctx, tab, n);
    if (n)
        g.saw_attributes = 1;
    return rc;
}

/* A JSON module's one export, `default`: the parsed value (fresh and mutable, per spec). */
static int json_module_init(JSContext *ctx, JSModuleDef *m)
{
    return JS_SetModuleExport(ctx, m, "default", JS_GetModulePrivateValue(ctx, m));
}

/* The JSON module `name` from its text; a SyntaxError when the text is not JSON. */
static JSModuleDef *json_module(JSContext *ctx, const char *name, const uint8_t *p, size_t n)
{
    char *text = malloc(n + 1);
    if (!text) {
        JS_ThrowOutOfMemory(ctx);
        return NULL;
    }
    memcpy(text, p, n);
    text[n] = 0;
    JSValue v = JS_ParseJSON(ctx, text, n, name);
    free(text);
    if (JS_IsException(v))
        return NULL;
    JSModuleDef *m = JS_NewCModule(ctx, name, json_module_init);
    if (!m || JS_AddModuleExport(ctx, m, "default") < 0) {
        JS_FreeValue(ctx, v);
        return NULL;
    }
    JS_SetModulePrivateValue(ctx, m, v);
    return m;
}

/* QuickJS's loader: ask the host for the module; a module it does not have fails the link. */
JSModuleDef *module_loader(JSContext *ctx, const char *name, void *opaque,
                           JSValueConst attributes)
{
    (void)opaque;
    if (g.compile_only)
        return JS_NewCModule(ctx, name, stub_module_init);
    int json = wants_json(ctx, attributes);
    int from_host = last_form == FROM_HOST;
    size_t nlen = strlen(name);
    int64_t r = -1;
    if (name[0] != QJ_NOT_FOUND && name[0] != QJ_OUTSIDE_GRAPH) {
        int32_t want = (json ? QJ_MODULE_WANT_TEXT : QJ_MODULE_WANT_CODE) |
                       (from_host ? QJ_MODULE_BARE : 0);
        r = qj_host(QJ_OP_MODULE, want, QJ_ADDR(name), (int32_t)nlen, 0);
    }
    if (r < 0) {
        g.link_failed = 1;
        if (name[0] == QJ_OUTSIDE_GRAPH)
            JS_ThrowReferenceError(ctx, "module '%s' is outside the module graph", name + 1);
        else if (name[0] == QJ_NOT_FOUND)
            JS_ThrowReferenceError(ctx, "cannot find module '%s' %s", name + 1,
                                   name[1] == '.' ? "in the module graph" : "among the imports");
        else
            JS_ThrowReferenceError(ctx, "cannot find module '%s' %s", name,
                                   from_host ? "among the imports" : "in the module graph");
        return NULL;
    }
    uint8_t *owned;
    const uint8_t *p = reply_bytes(r, &owned);
    if (!p || r < 1) { free(owned); JS_ThrowOutOfMemory(ctx); return NULL; }
    JSModuleDef *m = NULL;
    if (json) {
        if (p[0] == QJ_MODULE_SOURCE)
            m = json_module(ctx, name, p + 1, (size_t)r - 1);
        else
            JS_ThrowTypeError(ctx, "module '%s' is not a JSON file of the module graph", name);
    } else if (p[0] == QJ_MODULE_SOURCE) {
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
    } else if (p[0] == QJ_MODULE_BYTECODE) {
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
    } else if (p[0] == QJ_MODULE_HOST) {
        /* a value message: a host module whose exports are the keys of the value */
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
    if (m && module_remember(ctx, name, from_host) < 0)
        return NULL; /* out of memory: the exception is pending, the module is not linked */
    return m;
}

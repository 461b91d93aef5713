/*
 * Modules: every module comes from the host (QJ_OP_MODULE) as source, as bytecode of a
 * compile batch, or as a host module whose exports are host values.
 */
#include <string.h>
#include <stdlib.h>
#include "guest.h"

/* QuickJS's name normalizer. */
char *module_normalize(JSContext *ctx, const char *base, const char *name, void *opaque)
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
                /* escaping the graph root: a name the host refuses */
                js_free(ctx, out);
                size_t l = strlen(name);
                char *esc = js_malloc(ctx, l + 2);
                if (!esc) return NULL;
                esc[0] = QJ_OUTSIDE_GRAPH;
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

/* QuickJS's loader: ask the host for the module; a module it does not have fails the link. */
JSModuleDef *module_loader(JSContext *ctx, const char *name, void *opaque)
{
    (void)opaque;
    if (g.compile_only)
        return JS_NewCModule(ctx, name, stub_module_init);
    size_t nlen = strlen(name);
    int64_t r = qj_host(QJ_OP_MODULE, 0, (int32_t)(uintptr_t)name, (int32_t)nlen, 0);
    if (r < 0) {
        g.link_failed = 1;
        if (name[0] == QJ_OUTSIDE_GRAPH)
            JS_ThrowReferenceError(ctx, "module '%s' is outside the module graph", name + 1);
        else
            JS_ThrowReferenceError(ctx, "cannot find module '%s'", name);
        return NULL;
    }
    uint8_t *owned;
    const uint8_t *p = reply_bytes(r, &owned);
    if (!p || r < 1) { free(owned); JS_ThrowOutOfMemory(ctx); return NULL; }
    JSModuleDef *m = NULL;
    if (p[0] == QJ_MODULE_SOURCE) {
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
    return m;
}

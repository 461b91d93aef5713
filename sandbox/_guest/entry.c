/*
 * The entry: compiles the run's entry by its kind and starts it, giving the promise the run
 * awaits. A module or a script as written; kind "auto" lets the parser decide which of the
 * code shapes models write the text is (README, "Code shapes"), in at most five parses.
 *
 * Readings of kind "auto", tried in this order; the first that parses is run:
 *   expression   "export default (" T ")"  an arrow, a function, a lone function declaration
 *                                          (as a named function expression) or any value;
 *                                          one final `;` is dropped, and so are comments
 *                                          after it (then T is parsed twice)
 *   statements   T as a classic script      top-level await, the completion value (called
 *                                          if a function: helpers, then a final arrow)
 *   module       T as an ES module          import/export; its default export (undefined
 *                                          when it has none)
 *   body         "export default (async function () {" T "})"   a top-level return
 * The wrappers' own text sits on lines -1 and 0 (QuickJS numbers the first line of a text as
 * asked and skips negative lines in its position tables), so T starts at line 1 and every
 * position in errors and stacks is one in the user's text. Every reading runs in strict mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "guest.h"

enum { READ_EXPRESSION, READ_STATEMENTS, READ_MODULE, READ_BODY, READINGS };

static const char *const reading_names[READINGS] = {
    "an expression", "statements", "an ES module", "the body of an async function",
};

/* prefix and suffix of the wrapped readings; each prefix holds two line breaks */
static const char *const prefixes[READINGS] = {
    "export default (\n\n", NULL, NULL, "export default (async function () {\n\n",
};
static const char *const suffixes[READINGS] = { "\n);", NULL, NULL, "\n});" };

/* Parse a NUL-terminated text without running it; its first line is numbered `line`. */
static JSValue compile(JSContext *ctx, const char *src, size_t len, const char *filename,
                       int flags, int line)
{
    JSEvalOptions o = {
        .version = JS_EVAL_OPTIONS_VERSION,
        .eval_flags = flags | JS_EVAL_FLAG_COMPILE_ONLY,
        .filename = filename,
        .line_num = line,
    };
    return JS_Eval2(ctx, src, len, &o);
}

/* Parse prefix + src + suffix as a module, numbering lines so that src starts at line 1. An
 * expression may end with one semicolon, which is dropped (replaced by a space). */
static JSValue compile_wrapped(JSContext *ctx, int reading, const char *src, size_t len,
                               const char *filename)
{
    const char *pre = prefixes[reading], *post = suffixes[reading];
    size_t pl = strlen(pre), sl = strlen(post);
    char *text = len < SIZE_MAX - pl - sl - 1 ? malloc(pl + len + sl + 1) : NULL;
    if (!text)
        return JS_ThrowOutOfMemory(ctx);
    memcpy(text, pre, pl);
    memcpy(text + pl, src, len);
    memcpy(text + pl + len, post, sl + 1);
    if (reading == READ_EXPRESSION) {
        size_t i = len;
        while (i > 0 && src[i - 1] && strchr(" \t\r\n", src[i - 1]))
            i--;
        if (i > 0 && src[i - 1] == ';')
            text[pl + i - 1] = ' ';
    }
    JSValue v = compile(ctx, text, pl + len + sl, filename, JS_EVAL_TYPE_MODULE, -1);
    free(text);
    return v;
}

/* Where the text's final `;` is when only white space and comments follow it, one comment at
 * least (`async () => 1; // the answer`): its offset, or `len` if there is none. The text up
 * to it is the expression the comment follows; a candidate inside a string, template, regular
 * expression or block comment leaves that text unterminated, so its reading fails to parse;
 * the caller also parses what follows the `;` alone. Linear: each step moves back over text no other step scans, and a
 * failed search ends the scan. */
static size_t semicolon_before_comments(const char *src, size_t len)
{
    size_t end = len;
    int comments = 0;
    for (;;) {
        while (end > 0 && src[end - 1] && strchr(" \t\r\n", src[end - 1]))
            end--;
        if (end >= 4 && src[end - 1] == '/' && src[end - 2] == '*') {
            /* a block comment ending the text: from the last opening before it, which
             * holds no other closing */
            size_t open = end - 2;
            while (open >= 2 && !(src[open - 2] == '/' && src[open - 1] == '*'))
                open--;
            if (open < 2)
                return len;
            for (size_t k = open; k + 1 < end - 2; k++)
                if (src[k] == '*' && src[k + 1] == '/')
                    return len;
            end = open - 2;
            comments = 1;
            continue;
        }
        /* a line comment ending the text: from the first `//` of its last line */
        size_t line = end;
        while (line > 0 && src[line - 1] != '\n' && src[line - 1] != '\r')
            line--;
        size_t k = line;
        while (k + 1 < end && !(src[k] == '/' && src[k + 1] == '/'))
            k++;
        if (k + 1 < end) {
            end = k;
            comments = 1;
            continue;
        }
        break;
    }
    return comments && end > 0 && src[end - 1] == ';' ? end - 1 : len;
}

static int is_syntax_error(JSContext *ctx, JSValueConst ex)
{
    JSValue ctor = JS_GetPropertyStr(ctx, g.ctors, "SyntaxError");
    int r = JS_IsInstanceOf(ctx, ex, ctor);
    JS_FreeValue(ctx, ctor);
    if (r < 0)
        JS_FreeValue(ctx, JS_GetException(ctx));
    return r > 0;
}

/* Where a syntax error of ours points: line << 32 | column when its stack's first frame is in
 * `filename`, else -1. Our own parser's errors only: no program code has run yet. */
static int64_t error_position(JSContext *ctx, JSValueConst ex, const char *filename)
{
    JSValue st = JS_GetPropertyStr(ctx, ex, "stack");
    const char *s = JS_IsString(st) ? JS_ToCString(ctx, st) : NULL;
    JS_FreeValue(ctx, st);
    if (!s) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return -1;
    }
    int64_t pos = -1;
    const char *start = strstr(s, "    at ");
    if (start) {
        start += 7;
        const char *end = strchr(start, '\n');
        if (!end)
            end = start + strlen(start);
        /* "<filename>:<line>:<column>", read from the end: file names may hold colons */
        const char *p = end;
        int64_t nums[2] = { 0, 0 };
        int ok = 1;
        for (int k = 1; k >= 0 && ok; k--) {
            int64_t v = 0, mul = 1;
            const char *q = p;
            /* at most 9 digits: positions of a text in wasm32 memory fit, and line << 32
             * cannot overflow */
            while (q > start && q[-1] >= '0' && q[-1] <= '9' && mul <= 100000000) {
                v += (q[-1] - '0') * mul;
                mul *= 10;
                q--;
            }
            ok = q < p && q > start && q[-1] == ':';
            nums[k] = v;
            p = q - 1;
        }
        size_t fl = strlen(filename);
        if (ok && (size_t)(p - start) == fl && memcmp(start, filename, fl) == 0)
            pos = nums[0] << 32 | (nums[1] & 0xffffffff);
    }
    JS_FreeCString(ctx, s);
    return pos;
}

/* None of the readings parses: throw the error of the reading that got furthest into the
 * text (the earliest reading on a tie), with words saying what kind "auto" accepts. */
static void throw_no_shape(JSContext *ctx, JSValue *errors, const int64_t *where)
{
    int best = 0;
    for (int r = 1; r < READINGS; r++)
        if (where[r] > where[best])
            best = r;
    JSValue ex = errors[best];
    errors[best] = JS_UNDEFINED;
    JSValue msg = JS_GetPropertyStr(ctx, ex, "message");
    const char *m = JS_IsString(msg) ? JS_ToCString(ctx, msg) : NULL;
    JS_FreeValue(ctx, msg);
    static const char fmt[] =
        "%s (the code is none of the shapes kind=\"auto\" runs: an ES module, a function or "
        "arrow expression, a lone function declaration, statements with top-level await or "
        "return, or a single expression; read as %s, it fails at this position)";
    const char *what = m ? m : "syntax error";
    size_t cap = sizeof(fmt) + strlen(what) + strlen(reading_names[best]);
    char *buf = malloc(cap);
    if (buf) {
        snprintf(buf, cap, fmt, what, reading_names[best]);
        JSValue text = JS_NewString(ctx, buf);
        free(buf);
        if (JS_IsException(text))
            JS_FreeValue(ctx, JS_GetException(ctx));
        else
            JS_DefinePropertyValueStr(ctx, ex, "message", text,
                                      JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
    }
    if (m)
        JS_FreeCString(ctx, m);
    for (int r = 0; r < READINGS; r++)
        JS_FreeValue(ctx, errors[r]);
    JS_Throw(ctx, ex);
}

/* kind "auto": the first reading that parses (g.kind becomes MODULE or SCRIPT). */
static JSValue compile_auto(JSContext *ctx, const char *src, size_t len, const char *filename)
{
    JSValue errors[READINGS];
    int64_t where[READINGS];
    /* the text's last line: an error past it is in a wrapper's suffix (the text closed the
     * wrapper early), not in the user's text, and is the least plausible */
    int64_t lines = 1;
    for (const char *p = src; (p = memchr(p, '\n', len - (size_t)(p - src))) != NULL; p++)
        lines++;
    for (int r = 0; r < READINGS; r++)
        errors[r] = JS_UNDEFINED;
    for (int r = 0; r < READINGS; r++) {
        JSValue v;
        if (prefixes[r])
            v = compile_wrapped(ctx, r, src, len, filename);
        else if (r == READ_STATEMENTS)
            v = compile(ctx, src, len, filename,
                        JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC | JS_EVAL_FLAG_STRICT, 1);
        else
            v = compile(ctx, src, len, filename, JS_EVAL_TYPE_MODULE, 1);
        size_t cut = r == READ_EXPRESSION ? semicolon_before_comments(src, len) : len;
        if (cut < len && JS_IsException(v)) {
            /* an expression, a `;` and comments: the expression alone */
            JSValue first = JS_GetException(ctx);
            v = compile_wrapped(ctx, r, src, cut, filename);
            /* and what follows the `;` must parse alone (as comments do) */
            JSValue tail = JS_IsException(v) ? JS_UNDEFINED
                : compile(ctx, src + cut + 1, len - cut - 1, filename, JS_EVAL_TYPE_GLOBAL, 1);
            if (JS_IsException(tail)) {
                JS_FreeValue(ctx, v);
                v = JS_EXCEPTION;
            }
            JS_FreeValue(ctx, tail);
            if (JS_IsException(v)) {
                JS_FreeValue(ctx, JS_GetException(ctx));
                JS_Throw(ctx, first);
            } else {
                JS_FreeValue(ctx, first);
            }
        }
        if (!JS_IsException(v)) {
            for (int k = 0; k < r; k++)
                JS_FreeValue(ctx, errors[k]);
            g.kind = r == READ_STATEMENTS ? QJ_KIND_SCRIPT : QJ_KIND_MODULE;
            if (r != READ_MODULE && (strcmp(g.fn_name, "default") != 0 ||
                                     (r == READ_STATEMENTS && g.has_args))) {
                /* execute asked for an export or for arguments the shape cannot take */
                JS_FreeValue(ctx, v);
                g.kind = QJ_KIND_MODULE;
                return JS_ThrowTypeError(ctx,
                    "execute names the export '%s' or passes args, but the code reads as %s, "
                    "which has %s", g.fn_name, reading_names[r],
                    r == READ_STATEMENTS ? "no exports and takes no arguments"
                                         : "only a default export");
            }
            return v;
        }
        JSValue ex = JS_GetException(ctx);
        where[r] = is_syntax_error(ctx, ex) ? error_position(ctx, ex, filename) : -1;
        if (prefixes[r] && where[r] >> 32 > lines)
            where[r] = 0;
        /* not a syntax error of the text itself (out of memory, or the module reading
         * failing in a module it imports): that is the answer */
        if (where[r] < 0 && (r == READ_MODULE || !is_syntax_error(ctx, ex))) {
            for (int k = 0; k < r; k++)
                JS_FreeValue(ctx, errors[k]);
            g.kind = QJ_KIND_MODULE;
            return JS_Throw(ctx, ex);
        }
        errors[r] = ex;
    }
    throw_no_shape(ctx, errors, where);
    return JS_EXCEPTION;
}

/* kind "script": parsed for top-level await; a script that does not parse so (one using
 * `await` as an identifier) is parsed as a plain classic script, whose completion value is
 * boxed as the async form's is. */
static JSValue start_script(JSContext *ctx, const char *src, size_t len, const char *filename)
{
    JSValue f = compile(ctx, src, len, filename, JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_ASYNC, 1);
    if (!JS_IsException(f))
        return JS_EvalFunction(ctx, f);
    JSValue first = JS_GetException(ctx);
    if (!is_syntax_error(ctx, first))
        return JS_Throw(ctx, first);
    f = compile(ctx, src, len, filename, JS_EVAL_TYPE_GLOBAL, 1);
    if (JS_IsException(f)) {
        JSValue second = JS_GetException(ctx);
        /* report the reading that got further */
        if (error_position(ctx, second, filename) > error_position(ctx, first, filename)) {
            JS_FreeValue(ctx, first);
            return JS_Throw(ctx, second);
        }
        JS_FreeValue(ctx, second);
        return JS_Throw(ctx, first);
    }
    JS_FreeValue(ctx, first);
    JSValue v = JS_EvalFunction(ctx, f);
    if (JS_IsException(v))
        return v;
    /* no prototype: a `then` the program put on Object.prototype cannot adopt the box */
    JSValue box = JS_NewObjectProto(ctx, JS_NULL);
    if (JS_IsException(box)) {
        JS_FreeValue(ctx, v);
        return box;
    }
    JS_DefinePropertyValueStr(ctx, box, "value", v, JS_PROP_C_W_E);
    JSValue p = JS_NewSettledPromise(ctx, false, box);
    JS_FreeValue(ctx, box);
    return p;
}

JSValue entry_start(JSContext *ctx, const char *src, size_t len, const char *filename,
                    int bytecode, int *outcome)
{
    *outcome = QJ_OUT_ERROR;
    if (g.kind == QJ_KIND_SCRIPT)
        return start_script(ctx, src, len, filename);
    /* the entry is a module of the graph: a bare specifier of its name is not it */
    if (module_remember(ctx, filename, 0) < 0)
        return JS_EXCEPTION;
    JSValue v;
    if (g.kind == QJ_KIND_AUTO) {
        v = compile_auto(ctx, src, len, filename);
    } else if (bytecode) {
        /* the entry arrives as bytecode from the host's cache */
        JSModuleDef *m = module_from_bytecode(ctx, (const uint8_t *)src, len);
        v = m ? JS_DupValue(ctx, JS_MKPTR(JS_TAG_MODULE, m)) : JS_EXCEPTION;
        if (m && JS_ResolveModule(ctx, v) < 0) {
            JS_FreeValue(ctx, v);
            v = JS_EXCEPTION;
        }
    } else {
        v = compile(ctx, src, len, filename, JS_EVAL_TYPE_MODULE, 1);
    }
    if (JS_IsException(v)) {
        if (g.link_failed)
            *outcome = QJ_OUT_LINK_ERROR;
        return v;
    }
    if (g.kind == QJ_KIND_SCRIPT)
        return JS_EvalFunction(ctx, v);
    g.module_val = JS_DupValue(ctx, v);
    JSValue p = JS_EvalFunction(ctx, v);
    if (JS_IsException(p))
        *outcome = QJ_OUT_LINK_ERROR;
    return p;
}

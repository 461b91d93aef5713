/*
 * The guest's qj.host import, entered natively: a wasmtime host function written in C that
 * checks the guest's span, hands it to the store's owner (Run.on_host, or a compile instance's)
 * as a read-only memoryview through CPython's C API, and copies a short reply into the guest's
 * scratch buffer. A ctypes callback did the same at several microseconds a call: argument
 * conversion, a thread-local lookup, a checked copy out and a checked copy in, in Python.
 *
 * CPython's API is reached the way wasmtime's is: the host hands over the addresses of the few
 * functions called (qj_host_init_python, from ctypes.pythonapi), all of them functions of the
 * stable ABI, so the library needs no Python header and no build per Python version.
 *
 * Everything the guest passes is hostile. The span (b, c) is passed on only when it lies inside
 * the caller's memory; the view is released when the owner returns, so nothing the host keeps
 * can point into a store that is later freed; a reply is copied only when it fits the scratch
 * buffer and the scratch buffer lies inside memory.
 */
#include <string.h>
#include "host.h"

/* the answer for a call no owner can take (QJ_E_HOST of _guest/quickjail.h) */
#define E_HOST (-1)
/* PyBUF_READ: a read-only memoryview */
#define BUF_READ 0x100
/* PY_VECTORCALL_ARGUMENTS_OFFSET: args[-1] may be borrowed as scratch by the callee */
#define VECTORCALL_OFFSET ((size_t)1 << (8 * sizeof(size_t) - 1))
/* Py_TPFLAGS_LONG_SUBCLASS and Py_TPFLAGS_BYTES_SUBCLASS (stable ABI constants) */
#define TP_LONG ((unsigned long)1 << 24)
#define TP_BYTES ((unsigned long)1 << 27)

qj_python_t py;
#define PY_FUNCTIONS (sizeof(py) / sizeof(void *))

static PyObject *on_host_name; /* "on_host" */
static PyObject *release_name; /* "release" */
static PyObject *none;         /* None */
static uint32_t span_ops;      /* bit op set: the op passes a span (b, c) of guest memory */

/* Hand over CPython's functions (`functions`, PY_FUNCTIONS addresses in the order of `py`),
 * the str objects "on_host" and "release", None (the host keeps all three alive for good) and
 * the ops that pass a span. Returns 0, or -1 when something is missing. */
EXPORT int qj_host_init_python(void *const *functions, size_t n, void *on_host, void *release,
                               void *none_object, uint32_t ops)
{
    if (n != PY_FUNCTIONS || !on_host || !release || !none_object)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!functions[i])
            return -1;
    memcpy(&py, functions, sizeof(py));
    on_host_name = on_host;
    release_name = release;
    none = none_object;
    span_ops = ops;
    return 0;
}

/* The owner's reply as the guest's answer: an int as is, a bytes object copied into scratch
 * (its length is the answer) when it fits there; anything else, or a failure, E_HOST. */
static int64_t answer(qj_store_t *store, PyObject *reply, uint8_t *base, size_t size)
{
    PyObject *type = py.type_of(reply);
    unsigned long flags = py.type_flags(type);
    py.decref(type);
    if (flags & TP_LONG) {
        long long v = py.long_as(reply);
        if (v == -1 && py.err_occurred()) {
            py.err_clear();
            return E_HOST;
        }
        return v;
    }
    char *data;
    py_ssize_t len;
    if (!(flags & TP_BYTES) || py.bytes_as(reply, &data, &len) != 0) {
        py.err_clear();
        return E_HOST;
    }
    if ((size_t)len > store->scratch_size || store->scratch > size ||
        (size_t)len > size - store->scratch)
        return E_HOST;
    memcpy(base + store->scratch, data, (size_t)len);
    return len;
}

/* One qj.host(op, a, b, c, d) for `store`, whose memory is `base` (`size` bytes): the owner's
 * on_host(op, a, b, c, d, view), view the span (b, c) when the op passes one that lies inside
 * memory, else None. Takes the GIL. An exception the owner lets out (a host bug: on_host
 * answers every call) goes to sys.unraisablehook, or with `keep` stays set for the caller. */
static int64_t dispatch(qj_store_t *store, uint8_t *base, size_t size, const int32_t *v,
                        int keep)
{
    int32_t op = v[0], ptr = v[2], len = v[3];
    int gil = py.gil_ensure();
    int64_t out = E_HOST;
    PyObject *view = NULL;
    PyObject *args[8] = {NULL}; /* args[0] is room the callee may borrow (VECTORCALL_OFFSET) */
    int spans = op >= 0 && op < 32 && (span_ops >> op & 1);
    int inside = base && ptr >= 0 && len >= 0 && (size_t)ptr <= size &&
                 (size_t)len <= size - (size_t)ptr;
    if (spans && inside && !(view = py.memoryview((char *)base + ptr, len, BUF_READ)))
        goto done;
    args[1] = (PyObject *)store->owner;
    for (int i = 0; i < 5; i++)
        if (!(args[2 + i] = py.long_from(v[i])))
            goto done;
    args[7] = view ? view : none;
    PyObject *reply = py.call_method(on_host_name, args + 1, 7 | VECTORCALL_OFFSET, NULL);
    if (reply) {
        out = answer(store, reply, base, size);
        py.decref(reply);
    }
done:;
    PyObject *type = NULL, *value = NULL, *trace = NULL;
    if (py.err_occurred()) {
        if (keep)
            py.err_fetch(&type, &value, &trace); /* put back once the view is released */
        else
            py.write_unraisable(store->owner);
    }
    for (int i = 2; i < 7; i++)
        if (args[i])
            py.decref(args[i]);
    if (view) {
        /* the memory is the guest's: nothing may read it through this view once the call is
         * over. A view the host still exports a buffer of cannot be released: the host kept
         * it (a bug), and the call is refused rather than leave that unnoticed */
        PyObject *self[2] = {NULL, view};
        PyObject *r = py.call_method(release_name, self + 1, 1 | VECTORCALL_OFFSET, NULL);
        if (r) {
            py.decref(r);
        } else {
            py.write_unraisable(store->owner);
            out = E_HOST;
        }
        py.decref(view);
    }
    if (type)
        py.err_restore(type, value, trace);
    py.gil_release(gil);
    return out;
}

/* qj.host(op: i32, a: i32, b: i32, c: i32, d: i32) -> i64, as a wasmtime unchecked host
 * function (env, caller, args and results, their count). A store with no owner answers E_HOST.
 * Never traps. */
EXPORT void *qj_host_call(void *env, void *caller, qj_val_raw_t *args, size_t n)
{
    (void)env;
    if (n < 5) {
        if (n > 0)
            args[0].i64 = E_HOST;
        return NULL;
    }
    void *context;
    qj_store_t *store = caller_store(caller, &context);
    if (!store || !store->owner || !on_host_name) {
        args[0].i64 = E_HOST;
        return NULL;
    }
    int32_t v[5] = {args[0].i32, args[1].i32, args[2].i32, args[3].i32, args[4].i32};
    uint8_t *base = memory_data(context, &store->memory);
    size_t size = base ? memory_data_size(context, &store->memory) : 0;
    args[0].i64 = dispatch(store, base, size, v, 0);
    return NULL;
}

/* The same dispatch for a host that plays the guest (the isolation suite, `quickjail stress`):
 * `store`'s owner answers qj.host(op, a, b, c, d) with the guest's memory at `base` (`size`
 * bytes), exactly as it answers the guest; an exception the owner lets out (which the guest
 * would only see as E_HOST) stays set, for a caller holding the GIL (ctypes.PyDLL) to raise. */
EXPORT int64_t qj_host_play(qj_store_t *store, uint8_t *base, size_t size, int32_t op,
                            int32_t a, int32_t b, int32_t c, int32_t d)
{
    if (!store || !store->owner || !on_host_name)
        return E_HOST;
    int32_t v[5] = {op, a, b, c, d};
    return dispatch(store, base, size, v, 1);
}

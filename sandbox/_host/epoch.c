/*
 * The stores' epoch deadline callback, in C. The engine's epoch advances only when some run
 * must stop, or while a guest runs on the process's main thread (sandbox/_stacks.py); each
 * store's callback then asks the host whether its run stops: decide(key), a Python function.
 *
 * Why C: on the main thread, Python runs the signal handlers (Ctrl-C's KeyboardInterrupt) in
 * whatever Python code runs next, here the callback's. A ctypes callback would print such an
 * exception and drop it, and the guest would run on. This callback catches any exception,
 * hands it to interrupted(key, exc) (the run keeps it, stops and re-raises it to its caller)
 * and stops the guest.
 */
#include <stdint.h>
#include "host.h"

typedef void *(*error_new_fn)(const char *message);

static error_new_fn error_new;
static PyObject *decide;      /* decide(key) -> int: 0 goes on, anything else stops */
static PyObject *interrupted; /* interrupted(key, exc): the run keeps exc and stops */

/* Hand over wasmtime_error_new and the two Python functions (the host keeps them alive for
 * good); after qj_host_init_python. Returns 0, or -1 when something is missing. */
EXPORT int qj_epoch_init(void *error_new_addr, void *decide_fn, void *interrupted_fn)
{
    if (!error_new_addr || !decide_fn || !interrupted_fn || !py.gil_ensure)
        return -1;
    error_new = (error_new_fn)error_new_addr;
    decide = decide_fn;
    interrupted = interrupted_fn;
    return 0;
}

/* wasmtime_store_epoch_deadline_callback's callback: (context, data, *delta, *kind) -> error.
 * `data` is the store's key. Continue with the next epoch as the deadline, or stop (an
 * error, which traps the guest). */
EXPORT void *qj_epoch_callback(void *context, void *data, uint64_t *delta, uint8_t *kind)
{
    (void)context;
    int stop = 1;
    if (decide) {
        int gil = py.gil_ensure();
        PyObject *key = py.long_from((long long)(intptr_t)data);
        if (key) {
            PyObject *r = py.call_objargs(decide, key, NULL);
            if (r) {
                stop = py.long_as(r) != 0;
                py.decref(r);
            }
        }
        if (py.err_occurred()) {
            PyObject *type = NULL, *value = NULL, *trace = NULL;
            py.err_fetch(&type, &value, &trace);
            py.err_normalize(&type, &value, &trace);
            PyObject *r = key && value ? py.call_objargs(interrupted, key, value, NULL) : NULL;
            if (r)
                py.decref(r);
            else if (py.err_occurred())
                py.write_unraisable(interrupted);
            py.decref(type);
            py.decref(value);
            py.decref(trace);
            stop = 1;
        }
        py.decref(key);
        py.gil_release(gil);
    }
    if (stop)
        return error_new("quickjail: run stopped");
    *delta = 1;
    *kind = 0; /* WASMTIME_UPDATE_DEADLINE_CONTINUE */
    return NULL;
}

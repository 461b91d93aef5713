/*
 * What the host library's files share: the wasmtime types they touch (declared with the layouts
 * sandbox/_capi.py declares, as the library includes no wasmtime header), the store's data
 * (mirrored by sandbox/_hostlib.py StoreData) and the wasmtime C API functions handed over by
 * qj_host_init.
 */
#ifndef QJ_HOST_H
#define QJ_HOST_H

#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

/* wasmtime_memory_t: { struct { u64 store_id; u32 }; u32 } (24 bytes) */
typedef struct {
    struct {
        uint64_t store_id;
        uint32_t private1;
    } inner;
    uint32_t private2;
} qj_memory_t;

/* wasmtime_val_raw_t: 16 bytes, of which the imports use i32 and i64 */
typedef union {
    int32_t i32;
    int64_t i64;
    uint8_t v128[16];
} qj_val_raw_t;

/* One store's data, at the store's data pointer: its clock, its memory, and who answers its
 * qj.host calls. The host owns it (a ctypes Structure) and keeps it alive as long as the store. */
typedef struct {
    uint32_t mode;       /* the clock's MODE_* (clock.c) */
    uint32_t pad;
    uint64_t reads;      /* deterministic reads so far */
    uint64_t base_ns;    /* deterministic start */
    uint64_t virtual_ns; /* deterministic: how far time jumped for timers; real: the shift of
                          * the monotonic clock (a resumed run goes on from its pause) */
    qj_memory_t memory;  /* the instance's memory; store_id 0 until it is known */
    void *owner;         /* the Python object whose on_host answers qj.host (borrowed), or NULL */
    uint32_t scratch;    /* the guest's scratch buffer: a reply this short is copied there */
    uint32_t scratch_size;
} qj_store_t;

_Static_assert(sizeof(qj_memory_t) == 24, "wasmtime_memory_t is 24 bytes");
_Static_assert(sizeof(qj_val_raw_t) == 16, "wasmtime_val_raw_t is 16 bytes");
_Static_assert(offsetof(qj_store_t, memory) == 32, "StoreData layout");
_Static_assert(offsetof(qj_store_t, owner) == 56, "StoreData layout");
_Static_assert(sizeof(qj_store_t) == 72, "StoreData layout");

typedef void *(*caller_context_fn)(void *caller);
typedef void *(*context_get_data_fn)(const void *context);
typedef uint8_t *(*memory_data_fn)(const void *context, const qj_memory_t *memory);
typedef size_t (*memory_data_size_fn)(const void *context, const qj_memory_t *memory);

extern caller_context_fn caller_context;
extern context_get_data_fn context_get_data;
extern memory_data_fn memory_data;
extern memory_data_size_fn memory_data_size;

/* The store behind an import's caller and its context, or NULL (no data, memory not known). */
static inline qj_store_t *caller_store(void *caller, void **context)
{
    *context = caller_context ? caller_context(caller) : NULL;
    qj_store_t *store = *context ? (qj_store_t *)context_get_data(*context) : NULL;
    return store && store->memory.inner.store_id != 0 ? store : NULL;
}

typedef struct _object PyObject; /* opaque: only passed to CPython's own functions */
typedef ptrdiff_t py_ssize_t;

/* The CPython functions the library calls, in the order qj_host_init_python takes them
 * (sandbox/_hostlib.py _PYTHON_FUNCTIONS): stable-ABI functions, from ctypes.pythonapi. */
typedef struct {
    int (*gil_ensure)(void);
    void (*gil_release)(int);
    PyObject *(*call_method)(PyObject *name, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames);
    PyObject *(*long_from)(long long);
    long long (*long_as)(PyObject *);
    PyObject *(*memoryview)(char *mem, py_ssize_t size, int flags);
    int (*bytes_as)(PyObject *, char **, py_ssize_t *);
    PyObject *(*type_of)(PyObject *);
    unsigned long (*type_flags)(PyObject *);
    void (*decref)(PyObject *); /* Py_DecRef: NULL is fine */
    PyObject *(*err_occurred)(void);
    void (*err_clear)(void);
    void (*write_unraisable)(PyObject *);
    void (*err_fetch)(PyObject **, PyObject **, PyObject **);
    void (*err_restore)(PyObject *, PyObject *, PyObject *);
    PyObject *(*call_objargs)(PyObject *callable, ...); /* NULL-terminated arguments */
    void (*err_normalize)(PyObject **, PyObject **, PyObject **);
} qj_python_t;

extern qj_python_t py; /* calls.c; all NULL until qj_host_init_python */

#endif

/*
 * The allocator QuickJS uses: our own malloc functions, so the soft memory cap and the OOM
 * signal are ours (wasmtime's limit on linear memory is the hard cap). The blocks come from
 * the guest's heap (heap.c) and count with their real size, header included.
 */
#include "guest.h"

typedef struct {
    size_t used;
    size_t soft_limit; /* 0 = none */
    size_t grace;      /* extra room granted once the soft cap was hit, so `catch` can run */
    int in_grace;
    void *emergency;   /* a block held back from the heap, released at the first failure */
    void *finish_reserve; /* held back for reporting the outcome, released when finishing */
    int quiet;         /* failures are not out-of-memory (qj_mem_quiet) */
} MemState;

static MemState mem;

/* The program is done: lift the soft cap and release the last reserve so its outcome can be
 * encoded even when it left the heap full (wasmtime's hard cap still holds). */
void mem_finishing(void)
{
    mem.soft_limit = 0;
    heap_free(mem.finish_reserve);
    mem.finish_reserve = NULL;
}

/* Called by our patch to quickjs.c (0006): QuickJS asks for a new small-block arena quietly
 * first, since a sealed arena may still serve the block when there is no room. */
void qj_mem_quiet(int on) { mem.quiet = on; }

static void *mem_fail(size_t size)
{
    if (mem.quiet)
        return NULL;
    /* when linear memory itself is exhausted, give back the emergency block so the error
     * object and the program's `catch` block can still allocate */
    if (mem.emergency) {
        heap_free(mem.emergency);
        mem.emergency = NULL;
    }
    qj_host(QJ_OP_OOM, (int32_t)(size > INT32_MAX ? INT32_MAX : size), 0, 0, 0);
    return NULL;
}

/* The effective cap: the soft limit, plus the grace reserve after a failure at the soft limit
 * (re-armed once usage falls back below the soft limit). */
static size_t mem_cap(void)
{
    if (!mem.soft_limit)
        return SIZE_MAX;
    if (mem.in_grace && mem.used + mem.grace / 2 < mem.soft_limit)
        mem.in_grace = 0;
    return mem.in_grace ? mem.soft_limit + mem.grace : mem.soft_limit;
}

static void *mem_fail_soft(size_t size)
{
    if (mem.quiet)
        return NULL;
    mem.in_grace = 1;
    return mem_fail(size);
}

static void *qj_js_malloc(void *opaque, size_t size)
{
    (void)opaque;
    if (mem.used + size > mem_cap())
        return mem_fail_soft(size);
    void *p = heap_malloc(size);
    if (!p)
        return mem_fail(size);
    mem.used += heap_block_size(p);
    return p;
}

static void *qj_js_calloc(void *opaque, size_t count, size_t size)
{
    (void)opaque;
    if (size && count > SIZE_MAX / size)
        return mem_fail(SIZE_MAX);
    size_t total = count * size;
    if (mem.used + total > mem_cap())
        return mem_fail_soft(total);
    void *p = heap_calloc(count, size);
    if (!p)
        return mem_fail(total);
    mem.used += heap_block_size(p);
    return p;
}

static void qj_js_free(void *opaque, void *ptr)
{
    (void)opaque;
    if (!ptr)
        return;
    mem.used -= heap_block_size(ptr);
    heap_free(ptr);
}

static void *qj_js_realloc(void *opaque, void *ptr, size_t size)
{
    (void)opaque;
    size_t old = ptr ? heap_block_size(ptr) : 0;
    if (size > old && mem.used - old + size > mem_cap())
        return mem_fail_soft(size);
    void *p = heap_realloc(ptr, size);
    if (!p && size)
        return mem_fail(size);
    mem.used = mem.used - old + (p ? heap_block_size(p) : 0);
    return p;
}

static size_t qj_js_usable(const void *ptr)
{
    return ptr ? heap_usable(ptr) : 0;
}

const JSMallocFunctions qj_malloc_funcs = {
    qj_js_calloc, qj_js_malloc, qj_js_free, qj_js_realloc, qj_js_usable,
};

/* Held back at init time, so they are part of the snapshot: allocated once, never touched, so
 * a fresh instance has them for free. */
void mem_hold_reserves(void)
{
    mem.emergency = heap_malloc(1024 * 1024);
    mem.finish_reserve = heap_malloc(256 * 1024);
}

/* A run's soft cap (0 = none); the grace beyond it is a sixteenth, at least 1 MiB. */
void mem_set_soft_limit(uint32_t soft_limit)
{
    mem.soft_limit = soft_limit;
    mem.grace = soft_limit / 16 > (1u << 20) ? soft_limit / 16 : (1u << 20);
    mem.in_grace = 0;
}

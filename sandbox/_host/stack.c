/*
 * Guest stacks: entering the guest on the caller's own thread, on a stack of the size the
 * guest needs. The guest may use up to the engine's max_wasm_stack (16 MiB) of native stack,
 * more than a thread's default stack, so a sync run used to hand the guest to a worker thread
 * with a large stack and wait for it: two cross-thread wake-ups per run. Here the calling
 * thread switches to a stack of its own (mapped once per thread, pages committed on touch),
 * calls wasmtime there, and switches back; host functions the guest calls run on that stack
 * too, as they ran on the worker's.
 *
 * The switch is a plain call with the stack pointer moved: the callee saves what the ABI says
 * it saves, and the frame pointer register holds the caller's stack pointer across the call.
 * Linux on x86-64 and aarch64 only; elsewhere qj_stack_new answers NULL and the host keeps the
 * worker thread (sandbox/_stacks.py).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, MAP_STACK, madvise under -std=c11 */
#include <stddef.h>
#include <stdint.h>
#include "host.h"

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#include <sys/mman.h>
#include <unistd.h>
#define STACKS 1
#else
#define STACKS 0
#endif

typedef void *(*call5_fn)(void *, void *, void *, void *, void *);

typedef struct {
    call5_fn fn;
    void *args[5];
    void *result;
} qj_call_t;

#if STACKS
/* call fn(arg) with the stack pointer at `top` (16-byte aligned), then restore it */
__attribute__((naked, noinline)) static void switch_call(void *arg, void (*fn)(void *),
                                                         void *top)
{
#if defined(__x86_64__)
    __asm__ volatile("push %rbp\n\t"
                     "mov %rsp, %rbp\n\t"
                     "mov %rdx, %rsp\n\t"
                     "call *%rsi\n\t"
                     "mov %rbp, %rsp\n\t"
                     "pop %rbp\n\t"
                     "ret\n\t");
#else
    __asm__ volatile("stp x29, x30, [sp, #-16]!\n\t"
                     "mov x29, sp\n\t"
                     "mov sp, x2\n\t"
                     "blr x1\n\t"
                     "mov sp, x29\n\t"
                     "ldp x29, x30, [sp], #16\n\t"
                     "ret\n\t");
#endif
}

static void trampoline(void *arg)
{
    qj_call_t *c = arg;
    c->result = c->fn(c->args[0], c->args[1], c->args[2], c->args[3], c->args[4]);
}
#endif

/* A stack of `size` usable bytes below an inaccessible guard page, or NULL (no memory, or no
 * stack switching on this platform). Its pages are committed only when touched. */
EXPORT void *qj_stack_new(size_t size)
{
#if STACKS
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size == 0 || size % page)
        return NULL;
    uint8_t *base = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    if (mprotect(base, page, PROT_NONE) != 0) {
        munmap(base, size + page);
        return NULL;
    }
    return base;
#else
    (void)size;
    return NULL;
#endif
}

/* Unmap a stack from qj_stack_new (`size` as given there). */
EXPORT void qj_stack_free(void *stack, size_t size)
{
#if STACKS
    if (stack)
        munmap(stack, size + (size_t)sysconf(_SC_PAGESIZE));
#else
    (void)stack;
    (void)size;
#endif
}

/* Give back the pages of a stack from qj_stack_new below its top `keep` bytes, when the page
 * just below those is resident (a run went deeper): a deep recursion leaves no more than
 * `keep` resident on an idle thread, and a shallow run pays one mincore. Returns 1 when pages
 * were given back, 0 when none were resident there, -1 on error. */
EXPORT int qj_stack_trim(void *stack, size_t size, size_t keep)
{
#if STACKS
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    keep = (keep + page - 1) & ~(page - 1);
    if (!stack || keep >= size)
        return 0;
    uint8_t *low = (uint8_t *)stack + page;  /* above the guard */
    uint8_t *probe = low + (size - keep - page); /* the page just below the kept top */
    unsigned char resident = 0;
    if (mincore(probe, page, &resident) != 0)
        return -1;
    if (!(resident & 1))
        return 0;
    return madvise(low, size - keep, MADV_DONTNEED) == 0 ? 1 : -1;
#else
    (void)stack;
    (void)size;
    (void)keep;
    return 0;
#endif
}

/* fn(a0, ..., a4) on the stack from qj_stack_new (`size` as given there), on this thread; its
 * result. The stack must not be in use: one call at a time per stack (the host keeps one per
 * thread and enters it once). */
EXPORT void *qj_stack_call(void *stack, size_t size, void *fn, void *a0, void *a1, void *a2,
                           void *a3, void *a4)
{
    qj_call_t c = {(call5_fn)fn, {a0, a1, a2, a3, a4}, NULL};
#if STACKS
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t top = ((uintptr_t)stack + page + size) & ~(uintptr_t)15;
    switch_call(&c, trampoline, (void *)top);
#else
    (void)stack;
    (void)size;
    c.result = c.fn(a0, a1, a2, a3, a4);
#endif
    return c.result;
}

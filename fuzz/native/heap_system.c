/*
 * The guest heap's interface (guest.h) over the system allocator, for the native fuzzing build:
 * AddressSanitizer then sees every block QuickJS and the shim allocate (it cannot see inside
 * heap.c's TLSF, which fuzz/heap_fuzz.c drives on its own). The block size counts a
 * notional 8-byte header, as heap.c's does.
 */
#include <malloc.h>
#include <stdlib.h>
#include "guest.h"

/* above this the guest's heap refuses a request (heap.c's MAX_REQUEST) */
#define MAX_REQUEST 0x7FFF0000u

void *heap_malloc(size_t n) { return n > MAX_REQUEST ? NULL : malloc(n ? n : 1); }

void *heap_calloc(size_t count, size_t n)
{
    if (n && count > MAX_REQUEST / n)
        return NULL;
    return calloc(count ? count : 1, n ? n : 1);
}

void *heap_realloc(void *p, size_t n)
{
    if (!p)
        return heap_malloc(n);
    if (n > MAX_REQUEST)
        return NULL;
    if (!n) {
        free(p);
        return NULL;
    }
    return realloc(p, n);
}

void *heap_memalign(size_t align, size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n ? n : 1))
        return NULL;
    return p;
}

void heap_free(void *p) { free(p); }

size_t heap_usable(const void *p) { return malloc_usable_size((void *)p); }

size_t heap_block_size(const void *p) { return malloc_usable_size((void *)p) + 8; }

size_t heap_seal(void) { return 0; }

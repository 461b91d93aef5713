/*
 * heapfuzz: the guest's heap (sandbox/_guest/heap.c) natively, under UBSan, driven by random
 * malloc / calloc / realloc / memalign / free sequences and checked against a shadow model.
 *
 * Built by the pinned zig for x86-linux-musl (32-bit): heap.c's blocks hold 32-bit sizes and
 * two pointers in a 16-byte minimum block, the wasm32 layout. memory.grow is emulated over one
 * mmap'd region, with addresses kept absolute (the region starts at a 64 KiB boundary and
 * memory.size counts the pages below it as already there), so heap.c runs unmodified. Its
 * libc entry points (malloc, free, ...) are renamed so the harness keeps musl's own.
 *
 * Now and then pages are grown behind the heap's back, as another user of memory.grow would,
 * so a region that does not follow the last one is exercised too.
 *
 * Usage: heapfuzz SEED OPS [LIMIT_MIB]. Exit 0 when every check held; a failed check prints
 * the op and aborts.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static size_t qjf_memory_size(int mem);
static size_t qjf_memory_grow(int mem, size_t pages);

#define __builtin_wasm_memory_size qjf_memory_size
#define __builtin_wasm_memory_grow qjf_memory_grow
#define malloc heap_libc_malloc
#define free heap_libc_free
#define calloc heap_libc_calloc
#define realloc heap_libc_realloc
#define reallocarray heap_libc_reallocarray
#define malloc_usable_size heap_libc_malloc_usable_size
#define memalign heap_libc_memalign
#define aligned_alloc heap_libc_aligned_alloc
#define valloc heap_libc_valloc
#define posix_memalign heap_libc_posix_memalign
#include "heap.c"
#undef malloc
#undef free
#undef calloc
#undef realloc
#undef reallocarray
#undef malloc_usable_size
#undef memalign
#undef aligned_alloc
#undef valloc
#undef posix_memalign

/* ---- emulated linear memory */

static uintptr_t region_base, region_pages, region_used; /* in wasm pages */

static size_t qjf_memory_size(int mem)
{
    (void)mem;
    return region_base / PAGE + region_used;
}

static size_t qjf_memory_grow(int mem, size_t pages)
{
    (void)mem;
    if (pages > region_pages - region_used)
        return (size_t)-1;
    size_t old = region_base / PAGE + region_used;
    region_used += pages;
    return old;
}

static void map_region(uint32_t mib)
{
    size_t bytes = (size_t)mib << 20;
    char *p = mmap(NULL, bytes + PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("heapfuzz: mmap");
        exit(2);
    }
    region_base = ((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    region_pages = bytes / PAGE;
    /* a few pages before the heap's first region, as the guest's statics are */
    region_used = 1;
}

/* ---- the shadow model */

#define SLOTS 1024

typedef struct {
    uint8_t *p;
    size_t n;     /* bytes asked for */
    uint8_t fill; /* every byte of the n holds fill ^ (offset & 0xFF) */
} Slot;

static Slot slots[SLOTS];
static uint64_t rng_state;
static unsigned long long op_index;
static uintptr_t sealed_at; /* pages in use when the heap was sealed */
static uintptr_t gap_end;   /* pages in use after the last growth behind the heap's back */

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void fail(const char *what, const Slot *s)
{
    fprintf(stderr, "heapfuzz: op %llu: %s (block %p, %zu bytes)\n", op_index, what,
            s ? (void *)s->p : NULL, s ? s->n : (size_t)0);
    abort();
}

static void fill(Slot *s)
{
    s->fill = (uint8_t)rnd();
    for (size_t i = 0; i < s->n; i++)
        s->p[i] = (uint8_t)(s->fill ^ (i & 0xFF));
}

static void check_contents(const Slot *s, size_t upto)
{
    for (size_t i = 0; i < upto; i++)
        if (s->p[i] != (uint8_t)(s->fill ^ (i & 0xFF)))
            fail("a block's bytes changed while it was allocated", s);
}

/* A fresh block: inside the region, aligned, big enough, overlapping no live block. */
static void check_new(const Slot *s, size_t align, int self)
{
    uintptr_t a = (uintptr_t)s->p;
    uintptr_t lo = region_base, hi = region_base + region_used * PAGE;
    if (a % align)
        fail("a block is not aligned", s);
    if (a < lo || a + s->n > hi || a + heap_usable(s->p) > hi)
        fail("a block lies outside linear memory", s);
    if (heap_usable(s->p) < s->n)
        fail("heap_usable is smaller than the request", s);
    if (heap_block_size(s->p) != heap_usable(s->p) + HDR)
        fail("heap_block_size is not heap_usable plus the header", s);
    size_t end = a + heap_usable(s->p);
    for (int i = 0; i < SLOTS; i++) {
        const Slot *o = &slots[i];
        if (!o->p || i == self)
            continue;
        uintptr_t oa = (uintptr_t)o->p, oe = oa + heap_usable(o->p);
        if (a < oe && oa < end)
            fail("two live blocks overlap", s);
    }
}

static size_t pick_size(void)
{
    uint64_t r = rnd();
    switch (r % 16) {
    case 0:
        return 0;
    case 1:
        return (size_t)(rnd() % (rnd() % 8 ? 300000u : 4u << 20)); /* large */
    case 2:
        return 0x7FFF0000u + (size_t)(rnd() % 0x20000u); /* around MAX_REQUEST */
    case 3:
        return (size_t)(rnd() % 70000);
    default:
        return (size_t)(rnd() % 300);
    }
}

static void step(void)
{
    if (rnd() % 2048 == 0 && region_used + 4 < region_pages) {
        /* something else grew linear memory: the heap's next region does not follow its top */
        uint8_t *gap = (uint8_t *)(region_base + region_used * PAGE);
        region_used += 1 + rnd() % 3;
        gap_end = region_used;
        memset(gap, 0xA5, PAGE); /* and wrote there: the heap must not read it as its own */
        return;
    }
    int i = (int)(rnd() % SLOTS);
    Slot *s = &slots[i];
    uint64_t kind = rnd() % 10;
    if (s->p && kind < 4) { /* free */
        check_contents(s, s->n);
        heap_free(s->p);
        s->p = NULL;
        return;
    }
    if (s->p && kind < 7) { /* realloc, contents kept up to the smaller size */
        size_t n = pick_size();
        uint8_t *q = heap_realloc(s->p, n);
        if (!q) {
            if (n == 0) {
                s->p = NULL;
                return;
            }
            check_contents(s, s->n); /* a failed realloc leaves the block as it was */
            return;
        }
        Slot t = { q, n, s->fill };
        check_contents(&t, n < s->n ? n : s->n);
        *s = t;
        check_new(s, ALIGN, i);
        fill(s);
        return;
    }
    if (s->p) {
        check_contents(s, s->n);
        heap_free(s->p);
        s->p = NULL;
    }
    size_t n = pick_size(), align = ALIGN;
    uint8_t *p;
    if (kind == 7) {
        size_t count = (size_t)(rnd() % 64), each = n / 8;
        if (rnd() % 32 == 0)
            count = SIZE_MAX / 4, each = 8; /* overflow: must fail */
        int overflows = each && count > SIZE_MAX / each; /* large sizes overflow too */
        p = heap_calloc(count, each);
        if (p && overflows)
            fail("calloc's size overflow went unnoticed", NULL);
        /* refused as it must be: the product wrapped, so its (small) value means nothing */
        n = overflows ? SIZE_MAX : count * each;
        if (p)
            for (size_t k = 0; k < n; k++)
                if (p[k])
                    fail("calloc's block is not zeroed", &(Slot){ p, n, 0 });
    } else if (kind == 8) {
        align = (size_t)1 << (rnd() % 17); /* up to a wasm page */
        p = heap_memalign(align, n);
        if (align < ALIGN)
            align = ALIGN;
    } else {
        p = heap_malloc(n);
    }
    if (!p) {
        if (n <= 4096 && region_used < region_pages / 2)
            fail("a small request failed with room to spare", NULL);
        return;
    }
    s->p = p;
    s->n = n;
    check_new(s, align, i);
    fill(s);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: heapfuzz SEED OPS [LIMIT_MIB]\n");
        return 2;
    }
    rng_state = strtoull(argv[1], NULL, 0) * 2654435761u + 0x9E3779B97F4A7C15ull;
    if (!rng_state)
        rng_state = 1;
    unsigned long long ops = strtoull(argv[2], NULL, 0);
    map_region(argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : 256);
    /* as qj_init does: some blocks, then the seal, then the run */
    for (op_index = 0; op_index < ops / 10 && op_index < 2000; op_index++)
        step();
    heap_seal();
    sealed_at = region_used;
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].p)
            check_contents(&slots[i], slots[i].n);
    for (; op_index < ops; op_index++) {
        step();
        if (op_index % 4096 == 0)
            for (int i = 0; i < SLOTS; i++)
                if (slots[i].p)
                    check_contents(&slots[i], slots[i].n);
    }
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].p) {
            check_contents(&slots[i], slots[i].n);
            heap_free(slots[i].p);
        }
    /* everything freed: the memory grown since the seal (and since the last gap) is free
     * again and coalesced, so one block of nearly all of it fits without growing (the holes
     * the seal set aside stay out) */
    size_t since_seal = region_used - (gap_end > sealed_at ? gap_end : sealed_at);
    region_pages = region_used; /* no more growing */
    if (since_seal > 2 && !heap_malloc((since_seal - 2) * PAGE))
        fail("after freeing every block, the memory grown since the seal does not coalesce", NULL);
    printf("heapfuzz: %llu ops, %zu pages grown\n", ops, (size_t)region_used);
    return 0;
}

/*
 * The guest's heap: a two-level segregated fit allocator (TLSF) with boundary tags and immediate
 * coalescing, over linear memory grown with memory.grow. It replaces the libc allocator (whose
 * power-of-two size classes wasted up to half of linear memory and never let memory freed in
 * one class serve another), for QuickJS through mem.c and for everything else through the
 * malloc family defined at the end of this file (libc's own are weak symbols).
 *
 * A block is an 8-byte header (the size of the previous block, then this block's size and two
 * flags) followed by its payload, 16-aligned; sizes are multiples of 16 and include the header.
 * A free block keeps its free-list links in its payload; its size is also written into the
 * next block's header, so a block being freed finds a free predecessor. Each region taken from
 * memory.grow ends with a zero-size used block (the sentinel); a region that starts where the
 * last one ended extends it instead. The sentinel at the top of the heap keeps its tag (the
 * size of the free block before it) in the heap's state instead: allocations at the top then
 * write no page but the ones they take, where each change of the free tail's size would
 * otherwise write the sentinel's page, at the far end of the region (a copy-on-write fault in
 * a fresh instance). Every piece of state is in linear memory (statics), so it is part of the
 * build-time snapshot.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "guest.h"

#define PAGE 65536u
#define ALIGN 16u
#define HDR 8u           /* header bytes before the payload */
#define MIN_BLOCK 16u    /* header + the two free-list links */
#define SL_LOG2 4        /* 16 second-level lists per first level */
#define SL_COUNT (1u << SL_LOG2)
#define FL_SHIFT 8       /* sizes below 256 are one first level, in steps of 16 */
#define SMALL (1u << FL_SHIFT)
#define FL_COUNT 25      /* first levels up to 2**31 */
#define MAX_REQUEST 0x7FFF0000u
#define OS_PAGE 4096u    /* the usual system page: the unit of a copy-on-write fault */
#define RUN_ROOM (16u * 1024u) /* room at the top of the sealed heap, for a run's first blocks */

#define F_FREE 1u
#define F_PREV_FREE 2u
#define F_MASK 3u

typedef struct Block {
    uint32_t prev_size; /* valid when F_PREV_FREE is set */
    uint32_t size;      /* bytes including the header, | flags */
    struct Block *next_free, *prev_free; /* only while free */
} Block;

typedef struct {
    uint32_t fl_map;
    uint32_t sl_map[FL_COUNT];
    Block *lists[FL_COUNT][SL_COUNT];
    uintptr_t top;      /* the end of the last region (just past its sentinel) */
    int has_top;        /* a region exists (top may wrap to 0 at 4 GiB) */
    uint32_t top_prev_free; /* the top sentinel's tag: size of the free block before it, or 0 */
} Heap;

static Heap heap;

static inline uint32_t bsize(const Block *b) { return b->size & ~F_MASK; }
static inline Block *next_phys(Block *b) { return (Block *)((char *)b + bsize(b)); }
static inline Block *prev_phys(Block *b) { return (Block *)((char *)b - b->prev_size); }
static inline void *payload(Block *b) { return (char *)b + HDR; }
static inline Block *block_of(const void *p) { return (Block *)((char *)(uintptr_t)p - HDR); }
static inline int fls32(uint32_t x) { return 31 - __builtin_clz(x); }
static inline int is_top(const Block *b) { return heap.has_top && (uintptr_t)b == heap.top - HDR; }

/* The block before `n` became free with `size` bytes: tag `n` (the top sentinel's tag is kept
 * in the heap's state). */
static inline void tag_prev_free(Block *n, uint32_t size)
{
    if (is_top(n)) {
        heap.top_prev_free = size;
        return;
    }
    n->prev_size = size;
    n->size |= F_PREV_FREE;
}

static inline void tag_prev_used(Block *n)
{
    if (is_top(n))
        heap.top_prev_free = 0;
    else
        n->size &= ~F_PREV_FREE;
}

/* The list a block of `size` belongs to. */
static void mapping(uint32_t size, int *fl, int *sl)
{
    if (size < SMALL) {
        *fl = 0;
        *sl = (int)(size / ALIGN);
    } else {
        int f = fls32(size);
        *sl = (int)((size >> (f - SL_LOG2)) ^ SL_COUNT);
        *fl = f - (FL_SHIFT - 1);
    }
}

/* The first list whose every block fits `size` (rounds `size` up to the next list). */
static void mapping_search(uint32_t size, int *fl, int *sl)
{
    if (size >= SMALL)
        size += (1u << (fls32(size) - SL_LOG2)) - 1;
    mapping(size, fl, sl);
}

static void insert_free(Block *b)
{
    int fl, sl;
    mapping(bsize(b), &fl, &sl);
    Block *head = heap.lists[fl][sl];
    b->next_free = head;
    b->prev_free = NULL;
    if (head)
        head->prev_free = b;
    heap.lists[fl][sl] = b;
    heap.fl_map |= 1u << fl;
    heap.sl_map[fl] |= 1u << sl;
}

static void remove_free(Block *b)
{
    int fl, sl;
    mapping(bsize(b), &fl, &sl);
    if (b->prev_free)
        b->prev_free->next_free = b->next_free;
    else
        heap.lists[fl][sl] = b->next_free;
    if (b->next_free)
        b->next_free->prev_free = b->prev_free;
    if (!heap.lists[fl][sl]) {
        heap.sl_map[fl] &= ~(1u << sl);
        if (!heap.sl_map[fl])
            heap.fl_map &= ~(1u << fl);
    }
}

/* Mark `b` (not in a list, its neighbours already merged) free and list it. */
static void make_free(Block *b, uint32_t size)
{
    b->size = size | F_FREE | (b->size & F_PREV_FREE);
    tag_prev_free(next_phys(b), size);
    insert_free(b);
}

/* Free `b` (a used block, or a fresh one not in a list), merging it with free neighbours. */
static void release(Block *b)
{
    uint32_t size = bsize(b);
    Block *n = next_phys(b);
    if (n->size & F_FREE) {
        remove_free(n);
        size += bsize(n);
    }
    if (b->size & F_PREV_FREE) {
        Block *p = prev_phys(b);
        remove_free(p);
        size += bsize(p);
        b = p;
    }
    make_free(b, size);
}

/* Cut a used block `b` down to `size`, freeing the tail when it can be a block of its own. */
static void trim(Block *b, uint32_t size)
{
    uint32_t have = bsize(b);
    if (have - size < MIN_BLOCK)
        return;
    b->size = size | (b->size & F_PREV_FREE);
    Block *tail = (Block *)((char *)b + size);
    tail->size = have - size; /* used, previous (b) used */
    release(tail);
}

/* Take a free block out of its list and mark it used (the next block's flag follows). */
static void take(Block *b)
{
    remove_free(b);
    b->size &= ~F_FREE;
    tag_prev_used(next_phys(b));
}

static Block *find_fit(uint32_t size)
{
    int fl, sl;
    mapping_search(size, &fl, &sl);
    if (fl >= FL_COUNT)
        return NULL;
    uint32_t sl_map = heap.sl_map[fl] & (~0u << sl);
    if (!sl_map) {
        uint32_t fl_map = fl + 1 < FL_COUNT ? heap.fl_map & (~0u << (fl + 1)) : 0;
        if (!fl_map)
            return NULL;
        fl = __builtin_ctz(fl_map);
        sl_map = heap.sl_map[fl];
    }
    return heap.lists[fl][__builtin_ctz(sl_map)];
}

/* Near the hard cap: a block in `size`'s own list may fit although the list is not searched
 * by find_fit (which only takes lists whose every block fits). */
static Block *find_exact(uint32_t size)
{
    int fl, sl;
    mapping(size, &fl, &sl);
    for (Block *b = heap.lists[fl][sl]; b; b = b->next_free)
        if (bsize(b) >= size)
            return b;
    return NULL;
}

/* Grow linear memory by enough pages for a free block of `size`; 0 when memory.grow fails. */
static int grow(uint32_t size)
{
    uint32_t avail = 0;
    Block *sentinel = heap.has_top ? (Block *)(heap.top - HDR) : NULL;
    /* the free block before the sentinel counts only if the new pages will follow it */
    uintptr_t now = (uintptr_t)__builtin_wasm_memory_size(0) * PAGE;
    if (sentinel && now == heap.top)
        avail = heap.top_prev_free;
    uint32_t need = size > avail ? size - avail : MIN_BLOCK;
    uint64_t bytes = (uint64_t)need + 2 * HDR;
    size_t pages = (size_t)((bytes + PAGE - 1) / PAGE);
    size_t old = __builtin_wasm_memory_grow(0, pages);
    if (old == (size_t)-1)
        return 0;
    uintptr_t start = (uintptr_t)old * PAGE, end = start + pages * PAGE;
    Block *b;
    if (sentinel && start == heap.top) {
        b = sentinel; /* the old sentinel becomes the new block's header, with its tag */
        b->prev_size = heap.top_prev_free;
        b->size = (uint32_t)(pages * PAGE) | (heap.top_prev_free ? F_PREV_FREE : 0);
    } else {
        if (sentinel && heap.top_prev_free) { /* no longer the top: its tag goes in place */
            sentinel->prev_size = heap.top_prev_free;
            sentinel->size |= F_PREV_FREE;
        }
        b = (Block *)(start + HDR);
        b->size = (uint32_t)(end - HDR - (uintptr_t)b); /* nothing before it to merge */
    }
    /* memory.grow's pages are zero, so the region's end already reads as a used block of size
     * 0 (the sentinel); as the top one, its tag is kept in heap.top_prev_free */
    heap.top = end;
    heap.has_top = 1;
    heap.top_prev_free = 0;
    release(b);
    return 1;
}

static uint32_t block_size_for(size_t n)
{
    uint32_t s = (uint32_t)((n + HDR + ALIGN - 1) & ~(size_t)(ALIGN - 1));
    return s < MIN_BLOCK ? MIN_BLOCK : s;
}

void *heap_malloc(size_t n)
{
    if (n > MAX_REQUEST)
        return NULL;
    uint32_t size = block_size_for(n);
    Block *b = find_fit(size);
    if (!b && grow(size))
        b = find_fit(size);
    if (!b)
        b = find_exact(size);
    if (!b)
        return NULL;
    take(b);
    trim(b, size);
    return payload(b);
}

void heap_free(void *p)
{
    if (p)
        release(block_of(p));
}

void *heap_calloc(size_t count, size_t n)
{
    if (n && count > SIZE_MAX / n)
        return NULL;
    void *p = heap_malloc(count * n);
    if (p)
        memset(p, 0, bsize(block_of(p)) - HDR);
    return p;
}

void *heap_realloc(void *p, size_t n)
{
    if (!p)
        return heap_malloc(n);
    if (!n) {
        heap_free(p);
        return NULL;
    }
    if (n > MAX_REQUEST)
        return NULL;
    Block *b = block_of(p);
    uint32_t size = block_size_for(n), have = bsize(b);
    if (size <= have) {
        trim(b, size);
        return p;
    }
    Block *nx = next_phys(b);
    if ((nx->size & F_FREE) && have + bsize(nx) >= size) {
        take(nx);
        b->size += bsize(nx); /* keeps b's flags; the block after nx now sees b used */
        trim(b, size);
        return p;
    }
    void *q = heap_malloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, have - HDR);
    heap_free(p);
    return q;
}

/* A block aligned to `align` (a power of two): a bigger block whose head is cut off. */
void *heap_memalign(size_t align, size_t n)
{
    if (align <= ALIGN)
        return heap_malloc(n);
    if (align > PAGE || n > MAX_REQUEST - align - MIN_BLOCK)
        return NULL;
    char *p = heap_malloc(n + align + MIN_BLOCK);
    if (!p)
        return NULL;
    uintptr_t a = ((uintptr_t)p + MIN_BLOCK + align - 1) & ~(uintptr_t)(align - 1);
    if (a == (uintptr_t)p)
        return p;
    Block *b = block_of(p), *nb = block_of((void *)a);
    uint32_t lead = (uint32_t)((char *)nb - (char *)b), total = bsize(b);
    nb->size = total - lead; /* used; its predecessor (the lead) used until released */
    nb->prev_size = lead;
    b->size = lead | (b->size & F_PREV_FREE);
    release(b);
    trim(nb, block_size_for(n));
    return (void *)a;
}

size_t heap_usable(const void *p)
{
    return bsize(block_of(p)) - HDR;
}

size_t heap_block_size(const void *p)
{
    return bsize(block_of(p));
}

/* The libc malloc family, so libc and the rest of the guest share this heap. */

void *malloc(size_t n)
{
    void *p = heap_malloc(n);
    if (!p)
        errno = ENOMEM;
    return p;
}

void free(void *p) { heap_free(p); }

void *calloc(size_t count, size_t n)
{
    void *p = heap_calloc(count, n);
    if (!p)
        errno = ENOMEM;
    return p;
}

void *realloc(void *p, size_t n)
{
    void *q = heap_realloc(p, n);
    if (!q && n)
        errno = ENOMEM;
    return q;
}

void *reallocarray(void *p, size_t count, size_t n)
{
    if (n && count > SIZE_MAX / n) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, count * n);
}

size_t malloc_usable_size(void *p) { return p ? heap_usable(p) : 0; }

void *memalign(size_t align, size_t n)
{
    if (!align || (align & (align - 1))) {
        errno = EINVAL;
        return NULL;
    }
    void *p = heap_memalign(align, n);
    if (!p)
        errno = ENOMEM;
    return p;
}

void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

void *valloc(size_t n) { return memalign(PAGE, n); }

int posix_memalign(void **out, size_t align, size_t n)
{
    if (!align || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    void *p = heap_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* The free block that ends at the top of the heap, if any. */
static Block *top_free(void)
{
    if (!heap.has_top || !heap.top_prev_free)
        return NULL;
    return (Block *)(heap.top - HDR - heap.top_prev_free);
}

/* Called once, at the end of qj_init (snapshot time). Every free block but the last one
 * (which ends at the top of the heap) is zeroed and kept out of the free lists for good: the
 * snapshot then stores none of the garbage init left behind, and a run's allocations come from
 * the top of the heap, on pages no other run state shares, instead of from holes spread over
 * the whole snapshot (each first write to a snapshot page costs the run a copy-on-write fault).
 * The last block then starts on a page of its own, with RUN_ROOM bytes at least: its head up
 * to the page boundary is set aside too. Returns the bytes set aside. */
size_t heap_seal(void)
{
    Block *tail = top_free();
    size_t sealed = 0;
    for (int fl = 0; fl < FL_COUNT; fl++)
        for (int sl = 0; sl < SL_COUNT; sl++) {
            Block *b = heap.lists[fl][sl];
            while (b) {
                Block *next = b->next_free;
                if (b != tail) {
                    take(b);
                    sealed += bsize(b);
                }
                memset((char *)b + sizeof(Block), 0, bsize(b) - sizeof(Block));
                b = next;
            }
        }
    if ((!tail || bsize(tail) < RUN_ROOM + OS_PAGE) && grow(RUN_ROOM + OS_PAGE))
        tail = top_free();
    if (tail) {
        /* the new last block's header is 8 bytes past a page boundary (payloads are 16-aligned) */
        uintptr_t at = (((uintptr_t)tail - HDR + OS_PAGE - 1) & ~(uintptr_t)(OS_PAGE - 1)) + HDR;
        uint32_t lead = (uint32_t)(at - (uintptr_t)tail);
        if (lead && bsize(tail) >= lead + MIN_BLOCK) {
            take(tail);
            Block *rest = (Block *)at;
            rest->size = bsize(tail) - lead; /* used, its predecessor used */
            tail->size = lead | (tail->size & F_PREV_FREE);
            memset((char *)tail + HDR, 0, lead - HDR);
            release(rest);
            sealed += lead;
        }
    }
    return sealed;
}

/*
 * Prefaulting the pages every run writes. A fresh instance maps the guest's memory image
 * copy-on-write, and most pages a run writes are read first: the read maps the image's page
 * read-only (with its neighbours), and the write that follows replaces it with a private copy.
 * Replacing a mapping must flush it from every CPU that may cache it, so with guests running
 * on several threads each such fault interrupts the other cores (on a virtual machine, an
 * exit on both sides). Populating those pages for writing before the guest runs makes their
 * private copies at once, while nothing maps them: no flush, and one system call for each run
 * of consecutive pages instead of two faults a page. Which pages: sandbox/_prefault.py learns
 * them from sampled runs. Linux 5.14 and later (MADV_POPULATE_WRITE); elsewhere qj_prefault
 * answers -1 and the host stops calling it.
 */
#define _DEFAULT_SOURCE /* madvise under -std=c11 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "host.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#endif

/* Populate for writing the pages `pages[0..n)` (indices in ascending order, in pages of the
 * system's size) of the memory at `base`, `size` bytes long; indices at or past its end are
 * skipped. Returns 0, or -1 when the system cannot (old kernel, other system): the caller then
 * stops. A page that cannot be populated (out of memory) is left to fault as before. */
EXPORT int qj_prefault(uint8_t *base, uint64_t size, const uint32_t *pages, uint32_t n)
{
#if defined(__linux__)
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return -1;
    uint64_t last = size / (uint64_t)page; /* pages wholly inside the memory */
    uint32_t i = 0;
    while (i < n && pages[i] < last) {
        uint32_t first = pages[i], end = first + 1;
        i++;
        while (i < n && pages[i] == end && end < last) {
            end++;
            i++;
        }
        if (madvise(base + (uint64_t)first * (uint64_t)page,
                    (size_t)(end - first) * (size_t)page, MADV_POPULATE_WRITE) != 0 &&
            (errno == EINVAL || errno == ENOSYS))
            return -1; /* no MADV_POPULATE_WRITE here */
    }
    return 0;
#else
    (void)base;
    (void)size;
    (void)pages;
    (void)n;
    return -1;
#endif
}

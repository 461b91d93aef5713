/*
 * The boundary: the buffers that carry bytes between host and guest (quickjail.h says who
 * owns which).
 */
#include <stdlib.h>
#include <wasi/api.h>
#include "guest.h"

_Static_assert(QJ_WASI_EBADF == __WASI_ERRNO_BADF, "QJ_WASI_EBADF is WASI's EBADF");

/* On pages of its own: the host drops them while the guest waits (sandbox/_native.py,
 * NativeInstance.drop), and no static shares a page with the bytes a crossing writes. */
_Alignas(4096) uint8_t scratch[QJ_SCRATCH_SIZE];

uint8_t *qj_scratch(void) { return scratch; }

void *qj_alloc(uint32_t size) { return malloc(size ? size : 1); }

const uint8_t *reply_bytes(int64_t n, uint8_t **owned)
{
    *owned = NULL;
    if (n <= QJ_SCRATCH_SIZE)
        return scratch;
    uint8_t *p = malloc((size_t)n);
    if (!p)
        return NULL;
    qj_host(QJ_OP_FETCH, 0, QJ_ADDR(p), (int32_t)n, 0);
    *owned = p;
    return p;
}

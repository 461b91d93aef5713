/*
 * The one fact boundary.c takes from WASI's header, for the native (fuzzing) build of the
 * guest C, which has no wasi-libc.
 */
#ifndef QJ_FUZZ_WASI_API_H
#define QJ_FUZZ_WASI_API_H
#define __WASI_ERRNO_BADF 8
#endif

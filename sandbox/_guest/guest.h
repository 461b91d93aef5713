/*
 * guest.h: what the guest's C files share with each other. Private: the host sees none of it
 * (the ABI is quickjail.h).
 *
 *   boundary.c    the scratch buffer, qj_scratch, qj_alloc, fetching long replies
 *   heap.c        the guest's heap (TLSF over memory.grow), also behind libc's malloc family
 *   mem.c         the allocator QuickJS uses: soft memory cap, grace, reserves, OOM signal
 *   oom.c         which value an allocation failure threw (hooks our quickjs.c patch calls)
 *   encode.c      JS value -> value message (and the byte buffer it writes)
 *   decode.c      value message -> JS value; host error records -> JS errors
 *   builtins.c    console, report, Math.random, the switch for eval and Function, namespaces
 *   web.c         the web-platform globals: runs _guest/web/*.js at build time, their C side
 *   timers.c      the timer table behind setTimeout/setInterval and native.setTimer
 *   web_crypto.c  crypto's C side: the run's ChaCha20 stream, SHA-1/256/384/512
 *   web_perf.c    performance's C side: the run's time origin, now()
 *   web_encoding.c  the UTF-8 loops of TextEncoder and TextDecoder (web/encoding.js)
 *   web_encoding_legacy.c  TextDecoder's other encodings and the label lookup
 *   web_clone.c   the class of an object, for structuredClone (web/clone.js)
 *   web_collate.c the Unicode Collation Algorithm behind Intl.Collator (web/intl_collator.js)
 *   hostfn.c      host functions: closures that call the host, sync or async
 *   modules.c     module names and the loader: source, bytecode and host modules
 *   rejections.c  unhandled rejections (events, then told to the host), reported exceptions
 *   init.c        qj_init: the runtime, the context and the bootstrap (bootstrap.js)
 *   run.c         qj_run and qj_resume: the run record, the entry call, the outcome
 *   compile.c     compile batches: modules to bytecode, nothing runs
 *   entry.c       the entry: compiled by its kind (module, script, auto's code shapes), started
 */
#ifndef QUICKJAIL_GUEST_H
#define QUICKJAIL_GUEST_H

#include <stddef.h>
#include <stdint.h>
#include "quickjs.h"
#include "quickjail.h"

/* ---- global state: one runtime and one context per instance (defined in init.c) */

typedef struct {
    JSValue resolve, reject;
    int used;
} PendingCall;

typedef struct {
    JSRuntime *rt;
    JSContext *ctx;
    JSValue helpers;      /* the bootstrap's helpers object (original builtins) */
    JSValue ctors;        /* the intrinsic error constructors, for host errors */
    JSValue native;       /* the web files' native object (hidden globals land on it) */
    /* run state */
    int phase;            /* QJ_PHASE_* */
    int kind;             /* QJ_KIND_MODULE, QJ_KIND_SCRIPT (or QJ_KIND_AUTO until decided) */
    int auto_kind;        /* the run asked for kind auto (kind is what it settled on) */
    JSValue module_val;   /* JSModuleDef as value, for the namespace */
    JSValue promise;      /* what we are waiting on */
    char *fn_name;
    JSValue args;
    int has_args;
    int link_failed;
    int compile_only;     /* compile batches: imports resolve to empty stubs, nothing runs */
    int saw_attributes;   /* a module parsed since this was cleared has import attributes */
    PendingCall *calls;
    uint32_t ncalls, calls_cap;
    uint32_t pending;     /* async host calls in flight */
    int dynamic;          /* eval and Function work in this run (QJ_FLAG_DYNAMIC) */
    /* the run's clocks at its start (web_perf.c); here, on the page the run state is on,
       rather than on a page of their own that every run would write */
    uint64_t mono_origin_ns, wall_origin_ns;
} Guest;

extern Guest g;

/* ---- boundary.c */

extern uint8_t scratch[QJ_SCRATCH_SIZE];

/* Fetch a reply of length n (already in scratch when it fits). Caller frees *owned. */
const uint8_t *reply_bytes(int64_t n, uint8_t **owned);

static inline uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* ---- heap.c: 16-aligned blocks; heap_block_size counts the header, heap_usable does not */

void *heap_malloc(size_t n);
void *heap_calloc(size_t count, size_t n);
void *heap_realloc(void *p, size_t n);
void *heap_memalign(size_t align, size_t n);
void heap_free(void *p);
size_t heap_usable(const void *p);
size_t heap_block_size(const void *p);
/* snapshot time: set init's free holes aside (zeroed) so runs allocate at the top */
size_t heap_seal(void);

/* ---- our patches to quickjs.c (sandbox/_patches/0006-arenas-sealed-at-snapshot.patch, 0012) */

/* snapshot time: arenas made so far take no new blocks; the next ones start at first_size */
void JS_SealArenas(JSRuntime *rt, unsigned int first_size);
/* snapshot time: `obj` becomes the last of the GC objects (the one a run's first is linked to) */
void JS_MoveToGCListEnd(JSContext *ctx, JSValueConst obj);
/* snapshot time: the atom array's free slots are listed in order, its last run first */
void JS_SortFreeAtoms(JSRuntime *rt);

/* ---- mem.c */

extern const JSMallocFunctions qj_malloc_funcs;
void mem_hold_reserves(void);
void mem_set_soft_limit(uint32_t soft_limit);
void mem_finishing(void);

/* ---- oom.c */

void oom_init(JSContext *ctx);
/* called by our patched quickjs.c (sandbox/_patches/0001-out-of-memory-error.patch) */
JSValue qj_oom_fallback(JSContext *ctx);
void qj_oom_thrown(JSContext *ctx, JSValueConst exception);
/* v is the last value an allocation failure threw (not one the program made or replaced) */
int oom_is_last_failure(JSValueConst v);

/* ---- encode.c */

/* a growable byte buffer; `failed` sticks once an allocation failed */
typedef struct {
    uint8_t *p;
    size_t len, cap;
    int failed;
} Buf;

void buf_free(Buf *b);

/* Encode v into a message in out (owned by the caller). Returns -1 with a pending exception.
 * lenient (logs): describe what cannot be transferred instead of failing. root names the
 * value in error messages. */
int encode_message(JSContext *ctx, JSValueConst v, int lenient, const char *root, Buf *out);
/* The constructor name of a thrown value that is not an Error (a string), read from own data
 * properties only, so no program code runs; JS_UNDEFINED when there is none. */
JSValue thrown_name(JSContext *ctx, JSValueConst v);
/* typed-array kinds by JSTypedArrayEnum: their constructor's name and element size */
#define QJ_TYPED_KINDS 12
extern const char *const qj_typed_kinds[QJ_TYPED_KINDS];
extern const uint8_t qj_typed_sizes[QJ_TYPED_KINDS];

/* ---- decode.c */

JSValue decode_message(JSContext *ctx, const uint8_t *p, size_t n);
JSValue make_error(JSContext *ctx, JSValue rec);

/* ---- builtins.c */

int install_builtins(JSContext *ctx);
void rng_seed(uint32_t seed_lo, uint32_t seed_hi);
void enable_dynamic_code(JSContext *ctx);
int disable_dynamic_code(JSContext *ctx);
JSValue wrap_namespace(JSContext *ctx, JSValue v);

/* ---- web.c */

int install_web(JSContext *ctx);

/* ---- timers.c */

int web_timers_natives(JSContext *ctx, JSValueConst native);
double timers_now(void);
uint32_t timers_pending(void);
/* ms until the next timer is due (at least 1), or -1 when none is pending */
int32_t timers_wait_ms(double now);
/* Fire the next timer if it is due at `now`: 1 fired, 0 none due, -1 its callback threw (the
 * exception is pending) */
int timers_fire_one(JSContext *ctx, double now);
/* the entry settled: cancel what is pending and tell the host the counts (QJ_OP_TIMERS) */
void timers_end(JSContext *ctx);

/* ---- web_crypto.c */

int web_crypto_natives(JSContext *ctx, JSValueConst native);
void crypto_seed(const uint32_t key[8]);

/* ---- web_perf.c */

int web_perf_natives(JSContext *ctx, JSValueConst native);
void perf_start(uint64_t mono_ns, uint64_t wall_ns);
/* ---- web_encoding.c */

int web_encoding_natives(JSContext *ctx, JSValueConst native);

/* ---- web_encoding_legacy.c (registered by web_encoding_natives) */

int web_encoding_legacy_natives(JSContext *ctx, JSValueConst native);

/* ---- web_clone.c */

int web_clone_natives(JSContext *ctx, JSValueConst native);

/* ---- web_idna.c */

int web_idna_natives(JSContext *ctx, JSValueConst native);
int web_collate_natives(JSContext *ctx, JSValueConst native);

/* ---- web_fetch.c */

int web_fetch_natives(JSContext *ctx, JSValueConst native);

/* ---- web_compress.c */

int web_compress_natives(JSContext *ctx, JSValueConst native);

/* ---- web_intl.c */

int web_intl_natives(JSContext *ctx, JSValueConst native);

/* ---- web.c */

JSValue web_eval_stripped(JSContext *ctx, const char *src, size_t len, const char *filename);

/* ---- hostfn.c */

JSValue bind_host_values(JSContext *ctx, JSValue v, int depth);

/* ---- modules.c */

char *module_normalize(JSContext *ctx, const char *base, const char *name, void *opaque);
int module_remember(JSContext *ctx, const char *name, int from_host);
JSModuleDef *module_loader(JSContext *ctx, const char *name, void *opaque,
                           JSValueConst attributes);
int module_check_attributes(JSContext *ctx, void *opaque, JSValueConst attributes);
JSModuleDef *module_from_bytecode(JSContext *ctx, const uint8_t *p, size_t n);

/* ---- rejections.c */

void rejection_tracker(JSContext *ctx, JSValueConst promise, JSValueConst reason,
                       bool is_handled, void *opaque);
void report_rejections(int has_error, JSValueConst error);
/* After a microtask checkpoint: fire "unhandledrejection" for the rejections still unhandled
 * since the last one. 1 events fired (their listeners may have queued jobs), 0 none, -1 an
 * exception that ends the run is pending. */
int rejections_notify(void);
/* "Report the exception" a callback threw: an "error" event at the global, then an error log
 * unless cancelled. 0 done, 1 the helper failed (log it another way), -1 an exception that
 * ends the run is pending. */
int report_exception(JSValueConst ex);
/* native.helpers, for web/global.js */
int web_global_natives(JSContext *ctx, JSValueConst native);

/* ---- entry.c */

/* Compile the entry by g.kind (kind auto settles on QJ_KIND_MODULE or QJ_KIND_SCRIPT) and
 * start it: returns the promise the run awaits, or JS_EXCEPTION with *outcome the outcome to
 * report (QJ_OUT_ERROR or QJ_OUT_LINK_ERROR). bytecode: src is the entry module's bytecode. */
JSValue entry_start(JSContext *ctx, const char *src, size_t len, const char *filename,
                    int bytecode, int *outcome);

/* ---- compile.c */

int32_t compile_batch(const uint8_t *p, size_t n);

#endif

/*
 * Guest traps reach wasmtime whoever installed a fault handler later.
 *
 * On Linux, wasmtime turns a guest's out-of-bounds access (and its other traps) into an error
 * of the run with the SIGSEGV/SIGBUS/SIGILL/SIGFPE handlers it installs when the first engine
 * is made. A handler installed after that (Python's faulthandler.enable(), Ray's failure
 * handler, a crash reporter) sees those signals first, does not know the fault is a guest's,
 * and ends the process. So once something has replaced wasmtime's handler, the host puts a
 * handler of its own on top (qj_signals_guard, for every new instance): a fault whose
 * instruction lies in compiled guest code (the images of the engines' modules) goes to
 * wasmtime's handler, which makes it the run's trap; any other fault goes to the handler that
 * was displaced, exactly as before. Nothing changes until a handler is replaced.
 *
 * macOS: wasmtime catches guest traps with Mach exception ports, not signals, and other
 * platforms have no guest stack support here: the functions do nothing there.
 */
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define _GNU_SOURCE /* REG_RIP in ucontext */
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>
#define QJ_SIGNALS 1
#endif
#include "host.h"

#define QJ_TRAP_SIGNALS 4
#define QJ_MAX_CODE_RANGES 8 /* two engines (metered or not) in a process, with room */

#ifdef QJ_SIGNALS
static const int trap_signals[QJ_TRAP_SIGNALS] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
static struct sigaction wasmtime_handler[QJ_TRAP_SIGNALS]; /* captured after the first engine */
static struct sigaction displaced[QJ_TRAP_SIGNALS];        /* what the guard went on top of */
static int captured;
static uintptr_t code_start[QJ_MAX_CODE_RANGES], code_end[QJ_MAX_CODE_RANGES];
static volatile int code_ranges;

static uintptr_t fault_pc(void *context)
{
    const ucontext_t *uc = context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#else
    return (uintptr_t)uc->uc_mcontext.pc;
#endif
}

static int in_guest_code(uintptr_t pc)
{
    for (int i = 0; i < code_ranges; i++)
        if (pc >= code_start[i] && pc < code_end[i])
            return 1;
    return 0;
}

static int slot_of(int sig)
{
    for (int i = 0; i < QJ_TRAP_SIGNALS; i++)
        if (trap_signals[i] == sig)
            return i;
    return -1;
}

/* Hand a fault to a handler as the kernel would have. A default or ignored action becomes the
 * default one, and returning makes the faulting instruction fault again: the process ends as
 * it would have with no handler (an ignored synchronous fault is not ignorable either). */
static void forward(const struct sigaction *to, int sig, siginfo_t *info, void *context)
{
    if (to->sa_flags & SA_SIGINFO) {
        to->sa_sigaction(sig, info, context);
        return;
    }
    if (to->sa_handler == SIG_DFL || to->sa_handler == SIG_IGN) {
        struct sigaction fallback = {0};
        fallback.sa_handler = SIG_DFL;
        sigaction(sig, &fallback, NULL);
        return;
    }
    to->sa_handler(sig);
}

static void guard(int sig, siginfo_t *info, void *context)
{
    int slot = slot_of(sig);
    if (slot < 0)
        return;
    if (in_guest_code(fault_pc(context)))
        forward(&wasmtime_handler[slot], sig, info, context);
    else
        forward(&displaced[slot], sig, info, context);
}

static int is_guard(const struct sigaction *a)
{
    return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == guard;
}

static int same_handler(const struct sigaction *a, const struct sigaction *b)
{
    if ((a->sa_flags & SA_SIGINFO) != (b->sa_flags & SA_SIGINFO))
        return 0;
    if (a->sa_flags & SA_SIGINFO)
        return a->sa_sigaction == b->sa_sigaction;
    return a->sa_handler == b->sa_handler;
}
#endif

/* Record the trap signals' handlers now installed: wasmtime's, right after the first engine
 * is made. Later calls do nothing. Returns 0, or -1 when a handler cannot be read. */
EXPORT int qj_signals_capture(void)
{
#ifdef QJ_SIGNALS
    if (captured)
        return 0;
    for (int i = 0; i < QJ_TRAP_SIGNALS; i++)
        if (sigaction(trap_signals[i], NULL, &wasmtime_handler[i]) != 0)
            return -1;
    captured = 1;
#endif
    return 0;
}

/* Compiled guest code lies in [start, end) (a module's image). Returns 0, or -1 when every
 * slot is taken (faults there then go to the displaced handler). */
EXPORT int qj_signals_guest_code(uintptr_t start, uintptr_t end)
{
#ifdef QJ_SIGNALS
    int n = code_ranges;
    for (int i = 0; i < n; i++)
        if (code_start[i] == start && code_end[i] == end)
            return 0;
    if (n >= QJ_MAX_CODE_RANGES)
        return -1;
    code_start[n] = start;
    code_end[n] = end;
    __atomic_store_n(&code_ranges, n + 1, __ATOMIC_RELEASE); /* the range is whole before seen */
#else
    (void)start;
    (void)end;
#endif
    return 0;
}

/* Where a handler other than wasmtime's and the guard took a trap signal, put the guard on top
 * of it (it keeps that handler for faults outside guest code). Returns how many signals it
 * guarded now (0: nothing had been replaced), or -1 when a handler could not be read or set. */
EXPORT int qj_signals_guard(void)
{
    int guarded = 0;
#ifdef QJ_SIGNALS
    if (!captured)
        return 0;
    for (int i = 0; i < QJ_TRAP_SIGNALS; i++) {
        struct sigaction now;
        if (sigaction(trap_signals[i], NULL, &now) != 0)
            return -1;
        if (is_guard(&now) || same_handler(&now, &wasmtime_handler[i]))
            continue;
        displaced[i] = now;
        struct sigaction mine = {0};
        mine.sa_sigaction = guard;
        /* as wasmtime's own: on the alternate stack it sets up, re-entrant */
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&mine.sa_mask);
        if (sigaction(trap_signals[i], &mine, NULL) != 0)
            return -1;
        guarded++;
    }
#endif
    return guarded;
}

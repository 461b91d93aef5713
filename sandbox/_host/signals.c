/*
 * Keeping wasmtime's trap handlers. wasmtime turns a guest's out-of-bounds access (and a few
 * other traps) into an error through the signal handlers it installs when the first engine is
 * made; a handler installed after that (Python's faulthandler.enable(), which Ray and
 * PYTHONFAULTHANDLER=1 call, or a crash reporter) takes the signal first, and a guest trap then
 * ends the whole process: faulthandler re-raises the signal from its own frame, where wasmtime
 * no longer recognises it. So the host captures wasmtime's handlers once, right after making
 * the first engine, and every new instance puts them back if something replaced them (the
 * replacement is the process's to notice: qj_signals_restore says how many it put back).
 */
#define _POSIX_C_SOURCE 200809L /* sigaction under -std=c11 */
#include <signal.h>
#include <string.h>
#include "host.h"

static const int trap_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
#define N_SIGNALS (sizeof(trap_signals) / sizeof(trap_signals[0]))
static struct sigaction captured[N_SIGNALS];
static int have_captured;

/* Record the handlers now installed for the trap signals (wasmtime's, right after the first
 * engine is made); later calls do nothing. Returns 0, or -1 when a handler cannot be read. */
EXPORT int qj_signals_capture(void)
{
    if (have_captured)
        return 0;
    for (size_t i = 0; i < N_SIGNALS; i++)
        if (sigaction(trap_signals[i], NULL, &captured[i]) != 0)
            return -1;
    have_captured = 1;
    return 0;
}

/* Put back every captured handler that something replaced; returns how many were put back
 * (0 when none was replaced or nothing was captured), or -1 when one could not be set. */
EXPORT int qj_signals_restore(void)
{
    if (!have_captured)
        return 0;
    int restored = 0;
    for (size_t i = 0; i < N_SIGNALS; i++) {
        struct sigaction now;
        if (sigaction(trap_signals[i], NULL, &now) != 0)
            return -1;
        if (now.sa_sigaction == captured[i].sa_sigaction &&
            (now.sa_flags & SA_SIGINFO) == (captured[i].sa_flags & SA_SIGINFO))
            continue;
        if (sigaction(trap_signals[i], &captured[i], NULL) != 0)
            return -1;
        restored++;
    }
    return restored;
}

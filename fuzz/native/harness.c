/*
 * The fuzzing harness: the guest C built natively (gcc, AddressSanitizer + UBSan) with this
 * file as its host. The host's side of quickjail.h is played from a "tape" of replies the
 * generator (fuzz/gen.py) wrote, so the decoder, the loader and the host-call paths get
 * hostile bytes, and every message the guest sends is checked for framing (the encoder).
 *
 * A fork server: qj_init runs once, then each case runs in a fork of that state (as each run
 * gets a fresh instance of the snapshot). stdin: one case file path per line; stdout: one line
 * per case, "status <code>" where code is the child's exit status (0 fine, 77 a guest
 * QJ_FAIL, 128+N killed by signal N). A sanitizer report goes to stderr.
 *
 * A case: u32 LE run-record length, the run record (quickjail.h), then tape entries
 * (u8 code, u32 LE length, bytes). Each reply the host owes takes the next entry; code is the
 * reply's sign and kind: 0 = the bytes are the reply, 0xFD = QJ_E_PENDING, any other byte
 * >= 0xF0 = that negative code. An empty tape answers with defaults.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "guest.h"

#define EXIT_GUEST_FAIL 77
#define MAX_STEPS 2000    /* qj_resume calls per case */
#define CHILD_SECONDS 60  /* a case that runs longer is a hang (SIGALRM); ASan is slow */

static const uint8_t *tape, *tape_end;
static uint8_t *pending_reply; /* a reply longer than the scratch buffer, until QJ_OP_FETCH */
static size_t pending_len;
static double clock_ms;        /* the virtual monotonic clock QJ_OP_SLEEP advances */
static int results;            /* QJ_OP_RESULT calls */
static uint32_t async_ids[4096];
static uint32_t n_async;
static int verbose;            /* QJFUZZ_VERBOSE set: each crossing is told on stderr */

static void die(const char *what)
{
    fprintf(stderr, "qjfuzz: %s\n", what);
    abort();
}

/* The guest reads the monotonic clock through this (fuzz/build.py renames clock_gettime in
 * the guest files): virtual time, so a timer of an hour costs nothing. */
int qjf_clock_gettime(clockid_t id, struct timespec *ts)
{
    if (id != CLOCK_MONOTONIC)
        return clock_gettime(id, ts);
    ts->tv_sec = (time_t)(clock_ms / 1000);
    ts->tv_nsec = (long)((clock_ms - (double)ts->tv_sec * 1000) * 1e6);
    return 0;
}

/* The next tape entry: its code and bytes; 0 when the tape is empty. */
static int next_entry(uint8_t *code, const uint8_t **p, uint32_t *n)
{
    if (tape_end - tape < 5)
        return 0;
    uint32_t len = rd_u32(tape + 1);
    if ((size_t)(tape_end - tape - 5) < len)
        len = (uint32_t)(tape_end - tape - 5);
    *code = tape[0];
    *p = tape + 5;
    *n = len;
    tape += 5 + len;
    return 1;
}

static int64_t code_value(uint8_t code) { return code >= 0xF0 ? (int64_t)(int8_t)code : 0; }

/* Hand the guest a reply: into scratch when it fits, else kept for QJ_OP_FETCH. */
static int64_t reply(const uint8_t *p, uint32_t n)
{
    free(pending_reply);
    pending_reply = NULL;
    if (n <= QJ_SCRATCH_SIZE) {
        memcpy(scratch, p, n);
        return n;
    }
    pending_reply = malloc(n);
    if (!pending_reply)
        die("out of memory");
    memcpy(pending_reply, p, n);
    pending_len = n;
    return n;
}

/* Read guest bytes as the host copies them (ASan checks the range), and check a value
 * message's framing: flags, JSON, blobs, nothing left over. */
static void check_message(const char *op, qj_addr_t b, int32_t c)
{
    if (c < 0)
        die("negative message length");
    uint8_t *m = malloc((size_t)c + 1);
    if (!m)
        die("out of memory");
    memcpy(m, (const void *)(uintptr_t)b, (size_t)c);
    size_t n = (size_t)c, at = 5;
    int ok = n >= 9 && m[0] <= QJ_MSG_TAGGED;
    if (ok) {
        size_t json = rd_u32(m + 1);
        ok = json <= n - 9;
        at += json;
    }
    if (ok) {
        uint32_t blobs = rd_u32(m + at);
        at += 4;
        for (uint32_t i = 0; ok && i < blobs; i++) {
            ok = n - at >= 4 && rd_u32(m + at) <= n - at - 4;
            if (ok)
                at += 4 + rd_u32(m + at);
        }
        ok = ok && at == n;
    }
    free(m);
    if (!ok) {
        fprintf(stderr, "qjfuzz: the guest sent a malformed message with %s\n", op);
        abort();
    }
}

int64_t qj_host(int32_t op, int32_t a, qj_addr_t b, int32_t c, int32_t d)
{
    uint8_t code = 0;
    const uint8_t *p = NULL;
    uint32_t n = 0;
    if (verbose) {
        fprintf(stderr, "qjfuzz: op %d a=%d len=%d d=%d", op, a, c, d);
        if ((op == QJ_OP_RESULT || op == QJ_OP_LOG || op == QJ_OP_REPORT) && c >= 5)
            fprintf(stderr, " %.*s", (int)(c - 5 < 300 ? c - 5 : 300),
                    (const char *)(uintptr_t)b + 5);
        fputc('\n', stderr);
    }
    switch (op) {
    case QJ_OP_LOG:
        check_message("QJ_OP_LOG", b, c);
        if (a < 0 || a >= QJ_LOG_LEVELS)
            die("bad log level");
        if (!next_entry(&code, &p, &n))
            return 0;
        if (code == (uint8_t)QJ_E_UNTRANSFERABLE) {
            uint32_t k = n < QJ_REFUSAL_TEXT_MAX ? n : QJ_REFUSAL_TEXT_MAX;
            memcpy(scratch, &k, 4);
            memcpy(scratch + 4, p, k);
            return QJ_E_UNTRANSFERABLE;
        }
        return code == 1 ? QJ_LOG_CLOSED : 0;
    case QJ_OP_REPORT:
    case QJ_OP_REJECTION:
        check_message(op == QJ_OP_REPORT ? "QJ_OP_REPORT" : "QJ_OP_REJECTION", b, c);
        if (op == QJ_OP_REJECTION || !next_entry(&code, &p, &n))
            return 0;
        if (code == (uint8_t)QJ_E_UNTRANSFERABLE) {
            uint32_t k = n < QJ_REFUSAL_TEXT_MAX ? n : QJ_REFUSAL_TEXT_MAX;
            memcpy(scratch, &k, 4);
            memcpy(scratch + 4, p, k);
            return QJ_E_UNTRANSFERABLE;
        }
        if (code == (uint8_t)QJ_E_REPORT_COUNT || code == (uint8_t)QJ_E_REPORT_BYTES) {
            uint64_t limit = n;
            memcpy(scratch, &limit, 8);
            return (int8_t)code;
        }
        return code_value(code) == QJ_E_HOST ? QJ_E_HOST : 0;
    case QJ_OP_RESULT:
        check_message("QJ_OP_RESULT", b, c);
        if (a != QJ_OUT_VALUE && a != QJ_OUT_ERROR && a != QJ_OUT_LINK_ERROR)
            die("bad outcome");
        results++;
        return 0;
    case QJ_OP_OOM:
    case QJ_OP_TIMERS:
        return 0;
    case QJ_OP_BYTECODE: {
        uint8_t *copy = malloc((size_t)c + 1);
        memcpy(copy, (const void *)(uintptr_t)b, (size_t)c);
        free(copy);
        return 0;
    }
    case QJ_OP_MODULE:
    case QJ_OP_CALL:
        if (op == QJ_OP_CALL)
            check_message("QJ_OP_CALL", b, c);
        else if (!memchr((const void *)(uintptr_t)b, 0, (size_t)c + 1))
            die("module name not NUL-terminated");
        if (!next_entry(&code, &p, &n))
            return op == QJ_OP_CALL ? QJ_E_HOST : QJ_E_REFUSED;
        if (code == (uint8_t)QJ_E_PENDING) {
            if (op == QJ_OP_CALL && d > 0 && n_async < sizeof async_ids / sizeof *async_ids) {
                async_ids[n_async++] = (uint32_t)d;
                return QJ_E_PENDING;
            }
            return QJ_E_HOST;
        }
        if (code)
            return code_value(code) ? code_value(code) : QJ_E_HOST;
        return reply(p, n);
    case QJ_OP_FETCH:
        if (!pending_reply || (size_t)c != pending_len)
            die("QJ_OP_FETCH without the reply it asks for");
        memcpy((void *)(uintptr_t)b, pending_reply, pending_len);
        free(pending_reply);
        pending_reply = NULL;
        return 0;
    case QJ_OP_SLEEP:
        if (a < 0)
            die("negative sleep");
        if (next_entry(&code, &p, &n) && code == (uint8_t)QJ_E_PENDING)
            return QJ_E_PENDING;
        clock_ms += a;
        return 0;
    default:
        die("unknown op");
    }
    return QJ_E_HOST;
}

/* One case, in the forked child. */
static int run_case(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open the case");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)size + 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size)
        die("cannot read the case");
    fclose(f);
    if (size < 4 || rd_u32(data) > (size_t)size - 4)
        die("malformed case");
    uint32_t rec_len = rd_u32(data);
    /* a compile batch answers with QJ_OP_BYTECODE, never QJ_OP_RESULT */
    int compile = rec_len >= 4 && rd_u32(data + 4) == QJ_KIND_COMPILE;
    tape = data + 4 + rec_len;
    tape_end = data + size;
    uint8_t *rec = qj_alloc(rec_len);
    memcpy(rec, data + 4, rec_len);
    int32_t st = qj_run(rec, rec_len);
    for (int steps = 0; st == QJ_PENDING && steps < MAX_STEPS; steps++) {
        uint8_t code = 0;
        const uint8_t *p = NULL;
        uint32_t n = 0;
        if (n_async && next_entry(&code, &p, &n)) {
            /* settle the oldest async call with the entry: ok unless its code says error */
            uint32_t id = async_ids[0];
            memmove(async_ids, async_ids + 1, --n_async * sizeof *async_ids);
            uint8_t *m = qj_alloc(n);
            memcpy(m, p, n);
            st = qj_resume(id, code == 0, m, n);
        } else if (n_async && steps % 2) {
            uint32_t id = async_ids[--n_async];
            static const uint8_t empty[] = { 0, 4, 0, 0, 0, 'n', 'u', 'l', 'l', 0, 0, 0, 0 };
            memcpy(scratch, empty, sizeof empty);
            st = qj_resume(id, 1, NULL, sizeof empty);
        } else {
            clock_ms += 1;
            st = qj_resume(0, 1, NULL, 0);
        }
    }
    if (st == QJ_FAIL)
        return EXIT_GUEST_FAIL;
    if (st == QJ_DONE && !compile && results != 1) {
        fprintf(stderr, "qjfuzz: QJ_DONE after %d QJ_OP_RESULT calls\n", results);
        abort();
    }
    if (results > 1)
        die("more than one QJ_OP_RESULT");
    return 0;
}

int main(int argc, char **argv)
{
    verbose = getenv("QJFUZZ_VERBOSE") != NULL;
    if (qj_init() != QJ_DONE)
        die("qj_init failed");
    if (argc == 2) /* one case, in this process (for a debugger or a reproduction) */
        return run_case(argv[1]);
    char line[4096];
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0)
            die("fork failed");
        if (pid == 0) {
            alarm(CHILD_SECONDS);
            _exit(run_case(line));
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
            ;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        printf("status %d\n", code);
    }
    return 0;
}

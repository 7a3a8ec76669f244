/*
 * coll_fuzz: a differential fuzzer of whole MPI programs.
 *
 * A seed drives every rank through the same random program: batches of
 * collectives (the eleven of coll/bufpool that move data) in blocking
 * form, nonblocking with several in flight on one or two communicators,
 * and persistent form (MPI_<Coll>_init, MPIX_ on Open MPI 4.1) started
 * several times (with MPI_Startall, in an order each rank draws for
 * itself), a barrier among them in a third of the batches (in the
 * batch's form; drawn apart from the operations, so that a seed's
 * operations are the same with or without it; not with --only-op), with
 * sizes weighted toward the rules' and the pipeline's boundaries, integer
 * and floating types, predefined and user operations (non-commutative ones
 * and one with a large stack frame), and the freedoms MPI leaves to each
 * rank: the same signature described by another datatype and count per
 * rank, MPI_IN_PLACE, garbage in the arguments a rank's role makes
 * insignificant, and where MPI 4's large-count bindings exist, whether it
 * calls MPI_<Coll>_c.  Every rank completes its requests in its own random
 * order and way (Wait, Waitall, Waitany, Test, Testall, Testsome).
 *
 * Every result, every gap between a datatype's elements and guard bytes
 * around every buffer are checked exactly against an image each rank
 * computes from the seed alone (coll_fuzz_data.c); send buffers must come
 * back unchanged.  A watchdog reports a hang with the seed, batch and
 * operation in flight; a crash is reported likewise before the signal
 * takes its course.  test/fuzz/coll_fuzz.sh runs it under several
 * configurations and reruns a failing seed with coll/bufpool excluded, so
 * that only what stock Open MPI gets right counts against bufpool.
 *
 * Reproduce: --seed S --batch B [--only-op I] runs one batch (its
 * operations' parameters depend on the seed, batch and index only).
 */
#include "coll_fuzz.h"
#include "pvar_util.h"
#include "sealed_pages.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Options and counters. */

static struct {
    uint64_t seed;
    uint64_t nseeds;
    double seconds;
    int batches;
    int only_batch;
    unsigned op_mask;   /* operations of a batch that run (bit i: operation i) */
    unsigned coll_mask; /* collectives that run (bit fz_coll) */
    unsigned form_mask; /* forms that run (bit fz_form) */
    size_t max_bytes;
    int hang_seconds;
    int max_reports;
    bool verbose;
    bool uniform; /* every rank describes its buffers as comm rank 0 does */
    bool seeds_given;
    bool same_reduce_layout; /* reductions: every rank the same layout */
    bool dry_run;            /* print the batches, call nothing */
    enum { FZ_INJECT_NONE, FZ_INJECT_VALUE, FZ_INJECT_GUARD, FZ_INJECT_HANG } inject;
} opt = {
    .seed = 1,
    .nseeds = 1,
    .batches = 24,
    .only_batch = -1,
    .op_mask = ~0u,
    .coll_mask = ~0u,
    .form_mask = ~0u,
    .max_bytes = ((size_t)1 << 20) + 64,
    .hang_seconds = 60,
    .max_reports = 10,
};

static struct {
    unsigned long long calls[FZ_NFORMS], inits, batches, seeds, checks, barriers;
    unsigned long long failures, reports;
} stats;

static int world_rank, world_size;
static MPI_Comm ctl_comm; /* point-to-point control of the soak; no collective */

static const char *const coll_names[FZ_NCOLLS] = {
    "allreduce", "reduce", "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan", "bcast",          "allgather",
    "alltoall",  "gather", "scatter"};
static const char *const form_names[FZ_NFORMS] = {"blocking", "nonblocking", "persistent"};

/* ------------------------------------------------------------------------ */
/* Watchdog and crash reports: what this rank is doing, written by signal
 * handlers with write(2) only. */

static char activity[1024];
static char batch_text[16384];
static volatile sig_atomic_t in_handler;

static void write_str(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w <= 0) {
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

static void on_alarm(int sig)
{
    (void)sig;
    char head[96];
    snprintf(head, sizeof(head), "\ncoll_fuzz: HANG rank %d: no progress for %d s during ",
             world_rank, opt.hang_seconds);
    write_str(head);
    write_str(activity);
    write_str("\ncoll_fuzz: HANG batch: ");
    write_str(batch_text);
    write_str("\n");
    _exit(3);
}

static struct sigaction old_actions[NSIG];

static void on_crash(int sig, siginfo_t *info, void *ctx)
{
    (void)ctx;
    if (!in_handler) {
        in_handler = 1;
        char head[160];
        snprintf(head, sizeof(head), "\ncoll_fuzz: CRASH rank %d: signal %d%s during ", world_rank,
                 sig,
                 SIGSEGV == sig && sealed_pages_hold(info->si_addr)
                     ? " (a write into a send buffer, read-only during the call)"
                     : "");
        write_str(head);
        write_str(activity);
        write_str("\ncoll_fuzz: CRASH batch: ");
        write_str(batch_text);
        write_str("\n");
    }
    /* Then what was there before (Open MPI's backtrace, or the default):
     * returning re-executes the faulting instruction under it. */
    sigaction(sig, &old_actions[sig], NULL);
    if (sig == SIGABRT) {
        raise(sig);
    }
}

static void install_handlers(void)
{
    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack), .ss_flags = 0};
    sigaltstack(&ss, NULL); /* a fiber's stack overflow still gets a report */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_ONSTACK | SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        sigaction(sigs[i], &sa, &old_actions[sigs[i]]);
    }
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
}

static void set_activity(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_activity(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(activity, sizeof(activity), fmt, ap);
    va_end(ap);
    alarm((unsigned)opt.hang_seconds);
}

/* ------------------------------------------------------------------------ */
/* Communicators. */

enum { FZ_COMM_WORLD, FZ_COMM_DUP, FZ_COMM_REVERSED, FZ_COMM_HALVES, FZ_NCOMMS };
static const char *const comm_names[FZ_NCOMMS] = {"world", "dup", "reversed", "halves"};
static MPI_Comm comms[FZ_NCOMMS];

static void mpi_check(int err, const char *what)
{
    if (err != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, msg, &len);
        printf("coll_fuzz: FAIL rank %d: %s returned an error (%s) during %s\n", world_rank, what,
               msg, activity);
        printf("coll_fuzz: FAIL batch: %s\n", batch_text);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void comms_create(void)
{
    comms[FZ_COMM_WORLD] = MPI_COMM_WORLD;
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comms[FZ_COMM_DUP]), "MPI_Comm_dup");
    mpi_check(MPI_Comm_split(MPI_COMM_WORLD, 0, -world_rank, &comms[FZ_COMM_REVERSED]),
              "MPI_Comm_split");
    mpi_check(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &comms[FZ_COMM_HALVES]),
              "MPI_Comm_split");
    mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &ctl_comm), "MPI_Comm_dup");
    for (int i = 0; i < FZ_NCOMMS; i++) {
        MPI_Comm_set_errhandler(comms[i], MPI_ERRORS_RETURN);
    }
}

static void comms_free(void)
{
    for (int i = 1; i < FZ_NCOMMS; i++) {
        MPI_Comm_free(&comms[i]);
    }
    MPI_Comm_free(&ctl_comm);
}

/* ------------------------------------------------------------------------ */
/* The program: batches of operations, every parameter drawn from the seed.
 * An operation's parameters depend only on (seed, batch, index), so one
 * batch or one operation can be run alone to reproduce a failure. */

enum { FZ_MAX_OPS = 8 };
typedef enum { FZ_KIND_BLOCKING, FZ_KIND_NB_ONE, FZ_KIND_NB_TWO, FZ_KIND_PERSISTENT } fz_kind;
static const char *const kind_names[] = {"blocking", "nonblocking-one-comm",
                                         "nonblocking-two-comms", "persistent"};

typedef struct {
    fz_coll coll;
    fz_form form;
    int comm;
    fz_unit unit;
    fz_opk op;
    size_t n;          /* units per rank (per block for the rooted and all-to-all ones) */
    uint32_t root_raw; /* root = root_raw mod the communicator's size */
    bool in_place;     /* all ranks, or the root only for reduce, gather, scatter */
    bool empty;        /* n = 0 passed as 1 x contiguous(0) by every rank */
    uint64_t key;
} fz_opplan;

typedef struct {
    fz_kind kind;
    int nops, rounds;
    bool startall;
    uint64_t key;
    fz_opplan ops[FZ_MAX_OPS];
} fz_batch;

static const struct {
    fz_unit unit;
    fz_opk op;
    int weight;
} reduce_pairs[] = {
    {FZ_UNIT_U8, FZ_OP_SUM, 2},          {FZ_UNIT_U8, FZ_OP_MAX, 1},
    {FZ_UNIT_U8, FZ_OP_BOR, 1},          {FZ_UNIT_I32, FZ_OP_SUM, 4},
    {FZ_UNIT_I32, FZ_OP_PROD, 1},        {FZ_UNIT_I32, FZ_OP_MAX, 1},
    {FZ_UNIT_I32, FZ_OP_MIN, 1},         {FZ_UNIT_I32, FZ_OP_BAND, 1},
    {FZ_UNIT_I32, FZ_OP_BOR, 1},         {FZ_UNIT_I32, FZ_OP_BXOR, 1},
    {FZ_UNIT_U32, FZ_OP_SUM, 1},         {FZ_UNIT_U32, FZ_OP_BXOR, 1},
    {FZ_UNIT_I64, FZ_OP_SUM, 1},         {FZ_UNIT_I64, FZ_OP_MAX, 1},
    {FZ_UNIT_F32, FZ_OP_SUM, 1},         {FZ_UNIT_F32, FZ_OP_MIN, 1},
    {FZ_UNIT_F64, FZ_OP_SUM, 3},         {FZ_UNIT_F64, FZ_OP_PROD, 1},
    {FZ_UNIT_F64, FZ_OP_MAX, 1},         {FZ_UNIT_2INT, FZ_OP_MAXLOC, 1},
    {FZ_UNIT_2INT, FZ_OP_MINLOC, 1},     {FZ_UNIT_I32, FZ_OP_USER_SUM, 3},
    {FZ_UNIT_AFF, FZ_OP_USER_AFFINE, 4}, {FZ_UNIT_F64, FZ_OP_USER_BIGSTACK, 3},
    {FZ_UNIT_F64, FZ_OP_USER_MAXNC, 2},
};

static const struct {
    fz_unit unit;
    int weight;
} move_units[] = {
    {FZ_UNIT_BYTE, 3}, {FZ_UNIT_I32, 3}, {FZ_UNIT_F64, 2}, {FZ_UNIT_I64, 1}, {FZ_UNIT_PAIR, 2},
};

/* Sizes in units, weighted toward 0, 1, powers of two +-1 and the
 * boundaries of the rules and the segments (16, 64, 128 KiB, 1 MiB). */
static size_t pick_units(fz_rng *r, size_t usize, size_t max_bytes)
{
    static const size_t marks[] = {8 << 10,   16 << 10,  32 << 10,  64 << 10,
                                   128 << 10, 256 << 10, 512 << 10, 1 << 20};
    size_t bytes;
    uint32_t c = fz_below(r, 20);
    if (c < 2) {
        return 0;
    } else if (c < 4) {
        return 1;
    } else if (c < 10) {
        bytes = (size_t)1 << fz_below(r, 21);
        bytes = bytes + fz_below(r, 3) - 1;
    } else if (c < 15) {
        bytes = marks[fz_below(r, 8)];
    } else {
        bytes = (2 + fz_below(r, 4096)) * usize;
    }
    size_t n = bytes / usize;
    switch (fz_below(r, 4)) {
        case 0:
            n = n > 0 ? n - 1 : 0;
            break;
        case 1:
            n++;
            break;
        default:
            break;
    }
    if (n * usize > max_bytes) {
        n = max_bytes / usize;
    }
    return n;
}

static bool coll_has_blocks(fz_coll c)
{
    return c == FZ_ALLGATHER || c == FZ_ALLTOALL || c == FZ_GATHER || c == FZ_SCATTER;
}

static void plan_op(fz_opplan *o, uint64_t key, fz_form form, int comm, size_t *budget)
{
    fz_rng r = fz_rng_of(key);
    o->key = key;
    o->form = form;
    o->comm = comm;
    o->coll = (fz_coll)fz_below(&r, FZ_NCOLLS);
    if (fz_coll_reduces(o->coll)) {
        int total = 0;
        for (size_t i = 0; i < sizeof(reduce_pairs) / sizeof(reduce_pairs[0]); i++) {
            total += reduce_pairs[i].weight;
        }
        int w = (int)fz_below(&r, (uint32_t)total);
        size_t i = 0;
        while (w >= reduce_pairs[i].weight) {
            w -= reduce_pairs[i++].weight;
        }
        o->unit = reduce_pairs[i].unit;
        o->op = reduce_pairs[i].op;
    } else {
        int total = 0;
        for (size_t i = 0; i < sizeof(move_units) / sizeof(move_units[0]); i++) {
            total += move_units[i].weight;
        }
        int w = (int)fz_below(&r, (uint32_t)total);
        size_t i = 0;
        while (w >= move_units[i].weight) {
            w -= move_units[i++].weight;
        }
        o->unit = move_units[i].unit;
        o->op = FZ_OP_NONE;
    }
    size_t usize = fz_units[o->unit].packed;
    o->n = pick_units(&r, usize, opt.max_bytes);
    /* Memory: at most about 24 MiB of message per rank in a batch. */
    size_t blocks =
        coll_has_blocks(o->coll) || o->coll == FZ_REDUCE_SCATTER_BLOCK ? (size_t)world_size : 1;
    size_t cost = o->n * usize * blocks;
    if (cost > *budget) {
        o->n = o->n / 64;
        cost = o->n * usize * blocks;
    }
    *budget = cost > *budget ? 0 : *budget - cost;
    o->root_raw = fz_below(&r, 1u << 16);
    o->in_place = fz_chance(&r, 1, 4);
    o->empty = o->n == 0 && !fz_coll_reduces(o->coll) && fz_chance(&r, 1, 3);
}

static void plan_batch(fz_batch *b, uint64_t seed, int index)
{
    memset(b, 0, sizeof(*b));
    b->key = fz_key(seed, (uint64_t)index);
    fz_rng r = fz_rng_of(b->key);
    uint32_t k = fz_below(&r, 20);
    b->kind = k < 7    ? FZ_KIND_BLOCKING
              : k < 12 ? FZ_KIND_NB_ONE
              : k < 16 ? FZ_KIND_NB_TWO
                       : FZ_KIND_PERSISTENT;
    if (!FZ_HAVE_PERSISTENT && b->kind == FZ_KIND_PERSISTENT) {
        b->kind = FZ_KIND_NB_ONE;
    }
    b->rounds = 1;
    int c1 = (int)fz_below(&r, 10), c2;
    c1 = c1 < 4 ? FZ_COMM_WORLD : c1 < 6 ? FZ_COMM_DUP : c1 < 9 ? FZ_COMM_REVERSED : FZ_COMM_HALVES;
    c2 = (c1 + 1 + (int)fz_below(&r, FZ_NCOMMS - 1)) % FZ_NCOMMS;
    switch (b->kind) {
        case FZ_KIND_BLOCKING:
            b->nops = 1 + (int)fz_below(&r, 3);
            break;
        case FZ_KIND_NB_ONE:
        case FZ_KIND_NB_TWO:
            b->nops = 2 + (int)fz_below(&r, 5);
            break;
        default:
            b->nops = 1 + (int)fz_below(&r, 4);
            b->rounds = 2 + (int)fz_below(&r, 2);
            b->startall = fz_chance(&r, 1, 2);
            break;
    }
    size_t budget = (size_t)24 << 20;
    for (int i = 0; i < b->nops; i++) {
        fz_form form;
        int comm = c1;
        switch (b->kind) {
            case FZ_KIND_BLOCKING:
                form = FZ_BLOCKING;
                comm = fz_chance(&r, 1, 2) ? c1 : c2;
                break;
            case FZ_KIND_NB_ONE:
                form = fz_chance(&r, 1, 6) ? FZ_BLOCKING : FZ_NONBLOCKING;
                break;
            case FZ_KIND_NB_TWO:
                form = fz_chance(&r, 1, 8) ? FZ_BLOCKING : FZ_NONBLOCKING;
                comm = fz_chance(&r, 1, 2) ? c1 : c2;
                break;
            default:
                form = fz_chance(&r, 1, 4) ? FZ_NONBLOCKING : FZ_PERSISTENT_FORM;
                comm = fz_chance(&r, 2, 3) ? c1 : c2;
                break;
        }
        plan_op(&b->ops[i], fz_key(b->key, 0x100u + (uint64_t)i), form, comm, &budget);
    }
}

/* ------------------------------------------------------------------------ */
/* One rank's part of one operation. */

typedef struct {
    const fz_opplan *pl;
    MPI_Comm comm;
    int p, me, root;
    bool skip;
    /* This rank's descriptions and whether its buffers are significant. */
    fz_desc sd, rd;
    bool s_used, r_used;
    fz_buf sb, rb;
    int *rcounts, *displs;
    bool bigcount;          /* this rank calls the large-count binding */
    MPI_Count *rcounts_big; /* reduce_scatter's counts for it */
    size_t total;           /* reductions: units of the whole input vector */
    size_t dc_from, dc_to;  /* units of rb whose values are undefined */
    /* The arguments passed. */
    const void *sbuf;
    void *rbuf;
    int scount, rcount;
    MPI_Datatype stype, rtype;
    MPI_Request req;
} fz_opstate;

/* Arguments a rank's role makes insignificant get garbage: a pointer that
 * is NULL, unmapped (a write there crashes) or one byte; a count that is
 * 0, negative or huge; a datatype that is null or unrelated.  Drawn per
 * rank and role, the same way whatever the collective. */
typedef struct {
    int ptr_kind, type_kind, count;
} fz_garbage;

static unsigned char garbage_byte;

static void plan_garbage(const fz_opplan *o, int q, fz_garbage g[2])
{
    static const int counts[] = {0, -1, 7, 1 << 30, INT_MAX, -12345};
    fz_rng r = fz_rng_of(fz_key(o->key, 0x9000u + (uint64_t)q));
    for (int i = 0; i < 2; i++) {
        g[i].ptr_kind = (int)fz_below(&r, 3);
        g[i].count = counts[fz_below(&r, 6)];
        g[i].type_kind = (int)fz_below(&r, 4);
    }
}

static void *garbage_ptr(const fz_garbage *g)
{
    switch (g->ptr_kind) {
        case 0:
            return NULL;
        case 1:
            return (void *)(uintptr_t)0x10;
        default:
            return &garbage_byte;
    }
}

static MPI_Datatype garbage_type(const fz_garbage *g)
{
    switch (g->type_kind) {
        case 0:
            return MPI_DATATYPE_NULL;
        case 1:
            return MPI_BYTE;
        case 2:
            return MPI_DOUBLE;
        default:
            return MPI_2INT;
    }
}

static const char *garbage_ptr_name(const fz_garbage *g)
{
    static const char *const names[] = {"NULL", "0x10 (unmapped)", "&one_byte"};
    return names[g->ptr_kind];
}

static const char *garbage_type_name(const fz_garbage *g)
{
    static const char *const names[] = {"MPI_DATATYPE_NULL", "MPI_BYTE", "MPI_DOUBLE", "MPI_2INT"};
    return names[g->type_kind];
}

/* reduce_scatter's counts on a communicator of p ranks (the same on all). */
static void rs_counts(const fz_opplan *o, int p, int *counts, int *displs, size_t *total)
{
    fz_rng r = fz_rng_of(fz_key(o->key, 0x5c0u + (uint64_t)p));
    size_t t = o->n;
    uint32_t mode = fz_below(&r, 3);
    size_t left = t;
    for (int i = 0; i < p; i++) {
        size_t c;
        if (mode == 0) {
            c = i == p - 1 ? left : t / (size_t)p;
        } else if (mode == 1) {
            c = i == p - 1 ? left : fz_chance(&r, 1, 4) ? 0 : fz_below(&r, (uint32_t)left + 1);
        } else {
            c = i == (int)(o->root_raw % (uint32_t)p) ? t : 0;
        }
        if (c > left) {
            c = left;
        }
        counts[i] = (int)c;
        left -= c;
    }
    *total = 0;
    for (int i = 0; i < p; i++) {
        displs[i] = (int)*total;
        *total += (size_t)counts[i];
    }
}

/* The descriptions comm rank q chooses (pure: any rank can print another's). */
static void plan_rank(const fz_opplan *o, int p, int q, fz_desc *sd, fz_desc *rd, bool *s_used,
                      bool *r_used)
{
    bool same = opt.uniform || (opt.same_reduce_layout && fz_coll_reduces(o->coll));
    fz_rng r = fz_rng_of(fz_key(o->key, 0x7000u + (uint64_t)(same ? 0 : q)));
    int root = (int)(o->root_raw % (uint32_t)p);
    bool am_root = q == root;
    fz_freedom fr = fz_coll_reduces(o->coll)
                        ? (fz_op_is_user(o->op) ? FZ_FREEDOM_REDUCE : FZ_FREEDOM_NONE)
                        : FZ_FREEDOM_MOVE;
    *s_used = *r_used = true;
    switch (o->coll) {
        case FZ_BCAST:
            *s_used = false;
            break;
        case FZ_ALLGATHER:
        case FZ_ALLTOALL:
            *s_used = !o->in_place;
            break;
        case FZ_GATHER:
            *s_used = !(am_root && o->in_place);
            *r_used = am_root;
            break;
        case FZ_SCATTER:
            *s_used = am_root;
            *r_used = !(am_root && o->in_place);
            break;
        case FZ_REDUCE:
            *s_used = !(am_root && o->in_place);
            *r_used = am_root;
            break;
        default: /* the other reductions */
            *s_used = !o->in_place;
            break;
    }
    /* A reduction passes one datatype for both buffers; a rank moving data
     * often passes the same datatype for both too (the same handle: an
     * implementation may decide on whether they are equal). */
    bool one_type = fz_coll_reduces(o->coll) || fz_chance(&r, 1, 2);
    fz_desc_plan(sd, o->unit, o->n, fr, o->empty, &r);
    if (one_type) {
        *rd = *sd;
        rd->shared = true;
    } else {
        fz_desc_plan(rd, o->unit, o->n, fr, o->empty, &r);
    }
}

/* What comm rank q passes for one buffer (role 0 send, 1 receive). */
static void arg_text(const fz_opplan *o, int p, int q, int role, char *out, size_t len)
{
    fz_desc d[2];
    bool used[2];
    fz_garbage g[2];
    plan_rank(o, p, q, &d[0], &d[1], &used[0], &used[1]);
    plan_garbage(o, q, g);
    if (used[role]) {
        fz_desc_name(&d[role], out, len);
        if (role == 1 && used[0] && d[1].shared && !fz_coll_reduces(o->coll)) {
            size_t at = strlen(out);
            snprintf(out + at, len - at, " (the send datatype's handle)");
        }
        return;
    }
    bool root = q == (int)(o->root_raw % (uint32_t)p);
    const char *buf = role == 0 ? "sendbuf" : "recvbuf";
    if (o->coll == FZ_BCAST) {
        snprintf(out, len, "-");
    } else if (fz_coll_reduces(o->coll)) {
        if (role == 0) {
            snprintf(out, len, "MPI_IN_PLACE");
        } else {
            snprintf(out, len, "insignificant: %s=%s", buf, garbage_ptr_name(&g[1]));
        }
    } else if ((role == 0 && o->coll != FZ_SCATTER) || (role == 1 && o->coll == FZ_SCATTER)) {
        snprintf(out, len, "MPI_IN_PLACE (ignored: count=%d type=%s)", g[role].count,
                 garbage_type_name(&g[role]));
    } else {
        snprintf(out, len, "insignificant%s: %s=%s count=%d type=%s", root ? "" : " at a non-root",
                 buf, garbage_ptr_name(&g[role]), g[role].count, garbage_type_name(&g[role]));
    }
}

static void op_text(const fz_opplan *o, int p, char *out, size_t len)
{
    size_t usize = fz_units[o->unit].packed;
    char root[24] = "";
    if (o->coll == FZ_REDUCE || o->coll == FZ_BCAST || o->coll == FZ_GATHER ||
        o->coll == FZ_SCATTER) {
        snprintf(root, sizeof(root), " root=%u", o->root_raw % (uint32_t)p);
    }
    snprintf(out, len, "%s %s comm=%s(size %d) %s op=%s n=%zu (%zu B%s)%s%s", coll_names[o->coll],
             form_names[o->form], comm_names[o->comm], p, fz_units[o->unit].name, fz_op_name(o->op),
             o->n, o->n * usize, coll_has_blocks(o->coll) ? " per block" : "", root,
             o->in_place && o->coll != FZ_BCAST
                 ? (o->coll == FZ_REDUCE || o->coll == FZ_GATHER || o->coll == FZ_SCATTER
                        ? " MPI_IN_PLACE(root)"
                        : " MPI_IN_PLACE")
                 : "");
}

static void op_prepare(fz_opstate *s, const fz_opplan *o, int index)
{
    memset(s, 0, sizeof(*s));
    s->pl = o;
    s->comm = comms[o->comm];
    MPI_Comm_size(s->comm, &s->p);
    MPI_Comm_rank(s->comm, &s->me);
    s->root = (int)(o->root_raw % (uint32_t)s->p);
    s->req = MPI_REQUEST_NULL;
    if (FZ_HAVE_BIGCOUNT) {
        fz_rng b = fz_rng_of(fz_key(fz_key(o->key, 0xb160u), (uint64_t)world_rank));
        s->bigcount = fz_chance(&b, 1, 3);
    }
    plan_rank(o, s->p, s->me, &s->sd, &s->rd, &s->s_used, &s->r_used);
    fz_garbage g[2];
    plan_garbage(o, s->me, g);
    size_t p = (size_t)s->p, n = o->n;
    size_t s_units = n, r_units = n;
    switch (o->coll) {
        case FZ_REDUCE_SCATTER:
        case FZ_REDUCE_SCATTER_BLOCK:
            s->rcounts = malloc(p * sizeof(int));
            s->displs = malloc(p * sizeof(int));
            if (o->coll == FZ_REDUCE_SCATTER) {
                rs_counts(o, s->p, s->rcounts, s->displs, &s->total);
            } else {
                for (size_t i = 0; i < p; i++) {
                    s->rcounts[i] = (int)n;
                    s->displs[i] = (int)(i * n);
                }
                s->total = n * p;
            }
            s_units = s->total;
            r_units = o->in_place ? s->total : (size_t)s->rcounts[s->me];
            s->rcounts_big = malloc(p * sizeof(MPI_Count));
            for (size_t i = 0; i < p && NULL != s->rcounts_big; i++) {
                s->rcounts_big[i] = s->rcounts[i];
            }
            s->bigcount = s->bigcount && NULL != s->rcounts_big;
            break;
        case FZ_ALLGATHER:
        case FZ_GATHER:
            r_units = n * p;
            break;
        case FZ_ALLTOALL:
            s_units = r_units = n * p;
            break;
        case FZ_SCATTER:
            s_units = n * p;
            break;
        default:
            s->total = n;
            break;
    }
    if (s->s_used) {
        fz_desc_build(&s->sd);
        fz_buf_alloc(&s->sb, &s->sd, s_units, (uint8_t)(index * 2));
        s->sbuf = s->sb.ptr;
        s->scount = s->sd.count;
        s->stype = s->sd.type;
    } else {
        s->sbuf = MPI_IN_PLACE;
        if (o->coll == FZ_SCATTER || o->coll == FZ_BCAST) {
            s->sbuf = garbage_ptr(&g[0]); /* scatter's non-roots; unused by bcast */
        }
        s->scount = g[0].count;
        s->stype = garbage_type(&g[0]);
    }
    if (s->r_used && s->rd.shared && s->s_used) {
        /* One datatype (handle) for both buffers. */
        s->rd = s->sd;
        s->rd.owned = false;
        s->rd.shared = true;
        fz_buf_alloc(&s->rb, &s->rd, r_units, (uint8_t)(index * 2 + 1));
        s->rbuf = s->rb.ptr;
        s->rcount = s->rd.count;
        s->rtype = s->rd.type;
    } else if (s->r_used) {
        fz_desc_build(&s->rd);
        fz_buf_alloc(&s->rb, &s->rd, r_units, (uint8_t)(index * 2 + 1));
        s->rbuf = s->rb.ptr;
        s->rcount = s->rd.count;
        s->rtype = s->rd.type;
    } else {
        s->rbuf = o->coll == FZ_SCATTER ? MPI_IN_PLACE : garbage_ptr(&g[1]);
        s->rcount = g[1].count;
        s->rtype = garbage_type(&g[1]);
    }
    if (fz_coll_reduces(o->coll)) {
        /* One count and datatype: the description's (both are the same). */
        s->scount = s->rcount = s->sd.count;
        s->stype = s->rtype = s->s_used ? s->sd.type : s->rd.type;
        if (!s->s_used) {
            s->sbuf = MPI_IN_PLACE;
        }
    }
}

static void op_release(fz_opstate *s)
{
    if (s->s_used) {
        fz_buf_free(&s->sb);
        fz_desc_free(&s->sd);
    }
    if (s->r_used) {
        fz_buf_free(&s->rb);
        fz_desc_free(&s->rd);
    }
    free(s->rcounts);
    free(s->displs);
    free(s->rcounts_big);
    s->rcounts = s->displs = NULL;
    s->rcounts_big = NULL;
}

/* Fold the values of ranks [from, to) of unit u. */
static void fold(const fz_opplan *o, uint64_t key, size_t u, int from, int to, unsigned char *acc)
{
    unsigned char v[FZ_MAX_PACKED], t[FZ_MAX_PACKED];
    fz_value(o->unit, o->op, key, from, u, acc);
    for (int q = from + 1; q < to; q++) {
        fz_value(o->unit, o->op, key, q, u, v);
        fz_combine(o->op, o->unit, acc, v, t);
        memcpy(acc, t, fz_units[o->unit].packed);
    }
}

/* Inputs and expected images of one round (op_fill). */
static void op_fill_values(fz_opstate *s, int round)
{
    const fz_opplan *o = s->pl;
    uint64_t key = fz_key(o->key, 0xa000u + (uint64_t)round);
    unsigned char v[FZ_MAX_PACKED];
    size_t n = o->n, p = (size_t)s->p;
    int me = s->me;
    if (s->s_used) {
        fz_buf_clear(&s->sb);
    }
    if (s->r_used) {
        fz_buf_clear(&s->rb);
    }
    s->dc_from = s->dc_to = 0;
    if (fz_coll_reduces(o->coll)) {
        fz_buf *in = s->s_used ? &s->sb : &s->rb;
        const fz_desc *ind = s->s_used ? &s->sd : &s->rd;
        size_t nin =
            o->coll == FZ_REDUCE_SCATTER || o->coll == FZ_REDUCE_SCATTER_BLOCK ? s->total : n;
        for (size_t u = 0; u < nin; u++) {
            fz_value(o->unit, o->op, key, me, u, v);
            fz_buf_put(in, ind, u, v, true);
        }
        if (!s->r_used) {
            return;
        }
        switch (o->coll) {
            case FZ_ALLREDUCE:
            case FZ_REDUCE:
                for (size_t u = 0; u < n; u++) {
                    fold(o, key, u, 0, s->p, v);
                    fz_buf_put(&s->rb, &s->rd, u, v, false);
                }
                break;
            case FZ_REDUCE_SCATTER:
            case FZ_REDUCE_SCATTER_BLOCK: {
                size_t c = (size_t)s->rcounts[me], d = (size_t)s->displs[me];
                for (size_t i = 0; i < c; i++) {
                    fold(o, key, d + i, 0, s->p, v);
                    fz_buf_put(&s->rb, &s->rd, i, v, false);
                }
                if (o->in_place) {
                    s->dc_from = c;
                    s->dc_to = s->total;
                }
                break;
            }
            case FZ_SCAN:
                for (size_t u = 0; u < n; u++) {
                    fold(o, key, u, 0, me + 1, v);
                    fz_buf_put(&s->rb, &s->rd, u, v, false);
                }
                break;
            case FZ_EXSCAN:
                if (me == 0) {
                    s->dc_from = 0; /* undefined at rank 0 */
                    s->dc_to = n;
                } else {
                    for (size_t u = 0; u < n; u++) {
                        fold(o, key, u, 0, me, v);
                        fz_buf_put(&s->rb, &s->rd, u, v, false);
                    }
                }
                break;
            default:
                break;
        }
        return;
    }
    switch (o->coll) {
        case FZ_BCAST:
            for (size_t u = 0; u < n; u++) {
                fz_value(o->unit, o->op, key, s->root, u, v);
                fz_buf_put(&s->rb, &s->rd, u, v, me == s->root);
            }
            break;
        case FZ_ALLGATHER:
            for (size_t i = 0; i < n && s->s_used; i++) {
                fz_value(o->unit, o->op, key, me, i, v);
                fz_buf_put(&s->sb, &s->sd, i, v, true);
            }
            for (size_t j = 0; j < p; j++) {
                for (size_t i = 0; i < n; i++) {
                    fz_value(o->unit, o->op, key, (int)j, i, v);
                    fz_buf_put(&s->rb, &s->rd, j * n + i, v, !s->s_used && (int)j == me);
                }
            }
            break;
        case FZ_ALLTOALL:
            for (size_t j = 0; j < p; j++) {
                for (size_t i = 0; i < n; i++) {
                    fz_value(o->unit, o->op, key, me, j * n + i, v);
                    if (s->s_used) {
                        fz_buf_put(&s->sb, &s->sd, j * n + i, v, true);
                    } else { /* in place: the input is in the receive buffer */
                        fz_buf_put(&s->rb, &s->rd, j * n + i, v, true);
                    }
                }
            }
            for (size_t j = 0; j < p; j++) {
                for (size_t i = 0; i < n; i++) {
                    fz_value(o->unit, o->op, key, (int)j, (size_t)me * n + i, v);
                    fz_buf_put(&s->rb, &s->rd, j * n + i, v, false);
                }
            }
            break;
        case FZ_GATHER:
            for (size_t i = 0; i < n && s->s_used; i++) {
                fz_value(o->unit, o->op, key, me, i, v);
                fz_buf_put(&s->sb, &s->sd, i, v, true);
            }
            for (size_t j = 0; j < p && s->r_used; j++) {
                for (size_t i = 0; i < n; i++) {
                    fz_value(o->unit, o->op, key, (int)j, i, v);
                    fz_buf_put(&s->rb, &s->rd, j * n + i, v, !s->s_used && (int)j == me);
                }
            }
            break;
        case FZ_SCATTER:
            for (size_t j = 0; j < p && s->s_used; j++) {
                for (size_t i = 0; i < n; i++) {
                    fz_value(o->unit, o->op, key, me, j * n + i, v);
                    fz_buf_put(&s->sb, &s->sd, j * n + i, v, true);
                }
            }
            for (size_t i = 0; i < n && s->r_used; i++) {
                fz_value(o->unit, o->op, key, s->root, (size_t)me * n + i, v);
                fz_buf_put(&s->rb, &s->rd, i, v, false);
            }
            break;
        default:
            break;
    }
}

/* Inputs and expected images of one round; the send buffer (a const
 * argument) read-only until the next round's fill. */
static void op_fill(fz_opstate *s, int round)
{
    if (s->s_used) {
        fz_buf_seal(&s->sb, false);
    }
    op_fill_values(s, round);
    if (s->s_used) {
        fz_buf_seal(&s->sb, true);
    }
}

/* ------------------------------------------------------------------------ */
/* Calling MPI.  FZ_CALL(MPI_X, args): MPI_X_c when this rank drew the
 * large-count binding (an int count converts to MPI_Count as the
 * prototype says); reduce_scatter's array of counts is another array
 * (FZ_RS).  The persistent inits likewise (FZ_PCALL). */
#if FZ_HAVE_BIGCOUNT
#define FZ_CALL(name, ...) (s->bigcount ? name##_c(__VA_ARGS__) : name(__VA_ARGS__))
#define FZ_PCALL(name, ...)                                                                        \
    (s->bigcount ? MPI_##name##_init_c(__VA_ARGS__) : FZ_PERSISTENT(name)(__VA_ARGS__))
#define FZ_RS(big, name, ...)                                                                      \
    (s->bigcount ? big(s->sbuf, s->rbuf, s->rcounts_big, __VA_ARGS__)                              \
                 : name(s->sbuf, s->rbuf, s->rcounts, __VA_ARGS__))
#else
#define FZ_CALL(name, ...)    name(__VA_ARGS__)
#define FZ_PCALL(name, ...)   FZ_PERSISTENT(name)(__VA_ARGS__)
#define FZ_RS(big, name, ...) name(s->sbuf, s->rbuf, s->rcounts, __VA_ARGS__)
#endif

static int issue_blocking(fz_opstate *s)
{
    const fz_opplan *o = s->pl;
    MPI_Op op = fz_mpi_op(o->op);
    switch (o->coll) {
        case FZ_ALLREDUCE:
            return FZ_CALL(MPI_Allreduce, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm);
        case FZ_REDUCE:
            return FZ_CALL(MPI_Reduce, s->sbuf, s->rbuf, s->scount, s->stype, op, s->root, s->comm);
        case FZ_REDUCE_SCATTER:
            return FZ_RS(MPI_Reduce_scatter_c, MPI_Reduce_scatter, s->stype, op, s->comm);
        case FZ_REDUCE_SCATTER_BLOCK:
            return FZ_CALL(MPI_Reduce_scatter_block, s->sbuf, s->rbuf, s->scount, s->stype, op,
                           s->comm);
        case FZ_SCAN:
            return FZ_CALL(MPI_Scan, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm);
        case FZ_EXSCAN:
            return FZ_CALL(MPI_Exscan, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm);
        case FZ_BCAST:
            return FZ_CALL(MPI_Bcast, s->rbuf, s->rcount, s->rtype, s->root, s->comm);
        case FZ_ALLGATHER:
            return FZ_CALL(MPI_Allgather, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount,
                           s->rtype, s->comm);
        case FZ_ALLTOALL:
            return FZ_CALL(MPI_Alltoall, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                           s->comm);
        case FZ_GATHER:
            return FZ_CALL(MPI_Gather, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                           s->root, s->comm);
        case FZ_SCATTER:
            return FZ_CALL(MPI_Scatter, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                           s->root, s->comm);
        default:
            return MPI_ERR_OTHER;
    }
}

static int issue_nonblocking(fz_opstate *s)
{
    const fz_opplan *o = s->pl;
    MPI_Op op = fz_mpi_op(o->op);
    MPI_Request *q = &s->req;
    switch (o->coll) {
        case FZ_ALLREDUCE:
            return FZ_CALL(MPI_Iallreduce, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm, q);
        case FZ_REDUCE:
            return FZ_CALL(MPI_Ireduce, s->sbuf, s->rbuf, s->scount, s->stype, op, s->root, s->comm,
                           q);
        case FZ_REDUCE_SCATTER:
            return FZ_RS(MPI_Ireduce_scatter_c, MPI_Ireduce_scatter, s->stype, op, s->comm, q);
        case FZ_REDUCE_SCATTER_BLOCK:
            return FZ_CALL(MPI_Ireduce_scatter_block, s->sbuf, s->rbuf, s->scount, s->stype, op,
                           s->comm, q);
        case FZ_SCAN:
            return FZ_CALL(MPI_Iscan, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm, q);
        case FZ_EXSCAN:
            return FZ_CALL(MPI_Iexscan, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm, q);
        case FZ_BCAST:
            return FZ_CALL(MPI_Ibcast, s->rbuf, s->rcount, s->rtype, s->root, s->comm, q);
        case FZ_ALLGATHER:
            return FZ_CALL(MPI_Iallgather, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount,
                           s->rtype, s->comm, q);
        case FZ_ALLTOALL:
            return FZ_CALL(MPI_Ialltoall, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount,
                           s->rtype, s->comm, q);
        case FZ_GATHER:
            return FZ_CALL(MPI_Igather, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                           s->root, s->comm, q);
        case FZ_SCATTER:
            return FZ_CALL(MPI_Iscatter, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                           s->root, s->comm, q);
        default:
            return MPI_ERR_OTHER;
    }
}

static int issue_persistent_init(fz_opstate *s)
{
#if FZ_HAVE_PERSISTENT
    const fz_opplan *o = s->pl;
    MPI_Op op = fz_mpi_op(o->op);
    MPI_Request *q = &s->req;
    MPI_Info i = MPI_INFO_NULL;
    switch (o->coll) {
        case FZ_ALLREDUCE:
            return FZ_PCALL(Allreduce, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm, i, q);
        case FZ_REDUCE:
            return FZ_PCALL(Reduce, s->sbuf, s->rbuf, s->scount, s->stype, op, s->root, s->comm, i,
                            q);
        case FZ_REDUCE_SCATTER:
            return FZ_RS(MPI_Reduce_scatter_init_c, FZ_PERSISTENT(Reduce_scatter), s->stype, op,
                         s->comm, i, q);
        case FZ_REDUCE_SCATTER_BLOCK:
            return FZ_PCALL(Reduce_scatter_block, s->sbuf, s->rbuf, s->scount, s->stype, op,
                            s->comm, i, q);
        case FZ_SCAN:
            return FZ_PCALL(Scan, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm, i, q);
        case FZ_EXSCAN:
            return FZ_PCALL(Exscan, s->sbuf, s->rbuf, s->scount, s->stype, op, s->comm, i, q);
        case FZ_BCAST:
            return FZ_PCALL(Bcast, s->rbuf, s->rcount, s->rtype, s->root, s->comm, i, q);
        case FZ_ALLGATHER:
            return FZ_PCALL(Allgather, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                            s->comm, i, q);
        case FZ_ALLTOALL:
            return FZ_PCALL(Alltoall, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                            s->comm, i, q);
        case FZ_GATHER:
            return FZ_PCALL(Gather, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                            s->root, s->comm, i, q);
        case FZ_SCATTER:
            return FZ_PCALL(Scatter, s->sbuf, s->scount, s->stype, s->rbuf, s->rcount, s->rtype,
                            s->root, s->comm, i, q);
        default:
            return MPI_ERR_OTHER;
    }
#else
    (void)s;
    return MPI_ERR_OTHER;
#endif
}

/* ------------------------------------------------------------------------ */
/* Completion: each rank its own way and order. */

static const char *const how_names[] = {"MPI_Wait in random order", "MPI_Waitall",
                                        "MPI_Waitany loop",         "MPI_Test loop",
                                        "MPI_Testall loop",         "MPI_Testsome loop"};

static void complete(MPI_Request *reqs, int n, fz_rng *r, const char *where)
{
    if (n == 0) {
        return;
    }
    uint32_t how = fz_below(r, 6);
    set_activity("%s: completing %d request(s) by %s", where, n, how_names[how]);
    int err = MPI_SUCCESS;
    switch (how) {
        case 0: {
            int order[FZ_MAX_OPS];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            for (int i = n - 1; i > 0; i--) {
                int j = (int)fz_below(r, (uint32_t)i + 1), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            for (int i = 0; i < n && err == MPI_SUCCESS; i++) {
                err = MPI_Wait(&reqs[order[i]], MPI_STATUS_IGNORE);
            }
            break;
        }
        case 1:
            err = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            break;
        case 2:
            for (int left = n; left > 0 && err == MPI_SUCCESS; left--) {
                int index;
                err = MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
                if (err == MPI_SUCCESS && index == MPI_UNDEFINED) {
                    break;
                }
            }
            break;
        case 3: {
            /* Its own generator: how many tests it takes depends on timing. */
            fz_rng tr = fz_rng_of(fz_next(r));
            bool done[FZ_MAX_OPS] = {false};
            int left = n;
            while (left > 0 && err == MPI_SUCCESS) {
                int i = (int)fz_below(&tr, (uint32_t)n);
                if (done[i]) {
                    continue;
                }
                int flag = 0;
                err = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
                if (flag) {
                    done[i] = true;
                    left--;
                }
            }
            break;
        }
        case 4: {
            int flag = 0;
            while (!flag && err == MPI_SUCCESS) {
                err = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
            }
            break;
        }
        default: {
            int done = 0, outcount, idx[FZ_MAX_OPS];
            while (done < n && err == MPI_SUCCESS) {
                err = MPI_Testsome(n, reqs, &outcount, idx, MPI_STATUSES_IGNORE);
                if (err == MPI_SUCCESS && outcount == MPI_UNDEFINED) {
                    break;
                }
                if (err == MPI_SUCCESS) {
                    done += outcount;
                }
            }
            break;
        }
    }
    mpi_check(err, "completing requests");
}

/* ------------------------------------------------------------------------ */
/* Checks and reports. */

static uint64_t cur_seed;
static int cur_batch;

static void report_context(const fz_opstate *s, int index)
{
    char t[512];
    op_text(s->pl, s->p, t, sizeof(t));
    printf("coll_fuzz: CONTEXT seed=%" PRIu64 " batch=%d op=%d: %s\n", cur_seed, cur_batch, index,
           t);
    for (int q = 0; q < s->p; q++) {
        char a[200], b[200];
        arg_text(s->pl, s->p, q, 0, a, sizeof(a));
        arg_text(s->pl, s->p, q, 1, b, sizeof(b));
        printf("coll_fuzz: CONTEXT seed=%" PRIu64 " batch=%d op=%d:   comm rank %d: send %s, "
               "recv %s\n",
               cur_seed, cur_batch, index, q, a, b);
    }
}

static const char *binding_text(const fz_opstate *s)
{
    return s->bigcount ? ", large-count binding" : "";
}

static void fail_op(const fz_opstate *s, int index, int round, const char *what)
{
    stats.failures++;
    if (stats.reports >= (unsigned long long)opt.max_reports) {
        return;
    }
    stats.reports++;
    char t[512];
    op_text(s->pl, s->p, t, sizeof(t));
    printf("coll_fuzz: FAIL seed=%" PRIu64 " batch=%d op=%d round=%d world rank %d (comm rank "
           "%d%s): %s: %s\n",
           cur_seed, cur_batch, index, round, world_rank, s->me, binding_text(s), t, what);
    report_context(s, index);
    fflush(stdout);
}

static void op_check(fz_opstate *s, int index, int round)
{
    char what[512], msg[600];
    stats.checks++;
    if (s->s_used) {
        size_t per = fz_coll_reduces(s->pl->coll) ? s->sb.nunits : s->pl->n;
        if (fz_buf_check(&s->sb, &s->sd, per, what, sizeof(what))) {
            snprintf(msg, sizeof(msg), "send buffer changed: %s", what);
            fail_op(s, index, round, msg);
        }
    }
    if (s->r_used) {
        for (size_t u = s->dc_from; u < s->dc_to; u++) {
            fz_buf_dontcare(&s->rb, &s->rd, u);
        }
        size_t per = fz_coll_reduces(s->pl->coll) ? s->rb.nunits : s->pl->n;
        if (fz_buf_check(&s->rb, &s->rd, per, what, sizeof(what))) {
            snprintf(msg, sizeof(msg), "receive buffer wrong: %s", what);
            fail_op(s, index, round, msg);
        }
    }
}

/* An error code from a collective call: the job cannot go on (the ranks
 * may be out of step), so report the operation in full and abort. */
static void mpi_check_op(int err, const fz_opstate *s, int index, const char *what)
{
    if (err != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING], t[512];
        int len = 0;
        MPI_Error_string(err, msg, &len);
        op_text(s->pl, s->p, t, sizeof(t));
        printf("coll_fuzz: FAIL seed=%" PRIu64 " batch=%d op=%d world rank %d (comm rank %d%s): "
               "%s: %s returned an error: %s\n",
               cur_seed, cur_batch, index, world_rank, s->me, binding_text(s), t, what, msg);
        report_context(s, index);
        printf("coll_fuzz: FAIL batch: %s\n", batch_text);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* ------------------------------------------------------------------------ */
/* One batch. */

static void batch_describe(const fz_batch *b, fz_opstate *st, char *out, size_t len)
{
    size_t at = 0;
    at += (size_t)snprintf(out + at, len - at,
                           "seed=%" PRIu64 " batch=%d kind=%s rounds=%d%s world rank %d:", cur_seed,
                           cur_batch, kind_names[b->kind], b->rounds,
                           b->startall ? " (MPI_Startall)" : "", world_rank);
    for (int i = 0; i < b->nops && at < len; i++) {
        if (st[i].skip) {
            continue;
        }
        char t[512], a[200], c[200];
        op_text(&b->ops[i], st[i].p, t, sizeof(t));
        arg_text(&b->ops[i], st[i].p, st[i].me, 0, a, sizeof(a));
        arg_text(&b->ops[i], st[i].p, st[i].me, 1, c, sizeof(c));
        at += (size_t)snprintf(out + at, len - at, " | op%d: %s; this rank send %s, recv %s", i, t,
                               a, c);
    }
}

/* Negative controls (--inject): spoil what the collective left, so that
 * the checks must report it. */
static void inject_fault(fz_opstate *st, int nops)
{
    if (opt.inject == FZ_INJECT_NONE || world_rank != 0) {
        return;
    }
    for (int i = 0; i < nops; i++) {
        fz_opstate *s = &st[i];
        size_t u = s->dc_from > 0 || s->dc_to == 0 ? 0 : s->dc_to; /* a defined unit */
        if (s->skip || !s->r_used || u >= s->rb.nunits) {
            continue;
        }
        if (opt.inject == FZ_INJECT_VALUE) { /* a byte of an element */
            s->rb.ptr[fz_desc_offset(&s->rd, u, 0)] ^= 0x40;
        } else { /* a guard byte before the buffer */
            s->rb.mem[FZ_GUARD / 2] ^= 0x40;
        }
        return;
    }
}

/* The batch's barrier: none (at < 0), or before operation at, on that
 * operation's communicator, in the batch's form (a blocking barrier in a
 * blocking batch, else nonblocking or persistent as the operation is).
 * Its own draw, from a key the operations never use. */
typedef struct {
    int at;
    MPI_Comm comm;
    fz_form form;
    MPI_Request req;
} fz_barrier;

static fz_barrier plan_barrier(const fz_batch *b, const fz_opstate *st)
{
    fz_barrier x = {.at = -1, .comm = MPI_COMM_NULL, .req = MPI_REQUEST_NULL};
    fz_rng r = fz_rng_of(fz_key(b->key, 0xba77u));
    if (opt.op_mask != ~0u || b->nops < 1 || !fz_chance(&r, 1, 3)) {
        return x;
    }
    x.at = (int)fz_below(&r, (uint32_t)b->nops);
    x.comm = st[x.at].comm;
    x.form = b->ops[x.at].form;
    return x;
}

static void issue_barrier(fz_barrier *x, int round, const char *where)
{
    switch (x->form) {
        case FZ_BLOCKING:
            set_activity("%s: MPI_Barrier", where);
            mpi_check(MPI_Barrier(x->comm), "MPI_Barrier");
            break;
        case FZ_NONBLOCKING:
            set_activity("%s: MPI_Ibarrier", where);
            mpi_check(MPI_Ibarrier(x->comm, &x->req), "MPI_Ibarrier");
            break;
        default:
#if FZ_HAVE_PERSISTENT
            if (0 == round) {
                set_activity("%s: " FZ_PERSISTENT_NAME " (barrier)", where);
                mpi_check(FZ_PERSISTENT(Barrier)(x->comm, MPI_INFO_NULL, &x->req),
                          FZ_PERSISTENT_NAME " (barrier)");
            }
            set_activity("%s: MPI_Start of the barrier", where);
            mpi_check(MPI_Start(&x->req), "MPI_Start");
#endif
            break;
    }
    stats.barriers++;
}

static void run_batch(uint64_t seed, int index)
{
    fz_batch b;
    fz_opstate st[FZ_MAX_OPS];
    cur_seed = seed;
    cur_batch = index;
    plan_batch(&b, seed, index);
    for (int i = 0; i < b.nops; i++) {
        op_prepare(&st[i], &b.ops[i], i);
        st[i].skip = !(opt.op_mask & (1u << i)) || !(opt.coll_mask & (1u << b.ops[i].coll)) ||
                     !(opt.form_mask & (1u << b.ops[i].form));
    }
    batch_describe(&b, st, batch_text, sizeof(batch_text));
    if ((opt.verbose || opt.dry_run) && world_rank == 0) {
        printf("coll_fuzz: BATCH %s\n", batch_text);
        fflush(stdout);
    }
    if (opt.dry_run) {
        for (int i = 0; i < b.nops; i++) {
            op_release(&st[i]);
        }
        return;
    }
    fz_barrier barrier = plan_barrier(&b, st);
    /* Completion draws differ per rank: MPI lets each complete its way. */
    fz_rng crng = fz_rng_of(fz_key(b.key, 0xc000u + (uint64_t)world_rank));
    char where[160];
    unsigned long anomalies = fz_user_op_anomalies;
    for (int round = 0; round < b.rounds; round++) {
        for (int i = 0; i < b.nops; i++) {
            if (!st[i].skip) {
                op_fill(&st[i], round);
            }
        }
        MPI_Request reqs[FZ_MAX_OPS + 1];
        int owner[FZ_MAX_OPS + 1], nreq = 0, npers = 0;
        MPI_Request pers[FZ_MAX_OPS];
        for (int i = 0; i < b.nops; i++) {
            fz_opstate *s = &st[i];
            if (i == barrier.at) {
                snprintf(where, sizeof(where),
                         "seed=%" PRIu64 " batch=%d round=%d before op=%d (barrier %s)", seed,
                         index, round, i, form_names[barrier.form]);
                issue_barrier(&barrier, round, where);
                if (FZ_BLOCKING != barrier.form) {
                    owner[nreq] = -1; /* the barrier's */
                    reqs[nreq++] = barrier.req;
                }
            }
            if (s->skip) {
                continue;
            }
            snprintf(where, sizeof(where), "seed=%" PRIu64 " batch=%d round=%d op=%d (%s %s)", seed,
                     index, round, i, coll_names[s->pl->coll], form_names[s->pl->form]);
            if (opt.inject == FZ_INJECT_HANG && world_rank == 1 &&
                s->comm != comms[FZ_COMM_HALVES]) {
                /* Negative control: this rank never calls the collective. */
                set_activity("%s: not called (--inject hang)", where);
                for (;;) {
                    pause();
                }
            }
            switch (s->pl->form) {
                case FZ_BLOCKING:
                    set_activity("%s: blocking call", where);
                    mpi_check_op(issue_blocking(s), s, i, "the blocking call");
                    stats.calls[FZ_BLOCKING]++;
                    break;
                case FZ_NONBLOCKING:
                    set_activity("%s: issuing", where);
                    mpi_check_op(issue_nonblocking(s), s, i, "the nonblocking call");
                    stats.calls[FZ_NONBLOCKING]++;
                    owner[nreq] = i;
                    reqs[nreq++] = s->req;
                    break;
                default:
                    if (round == 0) {
                        set_activity("%s: " FZ_PERSISTENT_NAME, where);
                        mpi_check_op(issue_persistent_init(s), s, i, FZ_PERSISTENT_NAME);
                        stats.inits++;
                    }
                    if (!b.startall) {
                        set_activity("%s: MPI_Start", where);
                        mpi_check_op(MPI_Start(&s->req), s, i, "MPI_Start");
                    }
                    stats.calls[FZ_PERSISTENT_FORM]++;
                    pers[npers++] = s->req;
                    owner[nreq] = i;
                    reqs[nreq++] = s->req;
                    break;
            }
        }
        if (b.startall && npers > 0) {
            /* MPI lets each rank start persistent requests in its own
             * order (they matched at their inits): each rank shuffles
             * them, by a key of its own, every round. */
            fz_rng order =
                fz_rng_of(fz_key(fz_key(b.key, 0xd000u + (uint64_t)round), (uint64_t)world_rank));
            for (int j = npers - 1; j > 0; j--) {
                const int k = (int)fz_below(&order, (uint32_t)j + 1);
                MPI_Request tmp = pers[j];
                pers[j] = pers[k];
                pers[k] = tmp;
            }
            snprintf(where, sizeof(where), "seed=%" PRIu64 " batch=%d round=%d", seed, index,
                     round);
            set_activity("%s: MPI_Startall of %d persistent request(s)", where, npers);
            mpi_check(MPI_Startall(npers, pers), "MPI_Startall");
        }
        snprintf(where, sizeof(where), "seed=%" PRIu64 " batch=%d round=%d", seed, index, round);
        complete(reqs, nreq, &crng, where);
        for (int j = 0; j < nreq; j++) {
            /* persistent ones stay allocated */
            if (owner[j] < 0) {
                barrier.req = reqs[j];
            } else {
                st[owner[j]].req = reqs[j];
            }
        }
        set_activity("seed=%" PRIu64 " batch=%d round=%d: checking", seed, index, round);
        inject_fault(st, b.nops);
        for (int i = 0; i < b.nops; i++) {
            if (!st[i].skip) {
                op_check(&st[i], i, round);
            }
        }
        if (fz_user_op_anomalies != anomalies) {
            for (int i = 0; i < b.nops; i++) {
                if (!st[i].skip && fz_op_is_user(b.ops[i].op)) {
                    fail_op(&st[i], i, round, fz_user_op_anomaly);
                    break;
                }
            }
            anomalies = fz_user_op_anomalies;
        }
    }
    for (int i = 0; i < b.nops; i++) {
        if (!st[i].skip && st[i].pl->form == FZ_PERSISTENT_FORM) {
            set_activity("seed=%" PRIu64 " batch=%d op=%d: MPI_Request_free", seed, index, i);
            mpi_check(MPI_Request_free(&st[i].req), "MPI_Request_free");
        }
    }
    if (MPI_REQUEST_NULL != barrier.req) {
        set_activity("seed=%" PRIu64 " batch=%d: MPI_Request_free of the barrier", seed, index);
        mpi_check(MPI_Request_free(&barrier.req), "MPI_Request_free");
    }
    /* Datatypes after every request that used them is freed: libnbc's
     * persistent requests crash on a datatype freed after their init (a
     * bug of Open MPI's we keep out of the way). */
    for (int i = 0; i < b.nops; i++) {
        op_release(&st[i]);
    }
    stats.batches++;
}

/* ------------------------------------------------------------------------ */
/* bufpool's own view: what it served (MPI_T), when it is loaded. */

static const char *const pvar_colls[FZ_NCOLLS] = {
    "allreduce", "reduce", "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan", "bcast",          "allgather",
    "alltoall",  "gather", "scatter"};

static bool pvar_sum(const char *fmt_calls, unsigned long long *out)
{
    *out = 0;
    for (int c = 0; c < FZ_NCOLLS; c++) {
        char name[96];
        unsigned long long v;
        snprintf(name, sizeof(name), fmt_calls, pvar_colls[c]);
        if (pvar_util_read(name, &v) != PVAR_OK) {
            return false;
        }
        *out += v;
    }
    return true;
}

static const char *const pvar_fmts[6] = {
    "coll_bufpool_%s_calls",      "coll_bufpool_%s_fallbacks",  "coll_bufpool_i%s_calls",
    "coll_bufpool_i%s_fallbacks", "coll_bufpool_%s_init_calls", "coll_bufpool_%s_init_fallbacks"};
static unsigned long long pvar_start[6];
static bool pvar_ok;

static void pvars_begin(void)
{
    pvar_ok = pvar_util_init() == PVAR_OK;
    for (int i = 0; i < 6 && pvar_ok; i++) {
        pvar_ok = pvar_sum(pvar_fmts[i], &pvar_start[i]);
    }
}

static void pvars_end(char *out, size_t len)
{
    unsigned long long v[6];
    bool ok = pvar_ok;
    for (int i = 0; i < 6 && ok; i++) {
        ok = pvar_sum(pvar_fmts[i], &v[i]);
    }
    if (!ok) {
        snprintf(out, len, "coll/bufpool not loaded (no MPI_T counters)");
        return;
    }
    snprintf(out, len,
             "coll/bufpool on rank 0 served %llu blocking (%llu handed back), %llu nonblocking "
             "(%llu), %llu persistent inits (%llu)",
             v[0] - pvar_start[0], v[1] - pvar_start[1], v[2] - pvar_start[2], v[3] - pvar_start[3],
             v[4] - pvar_start[4], v[5] - pvar_start[5]);
}

/* ------------------------------------------------------------------------ */

static void usage(void)
{
    printf("usage: coll_fuzz [--seed S] [--seeds N] [--seconds T] [--batches B] [--batch I]\n"
           "                 [--only-op I | --ops I,J,...] [--colls LIST] [--forms LIST]\n"
           "                 [--max-bytes BYTES]\n"
           "                 [--hang-seconds H] [--uniform | --same-reduce-layout]\n"
           "                 [--dry-run] [--inject value|guard|hang]\n"
           "                 [--max-reports R] [--verbose]\n"
           "  --seed S         first seed (default 1)\n"
           "  --seeds N        seeds S .. S+N-1 (default 1; with --seconds: no limit)\n"
           "  --seconds T      soak: go on with the next seed until T seconds have passed\n"
           "  --batches B      batches per seed (default 24)\n"
           "  --batch I        run batch I of each seed only (a reproducer)\n"
           "  --only-op I      and only its operation I (the others are not called)\n"
           "  --ops I,J,...    and only these of its operations\n"
           "  --colls A,B,...  call only these collectives (allreduce, ..., scatter)\n"
           "  --forms A,...    call only these forms (blocking, nonblocking, persistent)\n"
           "                   (the others are drawn all the same: seeds keep their meaning)\n"
           "  --max-bytes M    largest message per rank or block (default 1 MiB + 64)\n"
           "  --hang-seconds H a step without progress for H s is a hang (default 60)\n"
           "  --max-reports R  failure reports printed per rank (default 10)\n"
           "  --verbose        rank 0 prints every batch before running it\n"
           "  --dry-run        rank 0 prints every batch (as rank 0 sees it), nothing runs\n"
           "  --inject K       negative control: rank 0 spoils an element (value) or a guard\n"
           "                   byte (guard) after each round, or rank 1 never calls (hang)\n"
           "  --uniform        every rank describes its buffers as comm rank 0 does (no\n"
           "                   per-rank datatypes: tells whether a failure needs them)\n"
           "  --same-reduce-layout  only reductions without per-rank layouts (MPI's\n"
           "                   \"same datatype\" read strictly); data movement keeps them\n");
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v = 0;
        if (strcmp(a, "--verbose") == 0) {
            opt.verbose = true;
            continue;
        }
        if (strcmp(a, "--uniform") == 0) {
            opt.uniform = true;
            continue;
        }
        if (strcmp(a, "--dry-run") == 0) {
            opt.dry_run = true;
            continue;
        }
        if (strcmp(a, "--same-reduce-layout") == 0) {
            opt.same_reduce_layout = true;
            continue;
        }
        if (strcmp(a, "--ops") == 0 && i + 1 < argc) {
            /* a comma-separated list of operation indices */
            opt.op_mask = 0;
            for (const char *c = argv[++i]; *c != '\0'; c++) {
                if (*c >= '0' && *c < '0' + FZ_MAX_OPS) {
                    opt.op_mask |= 1u << (*c - '0');
                } else if (*c != ',') {
                    return false;
                }
            }
            continue;
        }
        if ((strcmp(a, "--colls") == 0 || strcmp(a, "--forms") == 0) && i + 1 < argc) {
            /* comma-separated names: the others are drawn but not called */
            bool colls = strcmp(a, "--colls") == 0;
            unsigned mask = 0;
            char list[256];
            snprintf(list, sizeof(list), "%s", argv[++i]);
            for (char *save = NULL, *w = strtok_r(list, ",", &save); w != NULL;
                 w = strtok_r(NULL, ",", &save)) {
                int n = colls ? FZ_NCOLLS : FZ_NFORMS, k = 0;
                while (k < n && strcmp(w, colls ? coll_names[k] : form_names[k]) != 0) {
                    k++;
                }
                if (k == n) {
                    return false;
                }
                mask |= 1u << k;
            }
            *(colls ? &opt.coll_mask : &opt.form_mask) = mask;
            continue;
        }
        if (strcmp(a, "--inject") == 0 && i + 1 < argc) {
            const char *k = argv[++i];
            if (strcmp(k, "value") == 0) {
                opt.inject = FZ_INJECT_VALUE;
            } else if (strcmp(k, "guard") == 0) {
                opt.inject = FZ_INJECT_GUARD;
            } else if (strcmp(k, "hang") == 0) {
                opt.inject = FZ_INJECT_HANG;
            } else {
                return false;
            }
            continue;
        }
        if (strcmp(a, "--help") == 0 || i + 1 >= argc || !parse_u64(argv[i + 1], &v)) {
            return false;
        }
        i++;
        if (strcmp(a, "--seed") == 0) {
            opt.seed = v;
        } else if (strcmp(a, "--seeds") == 0 && v > 0) {
            opt.nseeds = v;
            opt.seeds_given = true;
        } else if (strcmp(a, "--seconds") == 0) {
            opt.seconds = (double)v;
        } else if (strcmp(a, "--batches") == 0 && v > 0 && v < 1000000) {
            opt.batches = (int)v;
        } else if (strcmp(a, "--batch") == 0 && v < 1000000) {
            opt.only_batch = (int)v;
        } else if (strcmp(a, "--only-op") == 0 && v < FZ_MAX_OPS) {
            opt.op_mask = 1u << v;
        } else if (strcmp(a, "--max-bytes") == 0 && v < ((uint64_t)1 << 30)) {
            opt.max_bytes = (size_t)v;
        } else if (strcmp(a, "--hang-seconds") == 0 && v > 0 && v < 100000) {
            opt.hang_seconds = (int)v;
        } else if (strcmp(a, "--max-reports") == 0 && v < 1000000) {
            opt.max_reports = (int)v;
        } else {
            return false;
        }
    }
    if (opt.seconds > 0 && !opt.seeds_given) {
        opt.nseeds = UINT64_MAX;
    }
    return true;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!parse_args(argc, argv)) {
        if (world_rank == 0) {
            usage();
        }
        MPI_Finalize();
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(activity, sizeof(activity), "start-up");
    install_handlers();
    comms_create();
    fz_types_init();
    if (fz_desc_selftest() != 0) {
        stats.failures++;
    }
    pvars_begin();

    double t0 = MPI_Wtime();
    uint64_t seed = opt.seed, done = 0;
    for (;;) {
        set_activity("seed=%" PRIu64 ": starting", seed);
        if (world_rank == 0) { /* the driver's record of what was started */
            printf("coll_fuzz: SEED %" PRIu64 " calls before %llu\n", seed,
                   stats.calls[FZ_BLOCKING] + stats.calls[FZ_NONBLOCKING] +
                       stats.calls[FZ_PERSISTENT_FORM]);
        }
        if (opt.only_batch >= 0) {
            run_batch(seed, opt.only_batch);
        } else {
            for (int bi = 0; bi < opt.batches; bi++) {
                run_batch(seed, bi);
            }
        }
        stats.seeds++;
        done++;
        /* Go on?  Rank 0 decides, by point-to-point messages (no
         * collective under test). */
        int go = 0;
        set_activity("after seed=%" PRIu64 ": control messages", seed);
        if (world_rank == 0) {
            go = done < opt.nseeds && (opt.seconds <= 0 || MPI_Wtime() - t0 < opt.seconds);
            for (int q = 1; q < world_size; q++) {
                mpi_check(MPI_Send(&go, 1, MPI_INT, q, 7, ctl_comm), "MPI_Send");
            }
        } else {
            mpi_check(MPI_Recv(&go, 1, MPI_INT, 0, 7, ctl_comm, MPI_STATUS_IGNORE), "MPI_Recv");
        }
        if (!go) {
            break;
        }
        seed++;
    }
    alarm(0);
    double elapsed = MPI_Wtime() - t0;

    /* Failures and calls of every rank, to rank 0 by point-to-point. */
    unsigned long long mine[2] = {stats.failures, stats.checks}, all[2] = {0, 0};
    if (world_rank == 0) {
        all[0] = mine[0];
        all[1] = mine[1];
        for (int q = 1; q < world_size; q++) {
            unsigned long long theirs[2];
            MPI_Recv(theirs, 2, MPI_UNSIGNED_LONG_LONG, q, 8, ctl_comm, MPI_STATUS_IGNORE);
            all[0] += theirs[0];
            all[1] += theirs[1];
        }
        char pv[256];
        pvars_end(pv, sizeof(pv));
        unsigned long long calls = stats.calls[FZ_BLOCKING] + stats.calls[FZ_NONBLOCKING] +
                                   stats.calls[FZ_PERSISTENT_FORM];
        printf("coll_fuzz: np=%d seeds %" PRIu64 "..%" PRIu64 ", %llu batches, %llu collective "
               "calls (blocking %llu, nonblocking %llu, persistent starts %llu of %llu inits) "
               "and %llu barriers, %llu checks on all ranks, %llu failures, %.1f s\n",
               world_size, opt.seed, seed, stats.batches, calls, stats.calls[FZ_BLOCKING],
               stats.calls[FZ_NONBLOCKING], stats.calls[FZ_PERSISTENT_FORM], stats.inits,
               stats.barriers, all[1], all[0], elapsed);
        printf("coll_fuzz: %s\n", pv);
        printf("coll_fuzz: %s\n", all[0] ? "FAILED" : "PASSED");
    } else {
        MPI_Send(mine, 2, MPI_UNSIGNED_LONG_LONG, 0, 8, ctl_comm);
    }
    fflush(stdout);
    pvar_util_finalize();
    fz_types_finalize();
    comms_free();
    MPI_Finalize();
    return stats.failures ? 1 : 0;
}

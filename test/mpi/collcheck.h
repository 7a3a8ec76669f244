/*
 * collcheck: MPI collective correctness checks against references computed
 * serially inside the test.
 *
 * Every input element is a pure function of (case salt, comm rank, element
 * index), so each rank computes any other rank's contribution locally and
 * folds them in rank order 0..p-1 (the order MPI prescribes for
 * non-commutative operations).  Inputs are chosen so that every result is
 * exact: integers wrap only where C defines it (unsigned), floating-point
 * values are small dyadic numbers.  Results are compared byte for byte on
 * the bytes that carry a value; derived types must also leave their gaps
 * untouched.  Nothing here calls an MPI reduction to compute an expected
 * value.
 *
 * A check never changes which collectives run next, so a mismatch cannot
 * desynchronise the ranks: failures are counted, reported and the run goes
 * on to MPI_Finalize; an MPI error code aborts the job.
 */
#ifndef COLLCHECK_H
#define COLLCHECK_H

#include "pcoll.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Run options (shared command line of every collcheck program). */

enum cc_level {
    CC_LEVEL_SMOKE, /* representative type/op pairs only (8-rank runs) */
    CC_LEVEL_QUICK, /* default: every pair on MPI_COMM_WORLD, subsets elsewhere */
    CC_LEVEL_FULL   /* every pair, count, root and communicator */
};

enum cc_fault {
    CC_FAULT_NONE,
    CC_FAULT_VALUE, /* corrupt one result byte: proves value checks fire */
    CC_FAULT_GAP,   /* write into a derived type's gap: proves gap checks fire */
    CC_FAULT_GUARD  /* write past the end of a receive buffer */
};

typedef enum {
    CC_ALLREDUCE,
    CC_REDUCE,
    CC_REDUCE_SCATTER,
    CC_REDUCE_SCATTER_BLOCK,
    CC_SCAN,
    CC_EXSCAN,
    CC_BCAST,
    CC_ALLGATHER,
    CC_ALLTOALL,
    CC_GATHER,
    CC_SCATTER,
    CC_NCOLLS
} cc_coll;

/* How a collective is called: MPI_<Coll>, MPI_I<coll> then a completion
 * call, or MPI_<Coll>_init, MPI_Start twice, MPI_Request_free. */
typedef enum { CC_FORM_BLOCKING, CC_FORM_NONBLOCKING, CC_FORM_PERSISTENT, CC_NFORMS } cc_form;

typedef enum {
    CC_COMM_WORLD,
    CC_COMM_DUP,
    CC_COMM_HALVES,   /* split by rank parity: sizes differ when p is odd */
    CC_COMM_REVERSED, /* split with key = -rank: comm ranks run backwards */
    CC_NCOMMKINDS
} cc_comm_kind;

typedef struct {
    enum cc_level level;
    size_t segment_bytes;   /* counts around it are tested (segment boundaries) */
    unsigned comm_mask;     /* bit (1u << cc_comm_kind) */
    unsigned coll_mask;     /* bit (1u << cc_coll) */
    int expect_bufpool;     /* 1: require coll_bufpool_<coll>_calls to grow; 2: to stay */
    int expect_node;        /* 1: node calls and no node fallbacks; 2: the
                             reverse (--expect-node=fallback); 3: both
                             (--expect-node=both); 0: no check */
    int expect_single_copy; /* 1: some bcast/allgather read straight (CMA);
                               2: none (--expect-single-copy=none); 0: no check */
    int expect_node_tree;   /* 1: some node calls ran in groups (two levels);
                               2: none (--expect-node-tree=none); 0: no check */
    bool have_scratch_bound;
    unsigned long long scratch_bound; /* bytes, see cc_check_scratch_bound */
    bool have_requests_peak;
    unsigned long long requests_peak; /* see --expect-requests-peak */
    cc_form form;                     /* --form (default blocking) */
    int threads;                      /* test_coll_threads only */
    int iterations;                   /* test_coll_threads and test_coll_comms */
    int max_reports;                  /* failure messages printed per rank */
    enum cc_fault fault;
    bool verbose;
    bool seal_bcast_root; /* --seal-bcast-root: the root's buffer too */
} cc_options;

extern cc_options cc_opts;
extern int cc_world_rank, cc_world_size;
/* The communicator of every process of the job: MPI_COMM_WORLD, or with
 * --session one made from an MPI session's mpi://WORLD process set (MPI 4
 * sessions; MPI_COMM_WORLD is then not valid at all).  Every check and
 * every communicator of the harness comes from it. */
extern MPI_Comm cc_world;
/* --session without MPI_Init: MPI_COMM_SELF is not valid either, and the
 * MPI_Reduce_local of Open MPI 5.0.10 and 6.0.x, which runs MPI_COMM_SELF's
 * coll, crashes there. */
extern bool cc_session_only;

/* MPI_Init(_thread), option parsing, datatype and op creation.  Returns false
 * (after printing why on rank 0) when the command line is bad; the caller then
 * returns cc_finish()'s value. */
bool cc_init(int *argc, char ***argv, int thread_level, const char *usage_extra);
/* Frees MPI objects, prints the summary and finalizes.  Returns the process
 * exit status: non-zero when this rank saw a failure. */
int cc_finish(const char *program);

bool cc_coll_selected(cc_coll coll);
const char *cc_form_name(cc_form form);     /* "blocking", "nonblocking", "persistent" */
const char *cc_coll_name(cc_coll coll);     /* "allreduce": also the pvar infix */
const char *cc_coll_mpi_name(cc_coll coll); /* "MPI_Allreduce" */

/* The value of a "--name=value" argument, or NULL when arg is not that
 * option (for programs that take options of their own, as rel_job). */
const char *cc_option_value(const char *arg, const char *name);

/* ------------------------------------------------------------------------ */
/* Communicators. */

typedef struct {
    cc_comm_kind kind;
    const char *name;
    MPI_Comm comm;
    int rank, size;
} cc_comm;

const char *cc_comm_kind_name(cc_comm_kind kind);
/* Abort with a FAIL line naming call and its error unless rc is
 * MPI_SUCCESS (a communicator that could not be made). */
void cc_comm_made(int rc, const char *call);
/* Collective over MPI_COMM_WORLD; errors come back as codes (one that
 * makes no communicator aborts: cc_comm_made).  cc_comm_make gives the
 * bare communicator (MPI_COMM_WORLD itself for CC_COMM_WORLD). */
MPI_Comm cc_comm_make(cc_comm_kind kind);
void cc_comm_create(cc_comm_kind kind, cc_comm *out);
/* Wraps an existing communicator (not freed by cc_comm_free when borrowed). */
void cc_comm_wrap(MPI_Comm comm, const char *name, cc_comm *out);
void cc_comm_free(cc_comm *c);

/* ------------------------------------------------------------------------ */
/* Datatypes and operations. */

typedef enum {
    CC_REPR_INT, /* two's complement integer of `size` bytes */
    CC_REPR_BOOL,
    CC_REPR_FLT,
    CC_REPR_DBL,
    CC_REPR_LDBL
} cc_repr;

typedef struct {
    cc_repr repr;
    unsigned size;
    bool is_signed;
} cc_scalar;

typedef enum {
    CC_KIND_INT,     /* C integers, multi-language integers, MPI_BYTE, char */
    CC_KIND_BOOL,    /* MPI_C_BOOL */
    CC_KIND_FLOAT,   /* float, double, long double */
    CC_KIND_COMPLEX, /* two scalars: real at 0, imaginary at scalar.size */
    CC_KIND_PAIR,    /* MAXLOC/MINLOC pairs: value at 0, int index at pair_index_offset */
    CC_KIND_MAT2,    /* contiguous(4, uint32): 2x2 matrix, row major */
    CC_KIND_VEC3,    /* vector(3, 1, 2, uint32) resized to 24 bytes: 3 values, 3 gaps */
    CC_KIND_STRUCT,  /* struct {int32 @0; double @8; int16 @16}, extent 24 */
    CC_KIND_RAW      /* data movement only (contiguous(3, int), char, wchar) */
} cc_kind;

typedef struct {
    unsigned offset, length;
} cc_segment;

typedef enum {
    CC_OP_SUM,
    CC_OP_PROD,
    CC_OP_MAX,
    CC_OP_MIN,
    CC_OP_LAND,
    CC_OP_LOR,
    CC_OP_LXOR,
    CC_OP_BAND,
    CC_OP_BOR,
    CC_OP_BXOR,
    CC_OP_MAXLOC,
    CC_OP_MINLOC,
    CC_OP_USER_PLUS1,  /* commutative: x + y + 1 mod 2^32 (counts applications) */
    CC_OP_USER_MATMUL, /* non-commutative: 2x2 matrix product mod 2^32 */
    CC_OP_USER_VEC3,   /* commutative, on the vector type: (+, max, ^) per field */
    CC_OP_USER_STRUCT, /* commutative, on the struct type: (+, min, ^) per field */
    CC_NOPS
} cc_op;

#define CC_OPBIT(op) (1u << (op))

typedef struct {
    const char *name;
    MPI_Datatype datatype;
    cc_kind kind;
    cc_scalar scalar;
    size_t extent;
    unsigned pair_index_offset;
    unsigned nsegments;
    cc_segment segments[3];    /* bytes that carry a value (long double: 10 of 16) */
    bool derived;              /* created (and freed) by the test */
    bool gaps_must_stay;       /* vector, struct: bytes outside segments are never written */
    unsigned ops;              /* CC_OPBIT()s allowed by the MPI standard's table */
    bool minmax_top_bit_clear; /* set at run time: see probe_minmax_signedness() */
} cc_type;

extern cc_type cc_types[];
extern const size_t cc_ntypes;

const cc_type *cc_type_by_name(const char *name);
const char *cc_op_name(cc_op op);
MPI_Op cc_op_handle(cc_op op);
bool cc_op_commutative(cc_op op);

/* ------------------------------------------------------------------------ */
/* Reference values. */

typedef struct {
    long double re, im;
} cc_complex;

typedef union {
    uint64_t i; /* INT and BOOL, sign-extended to 64 bits */
    long double f;
    cc_complex c;
    struct {
        long double value;
        int index;
    } pair;
    uint32_t m[4]; /* MAT2 (row major) and VEC3 (m[0..2]) */
    struct {
        int32_t a;
        double b;
        int16_t c;
    } s;
} cc_value;

cc_value cc_input(const cc_type *t, cc_op op, uint64_t salt, int rank, int nranks, size_t index);
/* left is the contribution of the lower ranks. */
cc_value cc_combine(const cc_type *t, cc_op op, cc_value left, cc_value right);
void cc_store(const cc_type *t, cc_value v, void *dst);
cc_value cc_load(const cc_type *t, const void *src);

/* Writes rank's inputs for elements [first, first + count). */
/* Says on rank 0 which inputs were limited to work around a bug of the MPI
 * library's op functions (probed in cc_init). */
void cc_print_input_notes(void);
void cc_fill_input(const cc_type *t, cc_op op, uint64_t salt, int rank, int nranks, size_t first,
                   size_t count, void *buf);
/* Folds ranks [rank_begin, rank_end) in order for elements [first, first + count). */
void cc_fill_expected(const cc_type *t, cc_op op, uint64_t salt, int nranks, int rank_begin,
                      int rank_end, size_t first, size_t count, void *buf);

/* Byte patterns for data movement, defined over the packed stream of value
 * bytes, so a sender and a receiver whose type signatures match but whose
 * layouts differ (vector vs contiguous) agree on every byte. */
void cc_fill_pattern(const cc_type *t, size_t count, uint64_t salt, uint64_t tag, void *buf);

uint64_t cc_hash(uint64_t a, uint64_t b);
uint64_t cc_case_salt(int n, const uint64_t *parts);

/* ------------------------------------------------------------------------ */
/* Buffers, checks and reports. */

#define CC_RECV_SENTINEL 0xA5 /* receive buffers, their gaps and guards */
#define CC_SEND_FILLER   0x5A /* gaps of send buffers: must never arrive */
#define CC_GUARD_BYTES   256

/* Data area with sentinel guards on both sides, in pages of its own. */
typedef struct {
    unsigned char *base;
    unsigned char *data;
    size_t bytes;
    size_t mapped; /* bytes of the mapping from base */
} cc_buffer;

void cc_buffer_alloc(cc_buffer *b, size_t bytes, unsigned char fill);
/* Read-only until freed: a send buffer, once filled, for the whole call
 * (persistent: until MPI_Request_free).  A component that writes into it,
 * even the same bytes back or only for a while, which the unchanged check
 * cannot see, takes SIGSEGV there, and the message says so. */
void cc_buffer_seal(cc_buffer *b);
void cc_buffer_free(cc_buffer *b);
void *cc_xmalloc(size_t bytes);

/* What a failure message names. */
typedef struct {
    cc_coll coll;
    const char *type;   /* datatype, or "send -> recv" for data movement */
    const char *op;     /* "-" for data movement */
    size_t count;       /* the count argument passed to MPI */
    const char *counts; /* extra count detail (reduce_scatter, send/recv), or NULL */
    int root;           /* -1: rootless */
    const cc_comm *comm;
    bool in_place;
    int thread; /* -1: main thread */
    cc_form form;
} cc_case;

void cc_fail(const cc_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cc_check_mpi(const cc_case *c, int rc, const char *call);
void cc_case_done(void);
long cc_failure_count(void);

/* Compares `count` elements value by value (expected is a reference buffer);
 * on derived types also requires gap bytes of got to be CC_RECV_SENTINEL. */
bool cc_check_values(const cc_case *c, const cc_type *t, const void *expected, const void *got,
                     size_t count, const char *what);
bool cc_check_pattern(const cc_case *c, const cc_type *t, const void *got, size_t count,
                      uint64_t salt, uint64_t tag, const char *what);
bool cc_check_guards(const cc_case *c, const cc_buffer *b, const char *what);
bool cc_check_unchanged(const cc_case *c, const void *before, const void *after, size_t bytes,
                        const char *what);

/* Applies --inject-fault once per process (on the last world rank) to the
 * result about to be checked. */
void cc_inject_fault(const cc_type *t, cc_buffer *result, size_t count);

/* ------------------------------------------------------------------------ */
/* Counts. */

enum { CC_MAX_COUNTS = 8 };
#define CC_BIG_BYTES       (3u << 20) /* "several MiB" */
#define CC_SMALL_COUNT_MAX 1001       /* the largest of the small counts */

enum cc_count_set {
    CC_COUNTS_ZERO = 1,      /* 0 */
    CC_COUNTS_ONE = 2,       /* 1 */
    CC_COUNTS_SEVEN = 4,     /* 7 */
    CC_COUNTS_ODD = 8,       /* CC_SMALL_COUNT_MAX (1001) */
    CC_COUNTS_BOUNDARY = 16, /* segment/extent - 1, +0, +1 */
    CC_COUNTS_EDGE = 32,     /* segment/extent + 1 only */
    CC_COUNTS_BIG = 64       /* CC_BIG_BYTES / extent + 3 */
};
#define CC_COUNTS_SMALL (CC_COUNTS_ZERO | CC_COUNTS_ONE | CC_COUNTS_SEVEN | CC_COUNTS_ODD)

size_t cc_counts(unsigned sets, size_t extent, size_t out[CC_MAX_COUNTS]);
/* The matrix policy of both families.  Every (type, op) pair, or type pair
 * for data movement, belongs to a tier; each tier includes the ones before:
 *   OTHER    count 7 on MPI_COMM_WORLD, at one root rotating with pair_index
 *   REP      counts 0, 1, 7, 1001 on every communicator kind, every root
 *   SEGMENT  segment/extent - 1, +0, +1 on MPI_COMM_WORLD, +1 elsewhere
 *            (larger counts run at the first and last root)
 *   BIG      a several-MiB count on MPI_COMM_WORLD
 * --smoke (the 8-rank run) keeps REP and above with counts 0, 1, 7 and
 * SEGMENT's +1 on MPI_COMM_WORLD.  --full runs every pair as REP at least, on
 * every communicator and root, with all of a tier's counts everywhere; the
 * families promote more pairs to SEGMENT there (every type at least once). */
typedef enum { CC_TIER_OTHER, CC_TIER_REP, CC_TIER_SEGMENT, CC_TIER_BIG } cc_tier;

unsigned cc_matrix_counts(cc_comm_kind kind, cc_tier tier);
bool cc_root_selected(int root, int nranks, size_t count, cc_tier tier, size_t pair_index);
/* reduce_scatter's uneven receive counts: includes zeros wherever p > 1. */
int cc_uneven_count(size_t count, int rank);

/* ------------------------------------------------------------------------ */
/* Case runners (thread safe). */

typedef struct {
    cc_coll coll; /* allreduce, reduce, reduce_scatter(_block), scan, exscan */
    const cc_type *type;
    cc_op op;
    size_t count; /* elements; per-rank block for reduce_scatter_block; base of the
                     uneven pattern for reduce_scatter */
    int root;
    bool in_place;
    uint64_t salt;
    int thread;
} cc_reduce_case;

void cc_run_reduce_case(const cc_comm *comm, const cc_reduce_case *rc);

typedef struct {
    cc_coll coll; /* bcast, allgather, alltoall, gather, scatter */
    const cc_type *sendtype;
    size_t sendcount;
    const cc_type *recvtype;
    size_t recvcount;
    int root;
    bool in_place;
    uint64_t salt;
    int thread;
} cc_move_case;

void cc_run_move_case(const cc_comm *comm, const cc_move_case *mc);

/* ------------------------------------------------------------------------ */
/* A case in flight (nonblocking and persistent forms; collcheck_forms.c):
 * started (buffers prepared, the collective called), then completed by
 * any MPI completion call on its request, then finished (persistent: a
 * second MPI_Start on the restored buffers must give the same bytes, then
 * MPI_Request_free; then the checks).  Several may be in flight at once.
 * The blocking form completes in start. */
typedef struct cc_pending cc_pending;
struct cc_pending {
    cc_form form;
    MPI_Request req; /* MPI_REQUEST_NULL once completed (persistent: inactive) */
    const cc_case *c;
    cc_buffer *recv;         /* restored before the second persistent start */
    unsigned char *snapshot; /* recv's bytes (guards included) before the first */
    void (*finish)(cc_pending *p);
    void *kind; /* the collective family's state */
};

cc_pending *cc_reduce_start(const cc_comm *comm, const cc_reduce_case *rc, cc_form form);
cc_pending *cc_move_start(const cc_comm *comm, const cc_move_case *mc, cc_form form);
/* Complete one case by MPI_Wait (how 0), an MPI_Test loop (1), MPI_Waitany
 * (2) or MPI_Waitall (3); nothing for the blocking form. */
void cc_pending_complete(cc_pending *p, unsigned how);
/* After completion: the persistent restart, the checks, and free p. */
void cc_pending_finish(cc_pending *p);
/* Start's tail: the form's MPI error check, and MPI_Start of a persistent
 * request unless cc_persistent_defer_start (the caller then starts it, with
 * MPI_Startall for instance). */
extern bool cc_persistent_defer_start;
cc_pending *cc_pending_new(cc_form form, const cc_case *c, cc_buffer *recv,
                           void (*finish)(cc_pending *p), void *kind);
void cc_pending_issued(cc_pending *p, int err);
/* Complete (how from salt) and finish; NULL: nothing. */
void cc_pending_run(cc_pending *p, uint64_t salt);

/* One step of the mixed workloads (test_coll_threads, test_coll_comms,
 * rel_job): a collective on one datatype, by name. */
typedef struct {
    cc_coll coll;
    const char *type; /* cc_type_by_name */
    cc_op op;         /* reductions only */
} cc_step_kind;

/* Runs a step as a reduction or a data-movement case with the same type and
 * count on both sides (bcast never in place). */
void cc_run_step(const cc_comm *comm, const cc_step_kind *k, size_t count, int root, bool in_place,
                 uint64_t salt, int thread);
/* The same step in flight, in the given form (see cc_pending). */
cc_pending *cc_step_start(const cc_comm *comm, const cc_step_kind *k, size_t count, int root,
                          bool in_place, uint64_t salt, int thread, cc_form form);

/* Runs `matrix` for every selected collective of `colls` on every selected
 * communicator kind, bracketing each collective with the --expect-bufpool
 * pvar check. */
void cc_run_family(const cc_coll *colls, size_t ncolls,
                   void (*matrix)(cc_coll coll, const cc_comm *comm));

/* ------------------------------------------------------------------------ */
/* Proof that coll/bufpool handled the calls (MPI_T pvars, see pvar_util.h). */

typedef struct {
    unsigned long long calls[CC_NCOLLS];
    int status[CC_NCOLLS]; /* enum pvar_status */
} cc_bufpool_snapshot;

/* The name of the pvar that counts coll's calls of the run's --form. */
void cc_bufpool_calls_pvar(cc_coll coll, char *name, size_t n);
/* No-ops unless --expect-bufpool. */
void cc_bufpool_snapshot_take(cc_bufpool_snapshot *s);
void cc_bufpool_expect_growth(const cc_bufpool_snapshot *before, unsigned coll_mask);
/* --expect-scratch-bound (run by cc_init): a 64 MiB MPI_INT sum allreduce on
 * MPI_COMM_WORLD, checked, then coll_bufpool_scratch_bytes_peak must stay
 * within the bound. */
void cc_check_scratch_bound(void);
/* --expect-requests-peak (run by cc_finish). */
void cc_check_requests_peak(void);
/* --expect-node (run by cc_finish). */
void cc_check_node(void);
void cc_check_single_copy(void);
void cc_check_node_tree(void);

/* ------------------------------------------------------------------------ */
/* Internal to the library. */

bool cc_types_create(void); /* derived types, user ops, table self-checks */
void cc_types_free(void);
size_t cc_first_gap(const cc_type *t); /* extent when the type has no gap */

#endif

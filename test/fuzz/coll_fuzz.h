/*
 * coll_fuzz: a differential fuzzer of whole MPI programs (see coll_fuzz.c).
 *
 * This header holds what its three files share: the pseudo-random numbers
 * every rank draws alike, the signature units and the per-rank datatype
 * descriptions of them (coll_fuzz_types.c), the values, reference folds and
 * buffers with their expected images (coll_fuzz_data.c).
 */
#ifndef COLL_FUZZ_H
#define COLL_FUZZ_H

#include <mpi.h>
/* Open MPI 4.1's persistent collectives are the pcollreq extension's
 * MPIX_<Coll>_init; from 5.0 they are MPI-4's MPI_<Coll>_init in mpi.h. */
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define FZ_PERSISTENT(name) MPIX_##name##_init
#define FZ_PERSISTENT_NAME  "MPIX_<coll>_init"
#define FZ_HAVE_PERSISTENT  1
#elif (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5) || MPI_VERSION >= 4
#define FZ_PERSISTENT(name) MPI_##name##_init
#define FZ_PERSISTENT_NAME  "MPI_<coll>_init"
#define FZ_HAVE_PERSISTENT  1
#else
#define FZ_PERSISTENT_NAME "none"
#define FZ_HAVE_PERSISTENT 0
#endif

/* MPI 4's large-count bindings (MPI_<Coll>_c, MPI_<Coll>_init_c; Open MPI 6
 * has them, 4.1 and 5.0 not): where they exist each rank draws, for each
 * operation, whether it calls them, since the binding is the rank's own
 * business (counts of MPI_Count, the same signature). */
#if MPI_VERSION >= 4
#define FZ_HAVE_BIGCOUNT 1
#else
#define FZ_HAVE_BIGCOUNT 0
#endif

/* ------------------------------------------------------------------------ */
/* Pseudo-random numbers (splitmix64): every rank that draws from the same
 * key draws the same numbers. */

static inline uint64_t fz_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A key naming one thing: fz_key(fz_key(seed, batch), op) ... */
static inline uint64_t fz_key(uint64_t a, uint64_t b)
{
    return fz_mix(a ^ fz_mix(b + 0x632be59bd9b4e019ull));
}

typedef struct {
    uint64_t s;
} fz_rng;

static inline fz_rng fz_rng_of(uint64_t key)
{
    fz_rng r = {fz_mix(key)};
    return r;
}

static inline uint64_t fz_next(fz_rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    uint64_t z = r->s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static inline uint32_t fz_below(fz_rng *r, uint32_t n)
{
    return (uint32_t)(((fz_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* True with probability num/den. */
static inline bool fz_chance(fz_rng *r, uint32_t num, uint32_t den)
{
    return fz_below(r, den) < num;
}

/* ------------------------------------------------------------------------ */
/* Collectives, forms, operations. */

typedef enum {
    FZ_ALLREDUCE,
    FZ_REDUCE,
    FZ_REDUCE_SCATTER,
    FZ_REDUCE_SCATTER_BLOCK,
    FZ_SCAN,
    FZ_EXSCAN,
    FZ_BCAST,
    FZ_ALLGATHER,
    FZ_ALLTOALL,
    FZ_GATHER,
    FZ_SCATTER,
    FZ_NCOLLS
} fz_coll;

static inline bool fz_coll_reduces(fz_coll c)
{
    return c <= FZ_EXSCAN;
}

typedef enum { FZ_BLOCKING, FZ_NONBLOCKING, FZ_PERSISTENT_FORM, FZ_NFORMS } fz_form;

typedef enum {
    FZ_OP_NONE, /* data movement */
    FZ_OP_SUM,
    FZ_OP_PROD,
    FZ_OP_MAX,
    FZ_OP_MIN,
    FZ_OP_BAND,
    FZ_OP_BOR,
    FZ_OP_BXOR,
    FZ_OP_MAXLOC,
    FZ_OP_MINLOC,
    FZ_OP_USER_SUM,      /* int32 sum mod 2^32, commutative */
    FZ_OP_USER_AFFINE,   /* composition of affine maps mod 2^32: not commutative */
    FZ_OP_USER_BIGSTACK, /* double sum through `double tmp[*len]` on the stack */
    FZ_OP_USER_MAXNC,    /* double max, declared not commutative */
    FZ_NOPS
} fz_opk;

static inline bool fz_op_is_user(fz_opk op)
{
    return op >= FZ_OP_USER_SUM;
}

/* ------------------------------------------------------------------------ */
/* Signature units and the descriptions of n of them (coll_fuzz_types.c). */

typedef enum {
    FZ_PRIM_U8,
    FZ_PRIM_I32,
    FZ_PRIM_U32,
    FZ_PRIM_I64,
    FZ_PRIM_F32,
    FZ_PRIM_F64
} fz_prim;

/* What a message's signature is made of: n units, each of one or two
 * primitives.  A unit's packed form (its primitives one after the other)
 * is what values and reference folds work on. */
typedef enum {
    FZ_UNIT_BYTE, /* MPI_BYTE (data movement) */
    FZ_UNIT_U8,   /* MPI_UINT8_T (reductions) */
    FZ_UNIT_I32,  /* MPI_INT */
    FZ_UNIT_U32,  /* MPI_UINT32_T */
    FZ_UNIT_I64,  /* MPI_INT64_T */
    FZ_UNIT_F32,  /* MPI_FLOAT */
    FZ_UNIT_F64,  /* MPI_DOUBLE */
    FZ_UNIT_2INT, /* MPI_2INT (MAXLOC, MINLOC) */
    FZ_UNIT_AFF,  /* contiguous(2, MPI_UINT32_T): an affine map (a, b) */
    FZ_UNIT_PAIR, /* {int, double}, laid out three ways (data movement) */
    FZ_NUNITS
} fz_unit;

enum { FZ_MAX_PRIMS = 2, FZ_MAX_PACKED = 16, FZ_MAX_INNER = 3 };

typedef struct {
    const char *name;
    int nprims;
    fz_prim prim[FZ_MAX_PRIMS];
    size_t packed; /* bytes of the packed form = signature bytes of one unit */
} fz_unit_info;

extern const fz_unit_info fz_units[FZ_NUNITS];
size_t fz_prim_size(fz_prim p);

/* How one rank describes n units of a signature: the shape of the datatype
 * it passes and its count. */
typedef enum {
    FZ_SH_BASIC,       /* n x unit */
    FZ_SH_DUP,         /* n x dup(unit) */
    FZ_SH_CONTIG,      /* n/k x contiguous(k, unit) (k = n: 1 x contiguous(n)) */
    FZ_SH_RESIZED,     /* n x resized(unit, lb 0, extent + pad): gaps */
    FZ_SH_NEGLB,       /* n x resized(unit, lb -pad, extent + pad) */
    FZ_SH_LB,          /* n x indexed_block(1, 1, {1}, unit): lb = one extent */
    FZ_SH_VECTOR,      /* n/k x vector(k, 1, 2, unit): gaps */
    FZ_SH_INDEXED_REV, /* n/k x indexed(k x 1, displs k-1..0): memory order reversed */
    FZ_SH_HVEC_NEG,    /* n/k x hvector(k, 1, -2 extents, unit): negative stride, gaps */
    FZ_SH_EMPTY,       /* 1 x contiguous(0, unit) (n = 0 only, then on every rank) */
    FZ_NSHAPES
} fz_shape;

typedef struct {
    fz_unit unit;
    fz_shape shape;
    int inner;         /* the unit's own layout (PAIR: three; others: one) */
    int k;             /* units per instance of CONTIG, VECTOR, INDEXED_REV, HVEC_NEG */
    ptrdiff_t pad;     /* RESIZED, NEGLB */
    int count;         /* the count argument */
    size_t units;      /* units per block: count x units per instance */
    ptrdiff_t uext;    /* extent of one unit in its inner layout */
    ptrdiff_t extent;  /* extent of the datatype passed */
    ptrdiff_t toff;    /* offset of the instance's first unit (user ops) */
    ptrdiff_t off[2];  /* primitive offsets inside a unit */
    MPI_Datatype type; /* built by fz_desc_build */
    bool owned;        /* fz_desc_free frees it */
    bool shared;       /* the receive side passes the send side's datatype */
} fz_desc;

/* Which shapes a description may take. */
typedef enum {
    FZ_FREEDOM_NONE,   /* predefined reduction: the unit's own type */
    FZ_FREEDOM_REDUCE, /* user reduction: layout of one unit per instance, same count */
    FZ_FREEDOM_MOVE    /* data movement: any shape and count of the same signature */
} fz_freedom;

/* Choose (no MPI call): n units per block of `unit`, drawing from rng.
 * empty: n is 0 and every rank passes 1 x contiguous(0, unit) (the ranks
 * agree on that: Open MPI 4.1.4's MPI_Bcast and MPI_Ibcast hang when the
 * root passes count 0 and another rank 1 x an empty type, the same empty
 * signature, because they decide on the count). */
void fz_desc_plan(fz_desc *d, fz_unit unit, size_t n, fz_freedom freedom, bool empty, fz_rng *rng);
/* Check the layouts this program assumes against MPI_Pack on every shape
 * of every unit; prints what differs and returns the number of shapes that
 * do (the model, or the MPI library's datatype engine, is wrong). */
int fz_desc_selftest(void);
/* Create and commit the datatype, register it for the user operations. */
void fz_desc_build(fz_desc *d);
void fz_desc_free(fz_desc *d);
/* Byte offset of primitive j of unit u (units numbered across blocks) from
 * the buffer pointer. */
static inline ptrdiff_t fz_desc_offset(const fz_desc *d, size_t u, int j)
{
    ptrdiff_t ue = d->uext, k = d->k, base;
    ptrdiff_t i = (ptrdiff_t)u;
    switch (d->shape) {
        case FZ_SH_RESIZED:
        case FZ_SH_NEGLB:
            base = i * (ue + d->pad);
            break;
        case FZ_SH_LB:
            base = i * ue + ue;
            break;
        case FZ_SH_VECTOR:
            base = (i / k) * (2 * k - 1) * ue + (i % k) * 2 * ue;
            break;
        case FZ_SH_INDEXED_REV:
            base = (i / k) * k * ue + (k - 1 - i % k) * ue;
            break;
        case FZ_SH_HVEC_NEG:
            base = (i / k) * (2 * k - 1) * ue - (i % k) * 2 * ue;
            break;
        default:
            base = i * ue;
            break;
    }
    return base + d->off[j];
}
/* "3 x vector(4,1,2,MPI_INT)" */
void fz_desc_name(const fz_desc *d, char *out, size_t len);

/* The predefined or natural MPI datatype of a unit and its inner layout. */
MPI_Datatype fz_unit_type(fz_unit unit, int inner);
void fz_types_init(void);
void fz_types_finalize(void);

/* User operations (created by fz_types_init) and their complaints: a user
 * function called with a datatype the program never passed, for example. */
MPI_Op fz_mpi_op(fz_opk op);
const char *fz_op_name(fz_opk op);
extern unsigned long fz_user_op_anomalies;
extern char fz_user_op_anomaly[256];

/* ------------------------------------------------------------------------ */
/* Values, reference folds, buffers (coll_fuzz_data.c). */

/* The packed value of unit u of comm rank src for operation op, drawn from
 * key (seed, batch, op index, round). */
void fz_value(fz_unit unit, fz_opk op, uint64_t key, int src, size_t u, unsigned char *out);
/* out = left op right (MPI order: left holds lower ranks). */
void fz_combine(fz_opk op, fz_unit unit, const unsigned char *left, const unsigned char *right,
                unsigned char *out);
/* The value's text for reports ("-12", "(3,17)", "0x1f"). */
void fz_value_text(fz_unit unit, const unsigned char *packed, char *out, size_t len);

enum { FZ_GUARD = 64 };

/* A buffer described by a fz_desc: its span plus guards, the pointer MPI
 * gets, and what every byte must hold after the collective. */
typedef struct {
    unsigned char *mem, *expect, *ptr;
    size_t bytes;
    size_t mapped; /* mem: pages of its own, for fz_buf_seal */
    size_t nunits; /* units in all blocks */
    uint8_t salt;
} fz_buf;

void fz_buf_alloc(fz_buf *b, const fz_desc *d, size_t nunits, uint8_t salt);
void fz_buf_free(fz_buf *b);
/* A send buffer read-only (sealed) from its fill to the next one: a write
 * into it during a collective, even the same bytes back, is a SIGSEGV
 * (a crash, replayed by seed) where the unchanged check would pass. */
void fz_buf_seal(fz_buf *b, bool sealed);
/* Fill both the buffer and its expected image with the sentinel pattern. */
void fz_buf_clear(fz_buf *b);
/* Write unit u's packed value into the buffer (and the expected image). */
void fz_buf_put(fz_buf *b, const fz_desc *d, size_t u, const unsigned char *packed, bool also_mem);
/* Copy unit u's bytes from the buffer into the expected image (undefined
 * results: exscan at rank 0, the tail of an in-place reduce_scatter). */
void fz_buf_dontcare(fz_buf *b, const fz_desc *d, size_t u);
/* Compare; on a difference fill `what` with its place and values and return
 * the number of bytes that differ. */
size_t fz_buf_check(const fz_buf *b, const fz_desc *d, size_t units_per_block, char *what,
                    size_t len);

#endif

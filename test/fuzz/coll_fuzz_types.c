/*
 * coll_fuzz: signature units, the per-rank datatype descriptions of n of
 * them, and the user-defined operations, which find the layout of the
 * datatype they are called with in a registry of every datatype the
 * program passes.
 */
#include "coll_fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const fz_unit_info fz_units[FZ_NUNITS] = {
    [FZ_UNIT_BYTE] = {"MPI_BYTE", 1, {FZ_PRIM_U8}, 1},
    [FZ_UNIT_U8] = {"MPI_UINT8_T", 1, {FZ_PRIM_U8}, 1},
    [FZ_UNIT_I32] = {"MPI_INT", 1, {FZ_PRIM_I32}, 4},
    [FZ_UNIT_U32] = {"MPI_UINT32_T", 1, {FZ_PRIM_U32}, 4},
    [FZ_UNIT_I64] = {"MPI_INT64_T", 1, {FZ_PRIM_I64}, 8},
    [FZ_UNIT_F32] = {"MPI_FLOAT", 1, {FZ_PRIM_F32}, 4},
    [FZ_UNIT_F64] = {"MPI_DOUBLE", 1, {FZ_PRIM_F64}, 8},
    [FZ_UNIT_2INT] = {"MPI_2INT", 2, {FZ_PRIM_I32, FZ_PRIM_I32}, 8},
    [FZ_UNIT_AFF] = {"affine", 2, {FZ_PRIM_U32, FZ_PRIM_U32}, 8},
    [FZ_UNIT_PAIR] = {"pair", 2, {FZ_PRIM_I32, FZ_PRIM_F64}, 12},
};

size_t fz_prim_size(fz_prim p)
{
    static const size_t sizes[] = {1, 4, 4, 8, 4, 8};
    return sizes[p];
}

/* Inner layouts of a unit: its datatype, extent and primitive offsets.
 * PAIR has three with the same signature (int, double): A {int at 0, double
 * at 8}, B {int at 12, double at 0} (memory order reversed), C packed {int at
 * 0, double at 4}, extent 12 (the double misaligned). */
typedef struct {
    MPI_Datatype type;
    ptrdiff_t ext;
    ptrdiff_t off[2];
    const char *name;
} fz_inner_layout;

static fz_inner_layout inner_layouts[FZ_NUNITS][FZ_MAX_INNER];
static int inner_counts[FZ_NUNITS];

static void check(int err, const char *what)
{
    if (err != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, msg, &len);
        fprintf(stdout, "coll_fuzz: FAIL datatype call %s: %s\n", what, msg);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void ops_create(void);
static MPI_Op user_ops[FZ_NOPS];

/* ------------------------------------------------------------------------ */
/* The registry: datatype handle -> unit layout, for the user operations. */

typedef struct {
    MPI_Datatype type;
    fz_unit unit;
    ptrdiff_t extent, toff, off[2];
} fz_reg;

enum { FZ_MAX_REG = 512 };
static fz_reg registry[FZ_MAX_REG];
static int nregistry;

static void reg_add(MPI_Datatype type, fz_unit unit, ptrdiff_t extent, ptrdiff_t toff,
                    const ptrdiff_t off[2])
{
    if (nregistry == FZ_MAX_REG) {
        fprintf(stdout, "coll_fuzz: FAIL internal: datatype registry full\n");
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fz_reg *r = &registry[nregistry++];
    r->type = type;
    r->unit = unit;
    r->extent = extent;
    r->toff = toff;
    r->off[0] = off[0];
    r->off[1] = off[1];
}

static void reg_remove(MPI_Datatype type)
{
    for (int i = nregistry - 1; i >= 0; i--) {
        if (registry[i].type == type) {
            registry[i] = registry[--nregistry];
            return;
        }
    }
}

unsigned long fz_user_op_anomalies;
char fz_user_op_anomaly[256];

static const fz_reg *reg_find(MPI_Datatype type, fz_unit unit, const char *op)
{
    for (int i = nregistry - 1; i >= 0; i--) {
        if (registry[i].type == type) {
            if (registry[i].unit == unit) {
                return &registry[i];
            }
            break;
        }
    }
    if (fz_user_op_anomalies++ == 0) {
        snprintf(fz_user_op_anomaly, sizeof(fz_user_op_anomaly),
                 "user operation %s called with a datatype the program did not pass for it "
                 "(handle %p)",
                 op, (void *)type);
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Units. */

static MPI_Datatype pair_types[FZ_MAX_INNER];
static MPI_Datatype affine_type;

static void add_inner(fz_unit unit, MPI_Datatype type, ptrdiff_t ext, ptrdiff_t o0, ptrdiff_t o1,
                      const char *name)
{
    fz_inner_layout *l = &inner_layouts[unit][inner_counts[unit]++];
    l->type = type;
    l->ext = ext;
    l->off[0] = o0;
    l->off[1] = o1;
    l->name = name;
    reg_add(type, unit, ext, 0, l->off);
}

static MPI_Datatype make_pair(ptrdiff_t int_at, ptrdiff_t double_at, ptrdiff_t ext)
{
    int lens[2] = {1, 1};
    MPI_Aint displs[2] = {int_at, double_at};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, s, t;
    check(MPI_Type_create_struct(2, lens, displs, types, &s), "MPI_Type_create_struct");
    check(MPI_Type_create_resized(s, 0, ext, &t), "MPI_Type_create_resized");
    check(MPI_Type_free(&s), "MPI_Type_free");
    check(MPI_Type_commit(&t), "MPI_Type_commit");
    return t;
}

void fz_types_init(void)
{
    add_inner(FZ_UNIT_BYTE, MPI_BYTE, 1, 0, 0, "MPI_BYTE");
    add_inner(FZ_UNIT_U8, MPI_UINT8_T, 1, 0, 0, "MPI_UINT8_T");
    add_inner(FZ_UNIT_I32, MPI_INT, 4, 0, 0, "MPI_INT");
    add_inner(FZ_UNIT_U32, MPI_UINT32_T, 4, 0, 0, "MPI_UINT32_T");
    add_inner(FZ_UNIT_I64, MPI_INT64_T, 8, 0, 0, "MPI_INT64_T");
    add_inner(FZ_UNIT_F32, MPI_FLOAT, 4, 0, 0, "MPI_FLOAT");
    add_inner(FZ_UNIT_F64, MPI_DOUBLE, 8, 0, 0, "MPI_DOUBLE");
    add_inner(FZ_UNIT_2INT, MPI_2INT, 8, 0, 4, "MPI_2INT");
    check(MPI_Type_contiguous(2, MPI_UINT32_T, &affine_type), "MPI_Type_contiguous");
    check(MPI_Type_commit(&affine_type), "MPI_Type_commit");
    add_inner(FZ_UNIT_AFF, affine_type, 8, 0, 4, "affine");
    pair_types[0] = make_pair(0, 8, 16);
    pair_types[1] = make_pair(12, 0, 16);
    pair_types[2] = make_pair(0, 4, 12);
    add_inner(FZ_UNIT_PAIR, pair_types[0], 16, 0, 8, "pairA");
    add_inner(FZ_UNIT_PAIR, pair_types[1], 16, 12, 0, "pairB");
    add_inner(FZ_UNIT_PAIR, pair_types[2], 12, 0, 4, "pairC");
    ops_create();
}

void fz_types_finalize(void)
{
    MPI_Op_free(&user_ops[FZ_OP_USER_SUM]);
    MPI_Op_free(&user_ops[FZ_OP_USER_AFFINE]);
    MPI_Op_free(&user_ops[FZ_OP_USER_BIGSTACK]);
    MPI_Op_free(&user_ops[FZ_OP_USER_MAXNC]);
    for (int i = 0; i < FZ_MAX_INNER; i++) {
        MPI_Type_free(&pair_types[i]);
    }
    MPI_Type_free(&affine_type);
}

MPI_Datatype fz_unit_type(fz_unit unit, int inner)
{
    return inner_layouts[unit][inner].type;
}

/* ------------------------------------------------------------------------ */
/* Descriptions. */

static int pick_divisor(size_t n, fz_rng *rng)
{
    static const int ks[] = {2, 3, 4, 5, 8, 16};
    int start = (int)fz_below(rng, 6);
    for (int i = 0; i < 6; i++) {
        int k = ks[(start + i) % 6];
        if (n % (size_t)k == 0) {
            return k;
        }
    }
    return 0;
}

void fz_desc_plan(fz_desc *d, fz_unit unit, size_t n, fz_freedom freedom, bool empty, fz_rng *rng)
{
    memset(d, 0, sizeof(*d));
    d->unit = unit;
    d->type = MPI_DATATYPE_NULL;
    d->units = n;
    d->k = 1;
    d->inner = inner_counts[unit] > 1 ? (int)fz_below(rng, (uint32_t)inner_counts[unit]) : 0;
    const fz_inner_layout *l = &inner_layouts[unit][d->inner];
    d->uext = l->ext;
    d->off[0] = l->off[0];
    d->off[1] = l->off[1];

    fz_shape sh = FZ_SH_BASIC;
    if (freedom == FZ_FREEDOM_REDUCE) {
        static const fz_shape shapes[] = {FZ_SH_BASIC,   FZ_SH_BASIC, FZ_SH_DUP, FZ_SH_CONTIG,
                                          FZ_SH_RESIZED, FZ_SH_NEGLB, FZ_SH_LB};
        sh = shapes[fz_below(rng, sizeof(shapes) / sizeof(shapes[0]))];
    } else if (freedom == FZ_FREEDOM_MOVE) {
        /* The unit's own type a third of the time, as programs mostly pass. */
        uint32_t c = fz_below(rng, 12);
        sh = n == 0 && empty ? FZ_SH_EMPTY : c < 4 ? FZ_SH_BASIC : (fz_shape)(c - 3);
    }
    /* Gaps cost memory: at most 8 MiB of span per block. */
    if ((sh == FZ_SH_RESIZED || sh == FZ_SH_NEGLB || sh == FZ_SH_VECTOR || sh == FZ_SH_HVEC_NEG) &&
        n * (size_t)d->uext > ((size_t)4 << 20)) {
        sh = FZ_SH_CONTIG;
    }
    d->shape = sh;
    d->count = (int)n;
    switch (sh) {
        case FZ_SH_CONTIG:
            if (freedom == FZ_FREEDOM_REDUCE) {
                d->k = 1;
            } else if (n == 0) {
                d->k = 1 + (int)fz_below(rng, 4);
            } else if (fz_chance(rng, 1, 2)) {
                d->k = (int)n;
            } else {
                d->k = pick_divisor(n, rng);
                if (d->k == 0) {
                    d->k = (int)n;
                }
            }
            d->count = (int)(n / (size_t)d->k);
            break;
        case FZ_SH_VECTOR:
        case FZ_SH_INDEXED_REV:
        case FZ_SH_HVEC_NEG:
            d->k = n == 0 ? 2 : pick_divisor(n, rng);
            if (d->k == 0) {
                d->shape = FZ_SH_RESIZED;
                d->k = 1;
            } else {
                d->count = (int)(n / (size_t)d->k);
            }
            break;
        case FZ_SH_EMPTY:
            d->count = 1;
            break;
        default:
            break;
    }
    if (d->shape == FZ_SH_RESIZED || d->shape == FZ_SH_NEGLB) {
        static const ptrdiff_t pads[] = {1, 3, 4, 8, 16};
        d->pad = freedom == FZ_FREEDOM_MOVE ? pads[fz_below(rng, 5)] : pads[2 + fz_below(rng, 3)];
    }

    switch (d->shape) {
        case FZ_SH_RESIZED:
        case FZ_SH_NEGLB:
            d->extent = d->uext + d->pad;
            break;
        case FZ_SH_CONTIG:
        case FZ_SH_INDEXED_REV:
            d->extent = d->k * d->uext;
            break;
        case FZ_SH_VECTOR:
        case FZ_SH_HVEC_NEG:
            d->extent = (2 * d->k - 1) * d->uext;
            break;
        case FZ_SH_EMPTY:
            d->extent = 0;
            break;
        default:
            d->extent = d->uext;
            break;
    }
    d->toff = d->shape == FZ_SH_LB ? d->uext : 0;
}

void fz_desc_build(fz_desc *d)
{
    MPI_Datatype base = inner_layouts[d->unit][d->inner].type, t = base;
    int k = d->k;
    switch (d->shape) {
        case FZ_SH_BASIC:
            d->type = base;
            d->owned = false;
            return;
        case FZ_SH_DUP:
            check(MPI_Type_dup(base, &t), "MPI_Type_dup");
            break;
        case FZ_SH_CONTIG:
            check(MPI_Type_contiguous(k, base, &t), "MPI_Type_contiguous");
            break;
        case FZ_SH_RESIZED:
            check(MPI_Type_create_resized(base, 0, d->extent, &t), "MPI_Type_create_resized");
            break;
        case FZ_SH_NEGLB:
            check(MPI_Type_create_resized(base, -d->pad, d->extent, &t), "MPI_Type_create_resized");
            break;
        case FZ_SH_LB: {
            int disp = 1;
            check(MPI_Type_create_indexed_block(1, 1, &disp, base, &t),
                  "MPI_Type_create_indexed_block");
            break;
        }
        case FZ_SH_VECTOR:
            check(MPI_Type_vector(k, 1, 2, base, &t), "MPI_Type_vector");
            break;
        case FZ_SH_INDEXED_REV: {
            int lens[16], displs[16];
            for (int j = 0; j < k; j++) {
                lens[j] = 1;
                displs[j] = k - 1 - j;
            }
            check(MPI_Type_indexed(k, lens, displs, base, &t), "MPI_Type_indexed");
            break;
        }
        case FZ_SH_HVEC_NEG:
            /* Not -1 extent: Open MPI 4.1.4 takes an hvector or vector whose
             * stride is minus its block's extent for contiguous. */
            check(MPI_Type_create_hvector(k, 1, -2 * d->uext, base, &t), "MPI_Type_create_hvector");
            break;
        case FZ_SH_EMPTY:
            check(MPI_Type_contiguous(0, base, &t), "MPI_Type_contiguous");
            break;
        default:
            break;
    }
    check(MPI_Type_commit(&t), "MPI_Type_commit");
    d->type = t;
    d->owned = true;
    if (d->k == 1) { /* one unit per instance: a user reduction may get it */
        reg_add(t, d->unit, d->extent, d->toff, d->off);
    }
}

void fz_desc_free(fz_desc *d)
{
    if (d->owned) {
        reg_remove(d->type);
        check(MPI_Type_free(&d->type), "MPI_Type_free");
        d->owned = false;
    }
    d->type = MPI_DATATYPE_NULL;
}

void fz_desc_name(const fz_desc *d, char *out, size_t len)
{
    const char *u = inner_layouts[d->unit][d->inner].name;
    switch (d->shape) {
        case FZ_SH_BASIC:
            snprintf(out, len, "%d x %s", d->count, u);
            break;
        case FZ_SH_DUP:
            snprintf(out, len, "%d x dup(%s)", d->count, u);
            break;
        case FZ_SH_CONTIG:
            snprintf(out, len, "%d x contiguous(%d,%s)", d->count, d->k, u);
            break;
        case FZ_SH_RESIZED:
            snprintf(out, len, "%d x resized(%s,lb=0,extent=%td)", d->count, u, d->extent);
            break;
        case FZ_SH_NEGLB:
            snprintf(out, len, "%d x resized(%s,lb=-%td,extent=%td)", d->count, u, d->pad,
                     d->extent);
            break;
        case FZ_SH_LB:
            snprintf(out, len, "%d x indexed_block(1,1,{1},%s)", d->count, u);
            break;
        case FZ_SH_VECTOR:
            snprintf(out, len, "%d x vector(%d,1,2,%s)", d->count, d->k, u);
            break;
        case FZ_SH_INDEXED_REV:
            snprintf(out, len, "%d x indexed(%d x 1,displs %d..0,%s)", d->count, d->k, d->k - 1, u);
            break;
        case FZ_SH_HVEC_NEG:
            snprintf(out, len, "%d x hvector(%d,1,-%td,%s)", d->count, d->k, 2 * d->uext, u);
            break;
        case FZ_SH_EMPTY:
            snprintf(out, len, "%d x contiguous(0,%s)", d->count, u);
            break;
        default:
            snprintf(out, len, "%d x ?", d->count);
            break;
    }
}

/* ------------------------------------------------------------------------ */
/* User operations.  Each finds the layout of the datatype it is called
 * with in the registry (MPI calls it with the datatype of the call, and a
 * rank may describe a unit in its own layout): instance i's unit is at
 * i * extent + toff.  Values are read and written with memcpy (the resized
 * layouts misalign them). */

static unsigned char *unit_at(void *buf, const fz_reg *r, int i, int j)
{
    return (unsigned char *)buf + (ptrdiff_t)i * r->extent + r->toff + r->off[j];
}

static void op_user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const fz_reg *r = reg_find(*dt, FZ_UNIT_I32, "user_sum");
    if (r == NULL) {
        return;
    }
    for (int i = 0; i < *len; i++) {
        uint32_t a, b;
        memcpy(&a, unit_at(in, r, i, 0), 4);
        memcpy(&b, unit_at(inout, r, i, 0), 4);
        b += a;
        memcpy(unit_at(inout, r, i, 0), &b, 4);
    }
}

/* (a, b) o (c, d) = (a c, a d + b): f(g(t)) for f(t) = a t + b, g(t) = c t
 * + d; associative, not commutative.  inout = in o inout. */
static void op_user_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const fz_reg *r = reg_find(*dt, FZ_UNIT_AFF, "user_affine");
    if (r == NULL) {
        return;
    }
    for (int i = 0; i < *len; i++) {
        uint32_t a, b, c, d;
        memcpy(&a, unit_at(in, r, i, 0), 4);
        memcpy(&b, unit_at(in, r, i, 1), 4);
        memcpy(&c, unit_at(inout, r, i, 0), 4);
        memcpy(&d, unit_at(inout, r, i, 1), 4);
        uint32_t x = a * c, y = a * d + b;
        memcpy(unit_at(inout, r, i, 0), &x, 4);
        memcpy(unit_at(inout, r, i, 1), &y, 4);
    }
}

/* A sum with a large stack frame: `double tmp[*len]` (512 KiB for 65536
 * doubles), as an application's operation may have.  volatile keeps the
 * compiler from folding the array away. */
static void op_user_bigstack(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const fz_reg *r = reg_find(*dt, FZ_UNIT_F64, "user_bigstack");
    if (r == NULL || *len <= 0) {
        return;
    }
    volatile double tmp[*len];
    for (int i = 0; i < *len; i++) {
        double a, b;
        memcpy(&a, unit_at(in, r, i, 0), 8);
        memcpy(&b, unit_at(inout, r, i, 0), 8);
        tmp[i] = a + b;
    }
    for (int i = 0; i < *len; i++) {
        double x = tmp[i];
        memcpy(unit_at(inout, r, i, 0), &x, 8);
    }
}

static void op_user_maxnc(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const fz_reg *r = reg_find(*dt, FZ_UNIT_F64, "user_maxnc");
    if (r == NULL) {
        return;
    }
    for (int i = 0; i < *len; i++) {
        double a, b;
        memcpy(&a, unit_at(in, r, i, 0), 8);
        memcpy(&b, unit_at(inout, r, i, 0), 8);
        if (a > b) {
            memcpy(unit_at(inout, r, i, 0), &a, 8);
        }
    }
}

static void ops_create(void)
{
    static const struct {
        fz_opk op;
        MPI_User_function *fn;
        int commute;
    } table[] = {
        {FZ_OP_USER_SUM, op_user_sum, 1},
        {FZ_OP_USER_AFFINE, op_user_affine, 0},
        {FZ_OP_USER_BIGSTACK, op_user_bigstack, 1},
        {FZ_OP_USER_MAXNC, op_user_maxnc, 0},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        check(MPI_Op_create(table[i].fn, table[i].commute, &user_ops[table[i].op]),
              "MPI_Op_create");
    }
}

MPI_Op fz_mpi_op(fz_opk op)
{
    switch (op) {
        case FZ_OP_SUM:
            return MPI_SUM;
        case FZ_OP_PROD:
            return MPI_PROD;
        case FZ_OP_MAX:
            return MPI_MAX;
        case FZ_OP_MIN:
            return MPI_MIN;
        case FZ_OP_BAND:
            return MPI_BAND;
        case FZ_OP_BOR:
            return MPI_BOR;
        case FZ_OP_BXOR:
            return MPI_BXOR;
        case FZ_OP_MAXLOC:
            return MPI_MAXLOC;
        case FZ_OP_MINLOC:
            return MPI_MINLOC;
        case FZ_OP_USER_SUM:
        case FZ_OP_USER_AFFINE:
        case FZ_OP_USER_BIGSTACK:
        case FZ_OP_USER_MAXNC:
            return user_ops[op];
        default:
            return MPI_OP_NULL;
    }
}

const char *fz_op_name(fz_opk op)
{
    static const char *const names[FZ_NOPS] = {
        [FZ_OP_NONE] = "-",
        [FZ_OP_SUM] = "MPI_SUM",
        [FZ_OP_PROD] = "MPI_PROD",
        [FZ_OP_MAX] = "MPI_MAX",
        [FZ_OP_MIN] = "MPI_MIN",
        [FZ_OP_BAND] = "MPI_BAND",
        [FZ_OP_BOR] = "MPI_BOR",
        [FZ_OP_BXOR] = "MPI_BXOR",
        [FZ_OP_MAXLOC] = "MPI_MAXLOC",
        [FZ_OP_MINLOC] = "MPI_MINLOC",
        [FZ_OP_USER_SUM] = "user_sum(commutative)",
        [FZ_OP_USER_AFFINE] = "user_affine(non-commutative)",
        [FZ_OP_USER_BIGSTACK] = "user_bigstack(commutative,double tmp[*len])",
        [FZ_OP_USER_MAXNC] = "user_max(declared non-commutative)",
    };
    return names[op];
}

/* ------------------------------------------------------------------------ */
/* The layouts against the library's own MPI_Pack. */

int fz_desc_selftest(void)
{
    int bad = 0;
    for (int unit = 0; unit < FZ_NUNITS; unit++) {
        const fz_unit_info *ui = &fz_units[unit];
        for (int inner = 0; inner < inner_counts[unit]; inner++) {
            for (int sh = 0; sh < FZ_NSHAPES; sh++) {
                for (int ki = 0; ki < 2; ki++) {
                    /* 12 units in two blocks: k = 2, 3, 4 divide it. */
                    size_t n = sh == FZ_SH_EMPTY ? 0 : 12, blocks = 2;
                    fz_desc d;
                    fz_rng r = fz_rng_of((uint64_t)(unit * 1000 + sh * 10 + ki));
                    do { /* draw until the plan has the wanted shape */
                        fz_desc_plan(&d, (fz_unit)unit, n, FZ_FREEDOM_MOVE, n == 0, &r);
                    } while (d.shape != (fz_shape)sh || d.inner != inner);
                    fz_desc_build(&d);
                    ptrdiff_t lo = 0, hi = 0;
                    for (size_t u = 0; u < n * blocks; u++) {
                        for (int j = 0; j < ui->nprims; j++) {
                            ptrdiff_t o = fz_desc_offset(&d, u, j);
                            lo = o < lo ? o : lo;
                            hi = o + 8 > hi ? o + 8 : hi;
                        }
                    }
                    size_t span = (size_t)(hi - lo) + 64;
                    unsigned char *mem = malloc(span), *want = malloc(n * blocks * 16 + 1),
                                  *got = malloc(n * blocks * 16 + 1);
                    for (size_t i = 0; i < span; i++) {
                        mem[i] = (unsigned char)(i * 7 + 1);
                    }
                    unsigned char *ptr = mem + 32 - lo;
                    size_t at = 0;
                    for (size_t u = 0; u < n * blocks; u++) {
                        for (int j = 0; j < ui->nprims; j++) {
                            size_t sz = fz_prim_size(ui->prim[j]);
                            memcpy(want + at, ptr + fz_desc_offset(&d, u, j), sz);
                            at += sz;
                        }
                    }
                    int pos = 0;
                    int err = MPI_Pack(ptr, d.count * (int)blocks, d.type, got,
                                       (int)(n * blocks * 16 + 1), &pos, MPI_COMM_SELF);
                    if (err != MPI_SUCCESS || (size_t)pos != at || memcmp(want, got, at) != 0) {
                        char name[128];
                        fz_desc_name(&d, name, sizeof(name));
                        printf("coll_fuzz: FAIL datatype self-test: MPI_Pack of 2 blocks of %s "
                               "packs %d bytes (err %d), this program's layout says %zu%s\n",
                               name, pos, err, at, (size_t)pos == at ? " with other bytes" : "");
                        bad++;
                    }
                    free(mem);
                    free(want);
                    free(got);
                    fz_desc_free(&d);
                }
            }
        }
    }
    return bad;
}

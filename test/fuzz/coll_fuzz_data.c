/*
 * coll_fuzz: values, reference folds and buffers.
 *
 * Every value is a pure function of (key, source rank, unit index), chosen
 * so that every reduction is exact in any order: small integers (floating
 * sums of integers below 2^24), products of +-1, +-2 and +-0.5, unsigned
 * sums that wrap mod 2^n, bit operations, MAX/MIN/MAXLOC/MINLOC, affine
 * maps mod 2^32 composed in rank order (not commutative).  8-bit sums
 * wrap: run with --mca op ^avx, since Debian's op/avx saturates them
 * (open-mpi/ompi#8045).
 */
#include "coll_fuzz.h"
#include "sealed_pages.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Integer in [-m, m]. */
static int64_t small(uint64_t h, int64_t m)
{
    return (int64_t)(h % (uint64_t)(2 * m + 1)) - m;
}

static void put32(unsigned char *out, uint32_t v)
{
    memcpy(out, &v, 4);
}

static void put64(unsigned char *out, uint64_t v)
{
    memcpy(out, &v, 8);
}

static void putf(unsigned char *out, float v)
{
    memcpy(out, &v, 4);
}

static void putd(unsigned char *out, double v)
{
    memcpy(out, &v, 8);
}

void fz_value(fz_unit unit, fz_opk op, uint64_t key, int src, size_t u, unsigned char *out)
{
    uint64_t h = fz_mix(key ^ fz_mix(((uint64_t)(unsigned)src << 40) ^ (uint64_t)u));
    uint64_t h2 = fz_mix(h);
    /* Bits mostly set for BAND, mostly clear for BOR: results keep
     * information across ranks. */
    uint64_t bits = op == FZ_OP_BAND ? (h | h2) : op == FZ_OP_BOR ? (h & h2) : h;
    switch (unit) {
        case FZ_UNIT_BYTE:
        case FZ_UNIT_U8:
            out[0] = (unsigned char)bits;
            break;
        case FZ_UNIT_I32:
            if (op == FZ_OP_SUM) {
                put32(out, (uint32_t)(int32_t)small(h, 1000));
            } else if (op == FZ_OP_PROD) {
                static const int32_t f[] = {-2, -1, 1, 2, 1, -1, 2, 1};
                put32(out, (uint32_t)(h2 % 32 == 0 ? 0 : f[h % 8]));
            } else {
                put32(out, (uint32_t)bits);
            }
            break;
        case FZ_UNIT_U32:
            put32(out, (uint32_t)bits);
            break;
        case FZ_UNIT_I64:
            put64(out, op == FZ_OP_SUM ? (uint64_t)small(h, (int64_t)1 << 40) : h);
            break;
        case FZ_UNIT_F32:
            putf(out, (float)small(h, op == FZ_OP_SUM ? 1000 : (int64_t)1 << 20));
            break;
        case FZ_UNIT_F64:
            if (op == FZ_OP_PROD) {
                static const double f[] = {-2, -1, -0.5, 0.5, 1, 2, 1, -1};
                putd(out, f[h % 8]);
            } else if (op == FZ_OP_SUM || op == FZ_OP_USER_BIGSTACK) {
                putd(out, (double)small(h, 1000));
            } else {
                putd(out, (double)small(h, (int64_t)1 << 40));
            }
            break;
        case FZ_UNIT_2INT:
            put32(out, (uint32_t)(h % 8));
            put32(out + 4, (uint32_t)(h2 % 1000));
            break;
        case FZ_UNIT_AFF:
            put32(out, (uint32_t)h | 1u);
            put32(out + 4, (uint32_t)h2);
            break;
        case FZ_UNIT_PAIR:
            put32(out, (uint32_t)h);
            putd(out + 4, (double)small(h2, (int64_t)1 << 40));
            break;
        default:
            break;
    }
}

#define FZ_ARITH(T, L, R, OUT)                                                                     \
    do {                                                                                           \
        T l_, r_, o_;                                                                              \
        memcpy(&l_, (L), sizeof(T));                                                               \
        memcpy(&r_, (R), sizeof(T));                                                               \
        switch (op) {                                                                              \
            case FZ_OP_SUM:                                                                        \
            case FZ_OP_USER_BIGSTACK:                                                              \
                o_ = (T)(l_ + r_);                                                                 \
                break;                                                                             \
            case FZ_OP_PROD:                                                                       \
                o_ = (T)(l_ * r_);                                                                 \
                break;                                                                             \
            case FZ_OP_MAX:                                                                        \
                o_ = l_ > r_ ? l_ : r_;                                                            \
                break;                                                                             \
            case FZ_OP_USER_MAXNC: /* inout = in when in > inout */                                \
                o_ = l_ > r_ ? l_ : r_;                                                            \
                break;                                                                             \
            case FZ_OP_MIN:                                                                        \
                o_ = l_ < r_ ? l_ : r_;                                                            \
                break;                                                                             \
            default:                                                                               \
                o_ = r_;                                                                           \
                break;                                                                             \
        }                                                                                          \
        memcpy((OUT), &o_, sizeof(T));                                                             \
    } while (0)

#define FZ_BITS(T, L, R, OUT)                                                                      \
    do {                                                                                           \
        T l_, r_, o_;                                                                              \
        memcpy(&l_, (L), sizeof(T));                                                               \
        memcpy(&r_, (R), sizeof(T));                                                               \
        switch (op) {                                                                              \
            case FZ_OP_SUM:                                                                        \
            case FZ_OP_USER_SUM:                                                                   \
                o_ = (T)(l_ + r_);                                                                 \
                break;                                                                             \
            case FZ_OP_MAX:                                                                        \
                o_ = l_ > r_ ? l_ : r_;                                                            \
                break;                                                                             \
            case FZ_OP_MIN:                                                                        \
                o_ = l_ < r_ ? l_ : r_;                                                            \
                break;                                                                             \
            case FZ_OP_BAND:                                                                       \
                o_ = (T)(l_ & r_);                                                                 \
                break;                                                                             \
            case FZ_OP_BOR:                                                                        \
                o_ = (T)(l_ | r_);                                                                 \
                break;                                                                             \
            case FZ_OP_BXOR:                                                                       \
                o_ = (T)(l_ ^ r_);                                                                 \
                break;                                                                             \
            default:                                                                               \
                o_ = r_;                                                                           \
                break;                                                                             \
        }                                                                                          \
        memcpy((OUT), &o_, sizeof(T));                                                             \
    } while (0)

void fz_combine(fz_opk op, fz_unit unit, const unsigned char *left, const unsigned char *right,
                unsigned char *out)
{
    switch (unit) {
        case FZ_UNIT_BYTE:
        case FZ_UNIT_U8:
            FZ_BITS(uint8_t, left, right, out);
            break;
        case FZ_UNIT_I32:
            if (op == FZ_OP_PROD) {
                int32_t l, r;
                memcpy(&l, left, 4);
                memcpy(&r, right, 4);
                put32(out, (uint32_t)(l * r));
            } else if (op == FZ_OP_SUM || op == FZ_OP_USER_SUM) {
                /* Signed sums wrap (two's complement): added as unsigned. */
                FZ_BITS(uint32_t, left, right, out);
            } else {
                FZ_BITS(int32_t, left, right, out);
            }
            break;
        case FZ_UNIT_U32:
            FZ_BITS(uint32_t, left, right, out);
            break;
        case FZ_UNIT_I64:
            if (op == FZ_OP_SUM) {
                FZ_BITS(uint64_t, left, right, out); /* wraps, as above */
            } else {
                FZ_BITS(int64_t, left, right, out);
            }
            break;
        case FZ_UNIT_F32:
            FZ_ARITH(float, left, right, out);
            break;
        case FZ_UNIT_F64:
            FZ_ARITH(double, left, right, out);
            break;
        case FZ_UNIT_2INT: {
            int32_t lv, li, rv, ri;
            memcpy(&lv, left, 4);
            memcpy(&li, left + 4, 4);
            memcpy(&rv, right, 4);
            memcpy(&ri, right + 4, 4);
            bool take_left = op == FZ_OP_MAXLOC ? lv > rv : lv < rv;
            if (lv == rv) {
                put32(out, (uint32_t)lv);
                put32(out + 4, (uint32_t)(li < ri ? li : ri));
            } else {
                memcpy(out, take_left ? left : right, 8);
            }
            break;
        }
        case FZ_UNIT_AFF: {
            uint32_t a, b, c, d;
            memcpy(&a, left, 4);
            memcpy(&b, left + 4, 4);
            memcpy(&c, right, 4);
            memcpy(&d, right + 4, 4);
            put32(out, a * c);
            put32(out + 4, a * d + b);
            break;
        }
        default:
            memcpy(out, right, fz_units[unit].packed);
            break;
    }
}

void fz_value_text(fz_unit unit, const unsigned char *p, char *out, size_t len)
{
    int32_t i32, j32;
    uint32_t u32, v32;
    int64_t i64;
    float f;
    double d;
    switch (unit) {
        case FZ_UNIT_BYTE:
        case FZ_UNIT_U8:
            snprintf(out, len, "0x%02x", p[0]);
            break;
        case FZ_UNIT_I32:
            memcpy(&i32, p, 4);
            snprintf(out, len, "%" PRId32, i32);
            break;
        case FZ_UNIT_U32:
            memcpy(&u32, p, 4);
            snprintf(out, len, "%" PRIu32, u32);
            break;
        case FZ_UNIT_I64:
            memcpy(&i64, p, 8);
            snprintf(out, len, "%" PRId64, i64);
            break;
        case FZ_UNIT_F32:
            memcpy(&f, p, 4);
            snprintf(out, len, "%.9g", (double)f);
            break;
        case FZ_UNIT_F64:
            memcpy(&d, p, 8);
            snprintf(out, len, "%.17g", d);
            break;
        case FZ_UNIT_2INT:
            memcpy(&i32, p, 4);
            memcpy(&j32, p + 4, 4);
            snprintf(out, len, "(%" PRId32 ",%" PRId32 ")", i32, j32);
            break;
        case FZ_UNIT_AFF:
            memcpy(&u32, p, 4);
            memcpy(&v32, p + 4, 4);
            snprintf(out, len, "(%" PRIu32 ",%" PRIu32 ")", u32, v32);
            break;
        case FZ_UNIT_PAIR:
            memcpy(&i32, p, 4);
            memcpy(&d, p + 4, 8);
            snprintf(out, len, "(%" PRId32 ",%.17g)", i32, d);
            break;
        default:
            snprintf(out, len, "?");
            break;
    }
}

/* ------------------------------------------------------------------------ */
/* Buffers. */

static unsigned char sentinel(size_t i, uint8_t salt)
{
    return (unsigned char)(0xa5u ^ salt ^ (unsigned)(i * 0x3du) ^ (unsigned)(i >> 8));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stdout, "coll_fuzz: FAIL out of memory (%zu bytes)\n", n);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

void fz_buf_alloc(fz_buf *b, const fz_desc *d, size_t nunits, uint8_t salt)
{
    const fz_unit_info *ui = &fz_units[d->unit];
    ptrdiff_t lo = 0, hi = 0;
    bool any = false;
    for (size_t u = 0; u < nunits; u++) {
        for (int j = 0; j < ui->nprims; j++) {
            ptrdiff_t o = fz_desc_offset(d, u, j);
            ptrdiff_t e = o + (ptrdiff_t)fz_prim_size(ui->prim[j]);
            if (!any || o < lo) {
                lo = o;
            }
            if (!any || e > hi) {
                hi = e;
            }
            any = true;
        }
    }
    b->bytes = (size_t)(hi - lo) + 2 * FZ_GUARD;
    b->mem = sealed_pages_map(b->bytes, &b->mapped);
    b->expect = xmalloc(b->bytes);
    b->ptr = b->mem + FZ_GUARD - lo;
    b->nunits = nunits;
    b->salt = salt;
}

void fz_buf_free(fz_buf *b)
{
    if (NULL != b->mem) {
        sealed_pages_unmap(b->mem, b->mapped);
    }
    free(b->expect);
    memset(b, 0, sizeof(*b));
}

void fz_buf_seal(fz_buf *b, bool sealed)
{
    sealed_pages_seal(b->mem, b->mapped, sealed);
}

void fz_buf_clear(fz_buf *b)
{
    for (size_t i = 0; i < b->bytes; i++) {
        b->mem[i] = b->expect[i] = sentinel(i, b->salt);
    }
}

void fz_buf_put(fz_buf *b, const fz_desc *d, size_t u, const unsigned char *packed, bool also_mem)
{
    const fz_unit_info *ui = &fz_units[d->unit];
    size_t at = 0;
    ptrdiff_t shift = b->ptr - b->mem;
    for (int j = 0; j < ui->nprims; j++) {
        size_t sz = fz_prim_size(ui->prim[j]);
        ptrdiff_t o = shift + fz_desc_offset(d, u, j);
        memcpy(b->expect + o, packed + at, sz);
        if (also_mem) {
            memcpy(b->mem + o, packed + at, sz);
        }
        at += sz;
    }
}

void fz_buf_dontcare(fz_buf *b, const fz_desc *d, size_t u)
{
    const fz_unit_info *ui = &fz_units[d->unit];
    ptrdiff_t shift = b->ptr - b->mem;
    for (int j = 0; j < ui->nprims; j++) {
        ptrdiff_t o = shift + fz_desc_offset(d, u, j);
        memcpy(b->expect + o, b->mem + o, fz_prim_size(ui->prim[j]));
    }
}

static void gather_unit(const unsigned char *base, const fz_desc *d, size_t u, unsigned char *out)
{
    const fz_unit_info *ui = &fz_units[d->unit];
    size_t at = 0;
    for (int j = 0; j < ui->nprims; j++) {
        size_t sz = fz_prim_size(ui->prim[j]);
        memcpy(out + at, base + fz_desc_offset(d, u, j), sz);
        at += sz;
    }
}

size_t fz_buf_check(const fz_buf *b, const fz_desc *d, size_t units_per_block, char *what,
                    size_t len)
{
    if (b->mem == NULL || memcmp(b->mem, b->expect, b->bytes) == 0) {
        return 0;
    }
    size_t ndiff = 0, first = 0;
    for (size_t i = 0; i < b->bytes; i++) {
        if (b->mem[i] != b->expect[i]) {
            if (ndiff++ == 0) {
                first = i;
            }
        }
    }
    ptrdiff_t rel = (ptrdiff_t)first - (b->ptr - b->mem);
    const fz_unit_info *ui = &fz_units[d->unit];
    /* Which unit holds the first differing byte? */
    for (size_t u = 0; u < b->nunits; u++) {
        for (int j = 0; j < ui->nprims; j++) {
            ptrdiff_t o = fz_desc_offset(d, u, j);
            if (rel >= o && rel < o + (ptrdiff_t)fz_prim_size(ui->prim[j])) {
                unsigned char got[FZ_MAX_PACKED], want[FZ_MAX_PACKED];
                char gt[64], wt[64];
                gather_unit(b->ptr, d, u, got);
                gather_unit(b->expect + (b->ptr - b->mem), d, u, want);
                fz_value_text(d->unit, got, gt, sizeof(gt));
                fz_value_text(d->unit, want, wt, sizeof(wt));
                size_t upb = units_per_block ? units_per_block : 1;
                snprintf(what, len,
                         "%zu byte(s) differ; first: block %zu element %zu (byte %+td from the "
                         "buffer pointer): got %s, expected %s",
                         ndiff, u / upb, u % upb, rel, gt, wt);
                return ndiff;
            }
        }
    }
    const char *where = first < FZ_GUARD || first >= b->bytes - FZ_GUARD
                            ? "a guard byte outside the buffer's span"
                            : "a gap byte between the datatype's elements";
    snprintf(what, len,
             "%zu byte(s) differ; first: %s (byte %+td from the buffer pointer): got 0x%02x, "
             "expected 0x%02x",
             ndiff, where, rel, b->mem[first], b->expect[first]);
    return ndiff;
}

/*
 * Datatype table, deterministic inputs and the serial reference fold.
 *
 * Input values are chosen per (type, op) so that the exact result is
 * representable and independent of the order an implementation combines
 * contributions in: small dyadic floating-point numbers, signed integers far
 * from overflow, unsigned integers free to wrap (C defines that).  The
 * reference works on 64-bit two's complement and long double values and
 * truncates once when storing, which is exact for every such input.
 */
#include "collcheck.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x87 long double: 64-bit mantissa + 16-bit sign/exponent; the remaining
 * bytes of its 16-byte slot are padding nobody has to preserve. */
#if LDBL_MANT_DIG == 64
#define CC_LDBL_VALUE_BYTES 10u
#else
#define CC_LDBL_VALUE_BYTES ((unsigned)sizeof(long double))
#endif

#define OPS_C_INTEGER                                                                              \
    (CC_OPBIT(CC_OP_SUM) | CC_OPBIT(CC_OP_PROD) | CC_OPBIT(CC_OP_MAX) | CC_OPBIT(CC_OP_MIN) |      \
     CC_OPBIT(CC_OP_LAND) | CC_OPBIT(CC_OP_LOR) | CC_OPBIT(CC_OP_LXOR) | CC_OPBIT(CC_OP_BAND) |    \
     CC_OPBIT(CC_OP_BOR) | CC_OPBIT(CC_OP_BXOR))
#define OPS_MULTI_LANGUAGE                                                                         \
    (CC_OPBIT(CC_OP_SUM) | CC_OPBIT(CC_OP_PROD) | CC_OPBIT(CC_OP_MAX) | CC_OPBIT(CC_OP_MIN) |      \
     CC_OPBIT(CC_OP_BAND) | CC_OPBIT(CC_OP_BOR) | CC_OPBIT(CC_OP_BXOR))
#define OPS_BYTE (CC_OPBIT(CC_OP_BAND) | CC_OPBIT(CC_OP_BOR) | CC_OPBIT(CC_OP_BXOR))
#define OPS_FLOATING                                                                               \
    (CC_OPBIT(CC_OP_SUM) | CC_OPBIT(CC_OP_PROD) | CC_OPBIT(CC_OP_MAX) | CC_OPBIT(CC_OP_MIN))
#define OPS_COMPLEX (CC_OPBIT(CC_OP_SUM) | CC_OPBIT(CC_OP_PROD))
#define OPS_LOGICAL (CC_OPBIT(CC_OP_LAND) | CC_OPBIT(CC_OP_LOR) | CC_OPBIT(CC_OP_LXOR))
#define OPS_PAIR    (CC_OPBIT(CC_OP_MAXLOC) | CC_OPBIT(CC_OP_MINLOC))

/* Table entries: extents and value segments are filled in from the kind by
 * set_segments() and checked against MPI by verify_type(). */
#define INT_TYPE(dt, ctype, sgn, op_mask)                                                          \
    {                                                                                              \
        .name = #dt, .datatype = dt, .kind = CC_KIND_INT,                                          \
        .scalar = {CC_REPR_INT, sizeof(ctype), sgn}, .ops = op_mask                                \
    }
#define FLOAT_TYPE(dt, repr, ctype)                                                                \
    {                                                                                              \
        .name = #dt, .datatype = dt, .kind = CC_KIND_FLOAT, .scalar = {repr, sizeof(ctype), true}, \
        .ops = OPS_FLOATING                                                                        \
    }
#define COMPLEX_TYPE(dt, repr, ctype)                                                              \
    {                                                                                              \
        .name = #dt, .datatype = dt, .kind = CC_KIND_COMPLEX,                                      \
        .scalar = {repr, sizeof(ctype), true}, .ops = OPS_COMPLEX                                  \
    }
#define PAIR_TYPE(dt, repr, vtype, layout)                                                         \
    {                                                                                              \
        .name = #dt, .datatype = dt, .kind = CC_KIND_PAIR, .scalar = {repr, sizeof(vtype), true},  \
        .extent = sizeof(struct layout), .pair_index_offset = offsetof(struct layout, index),      \
        .ops = OPS_PAIR                                                                            \
    }
#define DERIVED_TYPE(type_name, type_kind, op_mask)                                                \
    {                                                                                              \
        .name = type_name, .datatype = MPI_DATATYPE_NULL, .kind = type_kind, .derived = true,      \
        .ops = op_mask                                                                             \
    }

struct pair_float_int {
    float value;
    int index;
};
struct pair_double_int {
    double value;
    int index;
};
struct pair_long_int {
    long value;
    int index;
};
struct pair_2int {
    int value;
    int index;
};
struct pair_short_int {
    short value;
    int index;
};
struct pair_long_double_int {
    long double value;
    int index;
};

cc_type cc_types[] = {
    /* C integer family (MPI_CHAR is a character, not an integer: moves only) */
    INT_TYPE(MPI_SIGNED_CHAR, signed char, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UNSIGNED_CHAR, unsigned char, false, OPS_C_INTEGER),
    INT_TYPE(MPI_SHORT, short, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UNSIGNED_SHORT, unsigned short, false, OPS_C_INTEGER),
    INT_TYPE(MPI_INT, int, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UNSIGNED, unsigned, false, OPS_C_INTEGER),
    INT_TYPE(MPI_LONG, long, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UNSIGNED_LONG, unsigned long, false, OPS_C_INTEGER),
    INT_TYPE(MPI_LONG_LONG_INT, long long, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UNSIGNED_LONG_LONG, unsigned long long, false, OPS_C_INTEGER),
    INT_TYPE(MPI_INT8_T, int8_t, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UINT8_T, uint8_t, false, OPS_C_INTEGER),
    INT_TYPE(MPI_INT16_T, int16_t, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UINT16_T, uint16_t, false, OPS_C_INTEGER),
    INT_TYPE(MPI_INT32_T, int32_t, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UINT32_T, uint32_t, false, OPS_C_INTEGER | CC_OPBIT(CC_OP_USER_PLUS1)),
    INT_TYPE(MPI_INT64_T, int64_t, true, OPS_C_INTEGER),
    INT_TYPE(MPI_UINT64_T, uint64_t, false, OPS_C_INTEGER),
    /* multi-language types: no logical ops */
    INT_TYPE(MPI_AINT, MPI_Aint, true, OPS_MULTI_LANGUAGE),
    INT_TYPE(MPI_OFFSET, MPI_Offset, true, OPS_MULTI_LANGUAGE),
    INT_TYPE(MPI_COUNT, MPI_Count, true, OPS_MULTI_LANGUAGE),
    INT_TYPE(MPI_BYTE, unsigned char, false, OPS_BYTE),
    /* characters: data movement only */
    INT_TYPE(MPI_CHAR, char, false, 0),
    INT_TYPE(MPI_WCHAR, wchar_t, false, 0),
    {.name = "MPI_C_BOOL",
     .datatype = MPI_C_BOOL,
     .kind = CC_KIND_BOOL,
     .scalar = {CC_REPR_BOOL, sizeof(bool), false},
     .ops = OPS_LOGICAL},
    FLOAT_TYPE(MPI_FLOAT, CC_REPR_FLT, float),
    FLOAT_TYPE(MPI_DOUBLE, CC_REPR_DBL, double),
    FLOAT_TYPE(MPI_LONG_DOUBLE, CC_REPR_LDBL, long double),
    COMPLEX_TYPE(MPI_C_FLOAT_COMPLEX, CC_REPR_FLT, float),
    COMPLEX_TYPE(MPI_C_DOUBLE_COMPLEX, CC_REPR_DBL, double),
    COMPLEX_TYPE(MPI_C_LONG_DOUBLE_COMPLEX, CC_REPR_LDBL, long double),
    PAIR_TYPE(MPI_FLOAT_INT, CC_REPR_FLT, float, pair_float_int),
    PAIR_TYPE(MPI_DOUBLE_INT, CC_REPR_DBL, double, pair_double_int),
    PAIR_TYPE(MPI_LONG_INT, CC_REPR_INT, long, pair_long_int),
    PAIR_TYPE(MPI_2INT, CC_REPR_INT, int, pair_2int),
    PAIR_TYPE(MPI_SHORT_INT, CC_REPR_INT, short, pair_short_int),
    PAIR_TYPE(MPI_LONG_DOUBLE_INT, CC_REPR_LDBL, long double, pair_long_double_int),
    /* derived types, created in cc_types_create() */
    DERIVED_TYPE("mat2x2_uint32", CC_KIND_MAT2, CC_OPBIT(CC_OP_USER_MATMUL)),
    DERIVED_TYPE("vector3_uint32", CC_KIND_VEC3, CC_OPBIT(CC_OP_USER_VEC3)),
    DERIVED_TYPE("struct_i32_f64_i16", CC_KIND_STRUCT, CC_OPBIT(CC_OP_USER_STRUCT)),
    DERIVED_TYPE("contig3_int", CC_KIND_RAW, 0),
};
const size_t cc_ntypes = sizeof(cc_types) / sizeof(cc_types[0]);

const cc_type *cc_type_by_name(const char *name)
{
    for (size_t i = 0; i < cc_ntypes; i++) {
        if (strcmp(cc_types[i].name, name) == 0) {
            return &cc_types[i];
        }
    }
    fprintf(stderr, "collcheck: internal error: no datatype named %s\n", name);
    MPI_Abort(cc_world, 4);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Operations. */

static void user_plus1_fn(void *in, void *inout, int *len, MPI_Datatype *dt);
static void user_matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt);
static void user_vec3_fn(void *in, void *inout, int *len, MPI_Datatype *dt);
static void user_struct_fn(void *in, void *inout, int *len, MPI_Datatype *dt);

static struct {
    const char *name;
    MPI_Op handle;
    bool commutative;
    MPI_User_function *user_fn;
    const char *user_type; /* the one datatype the user function accepts */
} cc_op_table[CC_NOPS] = {
    [CC_OP_SUM] = {"MPI_SUM", MPI_SUM, true, NULL, NULL},
    [CC_OP_PROD] = {"MPI_PROD", MPI_PROD, true, NULL, NULL},
    [CC_OP_MAX] = {"MPI_MAX", MPI_MAX, true, NULL, NULL},
    [CC_OP_MIN] = {"MPI_MIN", MPI_MIN, true, NULL, NULL},
    [CC_OP_LAND] = {"MPI_LAND", MPI_LAND, true, NULL, NULL},
    [CC_OP_LOR] = {"MPI_LOR", MPI_LOR, true, NULL, NULL},
    [CC_OP_LXOR] = {"MPI_LXOR", MPI_LXOR, true, NULL, NULL},
    [CC_OP_BAND] = {"MPI_BAND", MPI_BAND, true, NULL, NULL},
    [CC_OP_BOR] = {"MPI_BOR", MPI_BOR, true, NULL, NULL},
    [CC_OP_BXOR] = {"MPI_BXOR", MPI_BXOR, true, NULL, NULL},
    [CC_OP_MAXLOC] = {"MPI_MAXLOC", MPI_MAXLOC, true, NULL, NULL},
    [CC_OP_MINLOC] = {"MPI_MINLOC", MPI_MINLOC, true, NULL, NULL},
    [CC_OP_USER_PLUS1] = {"user_plus1(commutative)", MPI_OP_NULL, true, user_plus1_fn,
                          "MPI_UINT32_T"},
    [CC_OP_USER_MATMUL] = {"user_matmul(non-commutative)", MPI_OP_NULL, false, user_matmul_fn,
                           "mat2x2_uint32"},
    [CC_OP_USER_VEC3] = {"user_vec3(commutative)", MPI_OP_NULL, true, user_vec3_fn,
                         "vector3_uint32"},
    [CC_OP_USER_STRUCT] = {"user_struct(commutative)", MPI_OP_NULL, true, user_struct_fn,
                           "struct_i32_f64_i16"},
};

const char *cc_op_name(cc_op op)
{
    return cc_op_table[op].name;
}

MPI_Op cc_op_handle(cc_op op)
{
    return cc_op_table[op].handle;
}

bool cc_op_commutative(cc_op op)
{
    return cc_op_table[op].commutative;
}

/* ------------------------------------------------------------------------ */
/* Hashing: splitmix64's finalizer. */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t cc_hash(uint64_t a, uint64_t b)
{
    return mix64(a ^ mix64(b + 0x632be59bd9b4e019ull));
}

uint64_t cc_case_salt(int n, const uint64_t *parts)
{
    uint64_t h = 0x243f6a8885a308d3ull;
    for (int i = 0; i < n; i++) {
        h = cc_hash(h, parts[i]);
    }
    return h;
}

/* ------------------------------------------------------------------------ */
/* Scalars. */

/* Truncates to the type's width and sign-extends back: what storing and
 * loading the value would do. */
static uint64_t int_normalize(uint64_t v, const cc_scalar *s)
{
    unsigned bits = 8 * s->size;
    if (bits >= 64) {
        return v;
    }
    uint64_t mask = (1ull << bits) - 1;
    v &= mask;
    if (s->is_signed && (v >> (bits - 1)) != 0) {
        v |= ~mask;
    }
    return v;
}

static void store_int(void *dst, unsigned size, uint64_t v)
{
    switch (size) {
        case 1: {
            uint8_t x = (uint8_t)v;
            memcpy(dst, &x, 1);
            break;
        }
        case 2: {
            uint16_t x = (uint16_t)v;
            memcpy(dst, &x, 2);
            break;
        }
        case 4: {
            uint32_t x = (uint32_t)v;
            memcpy(dst, &x, 4);
            break;
        }
        default: {
            memcpy(dst, &v, 8);
            break;
        }
    }
}

static uint64_t load_int(const void *src, const cc_scalar *s)
{
    uint64_t v;
    switch (s->size) {
        case 1: {
            uint8_t x;
            memcpy(&x, src, 1);
            v = x;
            break;
        }
        case 2: {
            uint16_t x;
            memcpy(&x, src, 2);
            v = x;
            break;
        }
        case 4: {
            uint32_t x;
            memcpy(&x, src, 4);
            v = x;
            break;
        }
        default:
            memcpy(&v, src, 8);
            break;
    }
    return int_normalize(v, s);
}

static void store_float(void *dst, cc_repr repr, long double v)
{
    switch (repr) {
        case CC_REPR_FLT: {
            float x = (float)v;
            memcpy(dst, &x, sizeof(x));
            break;
        }
        case CC_REPR_DBL: {
            double x = (double)v;
            memcpy(dst, &x, sizeof(x));
            break;
        }
        default:
            memcpy(dst, &v, CC_LDBL_VALUE_BYTES);
            break;
    }
}

static long double load_float(const void *src, cc_repr repr)
{
    switch (repr) {
        case CC_REPR_FLT: {
            float x;
            memcpy(&x, src, sizeof(x));
            return x;
        }
        case CC_REPR_DBL: {
            double x;
            memcpy(&x, src, sizeof(x));
            return x;
        }
        default: {
            long double x = 0;
            memcpy(&x, src, CC_LDBL_VALUE_BYTES);
            return x;
        }
    }
}

static bool scalar_is_float(const cc_scalar *s)
{
    return s->repr == CC_REPR_FLT || s->repr == CC_REPR_DBL || s->repr == CC_REPR_LDBL;
}

static unsigned scalar_value_bytes(const cc_scalar *s)
{
    return s->repr == CC_REPR_LDBL ? CC_LDBL_VALUE_BYTES : s->size;
}

/* ------------------------------------------------------------------------ */
/* Inputs. */

static unsigned ceil_log2(int n)
{
    unsigned b = 0;
    while ((1ll << b) < n) {
        b++;
    }
    return b;
}

/* Uniform in [0, n) from the high half of h (n < 2^32); decisions that need
 * independent randomness use the low bits. */
static uint64_t below(uint64_t h, uint64_t n)
{
    return ((h >> 32) * n) >> 32;
}

static uint64_t nonzero_int(uint64_t h, const cc_scalar *s)
{
    uint64_t v = int_normalize(h, s);
    return v != 0 ? v : 1;
}

static uint64_t int_input(const cc_scalar *s, cc_op op, uint64_t h, int rank, int nranks)
{
    unsigned bits = 8 * s->size;
    switch (op) {
        case CC_OP_SUM:
            if (s->is_signed) {
                /* |value| < 2^(bits-1) / nranks: no partial sum can overflow */
                int mag_bits = (int)bits - 1 - (int)ceil_log2(nranks);
                uint64_t m = (h >> 1) & ((1ull << (mag_bits < 1 ? 1 : mag_bits)) - 1);
                return (h & 1) ? (uint64_t)0 - m : m;
            }
            return h; /* unsigned wraps, as C defines */
        case CC_OP_PROD:
            if (s->is_signed) {
                /* factors 1, -1 and 2, where only ranks < bits-2 may give a 2:
                 * |product| <= 2^(bits-2) */
                switch (h & 3) {
                    case 0:
                    case 1:
                        return 1;
                    case 2:
                        return (uint64_t)-1;
                    default:
                        return rank < (int)bits - 2 ? 2 : (uint64_t)-1;
                }
            }
            return h | 1; /* odd: a wrapped product keeps its low bits */
        case CC_OP_BAND:
            return h | mix64(h) | mix64(mix64(h)); /* mostly ones: AND stays informative */
        case CC_OP_BOR:
            return h & mix64(h) & mix64(mix64(h)); /* mostly zeros */
        case CC_OP_LAND:
            return (h & 7) == 0 ? 0 : nonzero_int(h >> 3, s);
        case CC_OP_LOR:
            return (h & 7) == 0 ? nonzero_int(h >> 3, s) : 0;
        case CC_OP_LXOR:
            return (h & 1) == 0 ? nonzero_int(h >> 3, s) : 0;
        default: /* MAX, MIN, BXOR: any bits */
            return h;
    }
}

static uint64_t bool_input(cc_op op, uint64_t h)
{
    switch (op) {
        case CC_OP_LAND:
            return (h & 7) != 0;
        case CC_OP_LOR:
            return (h & 7) == 0;
        default:
            return h & 1;
    }
}

static long double float_input(cc_op op, uint64_t h)
{
    switch (op) {
        case CC_OP_SUM: /* quarters in [-1000, 1000]: every partial sum is exact */
            return (long double)((int64_t)below(h, 8001) - 4000) * 0.25L;
        case CC_OP_PROD: { /* |product| in [2^-p, 2^p]: exact */
            static const long double factors[4] = {1.0L, 2.0L, 0.5L, -1.0L};
            return factors[h & 3];
        }
        default: /* MAX, MIN: eighths in [-2^17, 2^17], exact in float */
            return (long double)((int64_t)(h & ((1u << 21) - 1)) - (1 << 20)) * 0.125L;
    }
}

static cc_complex complex_input(cc_op op, uint64_t h)
{
    if (op == CC_OP_PROD) {
        /* Unit multiples of the Gaussian prime 2+i: every partial product in
         * any order is u(2+i)^k, an exact small Gaussian integer that is
         * never on an axis, so no component is ever zero and the sign of a
         * zero cannot depend on the order of the products. */
        static const cc_complex factors[4] = {{2, 1}, {-1, 2}, {-2, -1}, {1, -2}};
        return factors[h & 3];
    }
    return (cc_complex){float_input(CC_OP_SUM, h), float_input(CC_OP_SUM, mix64(h))};
}

/* rank_base = cc_hash(salt, rank): hoisted out of the element loops. */
static cc_value input_at(const cc_type *t, cc_op op, uint64_t rank_base, int rank, int nranks,
                         size_t index)
{
    /* the splitmix64 sequence seeded by the rank: one mix per element */
    uint64_t h = mix64(rank_base + index * 0x9e3779b97f4a7c15ull);
    cc_value v;
    memset(&v, 0, sizeof(v));
    switch (t->kind) {
        case CC_KIND_INT:
        case CC_KIND_RAW:
            if (t->minmax_top_bit_clear && (op == CC_OP_MAX || op == CC_OP_MIN)) {
                h &= UINT64_MAX >> (65 - 8 * t->scalar.size);
            }
            v.i = int_normalize(int_input(&t->scalar, op, h, rank, nranks), &t->scalar);
            break;
        case CC_KIND_BOOL:
            v.i = bool_input(op, h);
            break;
        case CC_KIND_FLOAT:
            v.f = float_input(op, h);
            break;
        case CC_KIND_COMPLEX:
            v.c = complex_input(op, h);
            break;
        case CC_KIND_PAIR:
            /* values in {-1, 0, 1}: many ties, decided by the lowest index */
            v.pair.value = (long double)((int)below(h, 3) - 1);
            v.pair.index = (int)(h & 2047) - 1024;
            break;
        case CC_KIND_MAT2:
            v.m[0] = (uint32_t)h;
            v.m[1] = (uint32_t)(h >> 32);
            v.m[2] = (uint32_t)mix64(h);
            v.m[3] = (uint32_t)(mix64(h) >> 32);
            break;
        case CC_KIND_VEC3:
            v.m[0] = (uint32_t)h;
            v.m[1] = (uint32_t)(h >> 32);
            v.m[2] = (uint32_t)mix64(h);
            break;
        case CC_KIND_STRUCT:
            v.s.a = (int32_t)(uint32_t)h;
            v.s.b = (double)float_input(CC_OP_MIN, mix64(h));
            v.s.c = (int16_t)(uint16_t)(h >> 32);
            break;
    }
    return v;
}

cc_value cc_input(const cc_type *t, cc_op op, uint64_t salt, int rank, int nranks, size_t index)
{
    return input_at(t, op, cc_hash(salt, (uint64_t)rank), rank, nranks, index);
}

/* ------------------------------------------------------------------------ */
/* The fold. */

static uint64_t int_combine(const cc_scalar *s, cc_op op, uint64_t a, uint64_t b)
{
    uint64_t r;
    bool a_greater = s->is_signed ? (int64_t)a > (int64_t)b : a > b;
    switch (op) {
        case CC_OP_SUM:
        case CC_OP_USER_PLUS1:
            r = a + b + (op == CC_OP_USER_PLUS1 ? 1 : 0);
            break;
        case CC_OP_PROD:
            r = a * b;
            break;
        case CC_OP_MAX:
            r = a_greater ? a : b;
            break;
        case CC_OP_MIN:
            r = a_greater ? b : a;
            break;
        case CC_OP_LAND:
            r = (a != 0) && (b != 0);
            break;
        case CC_OP_LOR:
            r = (a != 0) || (b != 0);
            break;
        case CC_OP_LXOR:
            r = (a != 0) != (b != 0);
            break;
        case CC_OP_BAND:
            r = a & b;
            break;
        case CC_OP_BOR:
            r = a | b;
            break;
        default:
            r = a ^ b;
            break;
    }
    return int_normalize(r, s);
}

static long double float_combine(cc_op op, long double a, long double b)
{
    switch (op) {
        case CC_OP_SUM:
            return a + b;
        case CC_OP_PROD:
            return a * b;
        case CC_OP_MAX:
            return a > b ? a : b;
        default:
            return a < b ? a : b;
    }
}

static void mat2_multiply(const uint32_t a[4], const uint32_t b[4], uint32_t out[4])
{
    uint32_t r[4];
    r[0] = a[0] * b[0] + a[1] * b[2];
    r[1] = a[0] * b[1] + a[1] * b[3];
    r[2] = a[2] * b[0] + a[3] * b[2];
    r[3] = a[2] * b[1] + a[3] * b[3];
    memcpy(out, r, sizeof(r));
}

cc_value cc_combine(const cc_type *t, cc_op op, cc_value left, cc_value right)
{
    cc_value r = left;
    switch (t->kind) {
        case CC_KIND_INT:
        case CC_KIND_RAW:
        case CC_KIND_BOOL:
            r.i = int_combine(&t->scalar, op, left.i, right.i);
            break;
        case CC_KIND_FLOAT:
            r.f = float_combine(op, left.f, right.f);
            break;
        case CC_KIND_COMPLEX:
            if (op == CC_OP_PROD) {
                r.c.re = left.c.re * right.c.re - left.c.im * right.c.im;
                r.c.im = left.c.re * right.c.im + left.c.im * right.c.re;
            } else {
                r.c.re = left.c.re + right.c.re;
                r.c.im = left.c.im + right.c.im;
            }
            break;
        case CC_KIND_PAIR: {
            /* MPI: the larger (smaller) value wins; on a tie, the lower index */
            bool left_wins = op == CC_OP_MAXLOC ? left.pair.value > right.pair.value
                                                : left.pair.value < right.pair.value;
            bool tie = left.pair.value == right.pair.value;
            if (tie) {
                r.pair.index =
                    left.pair.index < right.pair.index ? left.pair.index : right.pair.index;
            } else if (!left_wins) {
                r = right;
            }
            break;
        }
        case CC_KIND_MAT2:
            mat2_multiply(left.m, right.m, r.m);
            break;
        case CC_KIND_VEC3:
            r.m[0] = left.m[0] + right.m[0];
            r.m[1] = left.m[1] > right.m[1] ? left.m[1] : right.m[1];
            r.m[2] = left.m[2] ^ right.m[2];
            break;
        case CC_KIND_STRUCT:
            r.s.a = (int32_t)((uint32_t)left.s.a + (uint32_t)right.s.a);
            r.s.b = left.s.b < right.s.b ? left.s.b : right.s.b;
            r.s.c = (int16_t)(left.s.c ^ right.s.c);
            break;
    }
    return r;
}

/* Byte offsets of the vector and struct types' fields. */
static const unsigned vec3_offsets[3] = {0, 8, 16};
enum { STRUCT_A = 0, STRUCT_B = 8, STRUCT_C = 16, DERIVED_EXTENT = 24 };

void cc_store(const cc_type *t, cc_value v, void *dst)
{
    unsigned char *d = dst;
    switch (t->kind) {
        case CC_KIND_INT:
        case CC_KIND_RAW:
            store_int(d, t->scalar.size, v.i);
            break;
        case CC_KIND_BOOL: {
            bool b = v.i != 0;
            memcpy(d, &b, sizeof(b));
            break;
        }
        case CC_KIND_FLOAT:
            store_float(d, t->scalar.repr, v.f);
            break;
        case CC_KIND_COMPLEX:
            store_float(d, t->scalar.repr, v.c.re);
            store_float(d + t->scalar.size, t->scalar.repr, v.c.im);
            break;
        case CC_KIND_PAIR:
            if (scalar_is_float(&t->scalar)) {
                store_float(d, t->scalar.repr, v.pair.value);
            } else {
                store_int(d, t->scalar.size, (uint64_t)(int64_t)v.pair.value);
            }
            memcpy(d + t->pair_index_offset, &v.pair.index, sizeof(int));
            break;
        case CC_KIND_MAT2:
            memcpy(d, v.m, 4 * sizeof(uint32_t));
            break;
        case CC_KIND_VEC3:
            for (int k = 0; k < 3; k++) {
                memcpy(d + vec3_offsets[k], &v.m[k], sizeof(uint32_t));
            }
            break;
        case CC_KIND_STRUCT:
            memcpy(d + STRUCT_A, &v.s.a, sizeof(v.s.a));
            memcpy(d + STRUCT_B, &v.s.b, sizeof(v.s.b));
            memcpy(d + STRUCT_C, &v.s.c, sizeof(v.s.c));
            break;
    }
}

cc_value cc_load(const cc_type *t, const void *src)
{
    const unsigned char *s = src;
    cc_value v;
    memset(&v, 0, sizeof(v));
    switch (t->kind) {
        case CC_KIND_INT:
        case CC_KIND_RAW:
            v.i = load_int(s, &t->scalar);
            break;
        case CC_KIND_BOOL: {
            unsigned char b; /* the raw byte: a bad bool must be visible */
            memcpy(&b, s, 1);
            v.i = b;
            break;
        }
        case CC_KIND_FLOAT:
            v.f = load_float(s, t->scalar.repr);
            break;
        case CC_KIND_COMPLEX:
            v.c.re = load_float(s, t->scalar.repr);
            v.c.im = load_float(s + t->scalar.size, t->scalar.repr);
            break;
        case CC_KIND_PAIR:
            if (scalar_is_float(&t->scalar)) {
                v.pair.value = load_float(s, t->scalar.repr);
            } else {
                v.pair.value = (long double)(int64_t)load_int(s, &t->scalar);
            }
            memcpy(&v.pair.index, s + t->pair_index_offset, sizeof(int));
            break;
        case CC_KIND_MAT2:
            memcpy(v.m, s, 4 * sizeof(uint32_t));
            break;
        case CC_KIND_VEC3:
            for (int k = 0; k < 3; k++) {
                memcpy(&v.m[k], s + vec3_offsets[k], sizeof(uint32_t));
            }
            break;
        case CC_KIND_STRUCT:
            memcpy(&v.s.a, s + STRUCT_A, sizeof(v.s.a));
            memcpy(&v.s.b, s + STRUCT_B, sizeof(v.s.b));
            memcpy(&v.s.c, s + STRUCT_C, sizeof(v.s.c));
            break;
    }
    return v;
}

void cc_fill_input(const cc_type *t, cc_op op, uint64_t salt, int rank, int nranks, size_t first,
                   size_t count, void *buf)
{
    unsigned char *p = buf;
    uint64_t base = cc_hash(salt, (uint64_t)rank);
    for (size_t i = 0; i < count; i++) {
        cc_store(t, input_at(t, op, base, rank, nranks, first + i), p + i * t->extent);
    }
}

void cc_fill_expected(const cc_type *t, cc_op op, uint64_t salt, int nranks, int rank_begin,
                      int rank_end, size_t first, size_t count, void *buf)
{
    unsigned char *p = buf;
    if (rank_end <= rank_begin) {
        return;
    }
    uint64_t *bases = cc_xmalloc(sizeof(uint64_t) * (size_t)(rank_end - rank_begin));
    for (int r = rank_begin; r < rank_end; r++) {
        bases[r - rank_begin] = cc_hash(salt, (uint64_t)r);
    }
    for (size_t i = 0; i < count; i++) {
        cc_value acc = input_at(t, op, bases[0], rank_begin, nranks, first + i);
        for (int r = rank_begin + 1; r < rank_end; r++) {
            acc = cc_combine(t, op, acc,
                             input_at(t, op, bases[r - rank_begin], r, nranks, first + i));
        }
        cc_store(t, acc, p + i * t->extent);
    }
    free(bases);
}

/* ------------------------------------------------------------------------ */
/* User-defined operations: MPI computes inoutvec = invec op inoutvec, with
 * invec holding the lower ranks' contribution. */

static void user_op_apply(cc_op op, void *in, void *inout, const int *len, const MPI_Datatype *dt)
{
    const cc_type *t = cc_type_by_name(cc_op_table[op].user_type);
    if (*dt != t->datatype) {
        /* The function only knows its own layout; any other datatype means
         * the implementation split or substituted the user's type. */
        cc_fail(NULL, "%s called with a datatype other than %s (len %d)", cc_op_name(op), t->name,
                *len);
        return;
    }
    unsigned char *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        size_t off = (size_t)i * t->extent;
        cc_store(t, cc_combine(t, op, cc_load(t, a + off), cc_load(t, b + off)), b + off);
    }
}

static void user_plus1_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    user_op_apply(CC_OP_USER_PLUS1, in, inout, len, dt);
}

static void user_matmul_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    user_op_apply(CC_OP_USER_MATMUL, in, inout, len, dt);
}

static void user_vec3_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    user_op_apply(CC_OP_USER_VEC3, in, inout, len, dt);
}

static void user_struct_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    user_op_apply(CC_OP_USER_STRUCT, in, inout, len, dt);
}

/* ------------------------------------------------------------------------ */
/* Creation and self-checks of the table. */

static void set_segments(cc_type *t)
{
    unsigned vb = scalar_value_bytes(&t->scalar);
    switch (t->kind) {
        case CC_KIND_INT:
        case CC_KIND_BOOL:
        case CC_KIND_FLOAT:
            t->extent = t->scalar.size;
            t->nsegments = 1;
            t->segments[0] = (cc_segment){0, vb};
            break;
        case CC_KIND_COMPLEX:
            t->extent = 2 * t->scalar.size;
            t->nsegments = 2;
            t->segments[0] = (cc_segment){0, vb};
            t->segments[1] = (cc_segment){t->scalar.size, vb};
            break;
        case CC_KIND_PAIR: /* extent set by the table */
            t->nsegments = 2;
            t->segments[0] = (cc_segment){0, vb};
            t->segments[1] = (cc_segment){t->pair_index_offset, sizeof(int)};
            break;
        case CC_KIND_MAT2:
            t->extent = 4 * sizeof(uint32_t);
            t->nsegments = 1;
            t->segments[0] = (cc_segment){0, 4 * sizeof(uint32_t)};
            break;
        case CC_KIND_VEC3:
            t->extent = DERIVED_EXTENT;
            t->gaps_must_stay = true;
            t->nsegments = 3;
            for (int k = 0; k < 3; k++) {
                t->segments[k] = (cc_segment){vec3_offsets[k], sizeof(uint32_t)};
            }
            break;
        case CC_KIND_STRUCT:
            t->extent = DERIVED_EXTENT;
            t->gaps_must_stay = true;
            t->nsegments = 3;
            t->segments[0] = (cc_segment){STRUCT_A, sizeof(int32_t)};
            t->segments[1] = (cc_segment){STRUCT_B, sizeof(double)};
            t->segments[2] = (cc_segment){STRUCT_C, sizeof(int16_t)};
            break;
        case CC_KIND_RAW: /* contiguous(3, int) */
            t->extent = 3 * sizeof(int);
            t->scalar = (cc_scalar){CC_REPR_INT, sizeof(int), true};
            t->nsegments = 1;
            t->segments[0] = (cc_segment){0, 3 * sizeof(int)};
            break;
    }
}

static MPI_Datatype create_derived(cc_kind kind)
{
    MPI_Datatype dt = MPI_DATATYPE_NULL, tmp;
    switch (kind) {
        case CC_KIND_MAT2:
            MPI_Type_contiguous(4, MPI_UINT32_T, &dt);
            break;
        case CC_KIND_VEC3:
            /* fields at 0, 8, 16; resized so that a gap also trails each element */
            MPI_Type_vector(3, 1, 2, MPI_UINT32_T, &tmp);
            MPI_Type_create_resized(tmp, 0, DERIVED_EXTENT, &dt);
            MPI_Type_free(&tmp);
            break;
        case CC_KIND_STRUCT: {
            int blocklens[3] = {1, 1, 1};
            MPI_Aint displs[3] = {STRUCT_A, STRUCT_B, STRUCT_C};
            MPI_Datatype types[3] = {MPI_INT32_T, MPI_DOUBLE, MPI_INT16_T};
            MPI_Type_create_struct(3, blocklens, displs, types, &tmp);
            MPI_Type_create_resized(tmp, 0, DERIVED_EXTENT, &dt);
            MPI_Type_free(&tmp);
            break;
        }
        default:
            MPI_Type_contiguous(3, MPI_INT, &dt);
            break;
    }
    MPI_Type_commit(&dt);
    return dt;
}

/* Guards against a wrong table entry silently testing nothing. */
static bool verify_type(const cc_type *t)
{
    MPI_Aint lb, extent;
    int size;
    MPI_Type_get_extent(t->datatype, &lb, &extent);
    MPI_Type_size(t->datatype, &size);
    unsigned value_bytes = 0;
    for (unsigned s = 0; s < t->nsegments; s++) {
        value_bytes += t->segments[s].length;
    }
    bool ldbl = t->scalar.repr == CC_REPR_LDBL;
    if (lb != 0 || (size_t)extent != t->extent || value_bytes > (unsigned)size ||
        (!ldbl && value_bytes != (unsigned)size)) {
        fprintf(stderr,
                "collcheck: datatype table disagrees with MPI for %s: lb %ld extent %ld (table "
                "%zu), size %d (table value bytes %u)\n",
                t->name, (long)lb, (long)extent, t->extent, size, value_bytes);
        return false;
    }
    return true;
}

/* The non-commutativity test is worthless if the fold happens to commute. */
static bool verify_matmul_order(void)
{
    const cc_type *t = cc_type_by_name("mat2x2_uint32");
    cc_value a = cc_input(t, CC_OP_USER_MATMUL, 1, 0, 2, 0);
    cc_value b = cc_input(t, CC_OP_USER_MATMUL, 1, 1, 2, 0);
    cc_value ab = cc_combine(t, CC_OP_USER_MATMUL, a, b);
    cc_value ba = cc_combine(t, CC_OP_USER_MATMUL, b, a);
    if (memcmp(ab.m, ba.m, sizeof(ab.m)) == 0) {
        fprintf(stderr, "collcheck: internal error: the matrix product commutes on test inputs\n");
        return false;
    }
    return true;
}

/* Open MPI 4.1.4 compares MPI_UNSIGNED_LONG as a signed long
 * (open-mpi/ompi#10525, fixed after 4.1.4) and MPI_OFFSET as a uint64_t in
 * MPI_MAX and MPI_MIN.  The bug is in the op functions that every coll
 * component calls, not in any collective algorithm, so where this probe finds
 * it, the MAX/MIN inputs of that type keep their top bit clear: there both
 * signednesses agree and the collective is still checked bit for bit. */
static void probe_minmax_signedness(cc_type *t)
{
    if (t->kind != CC_KIND_INT || (t->ops & CC_OPBIT(CC_OP_MAX)) == 0) {
        return;
    }
    if (cc_session_only) {
        /* No MPI_Reduce_local to probe with: the inputs that every MPI
         * compares alike. */
        t->minmax_top_bit_clear = true;
        return;
    }
    const cc_op ops[2] = {CC_OP_MAX, CC_OP_MIN};
    for (int k = 0; k < 2; k++) {
        cc_value one = {.i = 1}, all_ones = {.i = int_normalize(UINT64_MAX, &t->scalar)};
        unsigned char in[2 * 8], inout[2 * 8], want[8];
        cc_store(t, all_ones, in);
        cc_store(t, one, in + t->extent);
        cc_store(t, one, inout);
        cc_store(t, all_ones, inout + t->extent);
        cc_store(t, cc_combine(t, ops[k], all_ones, one), want);
        MPI_Reduce_local(in, inout, 2, t->datatype, cc_op_table[ops[k]].handle);
        if (memcmp(inout, want, t->extent) != 0 ||
            memcmp(inout + t->extent, want, t->extent) != 0) {
            t->minmax_top_bit_clear = true;
        }
    }
}

void cc_print_input_notes(void)
{
    int rank;
    MPI_Comm_rank(cc_world, &rank);
    if (cc_session_only) {
        if (rank == 0) {
            printf("collcheck: note: --session: no MPI_Reduce_local to probe MPI_MAX/MPI_MIN "
                   "with, so their integer inputs keep the top bit clear\n");
        }
        return;
    }
    for (size_t i = 0; i < cc_ntypes && rank == 0; i++) {
        if (cc_types[i].minmax_top_bit_clear) {
            printf("collcheck: note: this MPI's MPI_MAX/MPI_MIN compare %s with the wrong "
                   "signedness (Open MPI bug, see open-mpi/ompi#10525); its MAX/MIN inputs keep "
                   "the top bit clear\n",
                   cc_types[i].name);
        }
    }
}

bool cc_types_create(void)
{
    bool ok = true;
    for (size_t i = 0; i < cc_ntypes; i++) {
        cc_type *t = &cc_types[i];
        set_segments(t);
        if (t->derived) {
            t->datatype = create_derived(t->kind);
        }
        ok = verify_type(t) && ok;
        probe_minmax_signedness(t);
    }
    for (int op = 0; op < CC_NOPS; op++) {
        if (cc_op_table[op].user_fn != NULL) {
            MPI_Op_create(cc_op_table[op].user_fn, cc_op_table[op].commutative,
                          &cc_op_table[op].handle);
        }
    }
    return verify_matmul_order() && ok;
}

void cc_types_free(void)
{
    for (size_t i = 0; i < cc_ntypes; i++) {
        cc_type *t = &cc_types[i];
        if (t->derived && t->datatype != MPI_DATATYPE_NULL) {
            MPI_Type_free(&t->datatype);
        }
    }
    for (int op = 0; op < CC_NOPS; op++) {
        if (cc_op_table[op].user_fn != NULL && cc_op_table[op].handle != MPI_OP_NULL) {
            MPI_Op_free(&cc_op_table[op].handle);
        }
    }
}

/*
 * Reductions against the serial reference: MPI_Allreduce, MPI_Reduce (every
 * root), MPI_Reduce_scatter (uneven counts with zeros),
 * MPI_Reduce_scatter_block, MPI_Scan and MPI_Exscan, each with and without
 * MPI_IN_PLACE, for every (datatype, op) pair the MPI standard allows plus
 * four user-defined ops (one non-commutative, two on non-contiguous types).
 *
 * Which pair runs which counts, roots and communicators: see cc_tier.
 */
#include "collcheck.h"

#include <string.h>

/* Tiers: see cc_tier.  SEGMENT pairs favour extents that do not divide the
 * segment size (24, 32) and the op kinds whose pipelines differ. */
static const struct {
    const char *type;
    cc_op op;
    cc_tier tier;
} tiered_pairs[] = {
    {"MPI_INT", CC_OP_SUM, CC_TIER_BIG},
    {"mat2x2_uint32", CC_OP_USER_MATMUL, CC_TIER_BIG},
    {"MPI_DOUBLE", CC_OP_SUM, CC_TIER_SEGMENT},
    {"MPI_2INT", CC_OP_MAXLOC, CC_TIER_SEGMENT},
    {"vector3_uint32", CC_OP_USER_VEC3, CC_TIER_SEGMENT},
    {"struct_i32_f64_i16", CC_OP_USER_STRUCT, CC_TIER_SEGMENT},
    {"MPI_LONG_DOUBLE_INT", CC_OP_MAXLOC, CC_TIER_SEGMENT},
    {"MPI_INT8_T", CC_OP_SUM, CC_TIER_REP}, /* the 8-bit sum Debian's op/avx saturates */
    {"MPI_UNSIGNED_CHAR", CC_OP_BXOR, CC_TIER_REP},
    {"MPI_UNSIGNED_SHORT", CC_OP_PROD, CC_TIER_REP},
    {"MPI_LONG_LONG_INT", CC_OP_MAX, CC_TIER_REP},
    {"MPI_UINT64_T", CC_OP_SUM, CC_TIER_REP},
    {"MPI_SHORT", CC_OP_LAND, CC_TIER_REP},
    {"MPI_BYTE", CC_OP_BAND, CC_TIER_REP},
    {"MPI_C_BOOL", CC_OP_LOR, CC_TIER_REP},
    {"MPI_FLOAT", CC_OP_PROD, CC_TIER_REP},
    {"MPI_LONG_DOUBLE", CC_OP_MIN, CC_TIER_REP},
    {"MPI_C_DOUBLE_COMPLEX", CC_OP_PROD, CC_TIER_REP},
    {"MPI_DOUBLE_INT", CC_OP_MINLOC, CC_TIER_REP},
    {"MPI_UINT32_T", CC_OP_USER_PLUS1, CC_TIER_REP},
};

static cc_tier tier_of(const cc_type *t, cc_op op)
{
    for (size_t i = 0; i < sizeof(tiered_pairs) / sizeof(tiered_pairs[0]); i++) {
        if (tiered_pairs[i].op == op && strcmp(tiered_pairs[i].type, t->name) == 0) {
            return tiered_pairs[i].tier;
        }
    }
    return CC_TIER_OTHER;
}

static void reduce_matrix(cc_coll coll, const cc_comm *comm)
{
    for (size_t ti = 0; ti < cc_ntypes; ti++) {
        const cc_type *t = &cc_types[ti];
        for (int op = 0; op < CC_NOPS; op++) {
            if ((t->ops & CC_OPBIT(op)) == 0) {
                continue;
            }
            cc_tier tier = tier_of(t, (cc_op)op);
            /* --full: segment boundaries for every type, with its first op */
            bool first_op = (t->ops & (CC_OPBIT(op) - 1u)) == 0;
            if (cc_opts.level == CC_LEVEL_FULL && first_op && tier < CC_TIER_SEGMENT) {
                tier = CC_TIER_SEGMENT;
            }
            const size_t pair_index = ti * CC_NOPS + (size_t)op;
            size_t counts[CC_MAX_COUNTS];
            size_t ncounts = cc_counts(cc_matrix_counts(comm->kind, tier), t->extent, counts);
            int nroots = coll == CC_REDUCE ? comm->size : 1;
            for (size_t ci = 0; ci < ncounts; ci++) {
                for (int root = 0; root < nroots; root++) {
                    if (coll == CC_REDUCE &&
                        !cc_root_selected(root, comm->size, counts[ci], tier, pair_index)) {
                        continue;
                    }
                    for (int in_place = 0; in_place < 2; in_place++) {
                        uint64_t parts[] = {coll,           ti,
                                            (uint64_t)op,   counts[ci],
                                            (uint64_t)root, (uint64_t)in_place,
                                            comm->kind};
                        cc_reduce_case rc = {
                            .coll = coll,
                            .type = t,
                            .op = (cc_op)op,
                            .count = counts[ci],
                            .root = root,
                            .in_place = in_place != 0,
                            .salt = cc_case_salt(7, parts),
                            .thread = -1,
                        };
                        cc_run_reduce_case(comm, &rc);
                    }
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (cc_init(&argc, &argv, MPI_THREAD_SINGLE, NULL)) {
        cc_print_input_notes();
        static const cc_coll colls[] = {CC_ALLREDUCE,      CC_REDUCE,
                                        CC_REDUCE_SCATTER, CC_REDUCE_SCATTER_BLOCK,
                                        CC_SCAN,           CC_EXSCAN};
        cc_run_family(colls, sizeof(colls) / sizeof(colls[0]), reduce_matrix);
    }
    return cc_finish("test_coll_reduce_family");
}

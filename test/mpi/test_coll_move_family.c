/*
 * Data movement against known byte patterns: MPI_Bcast, MPI_Gather and
 * MPI_Scatter (every root, MPI_IN_PLACE at the root), MPI_Allgather and
 * MPI_Alltoall (with and without MPI_IN_PLACE), for every predefined datatype,
 * a vector and a struct type with gaps (gap bytes must stay untouched) and
 * sender/receiver pairs whose type signatures match but whose layouts do not
 * (2 x contiguous(3, int) against 6 x int, vector against contiguous).
 *
 * Matrix as in test_coll_reduce_family (cc_matrix_counts, cc_root_selected).
 */
#include "collcheck.h"

#include <string.h>

typedef struct {
    const char *send;
    unsigned send_factor; /* sendcount = count * send_factor */
    const char *recv;
    unsigned recv_factor;
    cc_tier tier;
} type_pair;

/* Same type on both sides: tiers of the predefined families (see cc_tier);
 * types not listed are OTHER. */
static const type_pair tiered_same[] = {
    {"MPI_BYTE", 1, "MPI_BYTE", 1, CC_TIER_BIG},
    {"vector3_uint32", 1, "vector3_uint32", 1, CC_TIER_BIG},
    {"MPI_INT", 1, "MPI_INT", 1, CC_TIER_SEGMENT},
    {"struct_i32_f64_i16", 1, "struct_i32_f64_i16", 1, CC_TIER_SEGMENT},
    {"MPI_LONG_DOUBLE", 1, "MPI_LONG_DOUBLE", 1, CC_TIER_REP},
    {"MPI_SHORT_INT", 1, "MPI_SHORT_INT", 1, CC_TIER_REP},
    {"MPI_C_DOUBLE_COMPLEX", 1, "MPI_C_DOUBLE_COMPLEX", 1, CC_TIER_REP},
};

/* Matching signatures, different layouts. */
static const type_pair mismatched[] = {
    {"contig3_int", 1, "MPI_INT", 3, CC_TIER_SEGMENT},
    {"MPI_INT", 3, "contig3_int", 1, CC_TIER_REP},
    {"vector3_uint32", 1, "MPI_UINT32_T", 3, CC_TIER_REP},
    {"MPI_UINT32_T", 3, "vector3_uint32", 1, CC_TIER_SEGMENT},
};

static cc_tier tier_of(const cc_type *t)
{
    for (size_t i = 0; i < sizeof(tiered_same) / sizeof(tiered_same[0]); i++) {
        if (strcmp(tiered_same[i].send, t->name) == 0) {
            return tiered_same[i].tier;
        }
    }
    return CC_TIER_OTHER;
}

static void run_pair(cc_coll coll, const cc_comm *comm, const type_pair *tp, size_t pair_index)
{
    const cc_type *st = cc_type_by_name(tp->send), *rt = cc_type_by_name(tp->recv);
    /* --full: segment boundaries for every type pair */
    const cc_tier tier =
        cc_opts.level == CC_LEVEL_FULL && tp->tier < CC_TIER_SEGMENT ? CC_TIER_SEGMENT : tp->tier;
    const bool same = st == rt && tp->send_factor == tp->recv_factor;
    const bool rooted = coll == CC_BCAST || coll == CC_GATHER || coll == CC_SCATTER;
    const int nroots = rooted ? comm->size : 1;
    /* MPI_Bcast has no in-place form; in place, only the receive type counts */
    const int in_place_variants = coll == CC_BCAST || !same ? 1 : 2;
    size_t counts[CC_MAX_COUNTS];
    size_t ncounts =
        cc_counts(cc_matrix_counts(comm->kind, tier), st->extent * tp->send_factor, counts);
    for (size_t ci = 0; ci < ncounts; ci++) {
        for (int root = 0; root < nroots; root++) {
            if (rooted && !cc_root_selected(root, comm->size, counts[ci], tier, pair_index)) {
                continue;
            }
            for (int in_place = 0; in_place < in_place_variants; in_place++) {
                /* table indices, not addresses: salts must agree across processes */
                uint64_t parts[] = {coll,
                                    (uint64_t)(st - cc_types),
                                    (uint64_t)(rt - cc_types),
                                    counts[ci],
                                    (uint64_t)root,
                                    (uint64_t)in_place,
                                    comm->kind};
                cc_move_case mc = {
                    .coll = coll,
                    .sendtype = st,
                    .sendcount = counts[ci] * tp->send_factor,
                    .recvtype = rt,
                    .recvcount = counts[ci] * tp->recv_factor,
                    .root = root,
                    .in_place = in_place != 0,
                    .salt = cc_case_salt(7, parts),
                    .thread = -1,
                };
                cc_run_move_case(comm, &mc);
            }
        }
    }
}

static void move_matrix(cc_coll coll, const cc_comm *comm)
{
    for (size_t ti = 0; ti < cc_ntypes; ti++) {
        const cc_type *t = &cc_types[ti];
        type_pair tp = {t->name, 1, t->name, 1, tier_of(t)};
        run_pair(coll, comm, &tp, ti);
    }
    for (size_t i = 0; i < sizeof(mismatched) / sizeof(mismatched[0]); i++) {
        run_pair(coll, comm, &mismatched[i], cc_ntypes + i);
    }
}

int main(int argc, char **argv)
{
    if (cc_init(&argc, &argv, MPI_THREAD_SINGLE, NULL)) {
        static const cc_coll colls[] = {CC_BCAST, CC_ALLGATHER, CC_ALLTOALL, CC_GATHER, CC_SCATTER};
        cc_run_family(colls, sizeof(colls) / sizeof(colls[0]), move_matrix);
    }
    return cc_finish("test_coll_move_family");
}

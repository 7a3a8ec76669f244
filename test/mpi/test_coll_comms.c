/*
 * Communicator life cycle around checked collectives: many short-lived
 * communicators of every shape (duplicates, three-way splits with unequal
 * sizes, reversed ranks, groups, MPI_COMM_SELF duplicates, splits of splits),
 * each used for a mix of collectives and freed; then several communicators
 * alive at once and used in alternation.  Catches per-communicator state that
 * leaks, is shared between communicators or outlives its communicator.
 */
#include "collcheck.h"

#include <stdio.h>
#include <stdlib.h>

enum shape {
    SHAPE_DUP,
    SHAPE_SPLIT3, /* color rank % 3: sizes differ unless p % 3 == 0 */
    SHAPE_REVERSED,
    SHAPE_GROUP,  /* MPI_Comm_create_group of the lower half */
    SHAPE_SELF,   /* duplicate of MPI_COMM_SELF */
    SHAPE_NESTED, /* halves of the reversed world, then duplicated */
    SHAPE_CREATE, /* MPI_Comm_create of the even ranks */
    NSHAPES
};

static const char *const shape_names[NSHAPES] = {
    "dup", "split3", "reversed", "group_lower_half", "self_dup", "nested", "create_even",
};

/* Collective over MPI_COMM_WORLD; *out is MPI_COMM_NULL where this rank is
 * not a member. */
static MPI_Comm create_shape(enum shape s)
{
    MPI_Comm c = MPI_COMM_NULL, tmp = MPI_COMM_NULL;
    MPI_Group world_group, sub_group;
    const int p = cc_world_size, me = cc_world_rank;
    switch (s) {
        case SHAPE_DUP:
            c = cc_comm_make(CC_COMM_DUP);
            break;
        case SHAPE_SPLIT3:
            MPI_Comm_split(MPI_COMM_WORLD, me % 3, me, &c);
            break;
        case SHAPE_REVERSED:
            c = cc_comm_make(CC_COMM_REVERSED);
            break;
        case SHAPE_GROUP:
        case SHAPE_CREATE: {
            int n = 0, *ranks = cc_xmalloc(sizeof(int) * (size_t)p);
            for (int r = 0; r < p; r++) {
                if (s == SHAPE_GROUP ? r < (p + 1) / 2 : r % 2 == 0) {
                    ranks[n++] = r;
                }
            }
            MPI_Comm_group(MPI_COMM_WORLD, &world_group);
            MPI_Group_incl(world_group, n, ranks, &sub_group);
            if (s == SHAPE_CREATE) {
                MPI_Comm_create(MPI_COMM_WORLD, sub_group, &c);
            } else if (me < (p + 1) / 2) {
                MPI_Comm_create_group(MPI_COMM_WORLD, sub_group, 77, &c);
            }
            MPI_Group_free(&sub_group);
            MPI_Group_free(&world_group);
            free(ranks);
            break;
        }
        case SHAPE_SELF:
            MPI_Comm_dup(MPI_COMM_SELF, &c);
            break;
        default:
            MPI_Comm_split(MPI_COMM_WORLD, 0, -me, &tmp);
            MPI_Comm_split(tmp, me % 2, me, &c);
            MPI_Comm_free(&tmp);
            MPI_Comm_dup(c, &tmp);
            MPI_Comm_free(&c);
            c = tmp;
            break;
    }
    if (c != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    }
    return c;
}

/* A mix of every collective on one communicator. */
static void run_mix(const cc_comm *comm, uint64_t seed)
{
    static const struct {
        cc_step_kind step;
        size_t count; /* 0 here means "one element past a segment" */
    } mix[] = {
        {{CC_ALLREDUCE, "MPI_INT", CC_OP_SUM}, 7},
        {{CC_ALLREDUCE, "MPI_INT", CC_OP_SUM}, 0},
        {{CC_REDUCE, "mat2x2_uint32", CC_OP_USER_MATMUL}, 7},
        {{CC_REDUCE_SCATTER, "MPI_UINT32_T", CC_OP_USER_PLUS1}, 7},
        {{CC_REDUCE_SCATTER_BLOCK, "MPI_2INT", CC_OP_MAXLOC}, 7},
        {{CC_SCAN, "MPI_DOUBLE", CC_OP_SUM}, 7},
        {{CC_EXSCAN, "mat2x2_uint32", CC_OP_USER_MATMUL}, 7},
        {{CC_BCAST, "vector3_uint32", CC_OP_SUM}, 0},
        {{CC_ALLGATHER, "struct_i32_f64_i16", CC_OP_SUM}, 7},
        {{CC_ALLTOALL, "MPI_INT", CC_OP_SUM}, 7},
        {{CC_GATHER, "MPI_BYTE", CC_OP_SUM}, 1001},
        {{CC_SCATTER, "MPI_INT", CC_OP_SUM}, 7},
    };
    for (size_t k = 0; k < sizeof(mix) / sizeof(mix[0]); k++) {
        if (!cc_coll_selected(mix[k].step.coll)) {
            continue;
        }
        const cc_type *t = cc_type_by_name(mix[k].step.type);
        size_t count = mix[k].count ? mix[k].count : cc_opts.segment_bytes / t->extent + 1;
        uint64_t parts[] = {seed, k};
        uint64_t salt = cc_case_salt(2, parts);
        int root = (int)((seed + k) % (uint64_t)comm->size);
        bool in_place = ((seed + k) & 1) != 0;
        cc_run_step(comm, &mix[k].step, count, root, in_place, salt, -1);
    }
}

int main(int argc, char **argv)
{
    if (cc_init(&argc, &argv, MPI_THREAD_SINGLE, NULL)) {
        int iterations = cc_opts.iterations;
        if (iterations == 0) {
            iterations = cc_opts.level == CC_LEVEL_FULL
                             ? 10 * NSHAPES
                             : (cc_opts.level == CC_LEVEL_QUICK ? 3 * NSHAPES : NSHAPES);
        }
        cc_bufpool_snapshot before;
        cc_bufpool_snapshot_take(&before);

        /* Short-lived communicators. */
        for (int it = 0; it < iterations; it++) {
            enum shape s = (enum shape)(it % NSHAPES);
            MPI_Comm c = create_shape(s);
            if (c != MPI_COMM_NULL) {
                cc_comm comm;
                cc_comm_wrap(c, shape_names[s], &comm);
                run_mix(&comm, (uint64_t)it);
                MPI_Comm_free(&c);
            }
        }

        /* Several communicators alive, used in alternation. */
        cc_comm alive[3];
        cc_comm_create(CC_COMM_DUP, &alive[0]);
        cc_comm_create(CC_COMM_HALVES, &alive[1]);
        cc_comm_create(CC_COMM_REVERSED, &alive[2]);
        for (int round = 0; round < 3; round++) {
            for (int k = 0; k < 3; k++) {
                run_mix(&alive[k], 1000u + (uint64_t)(round * 3 + k));
            }
        }
        for (int k = 0; k < 3; k++) {
            cc_comm_free(&alive[k]);
        }
        cc_bufpool_expect_growth(&before, cc_opts.coll_mask);
        if (cc_opts.verbose && cc_world_rank == 0) {
            printf("%d short-lived communicators, 3 long-lived\n", iterations);
        }
    }
    return cc_finish("test_coll_comms");
}

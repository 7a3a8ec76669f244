/*
 * The one table of bufpool's entry points: for each collective, its
 * arguments, what its decision is keyed on (call class and bytes, computed
 * once per call), whether Open MPI 6's size_t counts fit bufpool's int
 * engines, whether it is empty, and its description as bufpool_args_t.
 * coll_bufpool_entry.c generates the blocking entry points from it and
 * coll_bufpool_nb.c the nonblocking and persistent ones, so the three
 * forms read their arguments alike.  The generated symbols, for grep:
 *
 *   mca_coll_bufpool_allreduce  mca_coll_bufpool_iallreduce  mca_coll_bufpool_allreduce_init
 *   mca_coll_bufpool_reduce     mca_coll_bufpool_ireduce     mca_coll_bufpool_reduce_init
 *   mca_coll_bufpool_bcast      mca_coll_bufpool_ibcast      mca_coll_bufpool_bcast_init
 *   mca_coll_bufpool_allgather  mca_coll_bufpool_iallgather  mca_coll_bufpool_allgather_init
 *   mca_coll_bufpool_reduce_scatter        mca_coll_bufpool_ireduce_scatter
 *   mca_coll_bufpool_reduce_scatter_init   mca_coll_bufpool_reduce_scatter_block
 *   mca_coll_bufpool_ireduce_scatter_block mca_coll_bufpool_reduce_scatter_block_init
 *   mca_coll_bufpool_alltoall   mca_coll_bufpool_ialltoall   mca_coll_bufpool_alltoall_init
 *   mca_coll_bufpool_gather     mca_coll_bufpool_igather     mca_coll_bufpool_gather_init
 *   mca_coll_bufpool_scatter    mca_coll_bufpool_iscatter    mca_coll_bufpool_scatter_init
 *   mca_coll_bufpool_scan       mca_coll_bufpool_iscan       mca_coll_bufpool_scan_init
 *   mca_coll_bufpool_exscan     mca_coll_bufpool_iexscan     mca_coll_bufpool_exscan_init
 *   mca_coll_bufpool_barrier    mca_coll_bufpool_ibarrier    mca_coll_bufpool_barrier_init
 *
 * and the slow paths of the blocking ones, <coll>_slow (coll_bufpool_entry.c).
 *
 * X(name, params, args, prep, cls, bytes, fits, empty, init, own, mended):
 *   params  the parameters of MPI_<coll> as the coll framework passes them
 *           (without the module), parenthesized;
 *   args    the same names, to call the previous module with;
 *   prep    a declaration the columns after it may use (computed once);
 *   cls     the call class (BUFPOOL_CLASS): commutative, in place where
 *           every rank passes MPI_IN_PLACE alike, and for allreduce and
 *           reduce a user-defined operation (BUFPOOL_CLASS_USER_OP);
 *   bytes   what the size maps are keyed on: signature bytes;
 *   fits    false when Open MPI 6's size_t counts do not fit (the call goes
 *           to the previous module; decided on what every rank agrees on);
 *   empty   a reduction with nothing to reduce: done at once, uncounted;
 *   init    the bufpool_args_t of the call;
 *   own     a rank's own block that a hand-back may have to mend (gather's
 *           and scatter's root's, allgather's; bufpool_own_block_t,
 *           algorithms/coll_bufpool_own_block.h; BUFPOOL_NO_OWN_BLOCK for
 *           the others);
 *   mended  the arguments of such a hand-back, which may read bp_own_ (the
 *           prepared block): MPI_IN_PLACE for the root's own buffer,
 *           allgather's block moved to scratch (args for the others).
 */
#ifndef MCA_COLL_BUFPOOL_ENTRIES_H
#define MCA_COLL_BUFPOOL_ENTRIES_H

#define BUFPOOL_EXPAND(...) __VA_ARGS__

/* A count as the engines take it (negative counts are MPI errors the
 * parameter checks catch; 0 for safety). */
#define BUFPOOL_ARG_COUNT(c) ((c) > 0 ? (size_t)(c) : 0)

/* Reductions and scans of count x dtype (allreduce: its class tells
 * user-defined operations apart too). */
#define BUFPOOL_ENTRY_REDUCTION(X, name, in_place_decides, user_op_decides)                        \
    X(name,                                                                                        \
      (const void *sbuf, void *rbuf, bufpool_count_t count, struct ompi_datatype_t *dtype,         \
       struct ompi_op_t *op, struct ompi_communicator_t *comm),                                    \
      (sbuf, rbuf, count, dtype, op, comm), (void)0,                                               \
      BUFPOOL_CLASS(ompi_op_is_commute(op), (in_place_decides) && MPI_IN_PLACE == sbuf) |          \
          ((user_op_decides) ? BUFPOOL_CLASS_OF_OP(op) : 0),                                       \
      bufpool_bytes(dtype, count), BUFPOOL_COUNT_FITS(count), count <= 0,                          \
      ({.sbuf = sbuf, .rbuf = rbuf, .count = BUFPOOL_ARG_COUNT(count), .dtype = dtype, .op = op}), \
      BUFPOOL_NO_OWN_BLOCK, (sbuf, rbuf, count, dtype, op, comm))

/* The own column of the block exchanges and gather/scatter (whose
 * parameters bear the same names): kind, and the root (alltoall: the rank
 * itself). */
#define BUFPOOL_OWN_BLOCK_OF(kind_, root_)                                                         \
    ({.kind = (kind_),                                                                             \
      .sbuf = sbuf,                                                                                \
      .scount = BUFPOOL_ARG_COUNT(scount),                                                         \
      .sdtype = sdtype,                                                                            \
      .rbuf = rbuf,                                                                                \
      .rcount = BUFPOOL_ARG_COUNT(rcount),                                                         \
      .rdtype = rdtype,                                                                            \
      .root = (root_)})

/* Block exchanges: scount x sdtype out, rcount x rdtype in (MPI_IN_PLACE:
 * every rank or none; only alltoall's decides).  own: the rank's block,
 * which a hand-back may mend (bufpool_own_block_at_risk): allgather's sent
 * from scratch as rcount x rdtype (mended), alltoall's copied again after
 * the call (args unchanged). */
#define BUFPOOL_ENTRY_EXCHANGE(X, name, in_place_decides, own_kind)                                \
    X(name,                                                                                        \
      (const void *sbuf, bufpool_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf,       \
       bufpool_count_t rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm),  \
      (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm), (void)0,                                 \
      BUFPOOL_CLASS(true, (in_place_decides) && MPI_IN_PLACE == sbuf),                             \
      bufpool_bytes(rdtype, rcount), BUFPOOL_BYTES_FIT(bufpool_bytes(rdtype, rcount)), false,      \
      ({.sbuf = sbuf,                                                                              \
        .scount = (int)scount,                                                                     \
        .sdtype = sdtype,                                                                          \
        .rbuf = rbuf,                                                                              \
        .rcount = (int)rcount,                                                                     \
        .rdtype = rdtype}),                                                                        \
      BUFPOOL_OWN_BLOCK_OF(own_kind, ompi_comm_rank(comm)),                                        \
      (bp_own_.moved, rcount, rdtype, rbuf, rcount, rdtype, comm))

/* Gather and scatter: only the significant arguments decide.  The root's
 * own block, copied by the previous module through Open MPI's
 * ompi_datatype_sndrcv, may need bufpool's copy on a hand-back, which then
 * passes MPI_IN_PLACE at the root (bufpool_own_block_at_risk). */
#define BUFPOOL_ENTRY_ROOTED(X, name, gather)                                                      \
    X(name,                                                                                        \
      (const void *sbuf, bufpool_count_t scount, struct ompi_datatype_t *sdtype, void *rbuf,       \
       bufpool_count_t rcount, struct ompi_datatype_t *rdtype, int root,                           \
       struct ompi_communicator_t *comm),                                                          \
      (sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm),                                    \
      const size_t bp_block_ =                                                                     \
          bufpool_rooted_bytes(gather, scount, sdtype, rcount, rdtype, root, comm),                \
      BUFPOOL_CLASS(true, false), bp_block_, BUFPOOL_BYTES_FIT(bp_block_), false,                  \
      ({.sbuf = sbuf,                                                                              \
        .scount = (int)scount,                                                                     \
        .sdtype = sdtype,                                                                          \
        .rbuf = rbuf,                                                                              \
        .rcount = (int)rcount,                                                                     \
        .rdtype = rdtype,                                                                          \
        .root = root}),                                                                            \
      BUFPOOL_OWN_BLOCK_OF((gather) ? BUFPOOL_OWN_GATHER : BUFPOOL_OWN_SCATTER, root),             \
      ((gather) ? MPI_IN_PLACE : sbuf, scount, sdtype, (gather) ? rbuf : MPI_IN_PLACE, rcount,     \
       rdtype, root, comm))

#define BUFPOOL_ENTRY_TABLE(X)                                                                     \
    BUFPOOL_ENTRY_REDUCTION(X, allreduce, true, true)                                              \
    X(reduce,                                                                                      \
      (const void *sbuf, void *rbuf, bufpool_count_t count, struct ompi_datatype_t *dtype,         \
       struct ompi_op_t *op, int root, struct ompi_communicator_t *comm),                          \
      (sbuf, rbuf, count, dtype, op, root, comm), (void)0,                                         \
      BUFPOOL_CLASS(ompi_op_is_commute(op), false) | BUFPOOL_CLASS_OF_OP(op),                      \
      bufpool_bytes(dtype, count), BUFPOOL_COUNT_FITS(count), count <= 0,                          \
      ({.sbuf = sbuf,                                                                              \
        .rbuf = rbuf,                                                                              \
        .count = BUFPOOL_ARG_COUNT(count),                                                         \
        .dtype = dtype,                                                                            \
        .op = op,                                                                                  \
        .root = root}),                                                                            \
      BUFPOOL_NO_OWN_BLOCK, (sbuf, rbuf, count, dtype, op, root, comm))                            \
    X(bcast,                                                                                       \
      (void *buf, bufpool_count_t count, struct ompi_datatype_t *dtype, int root,                  \
       struct ompi_communicator_t *comm),                                                          \
      (buf, count, dtype, root, comm), (void)0, BUFPOOL_CLASS(true, false),                        \
      bufpool_bytes(dtype, count), BUFPOOL_BYTES_FIT(bufpool_bytes(dtype, count)), false,          \
      ({.rbuf = buf, .count = BUFPOOL_ARG_COUNT(count), .dtype = dtype, .root = root}),            \
      BUFPOOL_NO_OWN_BLOCK, (buf, count, dtype, root, comm))                                       \
    BUFPOOL_ENTRY_EXCHANGE(X, allgather, false, BUFPOOL_OWN_ALLGATHER)                             \
    X(reduce_scatter,                                                                              \
      (const void *sbuf, void *rbuf, bufpool_counts_t rcounts, struct ompi_datatype_t *dtype,      \
       struct ompi_op_t *op, struct ompi_communicator_t *comm),                                    \
      (sbuf, rbuf, rcounts, dtype, op, comm),                                                      \
      const size_t bp_total_ = bufpool_counts_total_any(rcounts, ompi_comm_size(comm)),            \
      BUFPOOL_CLASS(ompi_op_is_commute(op), MPI_IN_PLACE == sbuf), dtype->super.size * bp_total_,  \
      bufpool_counts_fit(rcounts, ompi_comm_size(comm)), 0 == bp_total_,                           \
      ({.sbuf = sbuf,                                                                              \
        .rbuf = rbuf,                                                                              \
        .rcounts = BUFPOOL_COUNTS_INT_PTR(rcounts),                                                \
        .rcounts_any = rcounts,                                                                    \
        .dtype = dtype,                                                                            \
        .op = op}),                                                                                \
      BUFPOOL_NO_OWN_BLOCK, (sbuf, rbuf, rcounts, dtype, op, comm))                                \
    X(reduce_scatter_block,                                                                        \
      (const void *sbuf, void *rbuf, bufpool_count_t rcount, struct ompi_datatype_t *dtype,        \
       struct ompi_op_t *op, struct ompi_communicator_t *comm),                                    \
      (sbuf, rbuf, rcount, dtype, op, comm), (void)0,                                              \
      BUFPOOL_CLASS(ompi_op_is_commute(op), MPI_IN_PLACE == sbuf),                                 \
      bufpool_bytes(dtype, rcount) * (size_t)ompi_comm_size(comm), BUFPOOL_COUNT_FITS(rcount),     \
      rcount <= 0,                                                                                 \
      ({.sbuf = sbuf,                                                                              \
        .rbuf = rbuf,                                                                              \
        .count = BUFPOOL_ARG_COUNT(rcount),                                                        \
        .dtype = dtype,                                                                            \
        .op = op}),                                                                                \
      BUFPOOL_NO_OWN_BLOCK, (sbuf, rbuf, rcount, dtype, op, comm))                                 \
    BUFPOOL_ENTRY_EXCHANGE(X, alltoall, true, BUFPOOL_OWN_ALLTOALL)                                \
    BUFPOOL_ENTRY_ROOTED(X, gather, true)                                                          \
    BUFPOOL_ENTRY_ROOTED(X, scatter, false)                                                        \
    BUFPOOL_ENTRY_REDUCTION(X, scan, false, false)                                                 \
    BUFPOOL_ENTRY_REDUCTION(X, exscan, false, false)                                               \
    X(barrier, (struct ompi_communicator_t * comm), (comm), (void)0, BUFPOOL_CLASS(true, false),   \
      (size_t)0, true, false, ({.root = 0}), BUFPOOL_NO_OWN_BLOCK, (comm))

#endif /* MCA_COLL_BUFPOOL_ENTRIES_H */

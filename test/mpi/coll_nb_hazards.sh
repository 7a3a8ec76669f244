#!/bin/sh
# The hazards of coll/bufpool's nonblocking runtime (test_coll_nb_hazards,
# every result checked; --expect-bufpool: bufpool's counters prove that it
# served the calls, its own defaults serving every size):
#   tag-wrap   the tag counter wrapping every 5 blocks
#              (coll_bufpool_test_nbc_tag_range) while persistent requests
#              keep theirs and nonblocking calls run beside them;
#   many       64 MPI_Ibcast in flight, 10^4 rounds: results, stacks mapped
#              and the process's mapped size flat;
#   threads    MPI_THREAD_MULTIPLE: one thread starts MPI_Iallreduce with a
#              slow user operation, another completes them;
#   big-frame  a user operation with a local array of *len doubles;
#   finalize   persistent requests never freed at MPI_Finalize (sanitize.sh
#              runs it under ASan and LeakSanitizer too);
#   start-order  persistent requests of seven collectives started in each
#              rank's own order, with a blocking call before or after them:
#              bufpool's point-to-point algorithms, and the node algorithms
#              forced (--expect-node: over segments, all unmapped at the end);
#              and on two pretended hosts with allreduce hier_node forced
#              (its host phases through each request's own host segment:
#              the two persistent allreduces and the blocking one);
#   large-count  reduce_scatter with MPI_Count counts in three forms (Open
#              MPI 6; on 4.1 and 5.0 the program says it has nothing to
#              check), bufpool's pairwise and, at 2 ranks, node;
#   persistent-fit  a persistent allreduce and bcast above 4 KiB beside
#              blocking calls of other sizes: results, point-to-point and
#              with the node algorithms forced, where each request's chunk
#              segment is cut to its message (--expect-node: smaller than
#              the communicator's, all unmapped at the end).
set -u
. "$top_srcdir/test/mpi/configs.sh"
status=0
failed=
mca="--mca coll_bufpool_rules_default off"
run() { # NP MCA ARGS...
    np=$1 extra=$2
    shift 2
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca $extra" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" "$top_builddir/test/mpi/test_coll_nb_hazards" \
        "$@" --expect-bufpool </dev/null; then
        status=1
        failed="$failed
  np=$np $extra $*"
    fi
}
for np in 2 3; do
    run $np "--mca coll_bufpool_test_nbc_tag_range 85" --case=tag-wrap
    run $np "" --case=many
    run $np "" --case=threads
    run $np "" --case=big-frame
    run $np "" --case=finalize
done
for np in 2 3 4; do
    run $np "--mca coll_bufpool_min_size 0" --case=start-order
    run $np "--mca coll_bufpool_min_size 0 $(bufpool_node_algorithms node)" --case=start-order \
        --expect-node
done
for np in 2 3; do
    run $np "--mca coll_bufpool_min_size 0" --case=large-count
done
run 2 "--mca coll_bufpool_min_size 0 --mca coll_bufpool_reduce_scatter_algorithm node" \
    --case=large-count
run 4 "--mca coll_bufpool_min_size 0 --mca coll_bufpool_test_host_map 0,1 \
--mca coll_bufpool_allreduce_algorithm hier_node" --case=start-order --expect-node=3
for np in 2 3; do
    run $np "--mca coll_bufpool_min_size 0" --case=persistent-fit
    run $np "--mca coll_bufpool_min_size 0 $(bufpool_node_algorithms node)" --case=persistent-fit \
        --expect-node
done
if [ $status != 0 ]; then
    echo "coll_nb_hazards: failed runs:$failed"
fi
exit $status

#!/bin/sh
# Processes of two jobs in one communicator: 2 ranks spawn 2 more
# (MPI_Comm_spawn) and both sides merge the inter-communicator;
# test_coll_spawn checks MPI_Allreduce, MPI_Iallreduce and MPI_Bcast on the
# merged communicator bit for bit.  bufpool compares the settings digests
# of a communicator's members when it is made
# (ompi-mca-coll-bufpool/coll_bufpool_alike.h), here across the two jobs'
# modex data:
#   1. the children as their parents: bufpool serves the merged
#      communicator on all four (coll_bufpool_allreduce_calls grows);
#   2. the children with a coll_bufpool parameter of their own: bufpool
#      keeps out of it on all four, and every result is right.
set -u
status=0
failed=
run() { # ARGS...
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} --mca coll_bufpool_allreduce_algorithm rsag" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" 2 "$top_builddir/test/mpi/test_coll_spawn" \
        --children=2 "$@" </dev/null; then
        status=1
        failed="$failed
  $*"
    fi
}
run --expect-bufpool
run --expect-bufpool=none --child-env=OMPI_MCA_coll_bufpool_segment_size=64K
if [ $status != 0 ]; then
    echo "coll_spawn: failed runs:$failed"
fi
exit $status

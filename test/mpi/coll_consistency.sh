#!/bin/sh
# Every rank makes the same choice (docs/collectives.md): test_coll_consistency
# passes arguments that MPI lets ranks differ in (datatypes of the same
# signature, MPI_IN_PLACE where it is each rank's own, insignificant
# arguments at non-roots) in every form, each call followed by nonblocking
# collectives on the same communicator whose tags must still agree:
#   1. every case at 2, 3 and 4 processes with bufpool's defaults;
#   2. the same with bufpool serving every size (rules_default off): its
#      own algorithms, segmenting differently laid-out reductions;
#   3. the alltoall case at 16 processes pretending to be 2 hosts x 8
#      (coll_bufpool_test_host_map), where the default rows hand small
#      alltoalls back on Open MPI >= 4.1.5 and serve them on <= 4.1.4
#      (open-mpi/ompi#10488: MPI_ERR_IN_STATUS there before the fix).
# Before the fix, the 2-process MPI_Ialltoall hung (run-mpi-test.sh's
# timeout) and a user operation's frame of *len doubles crashed.
set -u
status=0
failed=
run() { # NP MCA ARGS...
    np=$1 mca=$2
    shift 2
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca" BUFPOOL_TEST_TIMEOUT=${BUFPOOL_TEST_TIMEOUT:-300} \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" "$top_builddir/test/mpi/test_coll_consistency" \
        "$@" </dev/null; then
        status=1
        failed="$failed
  np=$np $mca $*"
    fi
}
for np in ${BUFPOOL_TEST_NPS:-2 3 4}; do
    [ "$np" -ge 2 ] || continue
    run "$np" "" --case=all
    run "$np" "--mca coll_bufpool_rules_default off --mca coll_bufpool_segment_size 64K" --case=all
done
run 16 "--mca coll_bufpool_test_host_map 0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1" --case=alltoall
if [ $status != 0 ]; then
    echo "coll_consistency: failed runs:$failed"
fi
exit $status

#!/bin/sh
# Every named algorithm of every collective, forced with
# coll_bufpool_<coll>_algorithm, against the serial reference, with
# --expect-bufpool so that a run where bufpool handed everything back to the
# previous module fails.  Two segment sizes: the default, and the smallest
# (4K) so that the case counts of the suite cross many segment boundaries and
# every pipeline runs several segments deep.  Process counts 2, 3, 4 and 5
# cover powers of two and the rest (BUFPOOL_TEST_NPS overrides).  The
# 64 MiB scratch-bound check runs once per process count with allreduce
# rsag and ring.  coll_bufpool_max_requests 2 (the smallest bound) runs
# once per process count for every algorithm that honours it.  allreduce
# hier on one host runs auto's choice (matrix); its own code runs on hosts
# pretended with coll_bufpool_test_host_map (testing only): ranks
# alternating over 3 hosts (2+2+1 at 5 ranks, one per host at 2), blocks
# (0,0,1: 2+1, 3+1, 4+1 interleaved at 5), one rank per host, at 128K and
# 4K segments, depth 1, and the 64 MiB scratch-bound check.
set -u
. "$top_srcdir/test/mpi/collcheck-sweep.sh"

# collective:program:algorithms
matrix='
allreduce:test_coll_reduce_family:recursive_doubling rsag ring hier
reduce:test_coll_reduce_family:chain binary rsg
reduce_scatter:test_coll_reduce_family:pairwise ring
reduce_scatter_block:test_coll_reduce_family:pairwise ring
scan:test_coll_reduce_family:chain recursive_doubling
exscan:test_coll_reduce_family:chain recursive_doubling
bcast:test_coll_move_family:binomial chain scatter_allgather linear
allgather:test_coll_move_family:ring recursive_doubling direct
alltoall:test_coll_move_family:pairwise linear
gather:test_coll_move_family:binomial linear
scatter:test_coll_move_family:binomial linear
'
nps=${BUFPOOL_TEST_NPS:-2 3 4 5}
case ${BUFPOOL_TEST_QUICK:-0} in
    '' | 0) ;;
    *) nps=${BUFPOOL_TEST_NPS:-3} collcheck_full=0 ;; # make distcheck: one size
esac
status=0
runs=0
failed=

run() { # NP PROGRAM MCA ARGS...
    np=$1 program=$2 mca=$3
    shift 3
    runs=$((runs + 1))
    # mpirun reads stdin: keep it away from the loop's list.
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" "$top_builddir/test/mpi/$program" \
        "$@" </dev/null; then
        status=1
        failed="$failed
  np=$np $mca $*"
    fi
}

for np in $nps; do
    # Bounded scratch: pipeline_depth x segment_size = 4 x 128K.
    run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm rsag" \
        --expect-bufpool --colls=allreduce --smoke --expect-scratch-bound=524288
    # The ring at depth 1 (halved segments, one-segment chunks) within the
    # same bound, and every bounded algorithm at the smallest bound (2
    # requests in flight) with many segments per message.
    run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm ring" \
        --expect-bufpool --colls=allreduce --smoke --expect-scratch-bound=524288
    run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm ring \
--mca coll_bufpool_reduce_scatter_algorithm ring --mca coll_bufpool_reduce_scatter_block_algorithm ring \
--mca coll_bufpool_pipeline_depth 1 --mca coll_bufpool_segment_size 4K --mca coll_bufpool_max_requests 2" \
        --expect-bufpool --colls=allreduce,reduce_scatter,reduce_scatter_block --smoke
    run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm rsag \
--mca coll_bufpool_reduce_scatter_algorithm pairwise --mca coll_bufpool_reduce_scatter_block_algorithm pairwise \
--mca coll_bufpool_segment_size 4K --mca coll_bufpool_max_requests 2" \
        --expect-bufpool --colls=allreduce,reduce_scatter,reduce_scatter_block --smoke
    for bounded in bcast:linear bcast:chain allgather:direct alltoall:linear gather:linear \
        gather:binomial scatter:linear scatter:binomial; do
        run "$np" test_coll_move_family "--mca coll_bufpool_${bounded%%:*}_algorithm ${bounded#*:} \
--mca coll_bufpool_segment_size 4K --mca coll_bufpool_max_requests 2" \
            --expect-bufpool --colls="${bounded%%:*}" --smoke
    done
    hier="--mca coll_bufpool_allreduce_algorithm hier --mca coll_bufpool_test_host_map"
    level=
    if [ "$collcheck_full" = 0 ] && { [ "$np" -gt 3 ] || [ "${BUFPOOL_TEST_QUICK:-0}" != 0 ]; }; then
        level=--smoke
    fi
    for spec in 0,1,0,1,2:128K 0,1,0,1,2:4K 0,0,1:4K 0,1,2,3,4:4K; do
        # shellcheck disable=SC2086 # an empty level must vanish
        run "$np" test_coll_reduce_family "$hier ${spec%%:*} --mca coll_bufpool_segment_size ${spec#*:}" \
            --expect-bufpool --colls=allreduce $level
    done
    run "$np" test_coll_reduce_family "$hier 0,0,1 --mca coll_bufpool_segment_size 4K \
--mca coll_bufpool_pipeline_depth 1" --expect-bufpool --colls=allreduce --smoke
    run "$np" test_coll_reduce_family "$hier 0,1,0,1,2" \
        --expect-bufpool --colls=allreduce --smoke --expect-scratch-bound=524288
    if [ "$np" = 2 ]; then
        # At 2 ranks out of place the pairwise stream's segments are 8 x
        # segment_size (32K here, no scratch): counts around 64K bytes give
        # blocks on either side of that boundary.
        run 2 test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm rsag \
--mca coll_bufpool_segment_size 4K" --expect-bufpool \
            --colls=allreduce,reduce_scatter,reduce_scatter_block --segment-size=64K
    fi
    echo "$matrix" | while IFS=: read -r coll program algorithms; do
        [ -n "$coll" ] || continue
        for algorithm in $algorithms; do
            echo "$coll:$program:$algorithm"
        done
    done >"${TMPDIR:-/tmp}/coll_algorithms.$$"
    while IFS=: read -r coll program algorithm; do
        level=
        # Recursive doubling allgather exists for powers of two only; at
        # other sizes it hands the call back, which must still be correct.
        expect=--expect-bufpool
        if [ "$coll:$algorithm" = allgather:recursive_doubling ] && [ $((np & (np - 1))) -ne 0 ]; then
            expect=
        fi
        if [ "$collcheck_full" = 0 ] && { [ "$np" -gt 3 ] || [ "${BUFPOOL_TEST_QUICK:-0}" != 0 ]; }; then
            level=--smoke
        fi
        for segment in 128K 4K; do
            # shellcheck disable=SC2086 # an empty level must vanish
            run "$np" "$program" "--mca coll_bufpool_${coll}_algorithm $algorithm \
--mca coll_bufpool_segment_size $segment" --colls="$coll" $level $expect
        done
    done <"${TMPDIR:-/tmp}/coll_algorithms.$$"
    rm -f "${TMPDIR:-/tmp}/coll_algorithms.$$"
done

if [ $status -ne 0 ]; then
    echo "coll_algorithms: FAILED runs:$failed"
else
    echo "coll_algorithms: $runs runs passed"
fi
exit $status

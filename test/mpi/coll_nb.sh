#!/bin/sh
# coll/bufpool's nonblocking (MPI_I<coll>) and persistent (MPI_<coll>_init)
# forms against the serial reference (collcheck --form), with
# --expect-bufpool where bufpool serves every collective of the run (at 3
# processes and more: at 2, auto hands reduce and exscan back to libnbc,
# and those runs check libnbc's results with the same reference):
#   1. both families in both forms: 2 processes (smoke), 3 (world and
#      halves), 4 (smoke); every communicator kind and 1-8 processes with
#      BUFPOOL_TEST_FULL=1;
#   2. every named algorithm forced, at 3 processes with 4K segments, the
#      nonblocking and persistent forms by turns (both with FULL);
#   3. allreduce hier on pretended hosts, max_requests 2 with
#      --expect-requests-peak, and the 64 MiB MPI_Iallreduce (and
#      persistent) whose coll_bufpool_scratch_bytes_peak must stay within
#      pipeline_depth x segment_size (524288);
#   4. MPI_THREAD_MULTIPLE (test_coll_threads) and communicator life cycle
#      (test_coll_comms) in both forms;
#   5. test_coll_nb: a dozen collectives in flight at once on one and on
#      several communicators, with blocking ones among them, completed by
#      every completion call; communicators, datatypes and operations
#      freed in flight; MPI_Request_free and MPI_Cancel of active requests
#      refused.
set -u
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
status=0
failed=

run() { # NP PROGRAM MCA ARGS...
    np=$1 program=$2 mca=$3
    shift 3
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" "$top_builddir/test/mpi/$program" \
        "$@" </dev/null; then
        status=1
        failed="$failed
  np=$np $program $mca $*"
    fi
}

forms="nonblocking persistent"

# 1. The families.
if [ "$collcheck_full" = 1 ]; then
    for form in $forms; do
        for np in ${BUFPOOL_TEST_NPS:-1 2 3 4 8}; do
            expect=
            [ "$np" -lt 3 ] || expect=--expect-bufpool
            for program in test_coll_reduce_family test_coll_move_family; do
                # shellcheck disable=SC2086 # an empty expect must vanish
                run "$np" $program "" --form=$form $expect
            done
        done
    done
else
    for form in $forms; do
        for program in test_coll_reduce_family test_coll_move_family; do
            run 2 $program "" --form=$form --smoke
            run 3 $program "" --form=$form --comms=world,halves --expect-bufpool
            run 4 $program "" --form=$form --smoke --expect-bufpool
        done
    done
fi

# 2. Every algorithm, forced.
matrix='
allreduce:test_coll_reduce_family:recursive_doubling rsag ring hier
reduce:test_coll_reduce_family:chain binary rsg
reduce_scatter:test_coll_reduce_family:pairwise ring rhalving
reduce_scatter_block:test_coll_reduce_family:pairwise ring rhalving
scan:test_coll_reduce_family:chain recursive_doubling
exscan:test_coll_reduce_family:chain recursive_doubling
bcast:test_coll_move_family:binomial chain scatter_allgather linear
allgather:test_coll_move_family:ring recursive_doubling direct
alltoall:test_coll_move_family:pairwise linear
gather:test_coll_move_family:binomial linear
scatter:test_coll_move_family:binomial linear
'
turn=0
echo "$matrix" >"${TMPDIR:-/tmp}/coll_nb_matrix.$$"
while IFS=: read -r coll program algs; do
    [ -n "$coll" ] || continue
    for alg in $algs; do
        if [ "$collcheck_full" = 1 ]; then
            use=$forms
        else
            use=nonblocking
            [ $((turn % 2)) = 0 ] || use=persistent
        fi
        turn=$((turn + 1))
        expect=--expect-bufpool
        # allgather recursive_doubling hands a size that is not a power of
        # two back (and is then still checked).
        [ "$coll:$alg" != allgather:recursive_doubling ] || expect=
        # bufpool's bcast never writes the root's buffer (read-only here).
        [ "$coll" != bcast ] || expect="$expect --seal-bcast-root"
        for form in $use; do
            # shellcheck disable=SC2086 # an empty expect must vanish
            run 3 "$program" "--mca coll_bufpool_${coll}_algorithm $alg \
--mca coll_bufpool_segment_size 4K" --form=$form --colls="$coll" --comms=world,reversed --smoke $expect
        done
    done
done <"${TMPDIR:-/tmp}/coll_nb_matrix.$$"
rm -f "${TMPDIR:-/tmp}/coll_nb_matrix.$$"

# 3. hier on pretended hosts, a request bound, the scratch bound.
for form in $forms; do
    for hier in hier hier_node; do
        run 3 test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm $hier \
--mca coll_bufpool_test_host_map 0,1,0 --mca coll_bufpool_segment_size 4K" \
            --form=$form --colls=allreduce --comms=world --smoke --expect-bufpool
    done
    run 4 test_coll_reduce_family "--mca coll_bufpool_reduce_algorithm chain \
--mca coll_bufpool_reduce_scatter_algorithm pairwise --mca coll_bufpool_allreduce_algorithm ring \
--mca coll_bufpool_segment_size 4K --mca coll_bufpool_max_requests 2" --form=$form \
        --colls=reduce,reduce_scatter,allreduce --comms=world --smoke --expect-bufpool \
        --expect-requests-peak=2
    run 3 test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm rsag" --form=$form \
        --colls=allreduce --comms=world --smoke --expect-bufpool --expect-scratch-bound=524288
done

# 4. Threads and communicators.
for form in $forms; do
    run 3 test_coll_threads "" --form=$form
    run 3 test_coll_comms "" --form=$form
done

# 5. Several in flight, freed objects, refused frees.
for np in ${BUFPOOL_TEST_NPS:-2 3 4}; do
    [ "$np" -ge 2 ] || continue
    run "$np" test_coll_nb "" --form=nonblocking --expect-bufpool
done

if [ $status != 0 ]; then
    echo "coll_nb: failed runs:$failed"
fi
exit $status

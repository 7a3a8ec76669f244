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
#   4. processes set up differently (coll_bufpool_alike.h), through
#      test/mpi/rank-env.sh: a forced algorithm, a rules file or bufpool
#      itself on one rank only.  bufpool must stay out of every
#      communicator spanning them, on all ranks (--expect-bufpool=none on
#      world, its duplicate and its reversed split; the halves of 4 ranks
#      whose 2 ranks agree may use it), say so once, and every result must
#      be right.  Without the digest the first, second and fourth cases
#      hung (2026-12-02), as did a rank whose default rules failed to load
#      (test/reliability/fault_sweep.sh, class malloc).
#   5. the same setting given on one rank by the environment and on the
#      others by mpirun, coll_bufpool_verbose on one rank only, and the
#      same rules text at two paths: the same settings, so bufpool serves
#      (--expect-bufpool).
#   6. the lookup of a peer's settings that runs out of memory on one rank
#      only (libfaultinject's class pmix_get on rank 1): that rank cannot
#      tell whether the others serve, so the job must stop with bufpool's
#      message (help topic comm-out-of-memory), not hang.  From Open MPI
#      5.0 only: 4.1's lookups go through its pmix framework, whose calls
#      the interposer does not count as ours (the case says so).  With that
#      rank kept out alone (as before 2026-12-02) the job hung on 5.0.10.
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

# 4 and 5: settings per rank.  The forced algorithms serve every call where
# the settings agree, so --expect-bufpool holds there.
rules=$(mktemp "${TMPDIR:-/tmp}/bufpool-alike.XXXXXX") || exit 1
copy=$(mktemp "${TMPDIR:-/tmp}/bufpool-alike.XXXXXX") || exit 1
trap 'rm -f "$rules" "$copy"' EXIT
printf 'bufpool-rules 1\nallreduce alg=ring\n' >"$rules"
cp "$rules" "$copy"
forced="--mca coll_bufpool_allreduce_algorithm rsag --mca coll_bufpool_reduce_algorithm binary"
apart() { # NP EXPECT 'RANK 0 SETTINGS' 'OTHER SETTINGS' [MCA]
    np=$1 expect=$2 first=$3 rest=$4 mca=${5:-}
    log=$(mktemp "${TMPDIR:-/tmp}/bufpool-alike-log.XXXXXX") || exit 1
    BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $forced $mca" sh "$top_srcdir/test/mpi/run-mpi-test.sh" \
        "$np" "$top_srcdir/test/mpi/rank-env.sh" "$first" "$rest" \
        "$top_builddir/test/mpi/test_coll_reduce_family" --colls=allreduce,reduce --smoke \
        --comms=world,dup,reversed "$expect" </dev/null >"$log" 2>&1
    rc=$?
    cat "$log"
    said=$(grep -c 'are not set up alike' "$log")
    if [ $rc != 0 ]; then
        status=1
        failed="$failed
  np=$np apart: rank 0 '$first', others '$rest' $mca"
    elif [ "$expect" = --expect-bufpool=none ] && [ "$said" = 0 ]; then
        status=1
        failed="$failed
  np=$np apart: rank 0 '$first', others '$rest': no 'not set up alike' message"
    elif [ "$expect" = --expect-bufpool ] && [ "$said" != 0 ]; then
        status=1
        failed="$failed
  np=$np alike: rank 0 '$first', others '$rest': said 'not set up alike'"
    fi
    rm -f "$log"
}
none=BUFPOOL_TEST_UNUSED=1
apart 2 --expect-bufpool=none $none OMPI_MCA_coll_bufpool_allreduce_algorithm=previous
apart 3 --expect-bufpool=none OMPI_MCA_coll_bufpool_reduce_algorithm=chain $none
apart 2 --expect-bufpool=none $none "OMPI_MCA_coll_bufpool_rules_file=$rules"
apart 3 --expect-bufpool=none $none OMPI_MCA_coll=^bufpool
apart 2 --expect-bufpool OMPI_MCA_coll_bufpool_segment_size=64K $none \
    "--mca coll_bufpool_segment_size 64K"
apart 2 --expect-bufpool OMPI_MCA_coll_bufpool_verbose=1 $none
apart 2 --expect-bufpool "OMPI_MCA_coll_bufpool_rules_file=$rules" \
    "OMPI_MCA_coll_bufpool_rules_file=$copy"

# 6: a lookup lost on one rank.
lost_lookup() {
    lib="$top_builddir/test/reliability/.libs/libfaultinject.so"
    case "${BUFPOOL_TEST_MCA:-}" in
    *LD_PRELOAD*)
        echo "coll_consistency: lost lookup: skipped (the runs preload a runtime already)"
        return
        ;;
    esac
    if [ ! -f "$lib" ]; then
        status=1
        failed="$failed
  lost lookup: $lib is missing (make check builds it)"
        return
    fi
    log=$(mktemp "${TMPDIR:-/tmp}/bufpool-lost-log.XXXXXX") || exit 1
    rep=$(mktemp "${TMPDIR:-/tmp}/bufpool-lost-report.XXXXXX") || exit 1
    BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} -x LD_PRELOAD=$lib -x FAULT_FUNC=pmix_get -x FAULT_RANK=1
        -x FAULT_COUNT=-1 -x FAULT_REPORT=$rep" BUFPOOL_TEST_TIMEOUT=120 \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" 2 "$top_builddir/test/mpi/test_coll_reduce_family" \
        --colls=allreduce --smoke </dev/null >"$log" 2>&1
    rc=$?
    cat "$log"
    # The report is written at exit: a job that stopped has none from
    # rank 1, so a stop is read from the log.
    injected=$(awk '/class=pmix_get/ { for (i = 1; i <= NF; i++) if (index($i, "injected=") == 1)
        s += substr($i, 10) } END { print s + 0 }' "$rep")
    if grep -q 'TIMEOUT' "$log"; then
        status=1
        failed="$failed
  lost lookup: rank 1's lookups failed and the job hung"
    elif [ $rc != 0 ]; then
        if grep -q "looking up its members' settings" "$log"; then
            echo "coll_consistency: lost lookup: rank 1's lookup failed, the job stopped with the message"
        else
            status=1
            failed="$failed
  lost lookup: the job stopped without bufpool's message"
        fi
    elif [ "$injected" = 0 ]; then
        echo "coll_consistency: lost lookup: no PMIx_Get of coll/bufpool's to fail (Open MPI 4.1)"
    else
        status=1
        failed="$failed
  lost lookup: rank 1's lookups failed ($injected) and the job did not stop"
    fi
    rm -f "$log" "$rep"
}
lost_lookup

if [ $status != 0 ]; then
    echo "coll_consistency: failed runs:$failed"
fi
exit $status

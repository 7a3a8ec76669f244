#!/bin/sh
# The collcheck suite must be able to fail.  Each run below corrupts one
# result on purpose (--inject-fault) or asks for proof of coll/bufpool with
# coll/bufpool excluded, and must exit non-zero with the matching diagnostic.
# Extra settings of the caller (BUFPOOL_TEST_MCA/ARGS) are left out: this
# tests the checks, not the component.
set -u
status=0
log=${TMPDIR:-/tmp}/coll_selftest.$$
trap 'rm -f "$log"' EXIT

# expect_failure MCA DIAGNOSTIC NP PROGRAM ARGS...
expect_failure() {
    mca=$1
    diagnostic=$2
    np=$3
    program=$4
    shift 4
    BUFPOOL_TEST_MCA=$mca BUFPOOL_TEST_ARGS='' \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" "$top_builddir/test/mpi/$program" \
        --smoke --comms=world --max-reports=3 "$@" >"$log" 2>&1
    rc=$?
    what="$program $mca $*"
    if [ $rc -eq 0 ]; then
        echo "selftest FAILED: $what passed although it had to fail:"
        status=1
    elif ! grep -q "^FAIL .*$diagnostic" "$log"; then
        echo "selftest FAILED: $what failed (status $rc) without reporting '$diagnostic':"
        status=1
    else
        echo "selftest ok: $what failed as it must, reporting '$diagnostic'"
        return
    fi
    cat "$log"
}

for program in test_coll_reduce_family test_coll_move_family; do
    colls=--colls=allreduce
    if [ $program = test_coll_move_family ]; then
        colls=--colls=bcast,gather
    fi
    expect_failure '' "elements differ; first at" 3 $program $colls --inject-fault=value
    expect_failure '' "gap byte [0-9]* of element [0-9]* was written" 3 $program $colls \
        --inject-fault=gap
    expect_failure '' "written past its end" 3 $program $colls --inject-fault=guard
done
# The nonblocking and persistent forms check as strictly.
for form in nonblocking persistent; do
    expect_failure '' "elements differ; first at" 3 test_coll_reduce_family --colls=allreduce \
        --form=$form --inject-fault=value
    expect_failure '' "written past its end" 3 test_coll_move_family --colls=gather \
        --form=$form --inject-fault=guard
done
# coll_bufpool_nonblocking off: libnbc serves MPI_Iallreduce (the results
# are still right), so coll_bufpool_iallreduce_calls must not grow.
expect_failure '--mca coll_bufpool_nonblocking off' "coll_bufpool_iallreduce_calls did not grow" \
    3 test_coll_reduce_family --colls=allreduce --form=nonblocking --expect-bufpool
expect_failure '--mca coll_bufpool_persistent off' "coll_bufpool_allreduce_init_calls did not grow" \
    3 test_coll_reduce_family --colls=allreduce --form=persistent --expect-bufpool
# libnbc's persistent requests leak their scratch (Open MPI 4.1.4 to
# 6.0.x): the memory check must see it.
expect_failure '--mca coll ^bufpool' "grew by" 2 test_coll_persist_mem --cycles=300
# Without coll/bufpool its pvars do not exist: --expect-bufpool must fail.
expect_failure '--mca coll ^bufpool' "coll_bufpool_allreduce_calls" 2 test_coll_reduce_family \
    --colls=allreduce --expect-bufpool
exit $status

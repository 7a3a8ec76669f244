#!/bin/sh
# MPI 4 sessions (Open MPI 5.0 and 6.0): collectives on a communicator made
# from a session's mpi://WORLD process set (MPI_Session_init,
# MPI_Group_from_session_pset, MPI_Comm_create_from_group), against the
# serial reference, in two settings (collcheck's --session):
#   - without MPI_Init at all (--session): MPI_COMM_WORLD and MPI_COMM_SELF
#     do not exist, bufpool is opened by the session's instance and closed
#     by its finalize;
#   - beside MPI_Init's world (--session=beside-world): two MPI instances
#     in one process, the session finalized before MPI_Finalize.
# In each, both families in the blocking, nonblocking and persistent forms
# with every node algorithm named (the node configuration, 3 ranks) and
# --expect-node and --expect-bufpool: bufpool is selected on such a
# communicator, serves its calls, and sets a shared segment up there; and
# the reduction family under bufpool as installed (the default
# configuration, its rows' warm-up included) at 2 ranks.
# BUFPOOL_TEST_QUICK=1 (check-all.sh's Open MPI 5.0 and 6.0 steps): the
# same runs at collcheck's --smoke level (what the session changes is the
# set-up and the teardown; coll_node checks the algorithms' matrix).
# Not here: MPI_Session_init again after the last session's finalize, which
# MPI allows but stock Open MPI 5.0.10 and 6.0.x do not survive
# (docs/reliability.md).  Where the MPI has no sessions (Open MPI 4.1) the
# test is skipped (77).
set -u
. "$top_srcdir/test/mpi/configs.sh"
status=0
failed=
runs=0
runner=$top_srcdir/test/mpi/run-mpi-test.sh

run() { # MCA NP FAMILY ARGS...
    mca=$1 np=$2 family=$3
    shift 3
    runs=$((runs + 1))
    out=$(BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca" sh "$runner" "$np" \
        "$top_builddir/test/mpi/test_coll_${family}_family" "$@" </dev/null 2>&1)
    rc=$?
    if printf '%s\n' "$out" | grep -q 'needs MPI 4 sessions'; then
        printf '%s\n' "$out" | grep 'needs MPI 4 sessions' | head -n 1
        echo "coll_sessions: SKIP: this MPI has no sessions"
        exit 77
    fi
    if [ $rc != 0 ]; then
        printf '%s\n' "$out" | tail -n 20
        status=1
        failed="$failed
  np=$np $family $*: exit $rc"
    else
        printf '%s\n' "$out" | grep -E '(PASS|FAIL):' | tail -n 1
    fi
}

# collcheck_quick: BUFPOOL_TEST_QUICK read, as by the other sweeps.
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
level=
[ "$collcheck_quick" = 0 ] || level=--smoke
node=$(bufpool_config_mca node "$(bufpool_node_bcast)")
default=$(bufpool_config_mca default)
for session in --session --session=beside-world; do
    for family in reduce move; do
        for form in blocking nonblocking persistent; do
            # shellcheck disable=SC2086 # an empty level must vanish
            run "$node" 3 $family $session --form=$form --expect-node --expect-bufpool $level
        done
    done
    # shellcheck disable=SC2086
    run "$default" 2 reduce $session $level
done

if [ $status != 0 ]; then
    echo "coll_sessions: FAIL:$failed"
else
    echo "coll_sessions: PASS: $runs runs"
fi
exit $status

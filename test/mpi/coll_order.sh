#!/bin/sh
# shellcheck disable=SC2154 # top_srcdir, top_builddir: set by make check
# bufpool beside other coll components, above and below them in priority,
# over the communicator life cycle (test_coll_comms: many communicators
# created, used and freed, several alive at once), at 3 processes, results
# checked.  On Open MPI 6.0 every module installs its own functions in
# enable and restores what was below it in disable, in the reverse order:
# a module that saved or restored the wrong pointers computes wrongly,
# calls a freed module or crashes here.  Peers raised into play (those the
# running Open MPI has):
#   adapt (every series; priority 0 by default),
#   acoll (6.0; priority 0 and communicators of 16 ranks and more by
#          default: its threshold is lowered to 2),
#   xhc   (6.0; priority 0; it brings bcast, barrier, allreduce and reduce,
#          and above bufpool runs only with collectives that avoid its
#          reductions, which jump to address 0 without XPMEM from 16 KiB:
#          smsc/cma has no map function).
# Above bufpool (priority 50) the peer serves what it implements and bufpool
# the rest; below (39, above tuned's 30) bufpool serves, with bcast's linear
# algorithm forced and --expect-bufpool proving it stayed in front, and hands
# its calls back to the peer.  Exits 77 (skip) without ompi_info.
set -u
run="$top_srcdir/test/mpi/run-mpi-test.sh"
prog="$top_builddir/test/mpi/test_coll_comms"
if [ -z "${OMPI_INFO:-}" ] || ! "$OMPI_INFO" >"${TMPDIR:-/tmp}/coll_order.$$" 2>/dev/null; then
    echo "SKIP: no ompi_info to list the coll components"
    rm -f "${TMPDIR:-/tmp}/coll_order.$$"
    exit 77
fi
peers=
for peer in adapt acoll xhc; do
    if grep -q "MCA coll: $peer " "${TMPDIR:-/tmp}/coll_order.$$"; then
        peers="$peers $peer"
    fi
done
rm -f "${TMPDIR:-/tmp}/coll_order.$$"
echo "coll_order: peers here:${peers:- none}"
status=0
runs=0

job() { # MCA ARGS...: one 3-process job, smoke level
    job_mca=$1
    shift
    runs=$((runs + 1))
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $job_mca" sh "$run" 3 "$prog" --smoke "$@" </dev/null; then
        echo "coll_order: FAILED: $job_mca $*"
        status=1
    fi
}

for peer in $peers; do
    mca=
    above_colls=all
    case $peer in
        acoll) mca="--mca coll_acoll_comm_size_thresh 2" ;;
        xhc) above_colls=bcast,alltoall,scatter,gather,scan,exscan,reduce_scatter,reduce_scatter_block ;;
    esac
    job "$mca --mca coll_${peer}_priority 50" --colls=$above_colls
    job "$mca --mca coll_${peer}_priority 39"
    job "$mca --mca coll_${peer}_priority 39 --mca coll_bufpool_bcast_algorithm linear" \
        --colls=bcast --comms=world,dup --expect-bufpool
done
[ -n "$peers" ] || exit 77
echo "coll_order: $runs jobs, $([ $status = 0 ] && echo all passed || echo some FAILED)"
exit $status

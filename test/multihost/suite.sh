#!/bin/sh
# Correctness across emulated hosts: the collcheck suites (test/mpi) run
# through test/multihost/mpirun.sh on a cluster of network namespaces that
# this script builds and always tears down (trap), even when a job fails.
#
#   suite.sh [--quick|--full]
#
# --quick (default; make check): reduction and data-movement families at 4
#   ranks placed 3+1 on 2 hosts, communicator splits at 5 ranks on 3 hosts
#   (2+2+1, ranks alternating over hosts), 16 ranks on 4 hosts, and allreduce
#   hier forced at 4 ranks 3+1 and 5 ranks 2+2+1 alternating, hier_node
#   forced at 4 ranks 2+2 alternating and 3+1, the guards of stock bugs
#   at 4 ranks 2+2 (coll_reduce_guard.sh), and
#   bufpool-tune --quick through the cluster's mpirun on 2 hosts x 1 rank
#   (test/tune/tune_multihost.sh): a few minutes.
# --guards (check-all's Open MPI 5.0 and 6.0 steps; BUFPOOL_MH_MODE=guards
#   does the same for make check): where those versions differ across
#   hosts, han selected below bufpool: the guards of stock bugs at 4 ranks
#   2+2 and 3+1 (coll_reduce_guard.sh), and hier_node forced at 4 ranks
#   2+2 alternating, whose exchange sends from segment ranges registered
#   with UCX or libfabric there.
# --full (by hand): every suite (reduce, move, comms, algorithm forcing) on 2,
#   3 and 4 hosts with placements 3+1, 2+2+1 and 1 per host, consecutive and
#   alternating rank placement, 16, 32 and 64 ranks (oversubscribed), and
#   bufpool-tune on 2 hosts x 1 rank.
# Needs root and network namespaces; prints SKIP and exits 77 (automake's
# skip status) otherwise.  Environment as for test/mpi (top_srcdir,
# top_builddir, OMPI_SYSTEM_COMPONENT_DIR; make check exports them).
set -u
mode=quick
case ${1:-} in
    --full) mode=full ;;
    --guards) mode=guards ;;
    --quick | '') ;;
    *)
        echo "usage: $0 [--quick|--full|--guards]" >&2
        exit 2
        ;;
esac
[ "${BUFPOOL_TEST_FULL:-0}" = 0 ] || mode=full
[ "${BUFPOOL_MH_MODE:-}" != guards ] || mode=guards

srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
: "${top_builddir:?top_builddir must name the build tree (make check sets it)}"
export top_srcdir=$srcdir top_builddir
cluster="$srcdir/test/multihost/cluster.sh"

skip() {
    echo "SKIP: multi-host suite: $*"
    exit 77
}
# make distcheck (BUFPOOL_TEST_QUICK=1) only proves the tarball's tests
# build and start; make check in the source tree runs this suite.
[ "${BUFPOOL_TEST_QUICK:-0}" = 0 ] || skip "BUFPOOL_TEST_QUICK is set (distcheck); make check runs it"
[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
command -v unshare >/dev/null 2>&1 || skip "unshare not installed"
# A private prefix per run so that two suites never share namespaces.
BUFPOOL_CLUSTER_PREFIX=${BUFPOOL_CLUSTER_PREFIX:-bpt$$}
export BUFPOOL_CLUSTER_PREFIX
probe=$BUFPOOL_CLUSTER_PREFIX-probe
ip netns add "$probe" >/dev/null 2>&1 || skip "cannot create network namespaces here (container without CAP_SYS_ADMIN?)"
ip netns del "$probe"

trap 'sh "$cluster" down >/dev/null 2>&1' EXIT
trap 'exit 1' INT TERM HUP

# The build tree's mpirun (make check exports MPIRUN: Debian's, or Open MPI
# 5's for a --with-ompi build) is what the wrapper launches.
BUFPOOL_MH_MPIRUN=${BUFPOOL_MH_MPIRUN:-${MPIRUN:-mpirun}}
MPIRUN="$srcdir/test/multihost/mpirun.sh"
export MPIRUN BUFPOOL_MH_MPIRUN
status=0
runs=0
failed=
log=${TMPDIR:-/tmp}/multihost-suite.$$.log

# run HOSTS PLACEMENT MAP NPS SCRIPT [TEST_ARGS [MCA]]: one test/mpi script across hosts.
run() {
    hosts=$1 placement=$2 map=$3 nps=$4 script=$5 args=${6:-} mca=${7:-}
    sh "$cluster" up "$hosts" >/dev/null || {
        echo "multihost: cannot build a $hosts-host cluster" >&2
        exit 1
    }
    runs=$((runs + 1))
    start=$(date +%s)
    if BUFPOOL_MH_PLACEMENT=$placement BUFPOOL_MH_MAP=$map BUFPOOL_TEST_NPS=$nps \
        BUFPOOL_TEST_ARGS="${BUFPOOL_TEST_ARGS:-} $args" BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca" \
        sh "$srcdir/test/mpi/$script" </dev/null >"$log" 2>&1; then
        result=PASS
    else
        result=FAIL
        status=1
        failed="$failed
  $hosts hosts placement $placement map-by $map np $nps $script $args $mca"
        tail -n 40 "$log"
    fi
    checks=$(grep -o 'PASS: [0-9]* case checks' "$log" | awk '{s += $2} END {print s + 0}')
    what="$checks case checks"
    # test_coll_reduce_guard counts the calls of its user operation instead.
    guarded=$(grep -o '[0-9]* calls of the user operation guarded, [0-9]* not: PASS' "$log" |
        awk '{s += $1} END {print s + 0}')
    [ "$guarded" = 0 ] || what="$guarded calls of a user operation guarded"
    echo "multihost: $result: $script${mca:+ ($mca)} on $hosts hosts, placement $placement, map-by $map, np $nps: $what, $(($(date +%s) - start)) s"
    rm -f "$log"
}

# bufpool-tune through the cluster's mpirun, 2 hosts x 1 rank
# (test/tune/tune_multihost.sh: a quick run, its file loaded in a job).
tune_run() {
    sh "$cluster" up 2 >/dev/null || {
        echo "multihost: cannot build a 2-host cluster" >&2
        exit 1
    }
    runs=$((runs + 1))
    start=$(date +%s)
    if BUFPOOL_MH_PLACEMENT=1,1 BUFPOOL_MH_MAP=slot sh "$srcdir/test/tune/tune_multihost.sh" \
        </dev/null >"$log" 2>&1; then
        result=PASS
    else
        result=FAIL
        status=1
        failed="$failed
  2 hosts placement 1,1 bufpool-tune (test/tune/tune_multihost.sh)"
        tail -n 40 "$log"
    fi
    checks=$(grep -c '^ok: ' "$log")
    echo "multihost: $result: bufpool-tune --quick on 2 hosts x 1 rank: $checks checks, $(($(date +%s) - start)) s"
    rm -f "$log"
}

hiernode="--mca coll_bufpool_allreduce_algorithm hier_node --mca coll_bufpool_segment_size 4K"
if [ $mode = guards ]; then
    # han selects itself across hosts from 5.0 (4.1 has it off).
    case $("$BUFPOOL_MH_MPIRUN" --version 2>/dev/null | head -n 1) in
        *" 4."*) BUFPOOL_TEST_HAN_BELOW=0 ;;
        *) BUFPOOL_TEST_HAN_BELOW=1 ;;
    esac
    export BUFPOOL_TEST_HAN_BELOW
    run 2 2,2 slot 4 coll_reduce_guard.sh
    run 2 3,1 slot 4 coll_reduce_guard.sh
    run 2 2,2 node 4 coll_reduce.sh "--colls=allreduce --expect-bufpool --expect-node" "$hiernode"
elif [ $mode = quick ]; then
    tune_run
    run 2 3,1 slot 4 coll_reduce.sh
    run 3 2,2,1 node 5 coll_move.sh
    run 3 2,2,1 node 5 coll_comms.sh
    run 4 1,1,1,1 node 16 coll_reduce.sh --smoke
    # allreduce hier across real hosts: uneven blocks, ranks alternating.
    hier="--mca coll_bufpool_allreduce_algorithm hier --mca coll_bufpool_segment_size 4K"
    run 2 3,1 slot 4 coll_reduce.sh "--colls=allreduce --expect-bufpool" "$hier"
    run 3 2,2,1 node 5 coll_reduce.sh "--colls=allreduce --expect-bufpool --smoke" "$hier"
    # allreduce hier_node across real hosts: 2 x 2 alternating (each rank
    # exchanges its slices with its peer on the other host, every host's
    # segment its own), and 3+1 (the leaders exchange).
    run 2 2,2 node 4 coll_reduce.sh "--colls=allreduce --expect-bufpool --expect-node" "$hiernode"
    run 2 3,1 slot 4 coll_reduce.sh "--colls=allreduce --expect-bufpool --smoke" "$hiernode"
    # The guards across hosts, every allreduce and reduce handed back (on
    # 5.0 and 6.0 to han: its allreduce and reduce guarded at every size).
    run 2 2,2 slot 4 coll_reduce_guard.sh
else
    for spec in 2:3,1 3:2,2,1 4:1,1,1,1; do
        hosts=${spec%%:*} placement=${spec#*:}
        for map in slot node; do
            run "$hosts" "$placement" $map "2 3 4 5" coll_reduce.sh
            run "$hosts" "$placement" $map "2 3 4 5" coll_move.sh
            run "$hosts" "$placement" $map "2 3 4 5 8" coll_comms.sh
        done
        run "$hosts" "$placement" slot "${BUFPOOL_MH_ALG_NPS:-3 4}" coll_algorithms.sh
        run "$hosts" "$placement" node "2 3 4 5" coll_reduce.sh "--colls=allreduce --expect-bufpool" \
            "--mca coll_bufpool_allreduce_algorithm hier"
    done
    tune_run
    for np in 16 32 64; do
        run 4 1,1,1,1 node $np coll_reduce.sh --smoke
        run 4 2,2,1,1 slot $np coll_move.sh --smoke
        run 4 1,1,1,1 node $np coll_comms.sh --smoke
    done
fi

if [ $status = 0 ]; then
    echo "multihost: all $runs runs passed ($mode)"
else
    echo "multihost: FAILED ($mode):$failed"
fi
exit $status

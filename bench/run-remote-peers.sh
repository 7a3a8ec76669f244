#!/bin/sh
# bufpool at its package defaults against Open MPI 6.0's own components on
# one host of many cores: tuned, acoll, xhc (without XPMEM its reductions
# only up to 4 KiB) and the copy floor, every collective, 4 B to 64 MiB
# (4 MiB for the collectives whose buffers grow with the ranks), in one
# bench/coll_latency job per collective (configurations alternate size by
# size: ratios are within one job), at NP ranks, then the nonblocking form
# against libnbc, then NP/2 ranks.  Runs from the bundle of
# `scripts/bundle-remote.sh _build/main _build/ompi6` (the Open MPI prefix
# /opt/ompi6 and the build configured against it); OMPI_PREFIX=/opt/ompi5
# in the environment runs 5.0 from a bundle of _build/ompi5 (which has
# neither acoll nor xhc: coll_latency says so and measures the others).
# Correctness first: both test families at NP ranks with the defaults and
# with node forced, and the fuzzer's node configuration.  CSVs and the log
# go into OUT.
#   usage: bench/run-remote-peers.sh OUT [NP]   (from the repository root)
# BUDGET_S in the environment (default 600): no job starts after that many
# seconds, so a lent machine's time ends with the results written so far.
# A job that fails (a peer that crashes) is noted in the log; the next goes on.
# COLLS (default: every collective) and FORMS (default "blocking nonblocking")
# narrow the timings at NP ranks, HALF=0 leaves NP/2 out, CHECK=0 the
# correctness runs.
set -u
out=$1
np=${2:-16}
budget=${BUDGET_S:-600}
start=$(date +%s)
mkdir -p "$out"
log=$out/run.log
exec >"$log" 2>&1
set -x
prefix=${OMPI_PREFIX:-/opt/ompi6}
name=$(basename "$prefix")
b=/tmp/b-$name
tar -C / --skip-old-files -xzf .dev/ompi-root.tar.gz && ldconfig
tar -C / -xzf ".dev/prefix-$name.tar.gz"
mkdir -p "$b" && tar -C "$b" -xzf ".dev/build-$name.tar.gz"
for v in $(env | sed -n 's/^\(OMPI_MCA_[^=]*\|PMIX_MCA_[^=]*\|PRTE_MCA_[^=]*\)=.*/\1/p'); do
    unset "$v"
done
export OMPI_MCA_mca_base_component_path=$prefix/lib/openmpi:$b/components
export PRTE_MCA_prte_allow_run_as_root=1
# acoll takes communicators from this size (16 by default): NP/2 too.
export OMPI_MCA_coll_acoll_comm_size_thresh=2
# prterun needs a launch agent to select its ssh component even on one host.
command -v ssh >/dev/null 2>&1 || export PRTE_MCA_plm_ssh_agent=false
nproc
uname -a
grep -m2 -E "model name|cache size" /proc/cpuinfo
# over WHAT: true, saying that WHAT does not run, once the budget is spent.
over() {
    [ $(($(date +%s) - start)) -ge "$budget" ] && echo "# budget of $budget s spent: $1 not run"
}
mpirun="timeout 240 $prefix/bin/mpirun --allow-run-as-root --oversubscribe --bind-to core \
--mca op ^avx"
$mpirun -np 2 $b/coll_latency -c allreduce -m 8:8 -C default,bufpool -i 10 -x 2 ||
    mpirun="timeout 240 $prefix/bin/mpirun --allow-run-as-root --oversubscribe --bind-to none \
--mca op ^avx"
$mpirun -np "$np" $b/coll_latency -C default,bufpool,tuned,acoll,xhc --list-configs -c all
node="--mca coll_bufpool_min_size 0 --mca coll_bufpool_allreduce_algorithm node \
--mca coll_bufpool_reduce_algorithm node --mca coll_bufpool_bcast_algorithm node \
--mca coll_bufpool_allgather_algorithm node --mca coll_bufpool_barrier_algorithm node"
# The defaults hand some calls back (their rows): no --expect-bufpool there.
[ "${CHECK:-1}" = 0 ] || for form in blocking nonblocking; do
    over correctness || $mpirun -np "$np" $b/test_coll_reduce_family --form=$form --smoke
    over correctness || $mpirun -np "$np" $b/test_coll_move_family --form=$form --smoke
    over correctness || $mpirun -np "$np" $node $b/test_coll_reduce_family \
        --colls=allreduce,reduce --form=$form --smoke --expect-bufpool --expect-node
done
[ "${CHECK:-1}" = 0 ] || over fuzz || $mpirun -np "$np" --mca coll_bufpool_priority 90 \
    --mca coll_bufpool_rules_default off $node $b/coll_fuzz --seed 21 --seeds 4
# peers N FORM CONFIGS: one job per collective, the large-buffer ones to 4 MiB.
peers() {
    for c in ${COLLS:-allreduce bcast reduce barrier allgather reduce_scatter_block \
        reduce_scatter alltoall gather scatter scan exscan}; do
        case $c in
        barrier) sizes=8:8 ;;
        allgather | alltoall | gather | scatter | reduce_scatter) sizes=4:4M ;;
        *) sizes=4:64M ;;
        esac
        cfgs=$3
        [ "$c" != barrier ] || cfgs=$(echo "$cfgs" | sed 's/,floor//')
        over "$c np=$1 $2" || $mpirun -np "$1" $b/coll_latency -C "$cfgs" -c $c -m $sizes \
            --size-factor 4 -r 3 -b 256M -M 2G -F "$2" --point-timeout 60 \
            --progress "$out/progress" -o "$out/peers.csv" -t "$name np=$1 $2" ||
            echo "# job failed: $c np=$1 $2 (last point: $(cat "$out/progress" 2>/dev/null))"
    done
}
for form in ${FORMS:-blocking nonblocking}; do
    case $form in
    blocking) peers "$np" blocking default,bufpool,tuned,acoll,xhc,floor ;;
    *) peers "$np" "$form" default,bufpool ;;
    esac
done
[ "${HALF:-1}" = 0 ] || peers $((np / 2)) blocking default,bufpool,tuned,acoll,xhc,floor
ls /dev/shm
echo "# done in $(($(date +%s) - start)) s"

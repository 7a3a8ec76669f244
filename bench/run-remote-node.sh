#!/bin/sh
# The node algorithms on a machine of many cores, from the bundle of
# scripts/bundle-remote.sh (Debian's Open MPI 4.1.4 and this build): first
# correctness at NP ranks (both families with node forced, three forms,
# --expect-node; the fuzzer's node configuration), then
# bench/coll_latency -C default,bufpool at NP and NP/2 ranks, 4 B to 4 KiB,
# once with node forced and once with the package's defaults, CSVs and logs
# into OUT.  Ratios are within one job.
#   usage: bench/run-remote-node.sh OUT [NP]   (from the repository root)
set -u
out=$1
np=${2:-16}
mkdir -p "$out"
log=$out/run.log
exec >"$log" 2>&1
set -x
tar -C / --skip-old-files -xzf .dev/ompi-root.tar.gz && ldconfig
mkdir -p /tmp/b && tar -C /tmp/b -xzf .dev/build.tar.gz
for v in $(env | sed -n 's/^\(OMPI_MCA_[^=]*\|PMIX_MCA_[^=]*\)=.*/\1/p'); do unset "$v"; done
export OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:/tmp/b/components
nproc
uname -a
head -30 /proc/cpuinfo | grep -E "model name|cache size"
# Single copy is for messages above vader's eager limit (4 KiB), beyond
# what these points measure; off, the run does not depend on CMA.
mpirun="timeout 300 /usr/bin/orterun --allow-run-as-root --oversubscribe --bind-to core \
--mca plm isolated --mca op ^avx --mca btl_vader_single_copy_mechanism none"
node="--mca coll_bufpool_min_size 0 --mca coll_bufpool_allreduce_algorithm node \
--mca coll_bufpool_reduce_algorithm node --mca coll_bufpool_bcast_algorithm node \
--mca coll_bufpool_allgather_algorithm node"
$mpirun -np 2 /tmp/b/coll_latency -c allreduce -m 8:8 -C default,bufpool -i 10 -x 2 || \
    mpirun="timeout 300 /usr/bin/orterun --allow-run-as-root --oversubscribe --bind-to none \
--mca plm isolated --mca op ^avx --mca btl_vader_single_copy_mechanism none"
for form in blocking nonblocking persistent; do
    $mpirun -np "$np" $node /tmp/b/test_coll_reduce_family --colls=allreduce,reduce \
        --form=$form --smoke --expect-bufpool --expect-node
    $mpirun -np "$np" $node /tmp/b/test_coll_move_family --colls=bcast,allgather \
        --form=$form --smoke --expect-bufpool --expect-node
done
$mpirun -np "$np" $node --mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off \
    /tmp/b/coll_fuzz --seed 11 --seeds 10
for n in "$np" $((np / 2)); do
    for form in blocking nonblocking; do
        $mpirun -np "$n" $node /tmp/b/coll_latency -c allreduce,reduce,bcast,allgather \
            -C default,bufpool -m 4:4K --size-factor 4 -r 5 -F $form \
            -o "$out/node.csv" -t "node np=$n $form"
        $mpirun -np "$n" /tmp/b/coll_latency -c allreduce,reduce,bcast,allgather \
            -C default,bufpool -m 4:4K --size-factor 4 -r 5 -F $form \
            -o "$out/defaults.csv" -t "defaults np=$n $form"
    done
done
ls /dev/shm

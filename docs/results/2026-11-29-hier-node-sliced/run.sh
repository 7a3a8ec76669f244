#!/bin/sh
# allreduce hier_node (on hosts of one size: every rank of a host exchanges
# its slice of each round with its peers, a batch of rounds at once) against
# hier on the emulated cluster (2 network namespaces as hosts, TCP between
# them, test/multihost/), 2 hosts x 2 ranks on the project's 2-vCPU machine
# (oversubscribed: mpi_yield_when_idle 1 through the cluster's mpirun), Open
# MPI 4.1.4: coll_latency -C default,bufpool with each algorithm forced in
# its own job, the jobs alternating ROUNDS times, 16 KiB to 4 MiB by 4,
# every result checked.  With OLD_BUILD (a build directory of an earlier
# commit) a third job runs that build's hier_node (tag hier_node_old); with
# RATE (e.g. 4gbit) every host's link is shaped (tc tbf, cluster.sh shape).
# As root, from a build directory:
#   sh ../../docs/results/2026-11-29-hier-node-sliced/run.sh OUT [ROUNDS [OLD_BUILD [RATE]]]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
out=$1
rounds=${2:-3}
old=${3:-}
rate=${4:-}
mkdir -p "$out"
BUFPOOL_CLUSTER_PREFIX=bphs$$
export BUFPOOL_CLUSTER_PREFIX
trap 'sh "$src/test/multihost/cluster.sh" down >/dev/null 2>&1' EXIT
if [ -n "$rate" ]; then
    sh "$src/test/multihost/cluster.sh" up 2 --rate "$rate"
else
    sh "$src/test/multihost/cluster.sh" up 2
fi
export BUFPOOL_MH_PLACEMENT=2,2
system=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
jobs="hier:$PWD hier_node:$PWD"
if [ -n "$old" ]; then
    jobs="$jobs hier_node_old:$(cd "$old" && pwd)"
fi
for r in $(seq 1 "$rounds"); do
    for job in $jobs; do
        tag=${job%%:*} build=${job#*:}
        OMPI_MCA_mca_base_component_path=$system:$build/components
        export OMPI_MCA_mca_base_component_path
        sh "$src/test/multihost/mpirun.sh" -np 4 --allow-run-as-root \
            -x OMPI_MCA_mca_base_component_path \
            --mca coll_bufpool_allreduce_algorithm "${tag%_old}" \
            "$PWD/bench/coll_latency" -c allreduce -C default,bufpool -m 16K:4M --size-factor 4 \
            -i 50 -x 10 --iterations-large 20 --warmup-large 3 -b 32M \
            -t "$tag round$r" -o "$out/hier-node.csv" >/dev/null
    done
done

#!/bin/sh
# reduce node above 4 KiB (the chunk rounds of allreduce node_rsag, the
# root alone copying out) at 2 ranks on the project's 2-vCPU machine,
# forced at 256 KiB rounds through a ring of 4 (the 2-rank allreduce row's
# geometry), against tuned (blocking) and libnbc (nonblocking,
# persistent): coll_latency -C default,bufpool,floor, 3 interleaved rounds,
# 8 KiB to 32 MiB by 4, every result checked.  From a build directory:
#   sh ../../docs/results/2026-11-27-2rank-reduce-node/run.sh OUT [RUN]
set -eu
out=$1
run=${2:-1}
mkdir -p "$out"
export OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$PWD/components
for form in blocking nonblocking persistent; do
    cfgs=default,bufpool
    [ $form != blocking ] || cfgs=default,bufpool,floor
    mpirun --allow-run-as-root -np 2 --bind-to core --mca op ^avx \
        --mca coll_bufpool_node_warmup_calls 0 --mca coll_bufpool_min_size 0 \
        --mca coll_bufpool_reduce_algorithm node --mca coll_bufpool_segment_size 256K \
        --mca coll_bufpool_pipeline_depth 4 bench/coll_latency -c reduce -C $cfgs -F $form \
        -m 8K:32M --size-factor 4 -r 3 -b 1G -t "$form run$run" -o "$out/reduce.csv" >/dev/null
done

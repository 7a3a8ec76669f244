#!/bin/sh
# bcast and allgather node_cma (above 4 KiB, single-copy reads: CMA)
# against node (above 4 KiB, rounds through the chunk segment, 256K x 4), at 2 ranks on the project's 2-vCPU
# machine, each against tuned (blocking, with vader's CMA single copy as
# Debian ships it) and libnbc (nonblocking) in its own job:
# coll_latency -C default,bufpool[,floor], 3 interleaved rounds, 8 KiB to
# 8 MiB by 4 (-m 8K:16M), every result checked; the machine's mode
# (cache-line round trip, ../2026-11-27-2rank-chunk-ring/pingpong.c) before
# and after.  From a build directory:
#   sh ../../docs/results/2026-11-28-2rank-single-copy/run.sh OUT [RUN]
set -eu
out=$1
run=${2:-1}
. "$(dirname "$0")/../2rank-mode.sh"
for form in blocking nonblocking; do
    for mode in rounds:node single:node_cma; do
        cfgs=default,bufpool
        [ $form != blocking ] || cfgs=default,bufpool,floor
        mpirun --allow-run-as-root -np 2 --bind-to core \
            --mca coll_bufpool_node_warmup_calls 0 --mca coll_bufpool_min_size 0 \
            --mca coll_bufpool_bcast_algorithm "${mode#*:}" \
            --mca coll_bufpool_allgather_algorithm "${mode#*:}" \
            --mca coll_bufpool_segment_size 256K --mca coll_bufpool_pipeline_depth 4 \
            bench/coll_latency -c bcast,allgather -C $cfgs -F $form -m 8K:16M --size-factor 4 \
            -r 3 -b 1G -t "${mode%:*} $form run$run" -o "$out/single.csv" >/dev/null
    done
done
mode_after

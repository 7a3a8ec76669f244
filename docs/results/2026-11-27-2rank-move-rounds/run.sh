#!/bin/sh
# bcast and allgather node above 4 KiB (rounds through the chunk segment)
# at 2 ranks on the project's 2-vCPU machine, forced at two geometries
# (256K x 4, the 2-rank allreduce row's; 64K x 16), against tuned
# (blocking, with vader's CMA single copy as Debian ships it) and libnbc
# (nonblocking): coll_latency -C default,bufpool[,floor], 3 interleaved
# rounds, 8 KiB to 16 MiB by 4, every result checked; the machine's mode
# (cache-line round trip, ../2026-11-27-2rank-chunk-ring/pingpong.c) before
# and after.  From a build directory:
#   sh ../../docs/results/2026-11-27-2rank-move-rounds/run.sh OUT [RUN]
set -eu
out=$1
run=${2:-1}
. "$(dirname "$0")/../2rank-mode.sh"
for form in blocking nonblocking; do
    for g in 256K:4 64K:16; do
        cfgs=default,bufpool
        [ $form != blocking ] || cfgs=default,bufpool,floor
        mpirun --allow-run-as-root -np 2 --bind-to core \
            --mca coll_bufpool_node_warmup_calls 0 --mca coll_bufpool_min_size 0 \
            --mca coll_bufpool_bcast_algorithm node --mca coll_bufpool_allgather_algorithm node \
            --mca coll_bufpool_segment_size "${g%:*}" --mca coll_bufpool_pipeline_depth "${g#*:}" \
            bench/coll_latency -c bcast,allgather -C $cfgs -F $form -m 8K:16M --size-factor 4 \
            -r 3 -b 1G -t "$g $form run$run" -o "$out/moves.csv" >/dev/null
    done
done
mode_after

#!/bin/sh
# MPI_Iallgather and MPI_Allgather_init at 2 ranks: the package's rows (auto
# from 4 KiB: bufpool's point-to-point algorithms) against allgather
# node_cma forced (single-copy reads above 4 KiB) and node forced (rounds,
# 256K x 4), each in a job of its own against libnbc: coll_latency -C
# default,bufpool, 3 interleaved rounds, 8 KiB to 2 MiB by 4, every result
# checked; the machine's mode (cache-line round trip,
# ../2026-11-27-2rank-chunk-ring/pingpong.c) before and after.  From a
# build directory:
#   sh ../../docs/results/2026-11-28-2rank-single-copy/run-iallgather.sh OUT [RUN]
set -eu
out=$1
run=${2:-1}
modes=modes-iallgather.txt
. "$(dirname "$0")/../2rank-mode.sh"
for form in nonblocking persistent; do
    for alg in rows node_cma node; do
        mca=
        [ $alg = rows ] || mca="--mca coll_bufpool_allgather_algorithm $alg \
--mca coll_bufpool_segment_size 256K --mca coll_bufpool_pipeline_depth 4"
        # shellcheck disable=SC2086 # mca is several arguments
        mpirun --allow-run-as-root -np 2 --bind-to core $mca \
            bench/coll_latency -c allgather -C default,bufpool -F $form -m 8K:2M \
            --size-factor 4 -r 3 -b 1G -t "$alg $form run$run" -o "$out/iallgather.csv" >/dev/null
    done
done
mode_after

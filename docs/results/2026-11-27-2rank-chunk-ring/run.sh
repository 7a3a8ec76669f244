#!/bin/sh
# allreduce node_rsag above 4 KiB at 2 ranks on the project's 2-vCPU
# machine, once its chunk segment became a ring of the plan's depth
# (docs/collectives.md, "Why the ring's depth matters"):
#   - rows: the package's default rows (node_rsag 256K x 4 from 4 KiB + 1
#     to 2 MiB at 2 ranks) and the rows before them (before.rules, alone),
#     each against tuned (blocking) or libnbc (nonblocking, persistent) in
#     its own job, 3 interleaved rounds, 8 KiB to 64 MiB;
#   - ring: node_rsag forced at rounds x ring slots of 64K x 2 (the ring
#     before), 64K x 16, 128K x 4, 128K x 8, 256K x 2, 256K x 4, 512K x 2,
#     1M x 2, against tuned and the copy floor, blocking.
# From a build directory:
#   sh ../../docs/results/2026-11-27-2rank-chunk-ring/run.sh OUTDIR
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$PWD/components
mpirun="mpirun --allow-run-as-root -np 2 --bind-to core --mca op ^avx \
--mca coll_bufpool_node_warmup_calls 0"
for form in blocking nonblocking persistent; do
    for rows in package before; do
        extra=
        [ $rows = package ] ||
            extra="--mca coll_bufpool_rules_default off --mca coll_bufpool_rules_file $here/before.rules"
        # shellcheck disable=SC2086
        $mpirun $extra bench/coll_latency -c allreduce -C default,bufpool -F $form -m 8K:64M \
            -r 3 -b 1G -t "$rows $form" -o "$out/rows.csv" >/dev/null
    done
done
for g in 64K:2 64K:16 128K:4 128K:8 256K:2 256K:4 512K:2 1M:2; do
    $mpirun --mca coll_bufpool_allreduce_algorithm node_rsag \
        --mca coll_bufpool_segment_size "${g%:*}" --mca coll_bufpool_pipeline_depth "${g#*:}" \
        bench/coll_latency -c allreduce -C default,bufpool,floor -m 64K:16M -r 3 -b 1G \
        -t "ring $g" -o "$out/ring.csv" >/dev/null
done

#!/bin/sh
# The node algorithms built in the second session of 2026-11-27
# (reduce_scatter, reduce_scatter_block, gather, scatter and barrier
# "node"), forced, against Open MPI's own (tuned; libnbc for the
# nonblocking and persistent forms) at 2 ranks on the project's 2-vCPU
# machine: coll_latency -C default,bufpool, 5 interleaved rounds, every
# result checked.  From a build directory:
#   sh ../../docs/results/2026-11-27-2rank-node-more/run.sh OUTDIR
set -eu
out=$1
mkdir -p "$out"
export OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$PWD/components
more="--mca coll_bufpool_min_size 0 --mca coll_bufpool_reduce_scatter_algorithm node \
--mca coll_bufpool_reduce_scatter_block_algorithm node --mca coll_bufpool_gather_algorithm node \
--mca coll_bufpool_scatter_algorithm node --mca coll_bufpool_barrier_algorithm node"
for form in blocking nonblocking persistent; do
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root -np 2 --bind-to core --mca op ^avx $more bench/coll_latency \
        -C default,bufpool -c reduce_scatter,reduce_scatter_block,gather,scatter -m 4:4K \
        --size-factor 4 -r 5 -F $form -o "$out/more.csv" -t "more np=2 $form" >/dev/null
    # shellcheck disable=SC2086
    mpirun --allow-run-as-root -np 2 --bind-to core --mca op ^avx $more bench/coll_latency \
        -C default,bufpool -c barrier -m 8:8 -r 7 -F $form -o "$out/more.csv" \
        -t "more np=2 $form" >/dev/null
done

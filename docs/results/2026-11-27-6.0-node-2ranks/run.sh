#!/bin/sh
# The node rows at 2 ranks beside Open MPI 6.0's own components, and node
# bcast at 2 ranks on 6.0 and 4.1.  From the repository root, with the
# build trees _build/ompi6 (configured --with-ompi=/opt/ompi6) and
# _build/main (Debian's 4.1.4) built:
#   sh docs/results/2026-11-27-6.0-node-2ranks/run.sh OUT
set -eu
out=$1
top=$PWD
mkdir -p "$out"
# 1. The package's defaults (the node rows of 2 ranks: allreduce node_rsag
#    above 4 KiB, reduce_scatter(_block) up to 4 KiB, gather 1-4 KiB)
#    against tuned, acoll, xhc and adapt where they serve, three runs.
for r in 1 2 3; do
    bench/run-side-by-side.sh --no-build --rounds 3 --stat p50 --build-dir "$top/_build/ompi6" \
        --out "$out/run$r" --np 2 --configs "bufpool default acoll xhc adapt" \
        --collectives "allreduce reduce_scatter reduce_scatter_block gather" --min-size 4 \
        --max-size 4M --size-factor 4
done
# 2. bcast node forced at 2 ranks, 4 B-4 KiB: 6.0 beside tuned, xhc and
#    acoll (blocking), 4.1 beside tuned and libnbc (three forms).
for r in 1 2 3; do
    (cd _build/ompi6 && OMPI_MCA_mca_base_component_path=$PWD/components \
        /opt/ompi6/bin/mpirun --allow-run-as-root -np 2 --bind-to core \
        --mca coll_bufpool_node_warmup_calls 0 --mca coll_bufpool_bcast_algorithm node \
        --mca coll_bufpool_min_size 0 bench/coll_latency -c bcast -C default,bufpool,xhc,acoll \
        -m 4:4K --size-factor 4 -r 5 -t "bcast-node run$r" -o "$out/bcast-6.0.csv" >/dev/null)
    for form in blocking nonblocking persistent; do
        (cd _build/main && OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$PWD/components \
            mpirun --allow-run-as-root -np 2 --bind-to core --mca op ^avx \
            --mca coll_bufpool_node_warmup_calls 0 --mca coll_bufpool_bcast_algorithm node \
            --mca coll_bufpool_min_size 0 bench/coll_latency -c bcast -C default,bufpool -m 4:4K \
            --size-factor 4 -r 5 -F $form -t "$form run$r" -o "$out/bcast-4.1.csv" >/dev/null)
    done
done

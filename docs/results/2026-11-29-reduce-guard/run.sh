#!/bin/sh
# The cost of the guard of libnbc's nonblocking reduce (2026-11-29):
# MPI_Ireduce and MPI_Reduce_init of a user-defined float sum
# (coll_latency --op user), libnbc (default) against bufpool with a rules
# file that hands every reduce back, so that the guard's algorithms (the
# pipelined binary tree below 512 KiB, rsg from there) serve every call,
# at 3 and 4 ranks, 1 KiB to 4 MiB by 4, 3 interleaved rounds.
# Run from a build directory: sh run.sh OUT
set -eu
out=${1:?usage: run.sh OUT}
mkdir -p "$out"
printf 'bufpool-rules 1\nreduce alg=previous measured="every reduce handed back: the guard alone serves"\n' \
    >"$out/handback.rules"
export OMPI_MCA_mca_base_component_path="${OMPI_SYSTEM_COMPONENT_DIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}:$PWD/components"
for np in 3 4; do
    for form in nonblocking persistent; do
        mpirun --allow-run-as-root --oversubscribe -np "$np" \
            --mca coll_bufpool_rules_file "$out/handback.rules" \
            bench/coll_latency -c reduce -C default,bufpool -m 1K:4M --size-factor 4 --op user \
            -F "$form" -r 3 -o "$out/np$np-$form.csv" >"$out/np$np-$form.log" 2>&1
    done
done

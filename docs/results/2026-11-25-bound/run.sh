#!/bin/sh
# usage: run2.sh NP TAG "MCA..." COLLS CONFIGS SIZES
np=$1 tag=$2 mca=$3 coll=$4 configs=$5 sizes=$6
B=${BUFPOOL_BUILD_DIR:-$PWD/_build/main}
echo "== $tag np=$np $mca $(uptime)"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 600 mpirun --oversubscribe --bind-to none -np $np \
  --mca op ^avx --mca mpi_yield_when_idle 1 \
  --mca mca_base_component_path /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3:$B/components \
  $mca $B/bench/coll_latency -c $coll -C $configs -m $sizes -r 3 -b 32M -t "$tag" -o docs/results/2026-11-25-bound/coll_latency.csv

#!/bin/bash
# bufpool-tune on Open MPI 6.0 across the emulated cluster, where coll/han
# (with its persistent buffers) is the previous module: the rows for
# rules/default.rules at 4 hosts x 1 rank and 2 hosts x 2 ranks.
# Usage: bash docs/results/2026-11-26-peers/tune-mh.sh PLACEMENT COLLECTIVES SIZES NAME
#   e.g. tune-mh.sh 1,1,1,1 bcast,allreduce 1K..16M 4x1
set -eu
top=$(cd "$(dirname "$0")/../../.." && pwd)
out=$top/docs/results/2026-11-26-peers
placement=$1 colls=$2 sizes=$3 name=$4
build=$top/_build/ompi6
hosts=$(echo "$placement" | tr ',' '\n' | wc -l)
np=$(echo "$placement" | tr ',' '+' | bc)
BUFPOOL_CLUSTER_PREFIX=bppt$$
export BUFPOOL_CLUSTER_PREFIX
trap 'sh "$top/test/multihost/cluster.sh" down >/dev/null 2>&1; rm -rf "$links"' EXIT
sh "$top/test/multihost/cluster.sh" up "$hosts" >/dev/null
links=$(mktemp -d)
ln -s "$build"/ompi-mca-coll-bufpool/.libs/mca_coll_bufpool.so "$build"/opal-mca-mpool-regpar/.libs/mca_mpool_regpar.so "$links/"
BUFPOOL_MH_MPIRUN=$(sed -n 's/^MPIRUN = //p' "$build/bench/Makefile")
BUFPOOL_MH_PLACEMENT=$placement
OMPI_MCA_mca_base_component_path=$(sed -n 's/^OMPI_SYSTEM_COMPONENT_DIR = //p' "$build/bench/Makefile"):$links
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export BUFPOOL_MH_MPIRUN BUFPOOL_MH_PLACEMENT OMPI_MCA_mca_base_component_path OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
"$build/tools/bufpool-tune" --mpirun "$top/test/multihost/mpirun.sh -np $np" --ranks "$np" \
    -c "$colls" --sizes "$sizes" --reps 3 -o "$out/tune-$name.rules" --raw "$out/tune-$name.raw" \
    >"$out/tune-$name.report" 2>"$out/tune-$name.progress"

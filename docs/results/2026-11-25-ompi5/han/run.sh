#!/bin/sh
# coll/han and coll/bufpool on Open MPI 5.0.10, measured on the emulated
# cluster (test/multihost/cluster.sh): 2 hosts x 2 ranks, TCP between hosts,
# allreduce, bcast, reduce and allgather from 4 KiB to 4 MiB.  Three
# configurations, one mpirun each, rotated round by round:
#   a-below-han   bufpool loaded at its 5.x default priority 33 (han, 35, wins
#                 the multi-host communicator; bufpool may serve han's
#                 sub-communicators)
#   b-above-han   --mca coll_bufpool_priority 40 (bufpool takes the
#                 communicator from han)
#   c-stock       --mca coll ^bufpool (stock 5.0.10: han)
# coll_bufpool_verbose 1 makes every rank print what bufpool served (the
# coll_bufpool report lines in logs/); coll_latency's own_calls/served
# columns say who served the timed calls.  Prints nothing it judges: the
# summary (summary.py) gives medians over rounds and ratios within this run.
#
#   sh docs/results/2026-11-25-ompi5/han/run.sh [BUILD_DIR] [ROUNDS]
# BUILD_DIR: a build tree configured --with-ompi=/opt/ompi5 (default
# _build/ompi5) with bench/coll_latency built.  Needs root.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../../.." && pwd)
build=$(cd "${1:-$top/_build/ompi5}" && pwd)
rounds=${2:-3}
mpirun=$(sed -n 's/^MPIRUN = //p' "$build/bench/Makefile")
compdir=$(sed -n 's/^OMPI_SYSTEM_COMPONENT_DIR = //p' "$build/bench/Makefile")
export BUFPOOL_CLUSTER_PREFIX=${BUFPOOL_CLUSTER_PREFIX:-bph$$}
export BUFPOOL_CLUSTER_NET=${BUFPOOL_CLUSTER_NET:-10.214.56.0/24}
export BUFPOOL_MH_MPIRUN=$mpirun BUFPOOL_MH_PLACEMENT=2,2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cluster=$top/test/multihost/cluster.sh
trap 'sh "$cluster" down >/dev/null 2>&1' EXIT
trap 'exit 1' INT TERM HUP
sh "$cluster" up 2
mkdir -p "$here/logs"
rm -f "$here/raw.csv"
echo "# han run: $("$mpirun" --version | head -n 1), 2 hosts x 2 ranks, $rounds rounds, load $(cut -d' ' -f1-3 /proc/loadavg) at start, $(date -u +%FT%TZ)" >"$here/meta.txt"

args() {
    case $1 in
        a-below-han) ;;
        b-above-han) echo "--mca coll_bufpool_priority 40" ;;
        c-stock) echo "--mca coll ^bufpool" ;;
    esac
}
set -- a-below-han b-above-han c-stock
r=0
while [ $r -lt "$rounds" ]; do
    for k in 0 1 2; do
        i=$(((k + r) % 3))
        cfg=$(eval echo "\${$((i + 1))}")
        log=$here/logs/$cfg-r$r.log
        echo "han: round $((r + 1))/$rounds $cfg"
        # shellcheck disable=SC2046
        timeout 1200 sh "$top/test/multihost/mpirun.sh" -np 4 \
            --mca mca_base_component_path "$compdir:$build/components" \
            --mca coll_bufpool_verbose 1 $(args "$cfg") \
            "$build/bench/coll_latency" -c allreduce,bcast,reduce,allgather -C world -n "$cfg" \
            -m 4K:4M -i 50 -x 10 --iterations-large 20 --warmup-large 3 -b 32M \
            -o "$here/raw.csv" -t "r$r" >"$log" 2>&1 || echo "han: $cfg round $r FAILED (see $log)"
    done
    r=$((r + 1))
done
echo "# load $(cut -d' ' -f1-3 /proc/loadavg) at end, $(date -u +%FT%TZ)" >>"$here/meta.txt"
python3 "$here/summary.py" "$here/raw.csv" "$here/logs" >"$here/summary.md"
cat "$here/summary.md"

#!/bin/sh
# Registrations the transport makes, Open MPI's default collectives against
# bufpool on regpar buffers (with and without the transport registrar):
# ob1 + btl/ofi (shm provider) counted by rcache/grdma, per collective at
# 1K..8M (test/mpi/test_reg_transport), 2 ranks, WARM rounds then WARM+EXTRA
# rounds: "after warm-up" is the difference.  Prints numbers; never fails on
# them.  Run from the build tree after make check has built the programs:
#   sh ../../bench/reg_transport.sh [EXTRA_ROUNDS]
set -u
extra=${1:-3}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=$(cd "${top_builddir:-.}" && pwd)
OMPI_SYSTEM_COMPONENT_DIR=${OMPI_SYSTEM_COMPONENT_DIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}
export top_srcdir top_builddir OMPI_SYSTEM_COMPONENT_DIR
run="$top_srcdir/test/mpi/run-mpi-test.sh"
prog="$top_builddir/test/mpi/test_reg_transport"
base="--mca pml ob1 --mca btl self,ofi --mca btl_ofi_mode 2 --mca btl_ofi_provider_include shm \
--mca rcache_grdma_print_stats 1"

# misses LOG: "misses_rank0 misses_rank1 live_rank0 live_rank1"
misses() {
    awk '/grdma: stats/ { r = $2; sub(/.*,/, "", r); sub(/\]/, "", r)
        split($NF, s, "/"); m[r] = s[2]; t[r] = s[6] }
        END { printf "%s %s %s %s", m[0], m[1], t[0], t[1] }' "$1"
}

printf "%-22s %-18s %14s %14s %14s\n" collective config "first_round" "per_round_after" "live_at_end"
for coll in ${BENCH_COLLECTIVES:-allreduce reduce_scatter_block reduce bcast allgather gather scatter}; do
    for config in default bufpool-none bufpool-registrar; do
        case $config in
            default) mca="$base --mca coll ^bufpool"; mode=plain ;;
            bufpool-none) mca="$base --mca mpool_regpar_reg_backend none"; mode=pool ;;
            bufpool-registrar) mca="$base"; mode=pool ;;
        esac
        a=$(BUFPOOL_TEST_MCA="$mca" "$run" 2 "$prog" 1 8388608 $mode $coll 2>&1 | tee /tmp/rt.$$.1 |
            { cat >/dev/null; misses /tmp/rt.$$.1; })
        b=$(BUFPOOL_TEST_MCA="$mca" "$run" 2 "$prog" $((1 + extra)) 8388608 $mode $coll 2>&1 |
            tee /tmp/rt.$$.2 | { cat >/dev/null; misses /tmp/rt.$$.2; })
        set -- $a $b
        printf "%-22s %-18s %7s/%-6s %7s/%-6s %7s/%-6s\n" $coll $config "$1" "$2" \
            "$(awk -v x="$5" -v y="$1" -v e="$extra" 'BEGIN { printf "%.1f", (x - y) / e }')" \
            "$(awk -v x="$6" -v y="$2" -v e="$extra" 'BEGIN { printf "%.1f", (x - y) / e }')" "$7" "$8"
    done
done
rm -f /tmp/rt.$$.1 /tmp/rt.$$.2

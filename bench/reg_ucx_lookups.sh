#!/bin/sh
# UCX's registration-cache lookups where allreduce hier_node's exchange
# between hosts sends from the host's shared chunk segment (4 ranks on 2
# pretended hosts, pml/ucx over shared memory, UCX_PROTO_ENABLE=y):
# bufpool with the ucx registrar (each rank's range of the segment
# ucp_mem_map'ed once) against no registrar (UCX makes its own regions).
# An LD_PRELOAD shim (ucx_rcache_count.c, compiled here with cc) counts
# ucs_rcache_get per region returned.  Prints numbers; never fails on them.
# Needs an Open MPI with pml/ucx (scripts/build-ompi.sh 5.0) and a build
# tree configured against it, after make check built the test programs:
#   top_builddir=_build/ompi5 MPIRUN=/opt/ompi5/bin/mpirun \
#   OMPI_SYSTEM_COMPONENT_DIR=/opt/ompi5/lib/openmpi sh bench/reg_ucx_lookups.sh [ROUNDS...]
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=$(cd "${top_builddir:-.}" && pwd)
export top_srcdir top_builddir
run="$top_srcdir/test/mpi/run-mpi-test.sh"
prog="$top_builddir/test/mpi/test_reg_transport"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/reg_ucx_lookups.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 -shared -fPIC -o "$tmp/count.so" "$top_srcdir/bench/ucx_rcache_count.c" -ldl -lpthread ||
    exit 1
ucx="--mca pml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any \
-x UCX_PROTO_ENABLE=y -x LD_PRELOAD=$tmp/count.so"
hier="--mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off \
--mca coll_bufpool_min_size 0 --mca coll_bufpool_allreduce_algorithm hier_node \
--mca coll_bufpool_test_host_map 0,0,1,1"

[ $# -gt 0 ] || set -- 1 3
printf "%-10s %6s  %-28s %-22s %-24s %s\n" registrar rounds "lookups in segment (rank 0-3)" \
    "segment regions" "all lookups" "all regions"
for backend in auto none; do
    for rounds in "$@"; do
        log=$tmp/$backend.$rounds.log
        if ! BUFPOOL_TEST_MCA="$ucx $hier --mca mpool_regpar_reg_backend $backend" \
            "$run" 4 "$prog" "$rounds" 2097152 >"$log" 2>&1; then
            echo "the job failed ($backend, $rounds rounds):"
            tail -n 15 "$log"
            exit 1
        fi
        ! grep -Eq ' bad [1-9]' "$log" || echo "WARNING: a wrong result ($backend, $rounds rounds)"
        awk -v b="$backend" -v r="$rounds" '
            /^ucx_rcache_count: rank/ {
                for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
                k = v["rank"]; sl[k] = v["segment_lookups"]; sr[k] = v["segment_regions"]
                al[k] = v["lookups"]; ar[k] = v["regions"]
            }
            END {
                printf "%-10s %6s  %-28s %-22s %-24s %s\n", b == "auto" ? "ucx" : "none", r,
                    sl[0] "/" sl[1] "/" sl[2] "/" sl[3], sr[0] "/" sr[1] "/" sr[2] "/" sr[3],
                    al[0] "/" al[1] "/" al[2] "/" al[3], ar[0] "/" ar[1] "/" ar[2] "/" ar[3]
            }' "$log"
    done
done

#!/bin/sh
# The pml/ucx and mtl/ofi registrars (issue 11; reg_transport.sh covers the
# btl one), run on whichever Open MPI the build tree was configured with
# (Debian's 4.1.4, or 5.0.10 built with UCX and libfabric by
# scripts/build-ompi.sh 5.0).  test_reg_transport runs every collective
# bufpool implements at 1K..2M on MPI_Alloc_mem(mpool=regpar) buffers with
# results checked (one round: the counts, not the warm-up, are the point
# here; reg_transport.sh checks later rounds for the btl registrar).  Asserted on both ranks:
#   ucx   pml ucx, UCX_PROTO_ENABLE=y, shared-memory transports, auto: the
#         ucx registrar is chosen (verbose says so) and makes one ucp_mem_map
#         per slab (ucx_made = slabs, ucx_live = live slabs), nothing else
#         registers;
#   mtl   pml cm + mtl ofi with the tcp provider: auto registers nothing and
#         says why (no EFA, libfabric >= or without an MR cache for
#         application registrations); reg_backend=mtl registers each slab
#         once in the MTL's domain (mtl_made = slabs, mtl_live = live slabs).
#   hier  each of those registrars again with allreduce hier_node (4 ranks
#         on 2 pretended hosts): each rank's range of its host's chunk
#         segment, which the exchange between hosts sends from, is
#         registered once too (made = slabs + ranges, ranges >= 1).
# A transport this Open MPI lacks is skipped with a message; the test exits
# 77 (skip) only when neither can run.
set -u
run="$top_srcdir/test/mpi/run-mpi-test.sh"
prog="$top_builddir/test/mpi/test_reg_transport"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/reg_registrars.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
ucx="--mca pml ucx --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any \
-x UCX_PROTO_ENABLE=y --mca mpool_regpar_verbose 1"
mtl="--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp --mca mpool_regpar_verbose 1"
status=0
ran=0

# expect LOG WHICH [NP [OUTSIDE]]: WHICH (ucx, mtl or none) made one
# registration per slab (and per segment range: at least one when OUTSIDE
# is 1, else none) on every one of NP ranks (2), the others none, and every
# result was right.
expect() {
    awk -v logf="$1" -v which="$2" -v np="${3:-2}" -v outside="${4:-0}" '
        /^reg_transport: rank/ {
            delete v
            for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
            n++
            printf "%s: rank %s slabs %s live %s ranges %s live %s btl_made %s ucx_made %s ucx_live %s mtl_made %s mtl_live %s calls %s\n",
                which, v["rank"], v["slabs"], v["live_slabs"], v["outside_made"], v["outside_live"],
                v["btl_made"], v["ucx_made"], v["ucx_live"], v["mtl_made"], v["mtl_live"], v["calls"]
            if (v["bad"] != 0) { print logf ": rank " v["rank"] " computed " v["bad"] " wrong results"; bad = 1 }
            if (v["slabs"] == 0) { print logf ": rank " v["rank"] ": no slabs"; bad = 1 }
            if (outside ? v["outside_made"] < 1 : v["outside_made"] != 0) {
                print logf ": rank " v["rank"] ": " v["outside_made"] " segment ranges registered, expected " (outside ? "at least 1" : "none")
                bad = 1
            }
            for (t = 1; t <= 3; t++) {
                name = t == 1 ? "btl" : t == 2 ? "ucx" : "mtl"
                made = v[name "_made"]; live = v[name "_live"]
                if (name == which) {
                    if (made != v["slabs"] + v["outside_made"] || live != v["live_slabs"] + v["outside_live"]) {
                        print logf ": rank " v["rank"] ": " name " registrar made " made " (live " live ") for " v["slabs"] " slabs (live " v["live_slabs"] ") and " v["outside_made"] " segment ranges (live " v["outside_live"] ")"
                        bad = 1
                    }
                } else if (made != 0) {
                    print logf ": rank " v["rank"] ": " name " registrar made " made " registrations, expected none"
                    bad = 1
                }
            }
        }
        END { if (n != np) { print logf ": expected " np " ranks, saw " n; bad = 1 }; exit bad }' "$1"
}

hier="--mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off \
--mca coll_bufpool_min_size 0 --mca coll_bufpool_allreduce_algorithm hier_node \
--mca coll_bufpool_test_host_map 0,0,1,1"

# part NAME MCA WHICH MESSAGE [hier]: one job (hier: 4 ranks with $hier);
# MESSAGE must appear in its output.
part() {
    log=$tmp/$1.log
    np=2 outside=0 mca=$2
    if [ "${5:-}" = hier ]; then
        np=4 outside=1 mca="$2 $hier"
    fi
    if ! BUFPOOL_TEST_MCA="$mca" "$run" $np "$prog" 1 2097152 >"$log" 2>&1; then
        cat "$log"
        echo "FAIL: $1: the job failed"
        status=1
        return
    fi
    if ! expect "$log" "$3" $np $outside; then
        cat "$log"
        echo "FAIL: $1"
        status=1
        return
    fi
    if ! grep -q "$4" "$log"; then
        cat "$log"
        echo "FAIL: $1: the registrar's choice was not reported (expected \"$4\")"
        status=1
        return
    fi
    grep "mpool_regpar: .*registrar" "$log" | sort -u | head -n 2
    echo "PASS: $1"
}

# usable MCA: does a tiny job run on this transport at all?
usable() {
    BUFPOOL_TEST_MCA="$1" "$run" 2 "$prog" 1 1024 >"$tmp/probe.log" 2>&1 &&
        grep -q "^reg_transport: rank" "$tmp/probe.log"
}

if usable "$ucx"; then
    ran=1
    part ucx "$ucx" ucx "registrar ucx chosen"
    part ucx-hier "$ucx" ucx "registrar ucx chosen" hier
else
    echo "SKIP: pml ucx is not usable here:"
    tail -n 5 "$tmp/probe.log"
fi

if usable "$mtl"; then
    ran=1
    part mtl-auto "$mtl" none "no transport registrar (mtl)"
    part mtl-forced "$mtl --mca mpool_regpar_reg_backend mtl" mtl "registrar mtl chosen"
    part mtl-forced-hier "$mtl --mca mpool_regpar_reg_backend mtl" mtl "registrar mtl chosen" hier
else
    echo "SKIP: pml cm + mtl ofi (tcp provider) is not usable here:"
    tail -n 5 "$tmp/probe.log"
fi

[ $ran = 1 ] || exit 77
exit $status

#!/bin/sh
# One registration per slab, in the transport's own cache (issue 11).
#
# ob1 + btl/ofi with libfabric's shm provider registers through rcache/grdma
# like an RDMA BTL does (by bookkeeping here).  Every collective bufpool
# implements runs at 1K..8M on MPI_Alloc_mem(mpool=regpar) buffers, with
# results checked, once and then for 3 rounds; Open MPI prints grdma's
# counters at finalize (rcache_grdma_print_stats).  Asserted on every rank:
#   - the btl registrar made one registration per slab (btl_made = slabs);
#   - grdma's misses are exactly those registrations: no collective missed,
#     in the first round or after it (same count for 1 and 3 rounds);
#   - grdma's live registrations (tree size) equal the pool's live slabs;
#   - reg_backend=pin does not also register with the BTL (no double pin);
#   - allreduce hier_node (4 ranks on 2 pretended hosts, every collective):
#     each rank's range of the host's chunk segment, which the exchange
#     between hosts sends from, is registered once with the slabs
#     (outside_made >= 1), and grdma's misses are still exactly the btl
#     registrar's, slabs and segment ranges together (before, the transport
#     registered the segment range by range: 21-25 misses for 12 slabs).
# Collection by age is off (gc_age 0): on a slow machine a 3-round job can
# outlast gc_age, release idle slabs and register them anew, which would
# make the slab count depend on the machine's speed rather than the code.
# Skipped (77) where btl/ofi or the shm provider is not available.
set -u
run="$top_srcdir/test/mpi/run-mpi-test.sh"
prog="$top_builddir/test/mpi/test_reg_transport"
base="--mca pml ob1 --mca btl self,ofi --mca btl_ofi_mode 2 --mca btl_ofi_provider_include shm \
--mca rcache_grdma_print_stats 1 --mca mpool_regpar_gc_age 0"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/reg_transport.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# check LOG [NP [OUTSIDE]]: every rank's counters agree (NP ranks, 2 by
# default; OUTSIDE 1: each registered a segment range); prints "rank
# misses" lines.
check() {
    awk -v logf="$1" -v np="${2:-2}" -v outside="${3:-0}" '
        /^reg_transport: rank/ {
            for (i = 2; i < NF; i += 2) v[$3, $i] = $(i + 1)
            ranks[$3] = 1
            if ($NF != 0) { print logf ": rank " $3 " computed wrong results"; bad = 1 }
        }
        /grdma: stats/ {
            # [host:pid] [[job,1],RANK] grdma: stats (...): hit/miss/found/not found/evicted/tree
            r = $2; sub(/.*,/, "", r); sub(/\]/, "", r)
            split($NF, s, "/"); miss[r] = s[2]; tree[r] = s[6]
        }
        END {
            n = 0
            for (r in ranks) {
                n++
                slabs = v[r, "slabs"]; live = v[r, "live_slabs"]; made = v[r, "btl_made"]
                out_made = v[r, "outside_made"]; out_live = v[r, "outside_live"]
                if (!(r in miss)) { print logf ": no grdma statistics from rank " r; bad = 1; continue }
                printf "rank %s slabs %s segment_ranges %s btl_made %s grdma_misses %s\n", r, slabs, out_made, made, miss[r]
                printf "live: rank %s slabs %s segment_ranges %s grdma %s\n", r, live, out_live, tree[r] > "/dev/stderr"
                if (slabs == 0 || made != slabs + out_made) { print logf ": rank " r ": " made " btl registrations for " slabs " slabs and " out_made " segment ranges"; bad = 1 }
                if (outside ? out_made < 1 : out_made != 0) { print logf ": rank " r ": " out_made " segment ranges registered, expected " (outside ? "at least 1" : "none"); bad = 1 }
                if (miss[r] != made) { print logf ": rank " r ": " miss[r] " grdma misses, expected only the " made " registrations of the pool"; bad = 1 }
                if (tree[r] != live + out_live) { print logf ": rank " r ": " tree[r] " live grdma registrations for " live " live slabs and " out_live " segment ranges"; bad = 1 }
            }
            if (n != np) { print logf ": expected " np " ranks, saw " n; bad = 1 }
            exit bad
        }' "$1"
}

# Is the path there at all?
BUFPOOL_TEST_MCA="$base --mca mpool_regpar_reg_backend none" "$run" 2 "$prog" 1 65536 \
    >"$tmp/probe.log" 2>&1
if ! grep -q "grdma: stats" "$tmp/probe.log"; then
    echo "SKIP: ob1 + btl/ofi (shm provider) not usable here:"
    tail -5 "$tmp/probe.log"
    exit 77
fi

for rounds in 1 3; do
    BUFPOOL_TEST_MCA="$base" "$run" 2 "$prog" "$rounds" >"$tmp/r$rounds.log" 2>&1 || {
        cat "$tmp/r$rounds.log"
        exit 1
    }
    check "$tmp/r$rounds.log" >"$tmp/r$rounds.sum" 2>"$tmp/r$rounds.live" || {
        cat "$tmp/r$rounds.sum" "$tmp/r$rounds.live" "$tmp/r$rounds.log"
        exit 1
    }
    echo "rounds $rounds:"
    cat "$tmp/r$rounds.sum" "$tmp/r$rounds.live"
done
# Zero misses after warm-up: 3 rounds miss exactly as often as 1.
sort "$tmp/r1.sum" >"$tmp/r1.sorted"
sort "$tmp/r3.sum" >"$tmp/r3.sorted"
if ! cmp -s "$tmp/r1.sorted" "$tmp/r3.sorted"; then
    echo "FAIL: counts differ between 1 and 3 rounds"
    exit 1
fi

# allreduce hier_node: the same counts, segment ranges included, at 1 and
# 3 rounds (every collective runs: the others on the whole communicator).
hier="--mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off \
--mca coll_bufpool_min_size 0 --mca coll_bufpool_allreduce_algorithm hier_node \
--mca coll_bufpool_test_host_map 0,0,1,1"
for rounds in 1 3; do
    BUFPOOL_TEST_MCA="$base $hier" "$run" 4 "$prog" "$rounds" >"$tmp/h$rounds.log" 2>&1 || {
        cat "$tmp/h$rounds.log"
        exit 1
    }
    check "$tmp/h$rounds.log" 4 1 >"$tmp/h$rounds.sum" 2>"$tmp/h$rounds.live" || {
        cat "$tmp/h$rounds.sum" "$tmp/h$rounds.live" "$tmp/h$rounds.log"
        exit 1
    }
    echo "hier_node, rounds $rounds:"
    cat "$tmp/h$rounds.sum" "$tmp/h$rounds.live"
done
sort "$tmp/h1.sum" >"$tmp/h1.sorted"
sort "$tmp/h3.sum" >"$tmp/h3.sorted"
if ! cmp -s "$tmp/h1.sorted" "$tmp/h3.sorted"; then
    echo "FAIL: hier_node: counts differ between 1 and 3 rounds"
    exit 1
fi

# No double pinning: with reg_backend pin the BTL gets no registration from
# the pool (btl_made 0), the job stays right, and the locked bytes (VmLck)
# are the pool's slabs once (bytes_held; guard pages are never locked).
BUFPOOL_TEST_MCA="$base --mca mpool_regpar_reg_backend pin" "$run" 2 "$prog" 1 1048576 \
    >"$tmp/pin.log" 2>&1 || {
    cat "$tmp/pin.log"
    exit 1
}
if grep "^reg_transport:" "$tmp/pin.log" | grep -qv "btl_made 0 "; then
    echo "FAIL: reg_backend pin also registered with the BTL"
    cat "$tmp/pin.log"
    exit 1
fi
if ! awk '/^reg_transport:/ { n++; for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
        printf "pin: rank %s bytes_held %s vmlck %s\n", v["rank"], v["bytes_held"], v["vmlck"]
        if (v["vmlck"] != v["bytes_held"] || v["bytes_held"] == 0) bad = 1 }
        END { exit bad || n != 2 }' "$tmp/pin.log"; then
    echo "FAIL: with reg_backend pin, VmLck is not the pool's slabs once"
    cat "$tmp/pin.log"
    exit 1
fi
exit 0

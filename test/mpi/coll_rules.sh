#!/bin/sh
# Rules end to end in 2-rank jobs (test_coll_rules_job.c): a rules file
# alone (coll_bufpool_rules_default off), the same file under min_size,
# per-communicator info keys (a plain duplicate made after the one with the
# keys shares world's size maps, not its), and a malformed file, which must be reported
# with its line while the default rules decide.  A collective the rows give
# wholly to the previous module on a communicator (scan in mine.rules,
# reduce at 2 ranks in the default rules; never gather, scatter, allgather
# or alltoall, whose hand-back may mend a rank's own block) is not
# installed there: neither
# counter moves ("none"), and coll_bufpool_verbose 3 says so (at 2 and
# more, which explain every call, it stays installed).  Each case's result is
# checked and the MPI_T counters must show bufpool serving it or handing it
# back exactly as the rows say.  On the communicators coll/han builds for
# itself bufpool is not selected at all.
set -u
prog="$top_builddir/test/mpi/test_coll_rules_job"
run() { sh "$top_srcdir/test/mpi/run-mpi-test.sh" 2 "$prog" "$@"; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bufpool-rules.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
status=0

cat >"$dir/mine.rules" <<'RULES'
bufpool-rules 1
# rows for the test: the first match decides
bcast ranks=2 bytes=..1K alg=previous measured="test"
bcast ranks=2 bytes=1K+4.. alg=linear
allreduce ranks=2 bytes=..63 alg=previous
allreduce ranks=2 alg=recursive_doubling
reduce ranks=2..3 alg=binary
scan alg=previous
RULES

echo "== a rules file alone, and info keys"
BUFPOOL_TEST_MCA="--mca coll_bufpool_rules_file $dir/mine.rules --mca coll_bufpool_rules_default off ${BUFPOOL_TEST_MCA:-}" \
    run --info coll_bufpool_bcast_algorithm=previous --info coll_bufpool_allreduce_algorithm=rsag \
    bcast:8:previous bcast:1024:previous bcast:1028:served bcast:65536:served \
    allreduce:60:previous allreduce:64:served reduce:4096:served scan:4096:none \
    allgather:64:served alltoall:64:served bcast:2048:previous:info allreduce:64:served:info \
    allreduce:60:served:info bcast:2048:served:dup allreduce:60:previous:dup \
    scan:4096:none:dup || status=1

echo "== the same under coll_bufpool_min_size 4K"
BUFPOOL_TEST_MCA="--mca coll_bufpool_rules_file $dir/mine.rules --mca coll_bufpool_rules_default off --mca coll_bufpool_min_size 4K ${BUFPOOL_TEST_MCA:-}" \
    run bcast:2048:previous bcast:4096:served allreduce:64:previous allreduce:4096:served || status=1

echo "== a malformed file: reported with its line, the default rules decide"
printf 'bufpool-rules 1\nbcast alg=linear\nreduce bytes=4Q alg=binary\n' >"$dir/bad.rules"
BUFPOOL_TEST_MCA="--mca coll_bufpool_rules_file $dir/bad.rules ${BUFPOOL_TEST_MCA:-}" \
    run reduce:8:none allreduce:4096:previous >"$dir/bad.log" 2>&1 || status=1
cat "$dir/bad.log"
if ! grep -q "coll_bufpool_rules_file: invalid value \"$dir/bad.rules\" ($dir/bad.rules:3: bytes: '4Q' is not a size" "$dir/bad.log"; then
    echo "FAIL: the malformed rules file was not reported with its line"
    status=1
fi

echo "== coll_bufpool_verbose 3 names what it does not install (installed while explaining)"
BUFPOOL_TEST_MCA="--mca coll_bufpool_rules_file $dir/mine.rules --mca coll_bufpool_rules_default off --mca coll_bufpool_verbose 3 ${BUFPOOL_TEST_MCA:-}" \
    run scan:8:previous >"$dir/v3.log" 2>&1 || status=1
for fn in scan iscan scan_init; do
    # the row has no form=: every form goes, and none is installed
    if ! grep -q " $fn: every call to the previous module: not installed" "$dir/v3.log"; then
        cat "$dir/v3.log"
        echo "FAIL: coll_bufpool_verbose 3 did not say that $fn is not installed"
        status=1
    fi
done

echo "== a bad info key: reported, the parameter's setting applies"
run --info coll_bufpool_allreduce_algorithm=linear allreduce:65536:served:info >"$dir/info.log" 2>&1 || status=1
cat "$dir/info.log"
if ! grep -q 'info key coll_bufpool_allreduce_algorithm has the invalid value "linear"' "$dir/info.log"; then
    echo "FAIL: the bad info key was not reported"
    status=1
fi
echo "== coll/han's own sub-communicators: bufpool stays out of them"
# han builds its levels with a preference "<component>,^han" or the info key
# ompi_comm_coll_han_topo_level; below libnbc (no blocking collectives)
# bufpool would serve every blocking call there, tuned must.  The same
# preference without han's mark keeps bufpool (the control).
run --info "ompi_comm_coll_preference=libnbc,^han" allreduce:65536:none:info bcast:65536:none:info \
    allreduce:65536:served || status=1
run --info ompi_comm_coll_han_topo_level=INTER_NODE --info ompi_comm_coll_preference=libnbc \
    allreduce:65536:none:info || status=1
run --info "ompi_comm_coll_preference=libnbc,^adapt" allreduce:65536:served:info || status=1

echo "== bench/coll_latency's bufpool+ALG: ALG forced on that configuration's communicator only"
# (how a user measures one of bufpool's algorithms beside its defaults in
# one job, docs/benchmarks.md); reduce_scatter_block's own key is longer
# than MPI_MAX_INFO_KEY: coll_bufpool_algorithm carries it.
forced_alone() { # COLLECTIVE BYTES
    BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} --mca coll_bufpool_verbose 2" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" 2 "$top_builddir/bench/coll_latency" \
        -C bufpool,bufpool+node -c "$1" -m "$2:$2" -i 3 -x 1 >"$dir/alg-$1.log" 2>&1 || return 1
    forced=$(grep -c "$1 of $2 bytes .*rank 0): node (forced by coll_bufpool_$1_algorithm)" \
        "$dir/alg-$1.log")
    others=$(grep "$1 of $2 bytes .*rank 0): " "$dir/alg-$1.log" | grep -vc 'node (forced')
    # warm-up and timed calls of each (-x 1 -i 3: 4 a configuration, at least)
    if [ "$forced" -lt 4 ] || [ "$others" -lt 4 ]; then
        cat "$dir/alg-$1.log"
        echo "FAIL: bufpool+node forced node on $forced $1 calls, left $others to bufpool's own choice"
        return 1
    fi
}
forced_alone scan 8192 || status=1
forced_alone reduce_scatter_block 1024 || status=1
exit $status

# Sourced by the tests of what bufpool does in a hand-back
# (coll_own_block.sh, coll_reduce_guard.sh): handback_run "COLLS" "NPS"
# PROGRAM [ARGS...] runs test/mpi/PROGRAM at each number of ranks in NPS
# with a rules file that gives every call of each collective in COLLS to
# the previous module, so that only what the hand-back itself does (or a
# guard serves whatever the rules say) is seen.  Returns 1 when a run
# failed.  Needs top_srcdir and top_builddir (make check sets them).
handback_run() {
    hb_colls=$1 hb_nps=$2 hb_program=$3
    shift 3
    hb_dir=$(mktemp -d "${TMPDIR:-/tmp}/bufpool-handback.XXXXXX") || return 1
    {
        echo "bufpool-rules 1"
        echo "# every call to the previous module: only the hand-back acts"
        for hb_coll in $hb_colls; do
            echo "$hb_coll alg=previous measured=\"test: $hb_program\""
        done
    } >"$hb_dir/handback.rules"
    hb_status=0
    for hb_np in $hb_nps; do
        BUFPOOL_TEST_MCA="--mca coll_bufpool_rules_file $hb_dir/handback.rules ${BUFPOOL_TEST_MCA:-}" \
            sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$hb_np" \
            "$top_builddir/test/mpi/$hb_program" "$@" || hb_status=1
    done
    rm -rf "$hb_dir"
    return $hb_status
}

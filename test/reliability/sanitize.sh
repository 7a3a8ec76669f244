#!/bin/sh
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer on 4-process
# collective jobs, with both components built with
# -fsanitize=address,undefined:
#   a. the collcheck programs (both families, --smoke; also in the
#      nonblocking and persistent forms, and test_coll_nb), test_coll_nb_hazards
#      (persistent requests left at MPI_Finalize, a user operation with a
#      large frame), test_coll_own_block (the hand-back of gather, scatter,
#      allgather and alltoall copying a rank's own block), rel_job's mix workload, and the node algorithms of
#      every collective forced (test_coll_barrier too), bcast and
#      allgather node_cma (where CMA is allowed) and allreduce hier_node on
#      two pretended hosts, themselves sanitized;
#   b. rel_job of an ordinary build (not sanitized, like most applications)
#      with the sanitized components: the ASan runtime must then come first
#      in the process, so it is LD_PRELOADed into the ranks only
#      (mpirun -x LD_PRELOAD=$(gcc -print-file-name=libasan.so)); mpirun
#      itself is not sanitized.
# Open MPI is not instrumented: ASan and UBSan can only report in our code
# and the test's, and any such report fails.  LeakSanitizer reports every
# leak of the process at exit: memreport.py sorts them by whose code they
# are in and only ours, the test's or unattributable ones fail (Open MPI's
# own are counted).  libfaultinject.so is preloaded with FAULT_KEEP_LOADED=1
# (nothing injected) so that Open MPI's unloading of components at
# MPI_Finalize does not leave frames without a module.
#
# Which build: the current one when it is sanitized (configure
# --enable-sanitizers=address,undefined); else, with RELIABILITY_SANITIZERS=1
# or RELIABILITY_FULL=1, a build of its own in
# $top_builddir/test/reliability/asan-build (gcc: its ASan runtime is a
# shared library, which components loaded by dlopen need; about a minute);
# else the test is skipped (exit 77).  RELIABILITY_SAN_BUILD=DIR uses an
# existing sanitized build tree.
set -u
. "$top_srcdir/test/reliability/rel-common.sh"
rel_require_components
report="$top_srcdir/test/reliability/memreport.py"

rel_sanitized_tree asan-build address,undefined address libasan.so __asan_report \
    "${RELIABILITY_SAN_BUILD:-}" sanitize_programs
san=$rel_san_tree
libasan=$rel_san_runtime
keep="$san/test/reliability/.libs/libfaultinject.so"
python3 "$report" --self-test || exit 1

logdir="$rel_results/sanitize.logs"
rm -rf "$logdir"
mkdir -p "$logdir"
status=0
san_opts="-x ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:malloc_context_size=40:halt_on_error=1:log_path=$logdir/asan
    -x LSAN_OPTIONS=exitcode=0
    -x UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=0:log_path=$logdir/ubsan
    -x LD_PRELOAD=$libasan:$keep -x FAULT_KEEP_LOADED=1"

# run NAME BUILD PROGRAM ARGS...: 4 processes, components from $san.
run() {
    name=$1
    build=$2
    shift 2
    log="$logdir/$name.job.log"
    OMPI_MCA_mca_base_component_path="$OMPI_SYSTEM_COMPONENT_DIR:$san/components" \
        BUFPOOL_TEST_MCA="$san_opts --mca mpool_regpar_gc_age 100ms ${run_mca:-}" top_builddir="$build" \
        sh "$rel_run" 4 "$@" >"$log" 2>&1 </dev/null
    rc=$?
    outcome=$(rel_outcome $rc "$log")
    # collcheck programs print their own PASS line.
    [ $rc -eq 0 ] && grep -q ': PASS: ' "$log" && outcome=correct
    if [ "$outcome" != correct ]; then
        echo "FAIL: sanitize $name: $outcome (log: $log)"
        grep -E 'FAIL|ERROR|runtime error|signal' "$log" | head -n 10
        status=1
    else
        echo "ok: sanitize $name: $(grep -E ': PASS: ' "$log" | head -n 1)"
    fi
}

run coll_reduce "$san" "$san/test/mpi/test_coll_reduce_family" --smoke
run coll_move "$san" "$san/test/mpi/test_coll_move_family" --smoke
# The nonblocking and persistent forms: tasks on fibers, whose switches
# ASan must be told of (coll_bufpool_fiber.c).
run coll_reduce_nonblocking "$san" "$san/test/mpi/test_coll_reduce_family" --smoke \
    --form=nonblocking
run coll_move_persistent "$san" "$san/test/mpi/test_coll_move_family" --smoke --form=persistent
run coll_nb "$san" "$san/test/mpi/test_coll_nb" --smoke --form=nonblocking --expect-bufpool
run rel_job_mix "$san" "$san/test/reliability/rel_job" --rel-workload=mix --rel-expect-pool
# Persistent requests never freed at MPI_Finalize: bufpool releases them
# there, so LeakSanitizer finds nothing of ours; a user operation whose
# frame holds *len doubles runs off the task's stack.
run_mca="--mca coll_bufpool_rules_default off"
run nb_finalize "$san" "$san/test/mpi/test_coll_nb_hazards" --case=finalize --expect-bufpool
run nb_big_frame "$san" "$san/test/mpi/test_coll_nb_hazards" --case=big-frame --expect-bufpool
# A rank's own block in gather, scatter, allgather and alltoall, copied by
# the hand-back (a rules file hands every call back; persistent calls, and
# nonblocking allgathers and alltoalls, wrap libnbc's request).
{ echo 'bufpool-rules 1'; for c in gather scatter allgather alltoall; do echo "$c alg=previous"; done; } \
    >"$logdir/handback.rules"
run_mca="--mca coll_bufpool_rules_file $logdir/handback.rules"
run own_block "$san" "$san/test/mpi/test_coll_own_block" --expect-copies
# The node algorithms of every collective forced (their shared segments,
# sequence words and tasks), barrier among them.
run_mca="--mca coll_bufpool_min_size 0 --mca coll_bufpool_allreduce_algorithm node_rsag \
--mca coll_bufpool_reduce_algorithm node --mca coll_bufpool_bcast_algorithm node \
--mca coll_bufpool_allgather_algorithm node --mca coll_bufpool_reduce_scatter_algorithm node \
--mca coll_bufpool_reduce_scatter_block_algorithm node --mca coll_bufpool_gather_algorithm node \
--mca coll_bufpool_scatter_algorithm node --mca coll_bufpool_scan_algorithm node \
--mca coll_bufpool_exscan_algorithm node --mca coll_bufpool_barrier_algorithm node \
--mca coll_bufpool_node_cold_calls 16"
run node_reduce_nonblocking "$san" "$san/test/mpi/test_coll_reduce_family" --smoke \
    --form=nonblocking --expect-node
run node_move "$san" "$san/test/mpi/test_coll_move_family" --smoke --expect-node
run node_barrier "$san" "$san/test/mpi/test_coll_barrier" --form=all --rounds=16 --expect-node
# bcast and allgather node_cma: single-copy reads into user buffers and
# bounce buffers, where this machine allows CMA.
if "$top_builddir/test/mpi/cma_probe" 2>/dev/null; then
    run_mca="--mca coll_bufpool_min_size 0 --mca coll_bufpool_bcast_algorithm node_cma \
--mca coll_bufpool_allgather_algorithm node_cma"
    run node_cma_nonblocking "$san" "$san/test/mpi/test_coll_move_family" --smoke \
        --form=nonblocking --colls=bcast,allgather --expect-node --expect-single-copy
fi
# allreduce hier_node: two pretended hosts, each through its own segment;
# depth 2, batches of a round, so that the smoke sizes' 2 and 3 rounds run
# the pipeline (a batch's exchange beside the next batch's host work).
run_mca="--mca coll_bufpool_allreduce_algorithm hier_node --mca coll_bufpool_test_host_map 0,0,1,1 \
--mca coll_bufpool_segment_size 4K --mca coll_bufpool_pipeline_depth 2"
run hier_node_nonblocking "$san" "$san/test/mpi/test_coll_reduce_family" --smoke \
    --form=nonblocking --colls=allreduce --expect-node
run_mca=
if [ "$san" != "$top_builddir" ]; then
    run plain_rel_job_preload "$top_builddir" "$top_builddir/test/reliability/rel_job" \
        --rel-workload=mix --rel-expect-pool
fi

set --
for f in "$logdir"/asan.* "$logdir"/ubsan.*; do
    [ -f "$f" ] && set -- "$@" "$f"
done
if [ $# -eq 0 ]; then
    # LeakSanitizer always finds Open MPI's own leaks: no report means the
    # sanitizers did not run at all.
    echo "FAIL: sanitize: no sanitizer log at all: were the runtimes loaded?"
    status=1
elif ! python3 "$report" --sanitizer "$@" >"$logdir/report.txt" 2>&1; then
    echo "FAIL: sanitizer reports in our code, the test's or unattributable code:"
    cat "$logdir/report.txt"
    status=1
else
    cat "$logdir/report.txt"
fi
[ $status = 0 ] && echo "sanitize: no ASan, UBSan or LeakSanitizer report in our code or the test's"
exit $status

#!/bin/sh
# Concurrency.
#   1. MPI_THREAD_MULTIPLE: 2 ranks x 8 threads (on 2 cores) run random
#      checked collectives and MPI_Alloc_mem on their own communicators,
#      rebuilt between epochs (rel_job --rel-workload=threads).  Every result
#      is checked; at every idle point nothing is out of the pool or of
#      bufpool's scratch and bytes_held is within max_capacity; after
#      warm-up, the private RSS outside the pool and the heap in use stay
#      within 16M.  MALLOC_ARENA_MAX=1: with one arena per thread glibc
#      keeps up to 64M per arena that malloc_trim cannot return, which would
#      hide a leak in noise (docs/reliability.md).
#   2. ThreadSanitizer: the pool core's multi-thread stress test (8 threads
#      and a collector), and the registration engine's tests, built with
#      clang -fsanitize=thread (when configure found clang, see
#      reliability.inc); any report fails.
# RELIABILITY_FULL=1: 40 epochs and 2M pool pairs instead of 6 and 500k.
set -u
. "$top_srcdir/test/reliability/rel-common.sh"
rel_require_components
status=0

epochs=6
pairs=500000
if [ $rel_full = 1 ]; then
    epochs=40
    pairs=2000000
fi
log="$rel_results/threads-mpi.log"
REL_MCA="-x MALLOC_ARENA_MAX=1" rel_mpi 2 "$log" --rel-workload=threads --rel-threads=8 \
    --rel-epochs=$epochs --rel-epoch-ops=30 --rel-expect-pool --verbose
rc=$?
outcome=$(rel_outcome $rc "$log")
grep -E '^rel_job threads' "$log"
if [ "$outcome" != correct ]; then
    echo "FAIL: MPI_THREAD_MULTIPLE, 8 threads: $outcome (log: $log)"
    grep -E 'FAIL|signal|TIMEOUT' "$log" | head -n 10
    status=1
else
    echo "ok: MPI_THREAD_MULTIPLE, 2 ranks x 8 threads, $epochs epochs: every result and idle point checked"
fi

tsan_dir="$top_builddir/test/reliability"
if [ ! -x "$tsan_dir/tsan_test_pool_threads" ]; then
    echo "threads: no ThreadSanitizer build (configure found no clang): TSan part skipped"
else
    for t in test_pool_threads test_pool_engine test_reg_workers test_reg_engine; do
        log="$rel_results/tsan-$t.log"
        REGPAR_STRESS_OPS=$pairs TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
            "$tsan_dir/tsan_$t" >"$log" 2>&1
        rc=$?
        if [ $rc -ne 0 ] || grep -q 'ThreadSanitizer' "$log"; then
            echo "FAIL: $t under ThreadSanitizer (exit $rc, log: $log)"
            grep -E -A 12 'WARNING: ThreadSanitizer' "$log" | head -n 30
            status=1
        else
            echo "ok: $t under ThreadSanitizer: $(tail -n 1 "$log")"
        fi
    done
fi
exit $status

#!/bin/sh
# The hazards of coll/bufpool's nonblocking runtime (test_coll_nb_hazards,
# every result checked; --expect-bufpool: bufpool's counters prove that it
# served the calls, its own defaults serving every size):
#   tag-wrap   the tag counter wrapping every 5 blocks
#              (coll_bufpool_test_nbc_tag_range) while persistent requests
#              keep theirs and nonblocking calls run beside them;
#   many       64 MPI_Ibcast in flight, 10^4 rounds: results, stacks mapped
#              and the process's mapped size flat;
#   threads    MPI_THREAD_MULTIPLE: one thread starts MPI_Iallreduce with a
#              slow user operation, another completes them;
#   big-frame  a user operation with a local array of *len doubles;
#   finalize   persistent requests never freed at MPI_Finalize (sanitize.sh
#              runs it under ASan and LeakSanitizer too).
set -u
status=0
failed=
mca="--mca coll_bufpool_rules_default off"
run() { # NP MCA ARGS...
    np=$1 extra=$2
    shift 2
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca $extra" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" "$top_builddir/test/mpi/test_coll_nb_hazards" \
        "$@" --expect-bufpool </dev/null; then
        status=1
        failed="$failed
  np=$np $extra $*"
    fi
}
for np in 2 3; do
    run $np "--mca coll_bufpool_test_nbc_tag_range 85" --case=tag-wrap
    run $np "" --case=many
    run $np "" --case=threads
    run $np "" --case=big-frame
    run $np "" --case=finalize
done
if [ $status != 0 ]; then
    echo "coll_nb_hazards: failed runs:$failed"
fi
exit $status

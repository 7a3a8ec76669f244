#!/bin/sh
# Persistent collectives do not leak: init/start/wait/free cycles of a
# 512 KiB allreduce (test_coll_persist_mem) with resident and mapped size
# flat after the first 100 (1 MiB of slack in all), every result checked,
# every init served by bufpool, no stack mapped and no scratch beyond one
# buffer per cycle in the measured cycles.  10,000 cycles at 2 processes
# (3,000 unless BUFPOOL_TEST_FULL=1); 1,000 at 3 processes, where the
# allreduce takes its scratch from the pool (rsag's slots).
set -u
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
cycles=3000
[ "$collcheck_full" = 0 ] || cycles=10000
status=0
sh "$top_srcdir/test/mpi/run-mpi-test.sh" 2 "$top_builddir/test/mpi/test_coll_persist_mem" \
    --cycles=$cycles --expect-bufpool </dev/null || status=1
sh "$top_srcdir/test/mpi/run-mpi-test.sh" 3 "$top_builddir/test/mpi/test_coll_persist_mem" \
    --cycles=1000 --expect-bufpool </dev/null || status=1
exit $status

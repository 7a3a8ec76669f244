#!/bin/sh
# MPI_Alloc_mem / MPI_Free_mem with mpool_hints=mpool=regpar round-trip data
# through pool memory at 1, 2 and 3 processes, and the job still works when
# the regpar component is excluded (Open MPI's default allocator serves it);
# free slabs go back during an idle period with sparse MPI calls.
set -u
run="$top_srcdir/test/mpi/run-mpi-test.sh"
prog="$top_builddir/test/mpi/test_mpool_alloc_mem"
for np in 1 2 3; do
    "$run" "$np" "$prog" || exit 1
done
BUFPOOL_TEST_MCA="--mca mpool ^regpar" "$run" 2 "$prog" --no-pool || exit 1
# A pool capped below every request still serves them all (over capacity).
BUFPOOL_TEST_MCA="--mca mpool_regpar_max_capacity 2M" "$run" 2 "$prog" || exit 1
# Idle slabs go back while the application computes between sparse MPI
# calls (an MPI_Test every 100 ms): collection runs from the progress
# engine, whose low-priority callbacks such an application calls rarely.
# The age leaves the slabs held until the idle period starts even on a
# loaded machine (1 s did not, with four jobs on 2 cores: "nothing held
# before the idle period"); the idle period is well past it.
BUFPOOL_TEST_MCA="--mca mpool_regpar_gc_age 3s" "$run" 2 "$prog" --idle-collect 8 || exit 1
exit 0

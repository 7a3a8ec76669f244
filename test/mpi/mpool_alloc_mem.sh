#!/bin/sh
# MPI_Alloc_mem / MPI_Free_mem with mpool_hints=mpool=regpar round-trip data
# through pool memory at 1, 2 and 3 processes, and the job still works when
# the regpar component is excluded (Open MPI's default allocator serves it).
set -u
run="$top_srcdir/test/mpi/run-mpi-test.sh"
prog="$top_builddir/test/mpi/test_mpool_alloc_mem"
for np in 1 2 3; do
    "$run" "$np" "$prog" || exit 1
done
BUFPOOL_TEST_MCA="--mca mpool ^regpar" "$run" 2 "$prog" --no-pool || exit 1
# A pool capped below every request still serves them all (over capacity).
BUFPOOL_TEST_MCA="--mca mpool_regpar_max_capacity 2M" "$run" 2 "$prog" || exit 1
exit 0

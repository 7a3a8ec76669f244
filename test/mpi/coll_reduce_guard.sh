#!/bin/sh
# On every series to 6.0.x, libnbc's MPI_Ireduce and MPI_Reduce_init of a
# commutative operation write past their temporary buffer, and can return
# wrong elements, when the datatype's data does not start at its origin:
# on 3 or more ranks (Rabenseifner's algorithm), and on 2 with the root's
# input in place (docs/reliability.md).  Only
# a user-defined operation can take such a datatype, and the operation is
# the same on every rank, so bufpool serves every such call of a
# user-defined commutative operation (coll_bufpool_resolve.c, guard_map).
# A rules file hands every reduce back, so that the guard alone serves:
# test_coll_reduce_guard checks every element of every root's result and
# every byte around the data at 2 to 5 ranks, the root's input in place or
# not, and --expect-guard that
# bufpool served each call of the user operation and handed each MPI_SUM
# back.  On stock Open MPI (--mca coll ^bufpool), or with the guard off in
# the code, the same runs abort, hang or crash (verified 2026-11-29); at 2
# ranks stock writes past libnbc's buffer in place (AddressSanitizer,
# 4.1.4, 5.0.10 and 6.0.x, 2026-11-30).
set -u
. "$top_srcdir/test/mpi/handback-run.sh"
handback_run reduce "2 3 4 5" test_coll_reduce_guard --expect-guard

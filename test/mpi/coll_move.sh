#!/bin/sh
# Data movement (bcast, allgather, alltoall, gather, scatter) against known
# byte patterns; see test_coll_move_family.c.
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
collcheck_sweep test_coll_move_family

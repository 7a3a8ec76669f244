#!/bin/sh
# Reductions (allreduce, reduce, reduce_scatter, reduce_scatter_block, scan,
# exscan) against the serial reference; see test_coll_reduce_family.c.
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
collcheck_sweep test_coll_reduce_family

#!/bin/sh
# MPI_THREAD_MULTIPLE: threads running checked collectives concurrently on
# their own communicators; see test_coll_threads.c.
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
collcheck_sweep test_coll_threads

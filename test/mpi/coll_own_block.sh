#!/bin/sh
# A rank's own block in MPI_Gather, MPI_Scatter (the root's), MPI_Allgather
# and MPI_Alltoall (every rank's), every form, between two different
# datatypes: Open MPI's local copy (ompi_datatype_sndrcv, 64 KiB at a time)
# loses the last element's double when a chunk boundary splits an element,
# on every series to 6.0.x (docs/reliability.md).  bufpool copies such a
# block itself and hands the call back with MPI_IN_PLACE at the root of a
# gather or scatter, an allgather's block sent from scratch laid out as the
# receive datatype, an alltoall's copied again after the call
# (bufpool_own_block_at_risk).  A rules file hands every
# such call back, so that the hand-back alone does it: test_coll_own_block
# checks every element and every byte around the data at 1, 2, 3 and 4
# ranks (at 1, bufpool sits just above coll/self, which would otherwise
# answer every call itself),
# and --expect-copies that each rank copied exactly its calls at risk and
# bufpool served none.  On stock Open MPI
# (--mca coll ^bufpool), or with the copy off in the code, the same runs
# report wrong elements (verified 2026-11-29).
set -u
. "$top_srcdir/test/mpi/handback-run.sh"
handback_run "gather scatter allgather alltoall" "1 2 3 4" test_coll_own_block --expect-copies

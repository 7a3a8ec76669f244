#!/bin/sh
# An alltoall whose send and receive datatypes differ is never handed back
# to the previous module for speed: Open MPI's modified Bruck alltoall
# (tuned's choice for small blocks on many ranks) corrupts such calls up to
# 4.1.4 (open-mpi/ompi#10488; Debian 12's 4.1.4 writes past the receive
# buffer at 16 ranks).  16 ranks pretend to run on 4 hosts
# (coll_bufpool_test_host_map), where auto's measured rows hand alltoalls of
# at most 256 B back; the move family's alltoalls, mixed types among them,
# must pass and --expect-bufpool proves that bufpool served.  Verified to
# fail when the decision hands those calls back.
set -u
hosts=0,0,0,0,1,1,1,1,2,2,2,2,3,3,3,3
BUFPOOL_TEST_MCA="--mca coll_bufpool_test_host_map $hosts ${BUFPOOL_TEST_MCA:-}" \
    sh "$top_srcdir/test/mpi/run-mpi-test.sh" 16 "$top_builddir/test/mpi/test_coll_move_family" \
    --smoke --comms=world --colls=alltoall --expect-bufpool

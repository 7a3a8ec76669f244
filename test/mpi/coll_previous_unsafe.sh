#!/bin/sh
# Built against Open MPI up to 4.1.4, a blocking alltoall in tuned's Bruck
# range (16+ ranks, small blocks) is never handed back to the previous
# module, whatever its datatypes: Open MPI's modified Bruck alltoall
# corrupts calls whose send and receive types differ (open-mpi/ompi#10488;
# Debian 12's 4.1.4 writes past the receive buffer at 16 ranks), and no
# rank knows the others' types (docs/collectives.md, "Every rank makes the
# same choice").  16 ranks pretend to run on 4 hosts
# (coll_bufpool_test_host_map), where auto's measured rows hand alltoalls of
# at most 256 B back; the move family's alltoalls, mixed types among them,
# must pass and --expect-bufpool proves that bufpool served.  Verified to
# fail when the decision hands those calls back.
set -u
hosts=0,0,0,0,1,1,1,1,2,2,2,2,3,3,3,3
BUFPOOL_TEST_MCA="--mca coll_bufpool_test_host_map $hosts ${BUFPOOL_TEST_MCA:-}" \
    sh "$top_srcdir/test/mpi/run-mpi-test.sh" 16 "$top_builddir/test/mpi/test_coll_move_family" \
    --smoke --comms=world --colls=alltoall --expect-bufpool

#!/bin/sh
# Communicator life cycle around checked collectives; see test_coll_comms.c.
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
collcheck_sweep test_coll_comms

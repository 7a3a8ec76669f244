#!/bin/sh
# Runs a program of a job with settings that differ between ranks, as a
# launch may give them (an MPMD command line, a per-host environment):
#
#   rank-env.sh 'VAR=VALUE ...' 'VAR=VALUE ...' PROGRAM [ARGS...]
#
# exports the first list's settings in rank 0 of MPI_COMM_WORLD and the
# second's in every other rank (Open MPI's OMPI_COMM_WORLD_RANK says which),
# then runs PROGRAM.  For run-mpi-test.sh: it is the program it launches.
set -u
if [ $# -lt 3 ]; then
    echo "usage: $0 'RANK0 SETTINGS' 'OTHER SETTINGS' PROGRAM [ARGS...]" >&2
    exit 2
fi
rank0=$1 others=$2
shift 2
settings=$others
[ "${OMPI_COMM_WORLD_RANK:-0}" != 0 ] || settings=$rank0
for setting in $settings; do
    export "${setting?}"
done
exec "$@"

#!/bin/sh
# scan and exscan "node" (built 2026-11-29: every rank posts its input in
# the communicator's shared segment and reduces the slots of the ranks
# before it), forced, against Open MPI's own (4.1: basic's linear chain;
# libnbc for the nonblocking and persistent forms) at 2 ranks on the
# project's 2-vCPU machine: coll_latency -C default,bufpool, 5 interleaved
# rounds, every result checked.  From a build directory:
#   sh ../../docs/results/2026-11-29-2rank-scan-node/run.sh OUTDIR RUN
#   (OMPI=/opt/ompi6 for another Open MPI: its mpirun and components)
set -eu
out=$1 run=$2
. "$(dirname "$0")/../2rank-mode.sh"
forced="--mca coll_bufpool_min_size 0 --mca coll_bufpool_scan_algorithm node \
--mca coll_bufpool_exscan_algorithm node"
for form in blocking nonblocking persistent; do
    # shellcheck disable=SC2086
    $mpirun --allow-run-as-root -np 2 --bind-to core --mca op ^avx $forced bench/coll_latency \
        -C default,bufpool -c scan,exscan -m 4:4K --size-factor 4 -r 5 -F $form \
        -o "$out/scan-run$run.csv" -t "scan np=2 $form run$run" >/dev/null
done
mode_after

#!/bin/sh
# scan and exscan "node" above 4 KiB (built 2026-11-29: a chain of rounds
# through the chunk segment, 128K x 4 by default), at 2 ranks on the
# project's 2-vCPU machine, in one job per form beside Open MPI's own (4.1:
# basic's linear chain; libnbc for the nonblocking and persistent forms)
# and bufpool at the package's defaults (scan: its pipelined chain from 4
# KiB; exscan at 2 ranks: Open MPI's): coll_latency -C
# default,bufpool,bufpool+node (bufpool+node: the info keys
# coll_bufpool_scan_algorithm and coll_bufpool_exscan_algorithm node on
# its communicator), 5 interleaved rounds, every result checked.  From a
# build directory:
#   sh ../../docs/results/2026-11-29-2rank-scan-rounds/run.sh OUTDIR RUN
#   (OMPI=/opt/ompi6 for another Open MPI: its mpirun and components)
set -eu
out=$1 run=$2
. "$(dirname "$0")/../2rank-mode.sh"
for form in blocking nonblocking persistent; do
    $mpirun --allow-run-as-root -np 2 --bind-to core --mca op ^avx bench/coll_latency \
        -C default,bufpool,bufpool+node -c scan,exscan -m 8K:8M --size-factor 4 -r 5 -F $form \
        -o "$out/scan-rounds-run$run.csv" -t "scan np=2 $form run$run" >/dev/null
done
mode_after

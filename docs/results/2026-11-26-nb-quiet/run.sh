#!/bin/bash
# Nonblocking and persistent collectives, bufpool against libnbc, 2 ranks,
# Open MPI 4.1.4 (_build/main), after the form rows and the nonblocking
# entry that looks at nothing but the size map for a call it hands back.
# Usage: bash docs/results/2026-11-26-nb-quiet/run.sh [STEP...]
# Steps: nonblocking persistent overlap toll (default: all).
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
out=$top/docs/results/2026-11-26-nb-quiet
run=$top/bench/run-side-by-side.sh
common=(--no-build --build-dir "$top/_build/main" --np 2 --configs "bufpool default" --stat p50)
for s in ${*:-nonblocking persistent overlap toll}; do
  echo "=== $s $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  case $s in
  nonblocking) "$run" "${common[@]}" --form nonblocking --rounds 5 --out "$out/nonblocking" ;;
  persistent) "$run" "${common[@]}" --form persistent --rounds 5 --persist-cycles 2000 --out "$out/persistent" ;;
  overlap) "$run" "${common[@]}" --form overlap --rounds 3 --test-calls 8 --collectives "allreduce bcast alltoall reduce_scatter_block" --max-size 16M --out "$out/overlap-test8" ;;
  toll) env OMPI_MCA_mca_base_component_path=$(sed -n 's/^OMPI_SYSTEM_COMPONENT_DIR = //p' "$top/_build/main/bench/Makefile"):$out/nonblocking/components \
          mpirun --allow-run-as-root -np 2 "$top/_build/main/bench/coll_toll" -n 1000000 -c allreduce,bcast -F nonblocking > "$out/toll-nonblocking.txt" 2>&1
        env OMPI_MCA_mca_base_component_path=$(sed -n 's/^OMPI_SYSTEM_COMPONENT_DIR = //p' "$top/_build/main/bench/Makefile"):$out/nonblocking/components \
          mpirun --allow-run-as-root -np 2 "$top/_build/main/bench/coll_toll" -n 1000000 -c allreduce,bcast > "$out/toll-blocking.txt" 2>&1 ;;
  esac
  echo "=== $s done rc=$? $(date -u +%H:%M:%S)"
done

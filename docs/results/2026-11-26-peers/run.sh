#!/bin/bash
# The peers side by side (issue 21): bufpool against the collective
# components of the Open MPI that runs, speed and memory, on 6.0 (one host,
# 2 emulated hosts x 2 ranks, 4 x 1), 5.0 and 4.1 (one host).
# Usage: bash docs/results/2026-11-26-peers/run.sh [STEP...]
# Steps: one6 mh22 mh41 one5 one4 fp6 fp6mh fp5 fp4 (default: all).
# Build trees: _build/main (4.1), _build/ompi5, _build/ompi6.
set -u
top=$(cd "$(dirname "$0")/../../.." && pwd)
out=$top/docs/results/2026-11-26-peers
run=$top/bench/run-side-by-side.sh
steps=${*:-one6 mh22 mh41 one5 one4 fp6 fp6mh fp5 fp4}
all="allreduce reduce bcast allgather reduce_scatter reduce_scatter_block alltoall gather scatter scan exscan"
hier="allreduce reduce bcast allgather alltoall gather scatter"
common=(--no-build --rounds 3 --stat p50)
for s in $steps; do
  echo "=== $s $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"
  case $s in
  one6) "$run" "${common[@]}" --build-dir "$top/_build/ompi6" --out "$out/6.0-1x2" --np 2 \
          --configs "bufpool default acoll xhc adapt basic" --collectives "$all" --max-size 64M ;;
  mh22) "$run" "${common[@]}" --build-dir "$top/_build/ompi6" --out "$out/6.0-2x2" --hosts 2 --ppn 2 \
          --configs "bufpool default han han_nopersist" --collectives "$hier" --max-size 16M --size-factor 4 ;;
  mh41) "$run" "${common[@]}" --build-dir "$top/_build/ompi6" --out "$out/6.0-4x1" --hosts 4 --ppn 1 \
          --configs "bufpool default han han_nopersist" --collectives "$hier" --max-size 16M --size-factor 4 ;;
  one5) "$run" "${common[@]}" --build-dir "$top/_build/ompi5" --out "$out/5.0-1x2" --np 2 \
          --configs "bufpool default acoll adapt basic" --collectives "$all" --max-size 64M --size-factor 4 ;;
  one4) "$run" "${common[@]}" --build-dir "$top/_build/main" --out "$out/4.1-1x2" --np 2 \
          --configs "bufpool default adapt basic" --collectives "$all" --max-size 64M --size-factor 4 ;;
  fp6) "$run" --no-build --footprint --build-dir "$top/_build/ompi6" --out "$out/footprint-6.0-1x2" --np 2 \
          --configs "bufpool default acoll adapt" --collectives "allreduce bcast allgather reduce scatter gather alltoall" ;;
  fp6mh) "$run" --no-build --footprint --build-dir "$top/_build/ompi6" --out "$out/footprint-6.0-2x2" --hosts 2 --ppn 2 \
          --configs "bufpool han han_nopersist" --collectives "allreduce bcast allgather reduce scatter gather alltoall" ;;
  fp5) "$run" --no-build --footprint --build-dir "$top/_build/ompi5" --out "$out/footprint-5.0-1x2" --np 2 \
          --configs "bufpool default" --collectives "allreduce bcast allgather reduce scatter gather alltoall" ;;
  fp4) "$run" --no-build --footprint --build-dir "$top/_build/main" --out "$out/footprint-4.1-1x2" --np 2 \
          --configs "bufpool default" --collectives "allreduce bcast allgather reduce scatter gather alltoall" ;;
  *) echo "unknown step $s" >&2; exit 2 ;;
  esac
  echo "=== $s done rc=$? $(date -u +%H:%M:%S)"
done

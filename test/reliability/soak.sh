#!/bin/sh
# Soak: a long MPI_THREAD_MULTIPLE job (not part of make check; ten minutes
# by default, run it at low priority on a shared machine):
#
#   nice -n 10 make -C test check TESTS=reliability/soak.sh SOAK_SECONDS=600
#   (or: top_srcdir=... top_builddir=... sh test/reliability/soak.sh)
#
# 2 ranks run epochs of random checked collectives (every collective,
# built-in and derived types, commutative and not, sizes from 0 to 4M, roots,
# in place or not) and MPI_Alloc_mem on 1 to 8 threads (a different count
# each epoch), each thread on its own communicator, rebuilt with a random
# shape every epoch.  The pool's cap is 64M, so it is really reached.
# Rank 0 samples its RSS and the pool's bytes_held (MPI_T) every second; at
# every idle point between epochs, every rank checks that nothing is out and
# bytes_held <= max_capacity, and after warm-up (the first quarter) the
# private RSS outside the pool and the heap in use must stay within 16M.
# Every collective result is checked against its serial reference.
#
# Output in SOAK_OUT (default $top_builddir/test/reliability/soak): the
# samples and idle-point CSVs, the job's log, soak.png (RSS and held bytes
# over time, by gnuplot) and summary.txt.  SOAK_PNG=FILE copies the plot
# (docs/img/soak.png is made this way).  MALLOC_ARENA_MAX=1, as in
# threads.sh: glibc's per-thread arenas keep memory malloc_trim cannot
# return, which would drown a leak in noise.
set -u
. "$top_srcdir/test/reliability/rel-common.sh"
rel_require_components
seconds=${SOAK_SECONDS:-600}
out=${SOAK_OUT:-$top_builddir/test/reliability/soak}
mkdir -p "$out"
cap=64M
if [ "$seconds" -lt 600 ]; then
    echo "soak: SOAK_SECONDS=$seconds is below the 10 minutes the issue asks for (a trial run)"
fi
BUFPOOL_TEST_TIMEOUT=$((seconds * 3 + 300))
export BUFPOOL_TEST_TIMEOUT

start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
REL_MCA="-x MALLOC_ARENA_MAX=1 --mca mpool_regpar_max_capacity $cap" rel_mpi 2 "$out/job.log" \
    --rel-workload=threads --rel-threads=8 --rel-vary-threads --rel-seconds="$seconds" \
    --rel-epoch-ops=40 --rel-max-held=$cap --rel-samples="$out/samples.csv" \
    --rel-idle="$out/idle.csv" --rel-expect-pool --verbose
rc=$?
outcome=$(rel_outcome $rc "$out/job.log")

{
    echo "soak started $start, $(git -C "$top_srcdir" describe --always --dirty 2>/dev/null || echo '?')"
    echo "outcome: $outcome (exit $rc)"
    grep -E '^rel_job' "$out/job.log"
    awk -F, 'NR > 1 { n++; if ($4 > maxheld) maxheld = $4; if ($2 > maxrss) maxrss = $2 }
        END { printf "samples: %d; rank 0 peak RSS %.1f MiB, peak bytes_held %.1f MiB\n",
              n, maxrss / 1048576, maxheld / 1048576 }' "$out/samples.csv"
    awk -F, 'NR > 1 { n++; if ($8 > m) m = $8; e = $2 }
        END { printf "idle points: %d (epochs 0..%d); largest bytes_held while idle %.1f MiB (cap %s)\n",
              n, e, m / 1048576, "'$cap'" }' "$out/idle.csv"
} >"$out/summary.txt"
cat "$out/summary.txt"

if command -v gnuplot >/dev/null 2>&1; then
    gnuplot -e "samples='$out/samples.csv'; idle='$out/idle.csv'; out='$out/soak.png'; cap=64" \
        "$top_srcdir/test/reliability/soak.gp" && echo "soak: plot $out/soak.png"
    if [ -n "${SOAK_PNG:-}" ] && [ -f "$out/soak.png" ]; then
        cp "$out/soak.png" "$SOAK_PNG" && echo "soak: plot copied to $SOAK_PNG"
    fi
else
    echo "soak: gnuplot not installed: no plot"
fi

if [ "$outcome" != correct ]; then
    echo "soak: FAILED ($outcome): see $out/job.log"
    grep -E 'FAIL|signal|TIMEOUT' "$out/job.log" | head -n 10
    exit 1
fi
echo "soak: passed"
exit 0

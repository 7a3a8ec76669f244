#!/bin/sh
# Builds fbox_race.c against each Open MPI named and runs it RUNS times
# (default 10) at 2 processes, 4 threads exchanging 64-byte messages for 2
# seconds, with the fast boxes of btl/sm on (Open MPI's default) and off;
# prints the hangs (a run still going 30 s after its threads started) and
# the exchanges of the clean runs.
#
#   sh docs/results/2026-11-30-ompi6-fbox-race/run.sh [RUNS]
#
# The series: Debian's 4.1 (mpicc/mpirun on PATH) and /opt/ompi5,
# /opt/ompi6 where they exist (scripts/build-ompi.sh builds them).  Nothing
# of ompi-bufpool is loaded: each mpirun uses its own component path.
set -u
runs=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fbox_race.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PRTE_MCA_prte_allow_run_as_root=1
unset OMPI_MCA_mca_base_component_path

series() { # NAME BINDIR
    name=$1 bin=$2
    if [ ! -x "$bin/mpicc" ] || [ ! -x "$bin/mpirun" ]; then
        echo "$name: no $bin/mpicc or mpirun: skipped"
        return
    fi
    "$bin/mpicc" -O2 -pthread "$here/fbox_race.c" -o "$work/fbox_race_$name" || return
    for fbox in on off; do
        extra=
        [ $fbox = off ] && extra="--mca btl_sm_fbox_max 0"
        hangs=0 times=
        i=0
        while [ $i -lt "$runs" ]; do
            i=$((i + 1))
            # shellcheck disable=SC2086 # an empty extra must vanish
            out=$(timeout 100 "$bin/mpirun" -np 2 --bind-to none --mca mpi_yield_when_idle 1 \
                $extra "$work/fbox_race_$name" 4 2 64 30 2>&1 | grep -a -o 'fbox_race: .*' | head -n 1)
            case $out in
                *HANG*) hangs=$((hangs + 1)) ;;
                *" 0 wrong bytes") times="$times $(echo "$out" | sed 's/.*, \([0-9]*\) exchanges.*/\1/')" ;;
                *) echo "$name fast boxes $fbox: run $i: ${out:-no output}" ;;
            esac
        done
        echo "$name, fast boxes $fbox: $hangs of $runs runs hung; exchanges in the clean runs:$times"
    done
}

series 4.1 "$(dirname "$(command -v mpicc 2>/dev/null || echo /usr/bin/mpicc)")"
series 5.0 /opt/ompi5/bin
series 6.0 /opt/ompi6/bin

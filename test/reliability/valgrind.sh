#!/bin/sh
# Valgrind memcheck of 2-process jobs (rel_job's checked workloads; smoke,
# also in the nonblocking form, in make check; mix, threads and comms too
# with RELIABILITY_FULL=1), twice:
#   A. with test/reliability/openmpi.supp (and Debian's openmpi-valgrind.supp
#      when installed): every report left must be none of ours or the
#      test's; Open MPI's that are left are listed (add them to the file);
# Open MPI unloads its components at MPI_Finalize, before valgrind's leak
# check: libfaultinject.so is preloaded with FAULT_KEEP_LOADED=1 (dlclose
# does nothing, nothing else is injected) so that every frame keeps its
# object's name.
#   B. with no suppression at all: memreport.py sorts every report by
#      whose code it is in, and any report with a frame of coll/bufpool or
#      mpool/regpar anywhere in its stack fails the test -- so the
#      suppression file cannot hide anything of ours.
# The suppression file itself must not name our components and must anchor
# every entry (no "..." wildcard frames).
# Skipped (exit 77) when valgrind is not installed or the build is sanitized.
set -u
. "$top_srcdir/test/reliability/rel-common.sh"
rel_require_components
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind: not installed (scripts/install-deps.sh installs it): skipped"
    exit 77
fi
if [ $rel_sanitized = 1 ]; then
    echo "valgrind: this build is sanitized (ASan and valgrind do not mix): skipped"
    exit 77
fi
supp="$top_srcdir/test/reliability/openmpi.supp"
report="$top_srcdir/test/reliability/memreport.py"
status=0
python3 "$report" --self-test || exit 1

if grep -v '^#' "$supp" | grep -E -i -q 'bufpool|regpar|^ *\.\.\. *$'; then
    echo "FAIL: $supp names our components or has a '...' frame"
    status=1
fi

# smoke_nb: the smoke workload in the nonblocking form (tasks on fibers,
# their stacks registered with valgrind).
workloads="smoke smoke_nb"
[ $rel_full = 1 ] && workloads="smoke smoke_nb mix threads comms"
supps="--suppressions=$supp"
debian_supp=/usr/share/openmpi/openmpi-valgrind.supp
[ -f "$debian_supp" ] && supps="$supps --suppressions=$debian_supp"
logdir="$rel_results/valgrind.logs"
rm -rf "$logdir"
mkdir -p "$logdir"
# Valgrind is ~30x slower: no timeout kills a correct run.
BUFPOOL_TEST_TIMEOUT=1800
export BUFPOOL_TEST_TIMEOUT

for wl in $workloads; do
    case $wl in
        threads) args="--rel-workload=threads --rel-threads=4 --rel-epochs=2 --rel-epoch-ops=10" ;;
        comms) args="--rel-workload=comms --rel-comms=200" ;;
        mix) args="--rel-workload=mix --rel-gc-wait=300" ;;
        smoke_nb) args="--rel-workload=smoke --form=nonblocking" ;;
        *) args="--rel-workload=$wl" ;;
    esac
    for run in A B; do
        dir="$logdir/$wl-$run"
        mkdir -p "$dir"
        s=
        [ $run = A ] && s=$supps
        # shellcheck disable=SC2086 # word lists
        BUFPOOL_TEST_MCA="--mca mpool_regpar_gc_age 100ms -x LD_PRELOAD=$rel_fault_lib
            -x FAULT_KEEP_LOADED=1" sh "$rel_run" 2 "$(command -v valgrind)" \
            --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
            --num-callers=40 --track-origins=no $s --log-file="$dir/vg.%p.log" -- \
            "$rel_job" $args --rel-expect-pool >"$dir/job.log" 2>&1 </dev/null
        rc=$?
        outcome=$(rel_outcome $rc "$dir/job.log")
        summary=$(grep -h 'ERROR SUMMARY' "$dir"/vg.*.log | sed 's/.*ERROR SUMMARY: //' |
            tr '\n' ';' | sed 's/;$//')
        if [ "$outcome" != correct ]; then
            echo "FAIL: valgrind $wl ($run): the job itself: $outcome (log: $dir/job.log)"
            grep -E 'FAIL|signal|TIMEOUT' "$dir/job.log" | head -n 5
            status=1
            continue
        fi
        if ! python3 "$report" "$dir"/vg.*.log >"$dir/report.txt"; then
            echo "FAIL: valgrind $wl ($run): reports in our code, the test's or unloaded code:"
            cat "$dir/report.txt"
            status=1
        else
            left=$(sed -n 's/.*reports: .*, \([0-9]*\) Open MPI.*/\1/p' "$dir/report.txt")
            if [ $run = A ]; then
                echo "ok: valgrind $wl with openmpi.supp: $summary per process; none ours," \
                    "$left of Open MPI's left unsuppressed"
            else
                echo "ok: valgrind $wl without suppressions: $summary per process; all $left" \
                    "reports are Open MPI's (or its libraries'), none ours or the test's"
            fi
        fi
    done
done
exit $status

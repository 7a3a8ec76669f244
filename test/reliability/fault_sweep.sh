#!/bin/sh
# Fault injection: the system and network calls of our components fail at
# the Nth call (libfaultinject.so, preloaded into the ranks), in each phase
# of rel_job's mix workload: during MPI_Init ("init"), inside collectives
# ("collective"), inside MPI_Alloc_mem ("alloc_mem") and while the pool
# collects idle slabs and maps new ones ("collection").  Every run must
# either compute correct results (the pool falls back to plain memory, the
# engine to unregistered memory, bufpool to malloc) or stop with a clear MPI
# error; a crash, a hang or a wrong result fails the test.
#
# For each backend and class, a first run without failures counts the calls
# each phase makes (the injection points); then
#   quick (make check): per phase, one run where every call from the middle
#                       one on fails (FAULT_COUNT=-1);
#   full (RELIABILITY_FULL=1): per phase, a single failure at every point
#                       (at most 48, spread evenly), the same on rank 1 only
#                       (at most 16, spread evenly), and persistent failures
#                       from the first and the middle point.
# The class malloc (our components' own malloc, calloc, realloc, strdup,
# ...) runs with FAULT_MALLOC=1, in a trace of its own.
# FAULT_SWEEP_CLASSES="malloc mmap ..." runs only those classes.
# Results: $RELIABILITY_RESULTS/fault_sweep.csv (one line per run) and a
# table of injection points tried per class and outcome.
set -u
. "$top_srcdir/test/reliability/rel-common.sh"
rel_require_components
if [ ! -f "$rel_fault_lib" ]; then
    echo "fault_sweep: $rel_fault_lib is missing: make check builds it" >&2
    exit 99
fi

csv="$rel_results/fault_sweep.csv"
logdir="$rel_results/fault_sweep.logs"
rm -rf "$logdir"
mkdir -p "$logdir"
echo "backend,class,phase,at,count,rank,calls,injected,outcome" >"$csv"

# backend | classes | extra mpirun arguments
configs='
none|mmap munmap madvise pthread_create|
none|malloc|-x FAULT_MALLOC=1
pin|mlock munlock|
ofi|fi_open fi_mr_reg|
verbs|ibv_open ibv_reg_mr|-x FAULT_FAKE_VERBS=1
'
phases="init collective alloc_mem collection"
# Collection runs from the progress loop once a quarter of gc_age has passed.
common_mca="--mca mpool_regpar_gc_age 50ms"
status=0
runs=0

# report FILE sum|max FIELD PHASE CLASS: a field of the interposer's report
# lines for one phase and class, summed over the ranks or the largest.
report() {
    awk -v how="$2" -v f="$3" -v p="phase=$4" -v c="class=$5" '
        { hp = hc = 0; for (i = 1; i <= NF; i++) { if ($i == p) hp = 1; if ($i == c) hc = 1 } }
        hp && hc { for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) {
            v = substr($i, length(f) + 2) + 0; s += v; if (v > m) m = v } }
        END { print (how == "sum" ? s : m) + 0 }' "$1"
}

# one_run backend class phase at count rank(-1 = all) calls extra
# (the workload is rel_job's mix unless $workload says otherwise)
workload="--rel-workload=mix --rel-gc-wait=200"
one_run() {
    tag="$1-$2-$3-at$4-n$5-r$6"
    log="$logdir/$tag.log"
    rep="$logdir/$tag.report"
    rank_arg=
    [ "$6" -ge 0 ] && rank_arg="-x FAULT_RANK=$6"
    REL_MCA="$common_mca --mca mpool_regpar_reg_backend $1 $8 -x LD_PRELOAD=$rel_preload
        -x FAULT_REPORT=$rep -x FAULT_FUNC=$(echo "$2" | tr + ,) -x FAULT_PHASE=$3 -x FAULT_AT=$4
        -x FAULT_COUNT=$5 $rank_arg" rel_mpi 2 "$log" $workload --rel-expect-pool
    rc=$?
    outcome=$(rel_outcome $rc "$log")
    injected=0
    for c in $(echo "$2" | tr + ' '); do
        [ -f "$rep" ] && injected=$((injected + $(report "$rep" sum injected "$3" "$c")))
    done
    if [ "$injected" -eq 0 ] && [ "$outcome" = correct ]; then
        outcome=not_reached # the run made fewer calls than the trace
    fi
    echo "$1,$2,$3,$4,$5,$6,$7,$injected,$outcome" >>"$csv"
    runs=$((runs + 1))
    case $outcome in
        correct | mpi_error | not_reached)
            rm -f "$log" "$rep"
            ;;
        *)
            echo "FAIL: $outcome: backend $1, $2 failing at call $4 (count $5, rank $6) in phase $3; log: $log"
            grep -E 'FAIL|signal|TIMEOUT|error' "$log" | head -n 8
            status=1
            ;;
    esac
}

# the points of one phase: "at count rank" per line
points() { # calls
    c=$1
    if [ $rel_full = 0 ]; then
        echo "$(((c + 1) / 2)) -1 -1"
        return
    fi
    if [ "$c" -le 48 ]; then
        seq 1 "$c" | sed 's/$/ 1 -1/'
    else
        awk -v c="$c" 'BEGIN { for (i = 0; i < 48; i++) print 1 + int(i * (c - 1) / 47) " 1 -1" }'
    fi
    # One rank alone: where the ranks' states part (a communicator's module
    # made on one rank only), spread over the phase.
    if [ "$c" -le 16 ]; then
        seq 1 "$c" | sed 's/$/ 1 1/'
    else
        awk -v c="$c" 'BEGIN { for (i = 0; i < 16; i++) print 1 + int(i * (c - 1) / 15) " 1 1" }'
    fi
    echo "1 -1 -1"
    [ "$c" -gt 1 ] && echo "$(((c + 1) / 2)) -1 -1"
    return 0
}

only=${FAULT_SWEEP_CLASSES:-}
printf '%s\n' "$configs" | while IFS='|' read -r backend classes extra; do
    [ -n "$backend" ] || continue
    if [ -n "$only" ]; then
        wanted=
        for class in $classes; do
            case " $only " in *" $class "*) wanted="$wanted $class" ;; esac
        done
        [ -n "$wanted" ] || continue
        classes=$wanted
    fi
    # One trace per line of configs (backend none has two).
    ttag="$backend-$(echo $classes | tr ' ' +)"
    trace="$logdir/trace-$ttag.report"
    tlog="$logdir/trace-$ttag.log"
    rm -f "$trace"
    REL_MCA="$common_mca --mca mpool_regpar_reg_backend $backend $extra
        -x LD_PRELOAD=$rel_preload -x FAULT_REPORT=$trace --mca coll_bufpool_verbose 1" \
        rel_mpi 2 "$tlog" --rel-workload=mix --rel-expect-pool --rel-gc-wait=200
    rc=$?
    # Which collectives ran bufpool's own code (and so met the failures).
    echo "fault_sweep: backend $backend, calls on one rank (bufpool's own / handed to the" \
        "previous module): $(grep -E '^\[[^]]*\]   [a-z_]+ +[0-9]+ calls' "$tlog" | head -n 11 |
            awk '{ printf "%s%s %d/%d", sep, $2, $3, $5; sep = ", " }')"
    if [ "$(rel_outcome $rc "$tlog")" != correct ]; then
        echo "FAIL: backend $backend without any failure: $(rel_outcome $rc "$tlog")"
        tail -n 20 "$tlog"
        echo x >>"$csv.failed"
        continue
    fi
    for class in $classes; do
        for phase in $phases; do
            calls=$(report "$trace" max calls "$phase" "$class")
            [ "$calls" -gt 0 ] || continue
            points "$calls" | while read -r at count rank; do
                one_run "$backend" "$class" "$phase" "$at" "$count" "$rank" "$calls" "$extra"
                [ $status = 0 ] || echo x >>"$csv.failed"
            done
        done
    done
done

# Full mode: bursts of mmap and madvise failures while 4 threads per rank run
# collectives and MPI_Alloc_mem concurrently (the "threads" phase is the
# whole run).
if [ $rel_full = 1 ] && { [ -z "$only" ] || case " $only " in *" mmap "*) true ;; *) false ;; esac; }; then
    workload="--rel-workload=threads --rel-threads=4 --rel-epochs=3 --rel-epoch-ops=20"
    for at in 1 5 20 60 150; do
        one_run none mmap+madvise threads "$at" 3 -1 0 "-x MALLOC_ARENA_MAX=1"
        [ $status = 0 ] || echo x >>"$csv.failed"
    done
fi

# Injection points tried (runs where a failure was really injected) per
# class, phase and outcome.
echo
echo "fault_sweep: injection points per class and phase (mode: $([ $rel_full = 1 ] && echo full || echo quick))"
awk -F, 'NR > 1 && $9 != "not_reached" {
        key = $2 " / " $3; if (!(key in tried)) order[n++] = key
        tried[key]++; out[key, $9]++; total++; o[$9]++ }
    END {
        printf "| class / phase | tried | correct | mpi_error | crash | hang | corruption | other |\n"
        printf "|---|---|---|---|---|---|---|---|\n"
        for (i = 0; i < n; i++) { k = order[i]
            printf "| %s | %d | %d | %d | %d | %d | %d | %d |\n", k, tried[k], out[k, "correct"],
                out[k, "mpi_error"], out[k, "crash"], out[k, "hang"], out[k, "corruption"], out[k, "other"] }
        printf "| **total** | %d | %d | %d | %d | %d | %d | %d |\n", total, o["correct"], o["mpi_error"],
            o["crash"], o["hang"], o["corruption"], o["other"] }' "$csv"
echo "(results: $csv)"
if [ -e "$csv.failed" ]; then
    rm -f "$csv.failed"
    echo "fault_sweep: FAILED"
    exit 1
fi
echo "fault_sweep: every injected failure ended in correct results or a clear MPI error"
exit 0

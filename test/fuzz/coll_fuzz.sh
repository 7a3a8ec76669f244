#!/bin/sh
# Differential fuzzing of whole MPI programs (test/fuzz/coll_fuzz.c): runs
# coll_fuzz under coll/bufpool configurations and classifies every failure
# by rerunning it on stock Open MPI (--mca coll ^bufpool).  A failure counts
# against bufpool only when stock passes the same seed and batch (three
# runs), and then its reproducer (five more).
#
#   coll_fuzz.sh                      CI: fixed seeds at 2, 3 and 4 processes
#                                     under each configuration (make check)
#   coll_fuzz.sh --soak SECONDS       soak: each configuration for SECONDS,
#                                     one job at a time, process counts in
#                                     turn, new seeds all along
# Options (also from the environment, in brackets):
#   --seeds FIRST:COUNT   CI seeds (FUZZ_SEEDS, default 11:10: seeds that stock
#                         Open MPI 4.1.4 passes at 2, 3 and 4 processes)
#   --seed-base N         first soak seed (FUZZ_SEED_BASE, default 1000000)
#   --np "LIST"           process counts (FUZZ_NPS, default "2 3 4")
#   --configs "LIST"      of default forced hostmap node nodetree stock
#                         (FUZZ_CONFIGS, default "default forced hostmap node
#                         nodetree")
#   --batches N           batches per seed (FUZZ_BATCHES, default 24)
#   --hang-seconds H      a step without progress for H s is a hang
#                         (FUZZ_HANG_SECONDS, default 60)
#   --chunk SECONDS       soak job length (FUZZ_CHUNK, default 120)
#   --args "ARGS"         more coll_fuzz arguments for every job, for example
#                         --same-reduce-layout (FUZZ_ARGS)
#   --classify-max N      classify at most N failures (FUZZ_CLASSIFY_MAX,
#                         default 12); later ones are listed unclassified
#   --no-classify         report failures without the stock reruns
#   --reclassify DIR      classify what DIR/failures.txt (an earlier run's
#                         output) lists as not classified, from its job logs
#                         (give the same --args); results in DIR/reclassified
#   --out DIR             logs (default $top_builddir/test/fuzz/coll_fuzz.d)
#   --build-dir DIR       build tree when run by hand (default: ./_build of
#                         the source tree, or the current directory)
#
# Configurations:
#   default  bufpool as installed (its rules decide what it serves, the
#            node rows' warm-up included: test/mpi/configs.sh)
#   forced   --mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off
#            --mca coll_bufpool_min_size 0: above every other component, and
#            no measured row hands a call back to the previous module: every
#            call goes to each collective's own default algorithm
#   hostmap  --mca coll_bufpool_test_host_map 0,1: ranks on two pretended
#            hosts (even and odd), so that the multi-host paths run
#   node     forced, with the node algorithms (shared segment, no
#            point-to-point) named for allreduce (node_rsag, which runs
#            the flat node below p elements), reduce, bcast, allgather,
#            reduce_scatter(_block), gather, scatter, scan, exscan and
#            barrier: they
#            serve every call on one host up to 4 KiB (scatter: p blocks
#            together), and node_rsag (commutative operations), reduce,
#            bcast and allgather above, in rounds of a second segment
#            (bcast is node_cma, single-copy reads above 4 KiB, where
#            test/mpi/cma_probe finds them allowed)
#   nodetree node with allreduce node (flat: no slices) and
#            --mca coll_bufpool_node_flat_max 2: from 3 ranks on, allreduce,
#            reduce, bcast and barrier up to 4 KiB run in groups (two levels), as
#            they do by default above 16 ranks
#   stock    --mca coll ^bufpool (Open MPI alone: what classification uses)
# Every job runs with --mca op ^avx (through run-mpi-test.sh): Debian's
# op/avx saturates 8-bit MPI_SUM (open-mpi/ompi#8045), and coll_fuzz checks
# 8-bit sums modulo 256.
#
# Exit status: 0 when no failure counts against bufpool; 1 otherwise.  A
# failure stock Open MPI shares is printed as STOCK and does not fail the
# run (FUZZ_STRICT=1: it does).  BUFPOOL_TEST_QUICK=1 (make distcheck): one
# configuration, 2 and 3 processes, two seeds.
set -u

soak=0
seeds=${FUZZ_SEEDS:-11:10}
seed_base=${FUZZ_SEED_BASE:-1000000}
nps=${FUZZ_NPS:-2 3 4}
configs=${FUZZ_CONFIGS:-default forced hostmap node nodetree}
batches=${FUZZ_BATCHES:-24}
hang=${FUZZ_HANG_SECONDS:-60}
chunk=${FUZZ_CHUNK:-120}
extra=${FUZZ_ARGS:-}
classify_max=${FUZZ_CLASSIFY_MAX:-12}
classify=1
reclassify=
out=
build=
case ${BUFPOOL_TEST_QUICK:-0} in
    '' | 0) ;;
    *)
        seeds=${FUZZ_SEEDS:-11:2}
        nps=${FUZZ_NPS:-2 3}
        configs=${FUZZ_CONFIGS:-forced}
        ;;
esac

usage() {
    sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --soak) soak=${2:?}; shift ;;
        --seeds) seeds=${2:?}; shift ;;
        --seed-base) seed_base=${2:?}; shift ;;
        --np) nps=${2:?}; shift ;;
        --configs) configs=${2:?}; shift ;;
        --batches) batches=${2:?}; shift ;;
        --hang-seconds) hang=${2:?}; shift ;;
        --chunk) chunk=${2:?}; shift ;;
        --args) extra=${2:?}; shift ;;
        --classify-max) classify_max=${2:?}; shift ;;
        --no-classify) classify=0 ;;
        --reclassify) reclassify=${2:?}; shift ;;
        --out) out=${2:?}; shift ;;
        --build-dir) build=${2:?}; shift ;;
        -h | --help) usage ;;
        *) echo "coll_fuzz.sh: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done

# Run by hand: find the build tree and what make check would export.
if [ -z "${top_srcdir:-}" ]; then
    top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
fi
. "$top_srcdir/test/mpi/configs.sh"
bufpool_find_build "$build" || exit 2
prog=$top_builddir/test/fuzz/coll_fuzz
if [ ! -x "$prog" ]; then
    echo "coll_fuzz.sh: $prog is not built (make -C $top_builddir/test coll_fuzz... or make check)" >&2
    exit 2
fi
out=${out:-$top_builddir/test/fuzz/coll_fuzz.d}
[ -z "$reclassify" ] || out=$reclassify/reclassified
mkdir -p "$out" || exit 2
runner=$top_srcdir/test/mpi/run-mpi-test.sh
# A hang costs the watchdog's time; the job's own limit catches the rest.
job_timeout=${BUFPOOL_TEST_TIMEOUT:-$((chunk + 4 * hang + 120))}

# The node configuration's bcast is node_cma where this machine allows
# single-copy reads (CMA): test/mpi/configs.sh.
node_bcast=$(bufpool_node_bcast)
config_mca() {
    bufpool_config_mca "$1" "$node_bcast"
}
for cfg in $configs; do config_mca "$cfg" >/dev/null || { echo "coll_fuzz.sh: see --configs" >&2; exit 2; }; done

jobs=0
run_job() { # CONFIG NP LOG ARGS...: job_rc (sh has no locals: rj_ names)
    rj_cfg=$1 rj_np=$2 rj_log=$3
    shift 3
    jobs=$((jobs + 1))
    # shellcheck disable=SC2086 # extra is several arguments
    BUFPOOL_TEST_MCA="$(config_mca "$rj_cfg") ${BUFPOOL_TEST_MCA:-}" BUFPOOL_TEST_TIMEOUT=$job_timeout \
        sh "$runner" "$rj_np" "$prog" --hang-seconds "$hang" --batches "$batches" $extra "$@" \
        </dev/null >"$rj_log" 2>&1
    job_rc=$?
}

# The (seed, batch) pairs a log reports as failing, one per line: "S B".
failed_batches() {
    grep -E '^coll_fuzz: (FAIL|HANG|CRASH)' "$1" |
        sed -n 's/.*seed=\([0-9][0-9]*\)[^0-9].*batch=\([0-9][0-9]*\).*/\1 \2/p' | sort -u -n
}
# The first failing operation of that batch, or nothing.
failed_op() { # LOG SEED BATCH
    grep -E "^coll_fuzz: (FAIL|HANG|CRASH).*seed=$2 batch=$3 " "$1" |
        sed -n 's/.*seed=[0-9]* batch=[0-9]* \(round=[0-9]* \)\{0,1\}op=\([0-9][0-9]*\).*/\2/p' | head -n 1
}
# Did this log fail that batch (or, with no batch, at all)?
log_fails() { # LOG SEED BATCH
    grep -qE "^coll_fuzz: (FAIL|HANG|CRASH).*seed=$2 batch=${3}[^0-9]" "$1"
}
last_seed() { sed -n 's/^coll_fuzz: SEED \([0-9][0-9]*\) .*/\1/p' "$1" | tail -n 1; }
finished() { grep -q '^coll_fuzz: np=.* collective calls' "$1"; }
# Collective calls of a job: its summary's, or those before the seed it
# died in.
calls_of() {
    if finished "$1"; then
        sed -n 's/^coll_fuzz: np=.* \([0-9][0-9]*\) collective calls.*/\1/p' "$1" | tail -n 1
    else
        sed -n 's/^coll_fuzz: SEED [0-9]* calls before \([0-9][0-9]*\)$/\1/p' "$1" | tail -n 1
    fi
}

bufpool_only=0
stock_only=0
classified=0
report=$out/failures.txt
: >"$report"
seen=" "
say() { echo "$*" | tee -a "$report"; }

# Classify the failures of one job's log: rerun each failing batch on stock
# (three times: some of Open MPI's own bugs are races), alone under the same
# configuration, with one operation, and with --uniform (every rank
# describing its buffers alike), and say which it is.
classify_log() { # CONFIG NP LOG
    cl_cfg=$1 cl_np=$2 cl_log=$3
    failed_batches "$cl_log" >"$out/batches.$$"
    while read -r s b; do
        key="$cl_cfg/$cl_np/$s/$b"
        case $seen in *" $key "*) continue ;; esac
        seen="$seen$key "
        op=$(failed_op "$cl_log" "$s" "$b")
        what=$(grep -E "^coll_fuzz: (FAIL|HANG|CRASH).*seed=$s batch=${b}[^0-9]" "$cl_log" | head -n 1 |
            cut -c1-600)
        base="$out/$cl_cfg-np$cl_np-seed$s-batch$b"
        if [ "$cl_cfg" = stock ]; then
            say "coll_fuzz.sh: STOCK config=stock np=$cl_np seed=$s batch=$b${op:+ op=$op}: $what"
            stock_only=$((stock_only + 1))
            continue
        fi
        if [ $classify = 0 ] || [ "$classified" -ge "$classify_max" ]; then
            say "coll_fuzz.sh: FAILURE config=$cl_cfg np=$cl_np seed=$s batch=$b${op:+ op=$op} (not classified): $what"
            bufpool_only=$((bufpool_only + 1))
            continue
        fi
        classified=$((classified + 1))
        run_job "$cl_cfg" "$cl_np" "$base.alone.log" --seed "$s" --batch "$b"
        alone=no
        log_fails "$base.alone.log" "$s" "$b" && alone=yes
        stock=passes
        kind=$(echo "$what" | sed -n 's/^coll_fuzz: \(FAIL\|HANG\|CRASH\) .*/\1/p')
        for try in 1 2 3; do
            if [ $alone = yes ]; then
                run_job stock "$cl_np" "$base.stock$try.log" --seed "$s" --batch "$b"
            else
                run_job stock "$cl_np" "$base.stock$try.log" --seed "$s" --seeds 1
            fi
            if log_fails "$base.stock$try.log" "$s" "$b" ||
                { [ $alone = no ] && [ "$kind" = CRASH ] &&
                    grep -qE "^coll_fuzz: CRASH .*seed=${s}[^0-9]" "$base.stock$try.log"; }; then
                # (Where only the whole seed reproduces a crash, a heap that
                # an earlier call corrupted fails wherever the next
                # allocation falls: a crash anywhere in the seed is the same.)
                stock=fails
                break
            fi
        done
        if [ $stock = fails ]; then
            stock_only=$((stock_only + 1))
            say "coll_fuzz.sh: STOCK config=$cl_cfg np=$cl_np seed=$s batch=$b${op:+ op=$op} (Open MPI fails it without bufpool too: not counted): $what"
            continue
        fi
        # A failure that neither the batch nor its seed reproduces came from
        # earlier in the job: a heap that an earlier call corrupted (Open
        # MPI's own buffers with some derived types) fails a later free.
        # The job up to this seed is then the reproducer, on both sides.
        first=$(sed -n 's/^coll_fuzz: SEED \([0-9][0-9]*\) .*/\1/p' "$cl_log" | head -n 1)
        if [ "$alone" = no ] && [ -n "$first" ] && [ "$first" -lt "$s" ]; then
            run_job "$cl_cfg" "$cl_np" "$base.seed.log" --seed "$s" --seeds 1
            if ! log_fails "$base.seed.log" "$s" "$b"; then
                run_job stock "$cl_np" "$base.stockjob.log" --seed "$first" --seeds $((s - first + 1))
                # The same kind of failure (a crash for a crash) counts.
                same=$(grep -E "^coll_fuzz: ${kind:-FAIL} " "$base.stockjob.log" | head -n 1 | cut -c1-160)
                if [ -n "$same" ]; then
                    stock_only=$((stock_only + 1))
                    say "coll_fuzz.sh: STOCK config=$cl_cfg np=$cl_np seed=$s batch=$b${op:+ op=$op} (not its seed alone, on either side: the job from seed $first fails the same way without bufpool, $same; not counted): $what"
                    continue
                fi
                alone="no, nor its seed (the job from seed $first is the reproducer)"
            fi
        fi
        bufpool_only=$((bufpool_only + 1))
        detail="batch alone: $alone"
        found=
        scope="--seed $s --batch $b"
        if [ "$alone" != no ] && [ "$alone" != yes ]; then
            scope="--seed $first --seeds $((s - first + 1))"
        elif [ "$alone" = no ]; then
            scope="--seed $s --seeds 1"
            detail="$detail (the whole seed is the reproducer)"
        else
            # The operation alone: the one reported first, then (a hang
            # while completing several, or a task that failed while another
            # call progressed it) each in turn until one fails alone.
            found=
            for i in $op $(echo 0 1 2 3 4 5 6 7 | sed "s/\<$op\>//"); do
                run_job "$cl_cfg" "$cl_np" "$base.op$i.log" --seed "$s" --batch "$b" --only-op "$i"
                if log_fails "$base.op$i.log" "$s" "$b"; then
                    found=$i
                    break
                fi
            done
            if [ -n "$found" ]; then
                scope="--seed $s --batch $b --only-op $found"
                detail="$detail, operation $found alone: yes"
                [ -n "$op" ] || op=$found
            else
                detail="$detail, ${op:+operation $op }alone: no"
            fi
        fi
        # Stock again with the reproducer found, 5 times: some of Open MPI's
        # own failures come one run in three or four (libnbc's MPI_Ireduce
        # of a user operation with per-rank datatypes, seed 1001675 at 4
        # ranks, 2026-11-28), which 3 passing runs above cannot rule out.
        stock_runs=3
        for try in 4 5 6 7 8; do
            stock_runs=$try
            # shellcheck disable=SC2086 # scope is several arguments
            run_job stock "$cl_np" "$base.stock$try.log" $scope
            if log_fails "$base.stock$try.log" "$s" "$b"; then
                stock=fails
                break
            fi
        done
        if [ $stock = fails ]; then
            bufpool_only=$((bufpool_only - 1))
            stock_only=$((stock_only + 1))
            say "coll_fuzz.sh: STOCK config=$cl_cfg np=$cl_np seed=$s batch=$b${op:+ op=$op} (Open MPI fails its reproducer without bufpool too, $scope, at run $stock_runs: not counted): $what"
            continue
        fi
        # shellcheck disable=SC2086 # scope is several arguments
        run_job "$cl_cfg" "$cl_np" "$base.uniform.log" $scope --uniform
        if log_fails "$base.uniform.log" "$s" "$b"; then
            detail="$detail; with --uniform (the same datatypes on every rank): fails too"
        else
            detail="$detail; with --uniform: passes (needs per-rank datatypes)"
        fi
        say "coll_fuzz.sh: BUFPOOL-ONLY config=$cl_cfg np=$cl_np seed=$s batch=$b${op:+ op=$op}: $what"
        say "coll_fuzz.sh:   stock passes ($stock_runs runs); $detail"
        say "coll_fuzz.sh:   reproduce: mpirun -np $cl_np $(config_mca "$cl_cfg") $prog $extra $scope (logs: $base.*)"
        ctx_log=$cl_log
        [ -z "$found" ] || ctx_log=$base.op$found.log
        grep -E "^coll_fuzz: (CONTEXT seed=$s batch=$b |(HANG|CRASH|FAIL) batch: )" "$ctx_log" |
            sort -u | head -n 12 | cut -c1-1500 >>"$report"
    done <"$out/batches.$$"
    rm -f "$out/batches.$$"
}

# One configuration and process count from FIRST, COUNT seeds (or, with
# SECONDS, until then): reruns from the seed after a crash or hang, so that
# every seed asked for runs.  Adds the collective calls done to `calls`.
calls=0
run_seeds() { # CONFIG NP FIRST COUNT SECONDS (rs_ names: no locals in sh)
    rs_cfg=$1 rs_np=$2 rs_first=$3 rs_secs=$5
    rs_end=$(($3 + $4))
    while [ "$rs_first" -lt "$rs_end" ]; do
        rs_log=$out/$rs_cfg-np$rs_np-from$rs_first.log
        if [ "$rs_secs" -gt 0 ]; then
            run_job "$rs_cfg" "$rs_np" "$rs_log" --seed "$rs_first" --seconds "$rs_secs" \
                --max-reports 4
        else
            run_job "$rs_cfg" "$rs_np" "$rs_log" --seed "$rs_first" --seeds $((rs_end - rs_first)) \
                --max-reports 4
        fi
        rs_calls=$(calls_of "$rs_log")
        calls=$((calls + ${rs_calls:-0}))
        rs_last=$(last_seed "$rs_log")
        next_seed=$((${rs_last:-$rs_first} + 1))
        if [ $job_rc = 0 ]; then
            rm -f "$rs_log"
            return 0
        fi
        if [ -z "$(failed_batches "$rs_log")" ]; then
            say "coll_fuzz.sh: FAILURE config=$rs_cfg np=$rs_np: the job failed (exit $job_rc) with no report from coll_fuzz; last seed started ${rs_last:-none}: see $rs_log"
            tail -n 15 "$rs_log" >>"$report"
            bufpool_only=$((bufpool_only + 1))
        else
            classify_log "$rs_cfg" "$rs_np" "$rs_log"
        fi
        # A job that ended with its summary ran every seed; one that died
        # goes on from the seed after the one it died in.
        ! finished "$rs_log" || return 0
        [ -n "$rs_last" ] || return 1
        rs_first=$next_seed
        [ "$rs_secs" -eq 0 ] || return 0
    done
}

start=$(date +%s)
if [ -n "$reclassify" ]; then
    classify_max=1000000
    # What the earlier run classified already is not done again.
    # shellcheck disable=SC2013 # one key per word
    for key in $(sed -n 's/^coll_fuzz.sh: \(BUFPOOL-ONLY\|STOCK\) config=\([^ ]*\) np=\([0-9]*\) seed=\([0-9]*\) batch=\([0-9]*\).*/\2\/\3\/\4\/\5/p' \
        "$reclassify/failures.txt"); do
        seen="$seen$key "
    done
    sed -n 's/^coll_fuzz.sh: FAILURE config=\([^ ]*\) np=\([0-9]*\) seed=\([0-9]*\) batch=\([0-9]*\).*not classified.*/\1 \2 \3 \4/p' \
        "$reclassify/failures.txt" >"$out/todo.$$"
    while read -r c n s b; do
        log=$(grep -l -E "^coll_fuzz: (FAIL|HANG|CRASH).*seed=$s batch=${b}[^0-9]" "$reclassify/$c-np$n-from"*.log 2>/dev/null | head -n 1)
        if [ -n "$log" ]; then
            classify_log "$c" "$n" "$log" </dev/null
        else
            echo "coll_fuzz.sh: no job log of $c np=$n seed=$s batch=$b in $reclassify"
        fi
    done <"$out/todo.$$"
    rm -f "$out/todo.$$"
    echo "coll_fuzz.sh: reclassified in $(($(date +%s) - start)) s: $bufpool_only against bufpool, $stock_only shared with stock Open MPI (see $report)"
    [ $bufpool_only = 0 ] || exit 1
    exit 0
fi
echo "coll_fuzz.sh: $prog $extra; configurations: $configs; processes: $nps; logs in $out"

# Negative controls (stock Open MPI, 2 processes): a spoiled element and a
# spoiled guard byte must be reported, and a rank that never calls must be
# reported as a hang by the watchdog, with the seed.
if [ "$soak" -eq 0 ]; then
    for inject in value guard hang; do
        hs=$hang
        [ $inject != hang ] || hang=3
        run_job stock 2 "$out/control-$inject.log" --seed 11 --batches 2 --inject $inject
        hang=$hs
        want='^coll_fuzz: FAIL seed=11 batch=0 '
        [ $inject != hang ] || want='^coll_fuzz: HANG rank [01]: .*seed=11 batch='
        if [ $job_rc = 0 ] || ! grep -q "$want" "$out/control-$inject.log"; then
            say "coll_fuzz.sh: FAILURE: negative control --inject $inject was not reported (exit $job_rc; see $out/control-$inject.log)"
            bufpool_only=$((bufpool_only + 1))
        fi
    done
    echo "coll_fuzz.sh: negative controls (spoiled element, spoiled guard, hang) reported: $([ $bufpool_only = 0 ] && echo yes || echo NO)"
fi
if [ "$soak" -gt 0 ]; then
    summary=$out/soak-summary.txt
    : >"$summary"
    next_seed=$seed_base
    for cfg in $configs; do
        cfg_start=$(date +%s)
        calls=0
        jobs_before=$jobs
        bp_before=$bufpool_only
        st_before=$stock_only
        first_seed=$next_seed
        while :; do
            for np in $nps; do
                left=$((soak - ($(date +%s) - cfg_start)))
                [ $left -gt 0 ] || break 2
                [ $left -lt "$chunk" ] || left=$chunk
                run_seeds "$cfg" "$np" "$next_seed" 1000000000 "$left" ||
                    next_seed=$((next_seed + 1))
            done
        done
        line="coll_fuzz.sh: soak $cfg: $(($(date +%s) - cfg_start)) s, $((jobs - jobs_before)) jobs (reruns included), seeds $first_seed..$((next_seed - 1)), $calls collective calls, $((bufpool_only - bp_before)) bufpool-only and $((stock_only - st_before)) stock failures"
        echo "$line" | tee -a "$summary"
    done
else
    first=${seeds%%:*}
    count=${seeds##*:}
    for cfg in $configs; do
        for np in $nps; do
            t=$(date +%s)
            calls=0
            run_seeds "$cfg" "$np" "$first" "$count" 0
            echo "coll_fuzz.sh: $cfg np=$np seeds $first..$((first + count - 1)): $calls collective calls, $(($(date +%s) - t)) s"
        done
    done
fi
echo "coll_fuzz.sh: $jobs jobs in $(($(date +%s) - start)) s: $bufpool_only failure(s) against bufpool, $stock_only shared with stock Open MPI (see $report)"
if [ $bufpool_only -gt 0 ] || { [ "${FUZZ_STRICT:-0}" = 1 ] && [ $stock_only -gt 0 ]; }; then
    cat "$report"
    exit 1
fi
exit 0

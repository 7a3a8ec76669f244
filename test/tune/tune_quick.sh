#!/bin/sh
# bufpool-tune --quick on 2 ranks of this machine, then a smaller run on 4
# (communicators of 2 and 4 ranks; test/tune/tune.inc): asserts results,
# never times.  The rules file must carry its header,
# hold a row for every (collective, size) point measured, parse in
# bench/coll_model and load in the component (a job with
# coll_bufpool_rules_file prints no error, and its size maps at
# coll_bufpool_verbose 3 show the file's rows deciding every measured
# point); the job must have run every algorithm of all twelve
# collectives (barrier at one point: it has no message size), and bufpool
# must have served (no hand-back) with at least one algorithm of each.
set -u
. "${top_srcdir:?}/test/tune/tune-common.sh"

out=$work/quick.rules
raw=$work/raw.txt
echo "tune_quick: $tune --np 2 --quick -o $out --raw $raw"
start=$(date +%s)
if ! "$tune" --np 2 --quick -o "$out" --raw "$raw" >"$work/report.txt" 2>"$work/progress.txt"; then
    tail -n 40 "$work/progress.txt" "$work/report.txt"
    echo "FAIL: bufpool-tune --np 2 --quick failed"
    exit 1
fi
echo "tune_quick: bufpool-tune took $(($(date +%s) - start)) s"
cat "$work/report.txt"

# The header.
[ "$(head -n 1 "$out")" = "bufpool-rules 1" ] && pass "first line is 'bufpool-rules 1'" ||
    fail "first line of $out is '$(head -n 1 "$out")'"
expect_grep "$out" '^# Measured on this machine by bufpool-tune \(ompi-bufpool [^)]*\), [0-9]{4}-[0-9]{2}-[0-9]{2} ' "header: tool and date"
expect_grep "$out" '^# Command: bufpool-tune --np 2 --quick -o ' "header: command line"
expect_grep "$out" '^# mpirun: .*mpirun -np 2' "header: mpirun"
expect_grep "$out" '^# Open MPI: Open MPI v[0-9]' "header: Open MPI version"
expect_grep "$out" '^# Job: 2 ranks on [^ ]+ \(2\)$' "header: hosts"
expect_grep "$out" '^# Noise measured: \|A/A - 1\| median [0-9.]+ %, 90th percentile [0-9.]+ %' "header: noise"
expect_grep "$out" '^# Rule: .*below$' "header: the rule"

# The job: 11 collectives x 4 sizes and barrier's one point at 2 ranks,
# every configuration, every repetition, every data check passed, the end
# line.
points=$(awk '$1 == "bpt" && $2 == "M" { print $3, $4, $8 }' "$raw" | sort -u | wc -l)
[ "$points" = 45 ] && pass "45 points measured" || fail "$points points measured, expected 45 (11 collectives x 4 sizes, barrier at one)"
grep -q '^bpt D ' "$raw" && pass "the job's end line" || fail "no end line in $raw"
if awk '$1 == "bpt" && $2 == "M" && $14 != 0 { bad = 1; print "data check failed:", $0 } END { exit bad }' "$raw"; then
    pass "every batch's data check"
else
    fail "a data check failed (above)"
fi
for coll in allreduce reduce bcast allgather reduce_scatter reduce_scatter_block alltoall gather scatter scan exscan barrier; do
    # the previous module and its A/A copy: 4 sizes (barrier: 1) x 3
    # repetitions
    want=12
    [ "$coll" != barrier ] || want=3
    missing=$(awk -v c="$coll" -v want="$want" '$1 == "bpt" && $2 == "M" && $3 == c { n[$9]++ }
        END { if (n["previous"] != want || n["previous/aa"] != want)
                  print "previous measured " n["previous"] + 0 " times, its copy " n["previous/aa"] + 0 }' "$raw")
    [ -z "$missing" ] && pass "$coll: previous and its A/A copy at every size and repetition" || fail "$coll: $missing"
    served=$(awk -v c="$coll" '$1 == "bpt" && $2 == "M" && $3 == c && $9 !~ /^previous/ && $15 > 0 && $16 == 0 { s[$9] = 1 }
        END { for (a in s) n++; print n + 0 }' "$raw")
    [ "$served" -ge 1 ] && pass "$coll: bufpool served with $served algorithm(s) forced by the info key" ||
        fail "$coll: no bufpool algorithm served a batch (the info key did not force it?)"
done
# Every algorithm of every collective was tried (hier and hier_node are left
# out on one host).
tried=$(awk '$1 == "bpt" && $2 == "M" && $9 !~ /^previous/ { print $3 ":" $9 }' "$raw" | sort -u | wc -l)
[ "$tried" = 43 ] && pass "43 algorithms measured (45 less hier and hier_node on one host)" || fail "$tried algorithms measured, expected 43"
expect_grep "$raw" '^bpt N allreduce 2 hier: left out \(hier on a communicator on one host' "hier left out on one host, and said so"

# The progress display and the report.
expect_grep "$work/progress.txt" '^\[ 1/45\] allreduce p=2 16: previous [0-9.]+ us; A/A [0-9.]+ recursive_doubling ' "progress: first point"
expect_grep "$work/progress.txt" '^\[44/45\] exscan p=2 1M: ' "progress: exscan's last point"
expect_grep "$work/progress.txt" '^\[45/45\] barrier p=2 16: previous [0-9.]+ us; A/A [0-9.]+ node ' "progress: last point, barrier's one"
expect_grep "$work/report.txt" '^bufpool takes [0-9]+ of 45 points' "report: summary line"
expect_grep "$work/report.txt" '^allreduce, 2 ranks on 1 host\(s\), at most 2 per host:$' "report: per collective and size"
expect_grep "$work/report.txt" '^Expected gains where bufpool takes a point' "report: gains table"
expect_grep "$work/report.txt" "^Wrote $out \\([0-9]+ row\\(s\\)\\)" "report: the file written"
ls "$work"/quick.rules.tmp.* >/dev/null 2>&1 && fail "a temporary file was left behind" || pass "no temporary file left"

# Rows: one per run of equal choices; every row measured, with the ratio,
# noise and repetitions.
if awk '!/^#/ && NF > 0 && NR > 1 { if ($0 !~ / ranks=2 hosts=1 bytes=[^ ]+ .*form=blocking alg=[a-z_]+ measured="bufpool-tune, 2 ranks on 1 host\(s\), 2 per host: .*( x [^"]* at [0-9]+ size\(s\), noise <= [0-9]+ %, [0-9]+ reps|no bufpool algorithm served)/) { print "row " NR ": " $0; bad = 1 } }
        END { exit bad }' "$out"; then
    pass "every row has its ranges, choice and measured text"
else
    fail "rows above lack a field"
fi

# The file parses in bench/coll_model (when built: bench/ builds after test/).
if [ -x "$top_builddir/bench/coll_model" ]; then
    if "$top_builddir/bench/coll_model" --rules "$out" --no-default-rules --hosts 1 --p 2 \
        --coll bcast --min 16 --max 16 >"$work/model.txt" 2>&1; then
        pass "bench/coll_model --rules reads it"
    else
        fail "bench/coll_model --rules $out: $(cat "$work/model.txt")"
    fi
fi

# The component loads it, and its rows decide every measured point.
if component_maps "$out" "$work/maps.txt"; then
    pass "a job with coll_bufpool_rules_file=$out ran"
else
    fail "the job with the rules file failed:"
    tail -n 20 "$work/maps.txt.job"
fi
if grep -n 'coll_bufpool_rules_file: invalid value' "$work/maps.txt.job"; then
    fail "the component reported the file (above)"
else
    pass "the component reported no error"
fi
expect_grep "$work/maps.txt" 'coll_bufpool: MPI_COMM_WORLD: 2 ranks on 1 host\(s\), at most 2 per host:' "the component printed its size maps"
if check_rows "$out" "$raw" "$work/maps.txt"; then
    pass "the file's rows decide every measured point in the component"
else
    fail "rows of the file do not decide (above)"
fi

# Two communicator sizes (4 ranks, oversubscribed here): the first 2 ranks,
# then all 4, every rank checking the same data; rows 2..3 and 4; the
# component at 4 ranks decides the 4-rank points by the 4-rank rows.
out4=$work/four.rules
raw4=$work/four.txt
if "$tune" --np 4 -c allreduce,bcast,reduce_scatter_block --sizes 1K,64K --reps 2 --batch-ms 1 \
    -o "$out4" --raw "$raw4" >"$work/report4.txt" 2>"$work/progress4.txt"; then
    pass "bufpool-tune --np 4 (communicators of 2 and 4 ranks)"
    expect_grep "$raw4" '^bpt C 2 1 2$' "4 ranks: the 2-rank communicator"
    expect_grep "$raw4" '^bpt C 4 1 4$' "4 ranks: the 4-rank communicator"
    grep -q '^bpt W' "$raw4" && fail "4 ranks: wrong results: $(grep '^bpt W' "$raw4" | head -n 3)" ||
        pass "4 ranks: every batch's data check"
    for coll in allreduce bcast reduce_scatter_block; do
        expect_grep "$out4" "^$coll ranks=2\.\.3 hosts=1 " "4 ranks: $coll rows for 2..3 ranks"
        expect_grep "$out4" "^$coll ranks=4 hosts=1 " "4 ranks: $coll rows for 4 ranks"
    done
    component_maps "$out4" "$work/maps4.txt" 4 || fail "the 4-rank job with the rules file failed"
    if check_rows "$out4" "$raw4" "$work/maps4.txt" 4; then
        pass "4 ranks: the file's rows decide every 4-rank point in the component"
    else
        fail "4 ranks: rows of the file do not decide (above)"
    fi
else
    tail -n 20 "$work/progress4.txt"
    fail "bufpool-tune --np 4 failed"
fi

[ $status = 0 ] && echo "PASS: tune_quick" || echo "FAIL: tune_quick"
exit $status

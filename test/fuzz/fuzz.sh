#!/bin/sh
# Replays the committed corpus and regression inputs of every fuzz target,
# then (when the libFuzzer builds exist, see fuzz.inc) fuzzes each target
# for FUZZ_SECONDS seconds (default 25) starting from a copy of the corpus.
#
# A crash found by libFuzzer fails the test; its input is kept in
# $top_builddir/test/fuzz/artifacts/.  To turn it into a regression test,
# copy it to test/fuzz/regressions/<target>/ under a name saying what it
# found, fix the bug, and make check replays it from then on.
#
# Environment: FUZZ_SECONDS (0 = replay only), FUZZ_TARGETS (default
# "parse pool rules"), FUZZ_JOBS (parallel libFuzzer processes per target, 1).
# BUFPOOL_TEST_QUICK=1 (make distcheck in test/check-all.sh) replays only,
# unless FUZZ_SECONDS says otherwise: make check has fuzzed already.
set -u
src="$top_srcdir/test/fuzz"
build="$top_builddir/test/fuzz"
case ${BUFPOOL_TEST_QUICK:-0} in
    '' | 0) seconds=${FUZZ_SECONDS:-25} ;;
    *) seconds=${FUZZ_SECONDS:-0} ;;
esac
status=0

for target in ${FUZZ_TARGETS:-parse pool rules}; do
    replay="$build/fuzz_${target}_replay"
    inputs=
    for dir in "$src/corpus/$target" "$src/regressions/$target"; do
        [ -d "$dir" ] && inputs="$inputs $dir"
    done
    # shellcheck disable=SC2086 # one argument per directory
    if ! "$replay" $inputs >"$build/replay-$target.log" 2>&1; then
        echo "FAIL: replaying the $target corpus and regressions:"
        tail -n 5 "$build/replay-$target.log"
        status=1
    else
        tail -n 1 "$build/replay-$target.log"
    fi

    fuzzer="$build/fuzz_${target}_libfuzzer"
    if [ "$seconds" -eq 0 ] || [ ! -x "$fuzzer" ]; then
        [ -x "$fuzzer" ] || echo "fuzz: $target: no libFuzzer build (configure found no clang with -fsanitize=fuzzer): replay only"
        continue
    fi
    corpus="$build/corpus-$target"
    mkdir -p "$corpus" "$build/artifacts"
    cp "$src/corpus/$target"/* "$corpus/" 2>/dev/null
    log="$build/fuzz-$target.log"
    # -rss_limit_mb: the pool target maps up to ~100 MiB per input.
    "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 \
        -jobs="${FUZZ_JOBS:-1}" -workers="${FUZZ_JOBS:-1}" -print_final_stats=1 \
        -artifact_prefix="$build/artifacts/$target-" "$corpus" >"$log" 2>&1
    rc=$?
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{ s += $2 } END { print s + 0 }')
    cov=$(grep -E -o 'cov: [0-9]+' "$log" | tail -n 1)
    if [ $rc -ne 0 ]; then
        echo "FAIL: fuzz $target: libFuzzer found a failing input (exit $rc); see $log and $build/artifacts/"
        grep -E 'check failed|ERROR: |SUMMARY|Test unit written' "$log" | head -n 10
        status=1
    else
        echo "fuzz: $target: $runs inputs in ${seconds}s, $cov, corpus $(ls "$corpus" | wc -l) inputs"
    fi
done
exit $status

#!/bin/sh
# bufpool-tune on bad input (test/tune/tune.inc): each case must exit
# non-zero with a message naming what is wrong, and leave the output file
# as it was (here: a file holding "old"), never half-written: unknown
# collectives, options and algorithms, size lists that do not parse, an
# mpirun that fails, an output that cannot be written, an algorithm that
# crashes the job (BUFPOOL_TUNE_TEST_CRASH), and a rules file the
# component refuses.  Then --skip leaves the crashing algorithm out and
# the run succeeds, and --from-raw decides from what the crashed job kept.
set -u
. "${top_srcdir:?}/test/tune/tune-common.sh"

out=$work/out.rules
# expect_fail STATUS TEXT -- ARGS...: bufpool-tune ARGS exits STATUS and
# prints TEXT (grep -F) on stderr, and out.rules still reads "old".
expect_fail() {
    want=$1 text=$2
    shift 3
    echo old >"$out"
    "$tune" -o "$out" "$@" >"$work/stdout" 2>"$work/stderr"
    rc=$?
    if [ $rc != "$want" ]; then
        fail "bufpool-tune $*: exit $rc, expected $want"
        tail -n 15 "$work/stderr"
    elif ! grep -qF -- "$text" "$work/stderr"; then
        fail "bufpool-tune $*: no '$text' in its messages:"
        tail -n 15 "$work/stderr"
    elif [ "$(cat "$out")" != old ]; then
        fail "bufpool-tune $*: changed $out"
    elif ls "$out".tmp.* >/dev/null 2>&1; then
        fail "bufpool-tune $*: left a temporary file"
    else
        pass "bufpool-tune $*: exit $want, '$text'"
    fi
}

q="--np 2 --quick"
# shellcheck disable=SC2086 # $q is options
{
    expect_fail 2 "unknown collective 'allgatherv'" -- $q -c allreduce,allgatherv
    expect_fail 2 "unknown option '--bogus'" -- $q --bogus
    expect_fail 2 "--sizes: 'abc': not a number" -- $q --sizes 4..abc
    expect_fail 2 "--sizes: range 16..4: the end is below the start" -- $q --sizes 16..4
    expect_fail 2 "--sizes: size 2G out of range" -- $q --sizes 2G
    expect_fail 2 "--ranks:" -- $q --ranks 1,2
    expect_fail 2 "--skip: 'nope' is not an algorithm of allreduce" -- $q --skip allreduce:nope
    expect_fail 2 "--reps 0:" -- $q --reps 0
    expect_fail 2 "--margin x:" -- $q --margin x
    expect_fail 2 "--stat max: use mean or p50" -- $q --stat max
    expect_fail 2 "lists take no blanks" -- $q --sizes "4, 8"
    expect_fail 2 "--np 1: at least 2 processes" -- --np 1
    expect_fail 2 "say how to start the job" -- --quick
    expect_fail 2 "give --np or --mpirun, not both" -- $q --mpirun mpirun
    expect_fail 2 "--reps needs a value" -- $q --reps
    # an mpirun that fails, one that is not there, a job that refuses
    expect_fail 3 "FAILED: the measuring job ended (exit status 1)" -- --quick --mpirun false
    expect_fail 3 "FAILED: the measuring job ended (exit status 127)" -- --quick --mpirun "/nonexistent/mpirun -np 2"
    expect_fail 3 "--ranks: 4 ranks asked, the job has 2" -- $q --ranks 2,4
}
# an output that cannot be written: checked before the job
"$tune" --np 2 --quick -o "$work/no/such/dir/x.rules" >"$work/stdout" 2>"$work/stderr"
rc=$?
[ $rc = 4 ] && grep -qF "cannot write $work/no/such/dir/x.rules" "$work/stderr" && ! grep -q '^\[' "$work/stderr" &&
    pass "an unwritable output: exit 4 before any job" || { fail "unwritable output: exit $rc"; cat "$work/stderr"; }
mkdir "$work/adir"
"$tune" --np 2 --quick -o "$work/adir" >/dev/null 2>"$work/stderr"
rc=$?
[ $rc = 2 ] && grep -qF "is a directory" "$work/stderr" && pass "an output that is a directory: exit 2" ||
    fail "an output that is a directory: exit $rc"

# An algorithm that crashes: the job fails, the message names the point and
# the configuration, says how to leave it out, keeps what was measured.
BUFPOOL_TUNE_TEST_CRASH=bcast:linear
export BUFPOOL_TUNE_TEST_CRASH
expect_fail 3 "It was running bcast at 2 ranks, 16 bytes, configuration linear" -- \
    --np 2 -c allreduce,bcast --sizes 16,1K --reps 2 --batch-ms 1
grep -qF -- "--skip bcast:linear" "$work/stderr" && pass "crash: says --skip bcast:linear" ||
    fail "crash: no --skip advice"
grep -qF "What it measured is in $out.raw" "$work/stderr" && [ -s "$out.raw" ] &&
    pass "crash: measurements kept in $out.raw" || fail "crash: measurements not kept"
"$tune" --from-raw "$out.raw" -o "$work/partial.rules" >"$work/stdout" 2>"$work/stderr"
rc=$?
[ $rc = 3 ] && grep -qF 'incomplete' "$work/stderr" && [ ! -e "$work/partial.rules" ] &&
    pass "--from-raw of a crashed run: exit 3, incomplete" || fail "--from-raw without --partial: exit $rc"
if "$tune" --from-raw "$out.raw" --partial -o "$work/partial.rules" >"$work/stdout" 2>"$work/stderr"; then
    pass "--from-raw --partial writes a file"
    expect_grep "$work/partial.rules" '^# INCOMPLETE' "--partial: the file says it is incomplete"
    expect_grep "$work/partial.rules" '^bcast ranks=2 hosts=1 bytes=16\.\.' "--partial: bcast's measured point has its row"
else
    fail "--from-raw --partial failed: $(cat "$work/stderr")"
fi
# --skip leaves it out: the same run succeeds, and says what it left out.
rm -f "$out" "$out.raw"
if "$tune" --np 2 -c bcast --sizes 16,1K --reps 2 --batch-ms 1 --skip bcast:linear -o "$out" \
    >"$work/stdout" 2>"$work/stderr"; then
    pass "--skip bcast:linear: the run succeeds"
    expect_grep "$work/stdout" '^  bcast 2 linear: left out \(--skip\)' "--skip: reported"
    grep -q 'alg=linear' "$out" && fail "--skip: a row chose linear" || pass "--skip: no row chose linear"
else
    fail "--skip bcast:linear failed: $(tail -n 5 "$work/stderr")"
fi
unset BUFPOOL_TUNE_TEST_CRASH

# A wrong result (BUFPOOL_TUNE_TEST_WRONG marks a configuration's batches
# as a failed data check would): said at once and at the end, that
# configuration measured no further at that point and chosen nowhere; the
# file is still written.
if BUFPOOL_TUNE_TEST_WRONG=bcast:chain "$tune" --np 2 -c bcast --sizes 1K,64K --reps 2 \
    --batch-ms 1 -o "$work/w.rules" --raw "$work/w.raw" >"$work/stdout" 2>"$work/stderr"; then
    expect_grep "$work/stderr" '^bufpool-tune: WRONG RESULT: bcast at 2 ranks, 1K, chain: ' "wrong result: said at once"
    expect_grep "$work/stderr" '^\[1/2\] bcast p=2 1K: .* chain WRONG ' "wrong result: in the progress line"
    expect_grep "$work/stdout" '^  bcast 2 ranks 64K chain: wrong result \(left out at this point\)' "wrong result: listed in the report"
    expect_grep "$work/stdout" '^WARNING: 2 batch\(es\) gave a wrong result' "wrong result: warned at the end"
    n=$(grep -c '^bpt M bcast .* chain ' "$work/w.raw")
    [ "$n" = 2 ] && pass "wrong result: chain measured once per point, then left out" ||
        fail "wrong result: chain measured $n times"
    grep -q 'alg=chain' "$work/w.rules" && fail "wrong result: a row chose chain" ||
        pass "wrong result: no row chose chain"
else
    fail "a run with a wrong result failed: $(tail -n 5 "$work/stderr")"
fi

# --timeout stops a job that takes too long, and nothing is written.
expect_fail 3 "FAILED: the job did not finish within --timeout 2 s" -- --np 2 --timeout 2

# What Open MPI 4.1's mpirun may leave in /dev/shm when it is stopped
# (vader_segment.* of its ranks; it did in CI's make distcheck, where the
# case above stopped a job still starting) goes after a failed job: a
# stand-in mpirun makes such files and outlasts --timeout.  A file whose
# creator (opal_shmem's header: a 4-byte lock, then the pid) has exited is
# removed and said, that of a rank of the job that outlives mpirun by
# seconds too, once it has gone (.3: bufpool-tune waits for what carries
# its job's BUFPOOL_SHM_JOB); one made by a live process of another job
# (whose peers have yet to open it: removing it hung that job in CI)
# stays, as do one whose header is not written yet and one from before
# the job.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    # PID as opal_shmem's header on this (little-endian) host.
    cat >"$work/header.sh" <<'HEADER'
shm_header() { # PID
    # shellcheck disable=SC2059 # the format is the bytes
    printf "$(printf '\\000\\000\\000\\000\\%03o\\%03o\\%03o\\%03o' $(($1 & 255)) \
        $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)))"
}
HEADER
    . "$work/header.sh"
    dead=$(sh -c 'echo $$')
    shm=/dev/shm/vader_segment.bufpool-tune-test.$$
    shm_header "$dead" >"$work/dead.hdr"
    shm_header $$ >"$work/live.hdr"
    : >"$shm.before"
    # The lingering rank ignores the stop and runs 4 s more.
    cat >"$work/fake-mpirun.sh" <<FAKE
cp $work/dead.hdr $shm.0; cp $work/live.hdr $shm.1; : >$shm.2
(trap '' TERM HUP INT; exec sh -c '. $work/header.sh; shm_header \$\$ >$shm.3; exec sleep 4') &
exec sleep 30
FAKE
    expect_fail 3 "Removed what Open MPI left of the stopped job in /dev/shm: ${shm##*/}.0 ${shm##*/}.3." \
        -- --quick --timeout 1 --mpirun "sh $work/fake-mpirun.sh"
    [ "$(od -An -t u4 -j 4 -N 4 "$work/dead.hdr" | tr -d ' ')" = "$dead" ] &&
        pass "the stand-in header reads back as its pid" || fail "the stand-in header does not read back as $dead"
    [ ! -e "$shm.0" ] && pass "a stopped job's /dev/shm file (creator gone) removed" ||
        fail "a stopped job's /dev/shm file was left: $shm.0"
    [ -e "$shm.1" ] && pass "a /dev/shm file whose creator lives (another job's) kept" ||
        fail "a /dev/shm file whose creator lives was removed: $shm.1"
    [ -e "$shm.2" ] && pass "a /dev/shm file without its creator yet kept" ||
        fail "a /dev/shm file without its creator yet was removed: $shm.2"
    [ ! -e "$shm.3" ] && pass "the file of a rank that outlived mpirun removed once it had gone" ||
        fail "the file of a rank that outlived mpirun was left: $shm.3"
    [ -e "$shm.before" ] && pass "a /dev/shm file from before the job kept" ||
        fail "a /dev/shm file from before the job was removed: $shm.before"
    rm -f "$shm.0" "$shm.1" "$shm.2" "$shm.3" "$shm.before"
fi

# A rules file the component refuses is reported (the check tune_quick.sh
# relies on to say the component loaded its file without error).
printf 'bufpool-rules 1\nbcast ranks=2 bytes=16..1K-1 alg=ring\n' >"$work/bad.rules"
component_maps "$work/bad.rules" "$work/maps.txt"
expect_grep "$work/maps.txt.job" "coll_bufpool_rules_file: invalid value .*bad.rules:2: alg=ring: not an algorithm of bcast" "the component reports a bad file with its line"

[ $status = 0 ] && echo "PASS: tune_errors" || echo "FAIL: tune_errors"
exit $status

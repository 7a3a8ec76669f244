#!/bin/sh
# bufpool-tune across the emulated cluster (run by test/multihost/suite.sh
# --quick with 2 hosts up, MPIRUN its mpirun.sh wrapper and
# BUFPOOL_MH_PLACEMENT=1,1): the user's own mpirun is the wrapper, as any
# host list would be.  The file must record both hosts, its rows must say
# hosts=2, and the component, in a job through the same wrapper, must see
# the communicator on 2 hosts and decide every measured point by those
# rows.  Results, never times.
set -u
. "${top_srcdir:?}/test/tune/tune-common.sh"
: "${MPIRUN:?MPIRUN must be the cluster's mpirun.sh (suite.sh sets it)}"

out=$work/mh.rules
raw=$work/mh.raw
echo "tune_multihost: $tune --mpirun \"$MPIRUN -np 2\" --quick -c allreduce,bcast,alltoall --sizes 1K,64K"
if ! "$tune" --mpirun "$MPIRUN -np 2" --quick -c allreduce,bcast,alltoall --sizes 1K,64K \
    -o "$out" --raw "$raw" >"$work/report.txt" 2>"$work/progress.txt"; then
    tail -n 40 "$work/progress.txt" "$work/report.txt"
    echo "FAIL: bufpool-tune through $MPIRUN failed"
    exit 1
fi
cat "$work/progress.txt" "$work/report.txt"
expect_grep "$out" '^# Job: 2 ranks on [^ ]+ \(1\) [^ ]+ \(1\)$' "header: two hosts, one rank each"
expect_grep "$raw" '^bpt C 2 2 1$' "the job saw 2 ranks on 2 hosts"
expect_grep "$work/progress.txt" '^\[1/6\] allreduce p=2 \(2 hosts\) 1K: previous .* hier [0-9.]+ ' "hier measured across hosts"
rows=$(awk 'NR > 1 && !/^#/ && NF > 0' "$out" | wc -l)
hosts2=$(grep -c '^[a-z_]* ranks=2 hosts=2 ' "$out")
[ "$rows" -gt 0 ] && [ "$rows" = "$hosts2" ] && pass "$rows rows, all ranks=2 hosts=2" ||
    fail "$hosts2 of $rows rows say ranks=2 hosts=2"
MAPS_MPIRUN=$MPIRUN
component_maps "$out" "$work/maps.txt" || fail "the job with the rules file failed: $(tail -n 5 "$work/maps.txt.job")"
if grep -n 'coll_bufpool_rules_file: invalid value' "$work/maps.txt.job"; then
    fail "the component reported the file (above)"
fi
expect_grep "$work/maps.txt" 'coll_bufpool: MPI_COMM_WORLD: 2 ranks on 2 host\(s\), at most 1 per host:' "the component sees 2 hosts"
if check_rows "$out" "$raw" "$work/maps.txt"; then
    pass "the file's rows decide every measured point in the component, across hosts"
else
    fail "rows of the file do not decide (above)"
fi
[ $status = 0 ] && echo "PASS: tune_multihost" || echo "FAIL: tune_multihost"
exit $status

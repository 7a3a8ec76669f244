#!/bin/sh
# MPI_Barrier, MPI_Ibarrier and MPI_Barrier_init through bufpool's node
# barrier (forced, and by the default row from 3 to 16 ranks on one host),
# against what a barrier promises (test_coll_barrier.c: no rank
# leaves before the last one entered, with other node collectives between
# the barriers and two barriers in flight at once):
#   - at 2-5 processes (8 oversubscribed), every form, with --expect-node
#     and --expect-bufpool: the counters prove that bufpool served and that
#     the calls ran over the shared segment;
#   - no segment (coll_bufpool_test_node_fail: rank 0 cannot create it, or
#     rank 2 cannot map it; the communicators of all 3 ranks): the
#     point-to-point dissemination barrier on every rank alike
#     (--expect-node=fallback);
#   - in groups (two levels) above coll_bufpool_node_flat_max ranks (2 at
#     5 and 7 processes, the default 16 at 17), --expect-node-tree;
#   - across pretended hosts (coll_bufpool_test_host_map), where node does
#     not apply: the previous module's barrier, still a barrier;
#   - a row naming node (a rules file), coll_bufpool_node_warmup_calls: a
#     communicator's first 128 such calls go to the previous module (the
#     default; run-mpi-test.sh makes it 0 for the other tests), so 100
#     barriers set no segment up (--expect-node=none) and 300 do
#     (--expect-node); a persistent init is not held back (10 starts do);
#     with 0, the first call does;
#   - the default rows: at 3 and 16 ranks bufpool's node barrier serves
#     (--expect-node); on pretended hosts, the previous module;
#   - negative control: at 2 ranks without the forced algorithm bufpool
#     serves no barrier (no default row there), so --expect-bufpool must
#     fail.
set -u
status=0
failed=
runs=0
node="--mca coll_bufpool_min_size 0 --mca coll_bufpool_barrier_algorithm node \
--mca coll_bufpool_allreduce_algorithm node --mca coll_bufpool_bcast_algorithm node"
runner=$top_srcdir/test/mpi/run-mpi-test.sh
program=$top_builddir/test/mpi/test_coll_barrier

run() { # NP MCA ARGS...
    np=$1 mca=$2
    shift 2
    runs=$((runs + 1))
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca" sh "$runner" "$np" "$program" "$@" \
        </dev/null; then
        status=1
        failed="$failed
  np=$np $mca $*"
    fi
}

for np in ${BUFPOOL_TEST_NPS:-2 3 4 5 8}; do
    rounds=64
    [ "$np" -lt 8 ] || rounds=16
    run "$np" "$node" --form=all --rounds=$rounds --expect-node --expect-bufpool
done
# The barrier alone over the segment (the other collectives point-to-point).
run 4 "--mca coll_bufpool_barrier_algorithm node" --form=all --expect-node --expect-bufpool
# In groups (two levels) above coll_bufpool_node_flat_max ranks: leaders
# wait for their groups, every rank for the leaders (at 2: 5 ranks in groups
# of 2 and 3, 7 in 2, 2 and 3), and at 17 ranks by default; the barrier
# alone over the segment, so that coll_bufpool_node_tree_calls counts
# barriers only.
for np in 5 7; do
    run $np "--mca coll_bufpool_barrier_algorithm node --mca coll_bufpool_node_flat_max 2" \
        --form=all --rounds=32 --expect-node --expect-bufpool --expect-node-tree
done
run 17 "--mca coll_bufpool_barrier_algorithm node" --form=all --rounds=8 --expect-node \
    --expect-bufpool --expect-node-tree
for fail in 0 2; do
    run 3 "$node --mca coll_bufpool_test_node_fail $fail" --form=all --rounds=32 \
        --expect-node=fallback --expect-bufpool --no-even
done
run 4 "$node --mca coll_bufpool_test_host_map 0,1" --form=all --rounds=32
# The default rows: node from 3 to 16 ranks on one host, not across
# pretended hosts (test_coll_decide checks 2 and 17 ranks).
run 3 "" --form=all --rounds=16 --expect-node --expect-bufpool
run 16 "" --form=blocking --rounds=8 --expect-node --expect-bufpool
run 4 "--mca coll_bufpool_test_host_map 0,1" --form=all --rounds=16 --expect-node=none

# Warm-up: the rows' node calls start after coll_bufpool_node_warmup_calls.
rules=$(mktemp)
printf 'bufpool-rules 1\nbarrier hosts=1 alg=node measured="test: every barrier on one host"\n' \
    >"$rules"
warm="--mca coll_bufpool_rules_file $rules --mca coll_bufpool_node_warmup_calls 128"
run 2 "$warm" --form=blocking --rounds=100 --expect-node=none
run 2 "$warm" --form=blocking --rounds=300 --expect-node --expect-bufpool
# A persistent request is not held back: 10 starts of one init serve over
# the segment.
run 2 "$warm" --form=persistent --rounds=10 --expect-node --expect-bufpool
run 3 "--mca coll_bufpool_rules_file $rules --mca coll_bufpool_node_warmup_calls 0" --form=all \
    --rounds=8 --expect-node --expect-bufpool

runs=$((runs + 1))
# (2 ranks: the default rows give barriers from 3 to 16 ranks to bufpool.)
if BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-}" sh "$runner" 2 "$program" --rounds=8 \
    --expect-bufpool </dev/null >/dev/null 2>&1; then
    status=1
    failed="$failed
  --expect-bufpool passed a job in which no barrier was bufpool's: the check sees nothing"
fi

rm -f "$rules"
if [ $status != 0 ]; then
    echo "coll_barrier: failed runs:$failed"
else
    echo "coll_barrier: $runs runs passed"
fi
exit $status

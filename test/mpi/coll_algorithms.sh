#!/bin/sh
# Every named algorithm of every collective, forced with
# coll_bufpool_<coll>_algorithm, against the serial reference, with
# --expect-bufpool so that a run where bufpool handed everything back to the
# previous module fails, one job per family forcing the K-th algorithm of
# each of its collectives at once (4 jobs a family, not one per algorithm).
# Two segment sizes: the default, and the smallest (4K, at collcheck's smoke
# level but with BUFPOOL_TEST_FULL=1) so that the case counts of the suite
# cross many segment boundaries and every pipeline runs several segments
# deep; from 4 processes on the matrix runs the default only and the
# bounded groups below the small segments, both in the matrix with
# BUFPOOL_TEST_FULL=1.  Process counts 2, 3, 4 and 5
# cover powers of two and the rest (BUFPOOL_TEST_NPS overrides).  The
# 64 MiB scratch-bound check runs once per process count with allreduce
# rsag and ring.  coll_bufpool_max_requests 2 (the smallest bound) and 3
# run once per process count for every algorithm, grouped several
# collectives to a job, with 4K segments (many segments per message) and
# --expect-requests-peak: coll_bufpool_requests_peak, the most requests one
# request set held, must stay within the bound on every rank; one
# unbounded job must exceed it (the check can fail).  8 processes
# (oversubscribed, correctness only): the bounded jobs and rhalving in the
# default run, every algorithm with BUFPOOL_TEST_FULL=1.
# allreduce hier on one host runs auto's choice (matrix); its own code runs
# on hosts pretended with coll_bufpool_test_host_map (testing only): ranks
# alternating over 3 hosts (2+2+1 at 5 ranks, one per host at 2), blocks
# (0,0,1: 2+1, 3+1, 4+1 interleaved at 5), one rank per host, at 128K and
# 4K segments, depth 1, the 64 MiB scratch-bound check, and under
# max_requests 2 (auto's bounded choice serves; the peak is checked);
# hier_node (the hosts' phases through shared segments) on the same maps.
set -u
. "$top_srcdir/test/mpi/collcheck-sweep.sh"

# collective:program:algorithms
matrix='
allreduce:test_coll_reduce_family:recursive_doubling rsag ring hier
reduce:test_coll_reduce_family:chain binary rsg
reduce_scatter:test_coll_reduce_family:pairwise ring rhalving
reduce_scatter_block:test_coll_reduce_family:pairwise ring rhalving
scan:test_coll_reduce_family:chain recursive_doubling
exscan:test_coll_reduce_family:chain recursive_doubling
bcast:test_coll_move_family:binomial chain scatter_allgather linear
allgather:test_coll_move_family:ring recursive_doubling direct
alltoall:test_coll_move_family:pairwise linear
gather:test_coll_move_family:binomial linear
scatter:test_coll_move_family:binomial linear
'
nps=${BUFPOOL_TEST_NPS:-2 3 4 5 8}
case ${BUFPOOL_TEST_QUICK:-0} in
    '' | 0) ;;
    *) nps=${BUFPOOL_TEST_NPS:-3} collcheck_full=0 ;; # make distcheck: one size
esac
# Every algorithm of the matrix at 8 processes only with BUFPOOL_TEST_FULL.
matrix_8=$collcheck_full
status=0
runs=0
failed=

# Algorithms forced together under a bound: one job per group and bound.
# collective:algorithm pairs, each collective once per group.
bounded_reduce_groups='
reduce:chain scan:chain exscan:chain reduce_scatter:rhalving reduce_scatter_block:pairwise allreduce:ring
reduce:binary scan:chain exscan:chain reduce_scatter:pairwise reduce_scatter_block:rhalving allreduce:rsag
reduce:rsg reduce_scatter:ring reduce_scatter_block:ring
'
bounded_move_groups='
bcast:binomial allgather:direct alltoall:pairwise gather:binomial scatter:binomial
bcast:scatter_allgather allgather:ring alltoall:linear gather:linear scatter:linear
bcast:chain allgather:recursive_doubling
bcast:linear
'

run() { # NP PROGRAM MCA ARGS...
    np=$1 program=$2 mca=$3
    shift 3
    runs=$((runs + 1))
    # mpirun reads stdin: keep it away from the loop's list.
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $mca" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" "$top_builddir/test/mpi/$program" \
        "$@" </dev/null; then
        status=1
        failed="$failed
  np=$np $mca $*"
    fi
}

for np in $nps; do
    # Bound 2 at even sizes, 3 at odd ones (both everywhere when full).
    bounds=$((2 + np % 2))
    [ "$collcheck_full" = 0 ] || bounds="2 3"
    if [ "$np" -ge 8 ] && [ "$matrix_8" = 0 ]; then
        bounds=3
    fi
    # 4K segments are within shared memory's eager limit; at 5 processes the
    # groups also run with 16K segments around 256K counts, where the
    # segments go by rendezvous and a send completes only once its
    # receiver has taken it (where a wrong posting order would deadlock):
    # there only those but with BUFPOOL_TEST_FULL=1 (4K ran at 2-4).
    cuts=4K
    [ "$np" != 5 ] || cuts=16K:256K
    [ "$np" != 5 ] || [ "$collcheck_full" = 0 ] || cuts="4K 16K:256K"
    for cut in $cuts; do
        for bound in $bounds; do
            for program in test_coll_reduce_family test_coll_move_family; do
                groups=$bounded_reduce_groups
                [ "$program" = test_coll_reduce_family ] || groups=$bounded_move_groups
                echo "$groups" >"${TMPDIR:-/tmp}/coll_algorithms_groups.$$"
                while read -r group; do
                    [ -n "$group" ] || continue
                    mca='' colls='' expect=--expect-bufpool
                    for pair in $group; do
                        mca="$mca --mca coll_bufpool_${pair%%:*}_algorithm ${pair#*:}"
                        colls="$colls${colls:+,}${pair%%:*}"
                        # Handed back at sizes that are not powers of two.
                        if [ "$pair" = allgather:recursive_doubling ] && [ $((np & (np - 1))) -ne 0 ]; then
                            expect=
                        fi
                    done
                    counts=
                    [ "$cut" = "${cut#*:}" ] || counts=--segment-size=${cut#*:}
                    # shellcheck disable=SC2086 # an empty expect or counts must vanish
                    run "$np" "$program" "$mca --mca coll_bufpool_segment_size ${cut%%:*} \
--mca coll_bufpool_max_requests $bound" $expect --colls="$colls" --smoke $counts \
                        --expect-requests-peak="$bound"
                done <"${TMPDIR:-/tmp}/coll_algorithms_groups.$$"
                rm -f "${TMPDIR:-/tmp}/coll_algorithms_groups.$$"
            done
        done
    done
    # Recursive halving at every size (the fold at 3, 5; three steps at 8),
    # several rounds per call (4K segments at depth 1).
    run "$np" test_coll_reduce_family "--mca coll_bufpool_reduce_scatter_algorithm rhalving \
--mca coll_bufpool_reduce_scatter_block_algorithm rhalving --mca coll_bufpool_segment_size 4K \
--mca coll_bufpool_pipeline_depth 1" --expect-bufpool --colls=reduce_scatter,reduce_scatter_block --smoke
    if [ "$np" -ge 8 ] && [ "$matrix_8" = 0 ]; then
        continue
    fi
    # Bounded scratch: pipeline_depth x segment_size = 4 x 128K.
    run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm rsag" \
        --expect-bufpool --colls=allreduce --smoke --expect-scratch-bound=524288
    # The ring at depth 1 (halved segments, one-segment chunks) within the
    # same bound and at the smallest request bound (2 in flight), with many
    # segments per message.
    run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm ring" \
        --expect-bufpool --colls=allreduce --smoke --expect-scratch-bound=524288
    run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm ring \
--mca coll_bufpool_reduce_scatter_algorithm ring --mca coll_bufpool_reduce_scatter_block_algorithm ring \
--mca coll_bufpool_pipeline_depth 1 --mca coll_bufpool_segment_size 4K --mca coll_bufpool_max_requests 2" \
        --expect-bufpool --colls=allreduce,reduce_scatter,reduce_scatter_block --smoke
    if [ "$np" = 4 ]; then
        # The peak check can fail: unbounded, a reduce leaf posts every
        # segment at once (4K segments: dozens), far above 3.
        runs=$((runs + 1))
        if BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} --mca coll_bufpool_reduce_algorithm chain \
--mca coll_bufpool_segment_size 4K --mca coll_bufpool_max_requests 0" \
            sh "$top_srcdir/test/mpi/run-mpi-test.sh" 4 "$top_builddir/test/mpi/test_coll_reduce_family" \
            --colls=reduce --smoke --expect-requests-peak=3 </dev/null >/dev/null 2>&1; then
            status=1
            failed="$failed
  np=4 unbounded reduce chain passed --expect-requests-peak=3: the peak counter sees nothing"
        fi
    fi
    hier="--mca coll_bufpool_allreduce_algorithm hier --mca coll_bufpool_test_host_map"
    level=
    if [ "$collcheck_full" = 0 ] && { [ "$np" -gt 3 ] || [ "${BUFPOOL_TEST_QUICK:-0}" != 0 ]; }; then
        level=--smoke
    fi
    for spec in 0,1,0,1,2:128K 0,1,0,1,2:4K 0,0,1:4K 0,1,2,3,4:4K; do
        # shellcheck disable=SC2086 # an empty level must vanish
        run "$np" test_coll_reduce_family "$hier ${spec%%:*} --mca coll_bufpool_segment_size ${spec#*:}" \
            --expect-bufpool --colls=allreduce $level
        # hier_node: the hosts' phases through their shared segments.
        # shellcheck disable=SC2086
        run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm hier_node \
--mca coll_bufpool_test_host_map ${spec%%:*} --mca coll_bufpool_segment_size ${spec#*:}" \
            --expect-bufpool --colls=allreduce $level
    done
    run "$np" test_coll_reduce_family "$hier 0,0,1 --mca coll_bufpool_segment_size 4K \
--mca coll_bufpool_pipeline_depth 1" --expect-bufpool --colls=allreduce --smoke
    run "$np" test_coll_reduce_family "$hier 0,1,0,1,2" \
        --expect-bufpool --colls=allreduce --smoke --expect-scratch-bound=524288
    # hier is not bounded: forced under max_requests, auto's bounded choice
    # serves instead and the peak stays within the bound.
    run "$np" test_coll_reduce_family "$hier 0,0,1 --mca coll_bufpool_segment_size 4K \
--mca coll_bufpool_max_requests 2" --expect-bufpool --colls=allreduce --smoke --expect-requests-peak=2
    if [ "$np" = 2 ]; then
        # At 2 ranks out of place the pairwise stream's segments are 8 x
        # segment_size (32K here, no scratch): counts around 64K bytes give
        # blocks on either side of that boundary.
        run 2 test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm rsag \
--mca coll_bufpool_segment_size 4K" --expect-bufpool \
            --colls=allreduce,reduce_scatter,reduce_scatter_block --segment-size=64K
    fi
    # The matrix in columns: job K of a family forces the K-th algorithm of
    # each of its collectives at once (4 jobs a family instead of one per
    # algorithm: the same cases in a quarter of the launches), at the hier
    # runs' level.
    for family_program in test_coll_reduce_family test_coll_move_family; do
        for column in 1 2 3 4; do
            column_mca='' column_colls='' alone=''
            while IFS=: read -r coll family algorithms; do
                [ "$family" = "$family_program" ] || continue
                # shellcheck disable=SC2086 # one word per algorithm
                set -- $algorithms
                [ "$column" -le $# ] || continue
                eval "algorithm=\${$column}"
                # Recursive doubling allgather exists for powers of two
                # only; at other sizes it hands the call back, which must
                # still be correct: a job of its own without --expect-bufpool.
                if [ "$coll:$algorithm" = allgather:recursive_doubling ] && [ $((np & (np - 1))) -ne 0 ]; then
                    alone="--mca coll_bufpool_${coll}_algorithm $algorithm"
                    continue
                fi
                column_mca="$column_mca --mca coll_bufpool_${coll}_algorithm $algorithm"
                column_colls="$column_colls${column_colls:+,}$coll"
            done <<EOM
$matrix
EOM
            # bufpool's bcast never writes the root's buffer (read-only here).
            seal=
            case ",$column_colls," in *,bcast,*) seal=--seal-bcast-root ;; esac
            # 4K segments at collcheck's smoke level but with
            # BUFPOOL_TEST_FULL: its counts still cross dozens of segments
            # (the boundary counts), the default level's types and roots
            # run with 128K.  From 4 ranks on 128K only but with
            # BUFPOOL_TEST_FULL: the bounded groups above ran every
            # algorithm there in many segments (4K; 16K at 5 ranks) but
            # allreduce's recursive_doubling and hier and scan's and
            # exscan's recursive_doubling, which ran with 4K at 2 and 3.
            segments="128K 4K"
            [ "$np" -le 3 ] || [ "$collcheck_full" = 1 ] || segments=128K
            for segment in $segments; do
                segment_level=$level
                [ "$segment" = 128K ] || [ "$collcheck_full" = 1 ] || segment_level=--smoke
                # shellcheck disable=SC2086 # an empty level or seal must vanish
                [ -z "$column_colls" ] || run "$np" "$family_program" "$column_mca \
--mca coll_bufpool_segment_size $segment" --colls="$column_colls" $segment_level --expect-bufpool $seal
                # shellcheck disable=SC2086
                [ -z "$alone" ] || run "$np" "$family_program" "$alone --mca coll_bufpool_segment_size $segment" \
                    --colls=allgather $segment_level
            done
        done
    done
done

if [ $status -ne 0 ]; then
    echo "coll_algorithms: FAILED runs:$failed"
else
    echo "coll_algorithms: $runs runs passed"
fi
exit $status

#!/bin/sh
# The node algorithms (allreduce "node" and "node_rsag"; reduce, bcast,
# allgather, reduce_scatter(_block), gather, scatter, scan and exscan "node": one shared
# segment per communicator, no point-to-point once it is set up), forced for
# every call up to 4 KiB (allreduce node_rsag, reduce, bcast, allgather, scan
# and exscan: above too, in rounds of a second segment), against the serial
# reference:
#   - both families, in the blocking, nonblocking and persistent forms, at
#     2 and 3 processes, in one form each at 4, 5 and 8 (oversubscribed,
#     smoke; the three at 4 and 5 with BUFPOOL_TEST_FULL=1: forms_at), with
#     --expect-node: the counters prove that the calls ran over a segment
#     and none fell back;
#   - no segment (coll_bufpool_test_node_fail: rank 0 cannot create it, or
#     another rank cannot map it): every rank falls back alike, results
#     still right (--expect-node=fallback), and --expect-node must then fail
#     (the check can fail); no chunk segment for node_rsag, bcast and
#     allgather above 4 KiB (coll_bufpool_test_node_fail_chunk): those calls
#     fall back, the small ones do not (--expect-node=both);
#   - bcast and allgather in rounds of a page through a ring of 2;
#   - coll_bufpool_node_max_bytes: 0 (no segment at all: every call falls
#     back) and 64K (the segment of 3 ranks fits, the chunk segment not:
#     --expect-node=both), every rank alike;
#   - coll_bufpool_node_cold_calls 1: the chunk segment goes after every
#     large allreduce followed by another node call and comes back with the
#     next; results right, and the finalize report counts the releases (not
#     in the persistent form: each request's segments are its own, kept
#     from start to start and unmapped when it is freed, so none goes cold);
#   - the chunk segment's geometry from the rules rows' seg and depth, odd
#     ones changing from call to call on one communicator: a ring cut anew
#     within the segment, and a segment too small for a row made anew;
#   - a /dev/shm too small (a tmpfs of 48 or 96 KiB in a mount namespace of
#     the job's own, where unshare -m and mount are allowed; else a note):
#     whichever rank cannot reserve its part of a segment, every rank falls
#     back alike (48 KiB: no segment at all; 96 KiB: the small one, not the
#     chunk segment), results right, the message names /dev/shm; and of
#     2 MiB (and 1 MiB with BUFPOOL_TEST_FULL=1), where segments are
#     granted or refused as the job goes (both families in the three
#     forms, and test_coll_threads);
#   - /dev/shm: no segment name is left behind by a job, nor by one that is
#     killed (SIGKILL, mpirun with its ranks) in the middle of its
#     collectives, segments unnamed (the default) or named
#     (coll_bufpool_node_proc_link off), nor by one killed while rank 0
#     waits for a late rank: unnamed, no name exists while the segment does;
#     named, the runtime removes the name rank 0 registered (what else of
#     /dev/shm a killed job mapped, Open MPI's own btl segments, the test
#     removes afterwards: nobody else would);
#   - a rank that may not open rank 0's /proc/PID/fd link (rank 0 not
#     dumpable, no CAP_SYS_PTRACE; rank 1 in a PID namespace of its own;
#     and coll_bufpool_test_node_refuse_link in the collective runs): the
#     set-up falls back to a named segment, every rank alike, results
#     right, one refusal counted;
#   - MPI_THREAD_MULTIPLE: threads each on a communicator of their own, at
#     once, every node algorithm forced;
#   - groups (two levels) of allreduce and reduce above
#     coll_bufpool_node_flat_max ranks (2 at 3-7 ranks, the default 16 at
#     17), rank 0's value deciding for every rank.
# BUFPOOL_TEST_QUICK=1 (the Open MPI 5.0 and 6.0 steps of check-all.sh and
# make distcheck, after the full run on 4.1): what depends on the MPI below
# runs whole (the three forms at 2 and 3 ranks, segments named and refused,
# jobs killed and the runtime's cleanup, a full /dev/shm, threads); what is
# bufpool's own arithmetic (groups, rings, geometry, hier_node's depths,
# the refusals mid-job) once, in one form, or not at all: 61 jobs of 169,
# a fifth of the time (201 s against 944 s on Open MPI 5.0.10, 2 cores).
set -u
# collcheck_quick and collcheck_full: BUFPOOL_TEST_QUICK and _FULL read.
. "$top_srcdir/test/mpi/collcheck-sweep.sh"
quick=$collcheck_quick full=$collcheck_full
# full_or_quick FULL QUICK: the words for the run's mode.
full_or_quick() { if [ $quick = 1 ]; then echo "$2"; else echo "$1"; fi; }
# forms_at NP: the forms a sweep runs at NP ranks: all three up to 3 ranks
# (below 8 with BUFPOOL_TEST_FULL=1), one from 4 on, each count its own
# (4 and 7 persistent, 5 and 8 nonblocking, 6 blocking): every form meets
# an odd and an even count above 3 across the sweeps, in a third of the jobs.
forms_at() {
    if [ "$1" -le 3 ] || { [ $full = 1 ] && [ "$1" -lt 8 ]; }; then
        echo "blocking nonblocking persistent"
        return
    fi
    case $(($1 % 3)) in
        0) echo blocking ;;
        1) echo persistent ;;
        *) echo nonblocking ;;
    esac
}
status=0
failed=
runs=0
others="--mca coll_bufpool_min_size 0 --mca coll_bufpool_reduce_algorithm node \
--mca coll_bufpool_bcast_algorithm node --mca coll_bufpool_allgather_algorithm node \
--mca coll_bufpool_reduce_scatter_algorithm node \
--mca coll_bufpool_reduce_scatter_block_algorithm node \
--mca coll_bufpool_gather_algorithm node --mca coll_bufpool_scatter_algorithm node \
--mca coll_bufpool_scan_algorithm node --mca coll_bufpool_exscan_algorithm node"
# The same but for bcast's and allgather's (named by a run's own MCA).
others_no_moves=$(printf '%s\n' "$others" | sed 's/--mca coll_bufpool_bcast_algorithm node//;
s/--mca coll_bufpool_allgather_algorithm node//')
reductions=allreduce,reduce,reduce_scatter,reduce_scatter_block,scan,exscan
moves=bcast,allgather,gather,scatter
node="$others --mca coll_bufpool_allreduce_algorithm node"
runner=$top_srcdir/test/mpi/run-mpi-test.sh
# The segment names in /dev/shm whose creator (the pid in the name) is gone:
# left behind.  A live process's name, a concurrent test's among them (make
# -j runs other tests beside this one), is not counted: a name lives only
# while a communicator's ranks map it.
shm_names() {
    n=0
    for path in /dev/shm/bufpool-[0-9]*-*; do
        [ -e "$path" ] || continue # the pattern itself: no name
        pid=${path#/dev/shm/bufpool-}
        pid=${pid%%-*}
        [ -d "/proc/$pid" ] || n=$((n + 1))
    done
    echo "$n"
}
# The names of one process's segments (PID), space-separated, or nothing.
shm_names_of() { # PID
    for path in /dev/shm/bufpool-"$1"-*; do
        [ -e "$path" ] && printf '%s ' "${path#/dev/shm/}"
    done
}
# The names the processes PIDS (space-separated) left in /dev/shm, once
# the runtime has had a few seconds to remove them (it does when it learns
# of a death).
names_left() { # PIDS
    left=
    for _ in 1 2 3 4 5 6; do
        left=
        for pid in $1; do left="$left$(shm_names_of "$pid")"; done
        [ -n "$left" ] || break
        sleep 1
    done
    printf '%s' "$left"
}
# The files of /dev/shm that the processes PIDS map (Open MPI's own btl
# segments among them: vader_segment.*, sm_segment.*), read before they are
# killed.  A job killed with its mpirun cannot remove them, and they are
# this job's own: a concurrent job's files carry its own job id.
shm_files_of() { # PIDS
    for pid in $1; do
        sed -n 's|^[^/]* \(/dev/shm/[^ ]*\)$|\1|p' "/proc/$pid/maps" 2>/dev/null
    done | sort -u
}
# Remove those of FILES (shm_files_of) that no live process maps any more.
shm_remove_unmapped() { # FILES
    [ -n "$1" ] || return 0
    mapped=$(sed -n 's|^[^/]* \(/dev/shm/[^ ]*\)$|\1|p' /proc/[0-9]*/maps 2>/dev/null | sort -u)
    for f in $1; do
        printf '%s\n' "$mapped" | grep -qxF -- "$f" || rm -f -- "$f"
    done
}
# The runtime removes a killed creator's name when it learns of the death:
# a few seconds' grace.
shm_left() { # BEFORE
    n=$(shm_names)
    for _ in 1 2 3; do
        [ "$n" -gt "$1" ] || break
        sleep 2
        n=$(shm_names)
    done
    echo "$n"
}

run() { # NP PROGRAM MCA ARGS...
    np=$1 program=$2 mca=$3
    shift 3
    runs=$((runs + 1))
    # mpirun takes a parameter once: a run that names allreduce's its own way.
    forced=$node
    case $mca in
        *allreduce_algorithm*) forced=$others ;;
        *node_cma*) forced="$others_no_moves --mca coll_bufpool_allreduce_algorithm node" ;;
    esac
    case $program in
        /*) path=$program ;;
        *) path=$top_builddir/test/mpi/$program ;;
    esac
    if ! BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $forced $mca" \
        sh "$runner" "$np" "$path" "$@" </dev/null; then
        status=1
        failed="$failed
  np=$np $program $mca $*"
    fi
}

before=$(shm_names)
for np in ${BUFPOOL_TEST_NPS:-$(full_or_quick "2 3 4 5 8" "2 3")}; do
    level=
    [ "$np" -le 3 ] && [ $quick = 0 ] || level=--smoke
    for form in $(forms_at "$np"); do
        # shellcheck disable=SC2086 # an empty level must vanish
        run "$np" test_coll_reduce_family "" --colls=$reductions --form=$form \
            --expect-bufpool --expect-node $level
        # shellcheck disable=SC2086
        run "$np" test_coll_move_family "" --colls=$moves --form=$form \
            --expect-bufpool --expect-node --seal-bcast-root $level
        # shellcheck disable=SC2086
        run "$np" test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm node_rsag" \
            --colls=allreduce --form=$form --expect-bufpool --expect-node $level
    done
done

# Segments named (coll_bufpool_node_proc_link off), and named after rank 1
# of each refused rank 0's link (coll_bufpool_test_node_refuse_link): the
# same results, every call over a segment.
for mca in "--mca coll_bufpool_node_proc_link off" "--mca coll_bufpool_test_node_refuse_link 1"; do
    run 3 test_coll_reduce_family "$mca --mca coll_bufpool_allreduce_algorithm node_rsag" \
        --colls=allreduce,reduce,scan --smoke --expect-bufpool --expect-node
    # shellcheck disable=SC2086 # the list is one word
    run 3 test_coll_move_family "$mca" --colls=$moves --smoke --expect-bufpool --expect-node \
        --seal-bcast-root
done

# Groups (two levels): above coll_bufpool_node_flat_max ranks, allreduce,
# reduce, bcast and barrier up to 4 KiB run in groups (bufpool_node_groups):
# at 2 from 3 ranks on (5: groups of 2 and 3; 7: of 2, 2 and 3), every form,
# with --expect-node-tree (coll_bufpool_node_tree_calls grew on every
# rank); at 17 ranks by default (16); at 5 by default not
# (--expect-node-tree=none: the check can fail).  The value of the
# communicator's rank 0 counts on every rank: set on world rank 0 alone
# (test/mpi/rank-env.sh), every rank of MPI_COMM_WORLD and its duplicate
# runs in groups; set on the others alone, none does, and the results are
# right either way (ranks that cut groups of their own would hang or
# differ).
tree="--mca coll_bufpool_allreduce_algorithm node"
for np in $(full_or_quick "3 5 7" 5); do
    level=
    [ "$np" -le 3 ] || level=--smoke
    for form in $(full_or_quick "$(forms_at $np)" nonblocking); do
        # shellcheck disable=SC2086 # an empty level must vanish
        run $np test_coll_reduce_family "$tree --mca coll_bufpool_node_flat_max 2" \
            --colls=allreduce,reduce --form=$form --expect-bufpool --expect-node \
            --expect-node-tree $level
        # shellcheck disable=SC2086
        run $np test_coll_move_family "$tree --mca coll_bufpool_node_flat_max 2" \
            --colls=bcast --form=$form --expect-bufpool --expect-node --expect-node-tree \
            --seal-bcast-root $level
    done
done
if [ $quick = 0 ]; then
    run 17 test_coll_reduce_family "$tree" --colls=allreduce,reduce --smoke --comms=world,halves \
        --expect-bufpool --expect-node --expect-node-tree
    run 17 test_coll_move_family "$tree" --colls=bcast --smoke --comms=world,halves \
        --form=nonblocking --expect-bufpool --expect-node --expect-node-tree --seal-bcast-root
fi
run 5 test_coll_reduce_family "$tree" --colls=allreduce,reduce --smoke --expect-node \
    --expect-node-tree=none
# The groups as coll_bufpool_verbose 2 reports them on rank 0 (after a
# checked run of allreduce and reduce in groups): the cut and the L3 caches
# every rank wrote into the segment.  Without a test map: here either one
# L3 for all (every CPU under one, as on this project's machine) or none
# known (a machine of several, the processes not bound: run-mpi-test.sh
# binds none), never several runs.  With coll_bufpool_test_node_l3 (the L3
# each rank says): 8 ranks on two L3s of 3 and 5 are cut at the change (at
# most 3 a group: 0-2 3-4 5-7); an unknown one, or a round-robin placement
# (too many runs), leaves the L3s out (the plain cut 0-1 2-4 5-7).
check_groups() { # NP L3-MAP PATTERN...
    np=$1 map=$2
    shift 2
    runs=$((runs + 1))
    l3=
    [ -z "$map" ] || l3="--mca coll_bufpool_test_node_l3 $map"
    said=$(BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $others $tree \
--mca coll_bufpool_node_flat_max 2 --mca coll_bufpool_verbose 2 $l3" sh "$runner" "$np" \
        "$top_builddir/test/mpi/test_coll_reduce_family" --colls=allreduce,reduce --smoke \
        --comms=world --expect-node-tree </dev/null 2>&1 |
        grep -e "communicator MPI_COMM_WORLD: node allreduce, reduce, bcast and barrier of its $np ranks" \
            -e '^test_coll_reduce_family: PASS')
    for pattern in "$@"; do
        case $said in
            *"PASS"*"$pattern"* | *"$pattern"*"PASS"*)
                echo "coll_node: groups of $np ranks (L3 map '$map') as reported: $pattern"
                return ;;
        esac
    done
    status=1
    failed="$failed
  the groups of $np ranks at coll_bufpool_verbose 2 (L3 map '$map'): '$said'"
}
if [ $quick = 0 ]; then
    check_groups 5 "" "in 2 groups (rank 0's coll_bufpool_node_flat_max: 2): ranks 0-1 2-4; L3 caches: 1 run(s) of ranks bound within one, 0 rank(s)" \
        "in 2 groups (rank 0's coll_bufpool_node_flat_max: 2): ranks 0-1 2-4; L3 caches: left out, 0 run(s) of ranks bound within one, 5 rank(s)"
    check_groups 8 0,0,0,1,1,1,1,1 "ranks 0-2 3-4 5-7; L3 caches: 2 run(s) of ranks bound within one, 0 rank(s)"
    check_groups 8 0,0,-1,1 "ranks 0-1 2-4 5-7; L3 caches: left out, 4 run(s) of ranks bound within one, 2 rank(s)"
    check_groups 8 0,1 "ranks 0-1 2-4 5-7; L3 caches: 8 run(s) of ranks bound within one, 0 rank(s)"
fi
flat2=OMPI_MCA_coll_bufpool_node_flat_max=2
for who in rank0 others; do
    expect=--expect-node-tree first=$flat2 rest=BUFPOOL_TEST_UNUSED=1
    if [ $who = others ]; then
        expect=--expect-node-tree=none first=BUFPOOL_TEST_UNUSED=1 rest=$flat2
    fi
    run 5 "$top_srcdir/test/mpi/rank-env.sh" "$tree" "$first" "$rest" \
        "$top_builddir/test/mpi/test_coll_reduce_family" --colls=allreduce,reduce --smoke \
        --comms=world,dup --form=nonblocking --expect-node $expect
done

# No segment: created nowhere (rank 0) or not mapped by one rank (rank 2 of
# the communicators of all 3 ranks; the halves would not have a rank 2).
for fail in $(full_or_quick "0 2" 2); do
    for form in blocking nonblocking; do
        run 3 test_coll_reduce_family "--mca coll_bufpool_test_node_fail $fail" \
            --colls=$reductions --form=$form --expect-bufpool --expect-node=fallback --smoke \
            --comms=world,dup,reversed
        run 3 test_coll_move_family "--mca coll_bufpool_test_node_fail $fail" \
            --colls=$moves --form=$form --expect-bufpool --expect-node=fallback --smoke \
            --comms=world,dup,reversed
    done
done
# No chunk segment (allreduce node_rsag, bcast, allgather, scan and exscan
# node above 4 KiB): those calls fall back (rsag, binomial, direct, chain)
# on every rank alike, the small ones still run over the segment.
for fail in $(full_or_quick "0 2" 2); do
    for form in $(full_or_quick "blocking nonblocking" nonblocking); do
        run 3 test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm node_rsag \
--mca coll_bufpool_test_node_fail_chunk $fail" --colls=allreduce --form=$form --expect-bufpool \
            --expect-node=both --smoke --comms=world,dup,reversed
        run 3 test_coll_move_family "--mca coll_bufpool_test_node_fail_chunk $fail" \
            --colls=bcast,allgather --form=$form --expect-bufpool --expect-node=both --smoke \
            --comms=world,dup,reversed
        run 3 test_coll_reduce_family "--mca coll_bufpool_test_node_fail_chunk $fail" \
            --colls=scan,exscan --form=$form --expect-bufpool --expect-node=both --smoke \
            --comms=world,dup,reversed
    done
done
# MPI_THREAD_MULTIPLE: threads running checked collectives at once, each on
# its own communicator, so on its own segments (test_coll_threads), every
# collective's node algorithm forced.
for np in $(full_or_quick "2 3" 2); do
    run $np test_coll_threads "--mca coll_bufpool_allreduce_algorithm node_rsag" --expect-node
done
# bcast and allgather above 4 KiB in rounds of the chunk segment at its
# finest (a page a round, a ring of 2), so that a rank writing a slot
# before every reader is done with the round it held shows (checked: with
# node_big_claim made a no-op these fail at 2, 3 and 4 ranks); the
# fuzzer's node configuration mixes them with the reductions' rounds.
for np in $(full_or_quick "2 3 4" 3); do
    for form in $(full_or_quick "$(forms_at $np)" nonblocking); do
        run $np test_coll_move_family "--mca coll_bufpool_segment_size 4K \
--mca coll_bufpool_pipeline_depth 2" --colls=bcast,allgather --form=$form --expect-bufpool \
            --expect-node --seal-bcast-root
    done
done
# bcast and allgather node_cma: single-copy reads (CMA) of the blocks above
# 4 KiB where this machine allows them (probed at the first call): results
# right and the reads counted on every rank (checked: with the owner
# returning before its readers are done, or a non-contiguous reader's
# bounce left unpacked, these fail); with one rank's probe failing
# (test_node_no_cma: rank 0, or rank 2 of 3) or coll_bufpool_node_cma off,
# not one rank reads straight, and the rounds serve alike.
cma_forced="--mca coll_bufpool_bcast_algorithm node_cma --mca coll_bufpool_allgather_algorithm node_cma"
if "$top_builddir/test/mpi/cma_probe" 2>/dev/null; then
    for np in $(full_or_quick "2 3 4" 3); do
        for form in $(full_or_quick "$(forms_at $np)" "blocking persistent"); do
            run $np test_coll_move_family "$cma_forced" --colls=bcast,allgather --form=$form \
                --expect-bufpool --expect-node --expect-single-copy --seal-bcast-root
        done
    done
    set -- "--mca coll_bufpool_test_node_no_cma 2"
    [ $quick = 1 ] || set -- "--mca coll_bufpool_test_node_no_cma 0" "$@" "--mca coll_bufpool_node_cma off"
    for no in "$@"; do
        run 3 test_coll_move_family "$cma_forced $no" --colls=bcast,allgather --form=nonblocking \
            --expect-bufpool --expect-node --expect-single-copy=none --smoke
    done
else
    echo "coll_node: process_vm_readv is not allowed here: single-copy reads not tested"
fi
run 3 test_coll_move_family "" --colls=bcast,allgather --expect-node --expect-single-copy=none \
    --smoke
# The bound on the bytes of segments a process maps.
for form in blocking nonblocking; do
    run 3 test_coll_reduce_family "--mca coll_bufpool_node_max_bytes 0" --colls=$reductions \
        --form=$form --expect-bufpool --expect-node=fallback --smoke
    run 3 test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm node_rsag \
--mca coll_bufpool_node_max_bytes 64K" --colls=allreduce --form=$form --expect-bufpool \
        --expect-node=both --smoke --comms=world
done
# Cold chunk segments: released and made again, call after call.
for form in $(full_or_quick "blocking nonblocking persistent" "nonblocking persistent"); do
    runs=$((runs + 1))
    out=$(BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $others --mca coll_bufpool_allreduce_algorithm \
node_rsag --mca coll_bufpool_node_cold_calls 1 --mca coll_bufpool_verbose 1" sh "$runner" 3 \
        "$top_builddir/test/mpi/test_coll_reduce_family" --colls=allreduce --form=$form \
        --expect-bufpool --expect-node </dev/null 2>&1)
    rc=$?
    released=$(printf '%s\n' "$out" | sed -n 's/.* \([0-9][0-9]*\) chunk segments unmapped when cold.*/\1/p' |
        sort -n | tail -n 1)
    # A persistent request keeps its chunk segment from start to start.
    case $form in
    persistent) want=0 ok=$([ "${released:-0}" = 0 ] && echo yes) ;;
    *) want="2 or more" ok=$([ "${released:-0}" -ge 2 ] && echo yes) ;;
    esac
    if [ $rc != 0 ] || [ "$ok" != yes ]; then
        printf '%s\n' "$out" | tail -n 20
        status=1
        failed="$failed
  node_cold_calls 1, $form: exit $rc, ${released:-no} chunk segments released (expected $want)"
    fi
done
# allreduce hier_node: hosts pretended (coll_bufpool_test_host_map), their
# phases through a segment of each host's ranks, in three forms
# (--expect-node: every rank ran them over its host's segment; the pool
# counts it): hosts of 2 and 3 ranks (the leaders exchange the host's
# result), and hosts of 2 ranks each, interleaved, or 3 hosts of 2 (every
# rank exchanges its slice of each round with the ranks of its index on the
# other hosts).  One host without a segment (rank 2's: test_node_fail) or
# without a chunk segment (rank 3's) runs its phases point to point while
# the other keeps its segment, exchanging alike; and the fuzzer's batches,
# several nonblocking calls in flight (seed 20 mixed two of them up before
# each call took both its sequence numbers at once).
for map in $(full_or_quick "0,0,1,1,1 0,1,0,1 0,0,1,1,2,2" 0,0,1,1,1); do
    np=$(($(printf '%s' "$map" | tr -cd , | wc -c) + 1))
    hiernode="--mca coll_bufpool_allreduce_algorithm hier_node --mca coll_bufpool_test_host_map \
$map --mca coll_bufpool_segment_size 4K"
    for form in blocking nonblocking persistent; do
        run "$np" test_coll_reduce_family "$hiernode" --colls=allreduce --form=$form \
            --expect-bufpool --expect-node --smoke --comms=world,dup,reversed
    done
    [ "$np" -gt 5 ] && continue
    for fail in "test_node_fail 2" "test_node_fail_chunk 3"; do
        run "$np" test_coll_reduce_family "$hiernode --mca coll_bufpool_$fail" --colls=allreduce \
            --form=nonblocking --expect-bufpool --smoke --comms=world,dup,reversed
    done
done
# The sliced shape's pipeline (one batch exchanged while the host reduces
# the next) at every batch size, the whole 3 MiB (48 rounds): depth 2
# exchanges a round at a time without overlap, 4 (the default) a round
# while the next is reduced, 7 three rounds while the next three are.
for depth in $(full_or_quick "2 7" ""); do
    # One form a depth but with BUFPOOL_TEST_FULL=1 (2 blocking, 7
    # nonblocking).
    case $full:$depth in
        0:2) forms=blocking ;;
        0:*) forms=nonblocking ;;
        *) forms="blocking nonblocking" ;;
    esac
    for form in $forms; do
        run 6 test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm hier_node \
--mca coll_bufpool_test_host_map 0,0,1,1,2,2 --mca coll_bufpool_segment_size 4K \
--mca coll_bufpool_pipeline_depth $depth" --colls=allreduce --form=$form --expect-bufpool \
            --expect-node --comms=world,dup,reversed
    done
done
for map in $(full_or_quick "0,1 0,0,1" ""); do
    run 4 ../fuzz/coll_fuzz "--mca coll_bufpool_priority 90 --mca coll_bufpool_rules_default off \
--mca coll_bufpool_allreduce_algorithm hier_node --mca coll_bufpool_test_host_map $map" \
        --seed 11 --seeds 10
done

# Geometry: the test's sizes (around 128 KiB, type after type, and 3 MiB
# beyond --smoke) go through rows of different rounds and rings: the first
# (128 KiB + 4 bytes) makes a segment for 96K x 2, the next (80 KiB) needs
# 200K x 5 and has a bigger one agreed, and the ones after cut it anew
# (64 KiB: 64K x 3 within it, after every rank is done with the calls before).
geometry=$(mktemp "${TMPDIR:-/tmp}/bufpool-geometry.XXXXXX")
cat >"$geometry" <<'RULES'
bufpool-rules 1
allreduce hosts=1 bytes=4K+1..70K op=commutative alg=node_rsag seg=64K depth=3
allreduce hosts=1 bytes=70K+1..100K op=commutative alg=node_rsag seg=200K depth=5
allreduce hosts=1 bytes=100K+1.. op=commutative alg=node_rsag seg=96K depth=2
RULES
for np in $(full_or_quick "2 3" 3); do
    for form in $(full_or_quick "blocking nonblocking persistent" persistent); do
        run $np test_coll_reduce_family "--mca coll_bufpool_allreduce_algorithm auto \
--mca coll_bufpool_rules_file $geometry" --colls=allreduce --form=$form --expect-bufpool \
            --expect-node --smoke --comms=world,dup,reversed
    done
done
rm -f "$geometry"

# A real ENOSPC: /dev/shm as small as a container's.  3 ranks: the small
# segment takes 4 KiB + 3 x 20 KiB, each rank reserving its own part, the
# chunk segment of node_rsag 128K x 4 over 1.5 MiB.  vader keeps its own
# files in /tmp meanwhile.
# small_shm SIZE NP PROGRAM ARGS...: the run under a /dev/shm of SIZE, its
# output on stdout, its exit status returned.
small_shm() {
    shm_size=$1 shm_np=$2 shm_program=$3
    shift 3
    unshare -m sh -c "mount -t tmpfs -o size=$shm_size tmpfs /dev/shm && \
BUFPOOL_TEST_MCA=\"${BUFPOOL_TEST_MCA:-} $others --mca btl_vader_backing_directory /tmp \
--mca coll_bufpool_allreduce_algorithm node_rsag\" sh \"$runner\" $shm_np \
\"$top_builddir/test/mpi/$shm_program\" $*" </dev/null 2>&1
}
if [ "$(id -u)" = 0 ] &&
    unshare -m sh -c 'mount -t tmpfs -o size=48k tmpfs /dev/shm' </dev/null >/dev/null 2>&1; then
    for case in 48k:fallback 96k:both; do
        runs=$((runs + 1))
        size=${case%:*} expect=${case#*:}
        out=$(small_shm $size 3 test_coll_reduce_family --colls=allreduce,reduce --smoke \
            --expect-bufpool --expect-node=$expect --comms=world,dup)
        rc=$?
        if [ $rc != 0 ] || ! printf '%s\n' "$out" | grep -q 'No space left on device' ||
            ! printf '%s\n' "$out" | grep -q '/dev/shm'; then
            printf '%s\n' "$out" | tail -n 20
            status=1
            failed="$failed
  /dev/shm of $size: exit $rc, or no message naming the lack of space and /dev/shm"
        fi
    done
    # Room for some segments and not others, so that refusals come in the
    # middle of a job (both families in the three forms, world, dup,
    # reversed and halves alive at once, and 4 threads at once each on its
    # own communicator): 1 MiB grants every small segment and refuses every
    # chunk segment (--expect-node=both: each run met both); 2 MiB grants
    # some chunk segments and refuses others, among them ones cut anew for
    # a larger call (once, 2026-12-01, test_coll_threads there returned a
    # scatter's block never written, handed to point-to-point: not seen
    # again in 1,700 runs).  Every result right.
    # 2 MiB (grants and refusals mixed) by default, 1 MiB too with
    # BUFPOOL_TEST_FULL=1, neither in the quick form.
    sizes=2m
    [ $full = 0 ] || sizes="1m 2m"
    for size in $(full_or_quick "$sizes" ""); do
        expect=
        [ $size = 2m ] || expect=--expect-node=both
        for job in reduce:blocking reduce:nonblocking reduce:persistent move:blocking \
            move:nonblocking move:persistent threads:-; do
            runs=$((runs + 1))
            family=${job%:*} form=${job#*:}
            if [ $family = threads ]; then
                program=test_coll_threads
                out=$(small_shm $size 2 $program --smoke $expect)
            else
                program=test_coll_${family}_family
                out=$(small_shm $size 3 $program --form=$form \
                    --comms=world,dup,reversed,halves --smoke $expect)
            fi
            rc=$?
            if [ $rc != 0 ] || { [ -n "$expect" ] &&
                ! printf '%s\n' "$out" | grep -q 'No space left on device'; }; then
                printf '%s\n' "$out" | tail -n 20
                status=1
                failed="$failed
  /dev/shm of $size, refusals mid-job: $program $form $expect: exit $rc, or no segment refused"
            fi
        done
    done
else
    echo "coll_node: note: not root, or no mount namespace of our own (unshare -m, mount): the small /dev/shm is not tested"
fi

runs=$((runs + 1))
if BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $node --mca coll_bufpool_test_node_fail 1" \
    sh "$runner" 2 "$top_builddir/test/mpi/test_coll_reduce_family" --colls=allreduce --smoke \
    --expect-node </dev/null >/dev/null 2>&1; then
    status=1
    failed="$failed
  --expect-node passed a job whose segment failed: the check sees nothing"
fi

after=$(shm_left "$before")
if [ "$after" -gt "$before" ]; then
    status=1
    failed="$failed
  /dev/shm holds $((after - before)) more bufpool- name(s) after the jobs than before"
fi

# Killed in the middle: a segment has no name by default
# (coll_bufpool_node_proc_link), so mpirun is killed with its ranks; a
# named one (off) loses its name as soon as every rank has mapped it, and
# in a set-up under way the runtime removes it, so only the ranks are
# killed (with mpirun the names of set-ups under way would stay: the
# window unnamed segments close).  The check counts the names of this
# job's own processes (found by the path of a link to the program in a
# directory of this run's own), not of others that make -j runs beside it.
kill_dir=$(mktemp -d "${TMPDIR:-/tmp}/bufpool-kill.XXXXXX")
ln -s "$top_builddir/test/mpi/test_coll_reduce_family" "$kill_dir/"
for link in on off; do
    runs=$((runs + 1))
    pattern="$kill_dir/test_coll_reduce_family"
    BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $node --mca coll_bufpool_node_proc_link $link" \
        sh "$runner" 2 "$pattern" --colls=allreduce,reduce --full </dev/null >/dev/null 2>&1 &
    job=$!
    sleep 3
    ranks_only=
    [ "$link" = on ] || ranks_only='^'
    killed=$(pgrep -f -- "$ranks_only$pattern")
    files=$(shm_files_of "$killed")
    # shellcheck disable=SC2086 # one word per pid
    [ -z "$killed" ] || kill -KILL $killed 2>/dev/null
    wait $job 2>/dev/null
    left=$(names_left "$killed")
    shm_remove_unmapped "$files"
    if [ -z "$killed" ]; then
        status=1
        failed="$failed
  coll_bufpool_node_proc_link $link: no process of the job to kill after 3 s"
    elif [ -n "$left" ]; then
        for name in $left; do rm -f "/dev/shm/$name"; done
        status=1
        failed="$failed
  coll_bufpool_node_proc_link $link: a job killed with its mpirun left in /dev/shm: $left"
    fi
done
rm -rf "$kill_dir"

# Killed while rank 0 waits in its first set-up for rank 1, which sleeps
# (node_late_rank).  Named (coll_bufpool_node_proc_link off): rank 0
# registered the name for cleanup before it created the file, and the
# runtime removes it when the ranks die (checked: without the registration
# this fails every time); only the ranks are killed, by pid.  Unnamed (on,
# the default): the segment is open in rank 0 (a deleted file of /dev/shm
# among its descriptors) and has no name; mpirun is killed with the ranks.
# late_check LINK: 0 when the segment was seen and nothing is left.
late_check() {
    link=$1
    runs=$((runs + 1))
    late_out=$(mktemp "${TMPDIR:-/tmp}/bufpool-late.XXXXXX")
    BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $node --mca coll_bufpool_node_proc_link $link" \
        sh "$runner" 2 "$top_builddir/test/mpi/node_late_rank" 120 "$$-$link" \
        </dev/null >"$late_out" 2>&1 &
    job=$!
    pids='' pid0='' seen=''
    for _ in $(seq 240); do # 120 s at most (a loaded machine)
        pids=$(sed -n 's/^node_late_rank: rank [0-9]* pid \([0-9][0-9]*\)$/\1/p' "$late_out" | sort -u)
        pid0=$(sed -n 's/^node_late_rank: rank 0 pid \([0-9][0-9]*\)$/\1/p' "$late_out")
        if [ "$(printf '%s\n' "$pids" | grep -c .)" = 2 ] && [ -n "$pid0" ]; then
            if [ "$link" = off ]; then
                seen=$(shm_names_of "$pid0")
            else
                # shellcheck disable=SC2010 # the links' targets, not names
                seen=$(ls -l "/proc/$pid0/fd" 2>/dev/null | grep -o '/dev/shm/#[0-9]* (deleted)' | head -n 1)
            fi
            [ -z "$seen" ] || break
        fi
        sleep 0.5
    done
    during=
    [ "$link" = off ] || during=$(shm_names_of "$pid0")
    victims=$pids
    [ "$link" = off ] || victims=$(pgrep -f -- "node_late_rank 120 $$-$link")
    files=$(shm_files_of "$victims")
    # shellcheck disable=SC2086 # one word per pid
    [ -z "$victims" ] || kill -KILL $victims 2>/dev/null
    wait $job 2>/dev/null
    left=
    [ -z "$seen" ] || left=$(names_left "$pid0")
    shm_remove_unmapped "$files"
    if [ -z "$seen" ]; then
        status=1
        failed="$failed
  node_late_rank, coll_bufpool_node_proc_link $link: rank 0's segment never seen (output: $(tail -n 5 "$late_out"))"
    elif [ -n "$during$left" ]; then
        for name in $during $left; do rm -f "/dev/shm/$name"; done
        status=1
        failed="$failed
  node_late_rank, coll_bufpool_node_proc_link $link: a name in /dev/shm while rank 0 waited (${during:-none}) or after the kill (${left:-none})"
    fi
    rm -f "$late_out"
}
late_check off
late_check on

# A rank refused rank 0's link for real.  The set-up falls back to a named
# segment on every rank alike: the sum is right, every rank's call ran
# over a segment, and rank 0 counts one refusal.
# refusal_check WHAT WRAPPER MODE: node_late_rank 0 MODE at 2 ranks.
refusal_check() {
    runs=$((runs + 1))
    # shellcheck disable=SC2086 # the wrapper's words
    out=$(BUFPOOL_TEST_MCA="${BUFPOOL_TEST_MCA:-} $node" $2 sh "$runner" 2 \
        "$top_builddir/test/mpi/node_late_rank" 0 "$3" </dev/null 2>&1)
    rc=$?
    if [ $rc != 0 ] ||
        ! printf '%s\n' "$out" | grep -q '^node_late_rank: rank 0 links refused 1 node calls 1$' ||
        ! printf '%s\n' "$out" | grep -q '^node_late_rank: rank 1 links refused 0 node calls 1$'; then
        printf '%s\n' "$out" | tail -n 12
        status=1
        failed="$failed
  $1: exit $rc, or not one refusal and a node call on each rank"
    fi
}
# Rank 0 not dumpable and no rank with CAP_SYS_PTRACE (setpriv drops it
# for root; other users have none).
if [ "$(id -u)" != 0 ]; then
    refusal_check "rank 0 not dumpable" "" nodump
elif setpriv --bounding-set -sys_ptrace true </dev/null >/dev/null 2>&1; then
    refusal_check "rank 0 not dumpable, no CAP_SYS_PTRACE" "setpriv --bounding-set -sys_ptrace" nodump
else
    echo "coll_node: note: root, and setpriv cannot drop CAP_SYS_PTRACE here: rank 0 not dumpable is not tested"
fi
# Rank 1 in a PID namespace of its own (node_late_rank runs itself again
# under unshare), where rank 0's /proc/PID is another process or none, as
# Apptainer without setuid gives each rank.
if [ "$(id -u)" = 0 ] && unshare -p -f -m --mount-proc true </dev/null >/dev/null 2>&1; then
    refusal_check "rank 1 in a PID namespace of its own" "" pidns
    if ! printf '%s\n' "$out" | grep -q '^node_late_rank: rank 1 pid 1$'; then
        status=1
        failed="$failed
  rank 1 in a PID namespace of its own: it was not (pid 1 there)"
    fi
else
    echo "coll_node: note: not root, or no PID namespace of our own (unshare -p): a rank in another PID namespace is not tested"
fi

if [ $status != 0 ]; then
    echo "coll_node: failed runs:$failed"
else
    echo "coll_node: $runs runs passed"
fi
exit $status

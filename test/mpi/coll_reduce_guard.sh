#!/bin/sh
# On every series to 6.0.x, libnbc's MPI_Ireduce and MPI_Reduce_init of a
# commutative operation write past their temporary buffer, and can return
# wrong elements, when the datatype's data does not start at its origin:
# on 3 or more ranks (Rabenseifner's algorithm), and on 2 with the root's
# input in place (its chain, from 64 KiB of data unless
# coll_libnbc_ireduce_algorithm says otherwise; docs/reliability.md).  Only
# a user-defined operation can take such a datatype, and the operation is
# the same on every rank, so bufpool serves every such call of a
# user-defined commutative operation (coll_bufpool_resolve.c, guard_map),
# on 2 ranks where libnbc would take its chain.
# A rules file hands every reduce back, so that the guard alone serves:
# test_coll_reduce_guard checks every element of every root's result and
# every byte around the data at 2 to 5 ranks, the root's input in place or
# not, and --expect-guard that bufpool served each call of the user
# operation it guards (on 2 ranks from 64 KiB; with libnbc's chain forced,
# every one; with its binomial tree forced, none) and handed the others
# and each MPI_SUM back.  Then under the package's own rules, whose node
# rows hand a communicator's first calls (coll_bufpool_node_warmup_calls)
# to the module below, --never-handed-back checks that no guarded call
# went there (it did before 2026-11-30: the warm-up bypassed the guard).
# On stock Open MPI (--mca coll ^bufpool), or with
# the guard off in the code, the same runs abort, hang or crash (verified
# 2026-11-29); at 2 ranks stock writes past libnbc's buffer in place
# (AddressSanitizer, 4.1.4, 5.0.10 and 6.0.x, 2026-11-30).
# The same for blocking MPI_Allreduce (--allreduce): tuned's ring and
# segmented ring allreduce make the mistake too, so bufpool serves the
# calls of a user-defined commutative operation in the bands of bytes
# where tuned's fixed decision takes them, whatever the rules say, and
# hands back MPI_SUM's there; stock aborts at 2 and 3 ranks (double free
# or corruption), and so does bufpool with the guard off in the code
# (verified 2026-12-01, 4.1.4).
# Across hosts (test/multihost/suite.sh sets BUFPOOL_TEST_NPS): with every
# allreduce and reduce handed back, every result right, whatever is below
# (tuned on Open MPI 4.1; on 5.0 and 6.0 han, whose allreduce and reduce
# reduce between hosts with libnbc's nonblocking reduce: guarded at every
# size), blocking MPI_Reduce too (--blocking).  MPI_Ireduce and
# MPI_Reduce_init are counted there as on one host (3 or more ranks:
# every call of the user operation served); with BUFPOOL_TEST_HAN_BELOW=1
# (suite.sh --guards, on 5.0 and 6.0) so are blocking MPI_Allreduce and
# MPI_Reduce: every call of the user operation served, none handed to han.
set -u
. "$top_srcdir/test/mpi/handback-run.sh"
status=0
if [ -n "${BUFPOOL_TEST_NPS:-}" ]; then
    all= every=
    if [ "${BUFPOOL_TEST_HAN_BELOW:-0}" = 1 ]; then
        all=--expect-guard=all every=--expect-guard
    fi
    handback_run allreduce "$BUFPOOL_TEST_NPS" test_coll_reduce_guard --allreduce $all || status=1
    handback_run reduce "$BUFPOOL_TEST_NPS" test_coll_reduce_guard --expect-guard=65536 || status=1
    handback_run reduce "$BUFPOOL_TEST_NPS" test_coll_reduce_guard --blocking $every || status=1
    exit $status
fi
handback_run reduce "2 3 4 5" test_coll_reduce_guard --expect-guard=65536 || status=1
for forced in "chain 0" "binomial never"; do
    set -- $forced
    BUFPOOL_TEST_MCA="--mca coll_libnbc_ireduce_algorithm $1 ${BUFPOOL_TEST_MCA:-}" \
        handback_run reduce 2 test_coll_reduce_guard --expect-guard=$2 || status=1
done
for np in 2 3 4; do
    BUFPOOL_TEST_MCA="--mca coll_bufpool_node_warmup_calls 128 ${BUFPOOL_TEST_MCA:-}" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" \
        "$top_builddir/test/mpi/test_coll_reduce_guard" --never-handed-back=65536 || status=1
done
handback_run allreduce "2 3 4 5" test_coll_reduce_guard --allreduce --expect-guard || status=1
# Where the user lets tuned take a ring at any size (with
# coll_tuned_use_dynamic_rules: coll_tuned_allreduce_algorithm ring or
# segmented ring, or a tuned rules file, which may name either anywhere),
# every call of the user operation is guarded.  Stock aborts at 2 and 4
# ranks with each of the three (verified 2026-12-01, 4.1.4), and so does
# bufpool guarding only the fixed decision's bands.
tuned_rules=$(mktemp "${TMPDIR:-/tmp}/bufpool-tuned-rules.XXXXXX") || exit 1
# tuned's file format: 1 collective, allreduce (2), 3 communicator sizes,
# each with one message size from 0 taking the ring (4).
printf '1\n2\n3\n2\n1\n0 4 0 0\n3\n1\n0 4 0 0\n4\n1\n0 4 0 0\n' >"$tuned_rules"
for tuned in "coll_tuned_allreduce_algorithm 4" "coll_tuned_allreduce_algorithm 5" \
    "coll_tuned_dynamic_rules_filename $tuned_rules"; do
    BUFPOOL_TEST_MCA="--mca coll_tuned_use_dynamic_rules 1 --mca $tuned ${BUFPOOL_TEST_MCA:-}" \
        handback_run allreduce "2 4" test_coll_reduce_guard --allreduce --expect-guard=all || status=1
done
rm -f "$tuned_rules"
# The same ring forced through MPI_T after MPI_Init: tuned reads its forced
# algorithms again for each new communicator, and the guards must too (a
# communicator of a shape seen before shared the earlier maps until
# 2026-12-01, and the run below crashed with double free or corruption).
BUFPOOL_TEST_MCA="--mca coll_tuned_use_dynamic_rules 1 ${BUFPOOL_TEST_MCA:-}" \
    handback_run allreduce "2 4" test_coll_reduce_guard \
    --mpit-set=coll_tuned_allreduce_algorithm=4 --allreduce --expect-guard=all || status=1
for np in 2 3 4; do
    BUFPOOL_TEST_MCA="--mca coll_bufpool_node_warmup_calls 128 ${BUFPOOL_TEST_MCA:-}" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" \
        "$top_builddir/test/mpi/test_coll_reduce_guard" --allreduce --never-handed-back || status=1
done
exit $status

#!/bin/sh
# A rank's own block in MPI_Gather, MPI_Scatter (the root's), MPI_Allgather
# and MPI_Alltoall (every rank's), every form, between two different
# datatypes: Open MPI's local copy (ompi_datatype_sndrcv, 64 KiB at a time)
# loses the last element's double when a chunk boundary splits an element,
# on every series to 6.0.x (docs/reliability.md).  bufpool copies such a
# block itself and hands the call back with MPI_IN_PLACE at the root of a
# gather or scatter, an allgather's block sent from scratch laid out as the
# receive datatype, an alltoall's copied again after the call
# (bufpool_own_block_at_risk).  A rules file hands every
# such call back, so that the hand-back alone does it: test_coll_own_block
# checks every element and every byte around the data at 2, 3 and 4 ranks,
# and --expect-copies that each rank copied exactly its calls at risk and
# bufpool served none.  On stock Open MPI
# (--mca coll ^bufpool), or with the copy off in the code, the same runs
# report wrong elements (verified 2026-11-29).
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/bufpool-own.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
cat >"$dir/handback.rules" <<'RULES'
bufpool-rules 1
# every call to the previous module: only the hand-back copies
gather alg=previous measured="test: coll_own_block.sh"
scatter alg=previous measured="test: coll_own_block.sh"
allgather alg=previous measured="test: coll_own_block.sh"
alltoall alg=previous measured="test: coll_own_block.sh"
RULES
status=0
for np in 2 3 4; do
    BUFPOOL_TEST_MCA="--mca coll_bufpool_rules_file $dir/handback.rules ${BUFPOOL_TEST_MCA:-}" \
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$np" \
        "$top_builddir/test/mpi/test_coll_own_block" --expect-copies || status=1
done
exit $status

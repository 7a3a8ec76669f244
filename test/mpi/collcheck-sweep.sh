# Sourced by the test/mpi/coll_*.sh tests: collcheck_sweep PROGRAM [ARGS...]
# runs one collcheck program at each process count of BUFPOOL_TEST_NPS
# (default "1 2 3 4 8") and fails if any run fails.  Runs above 4 processes
# take the representative --smoke subset unless BUFPOOL_TEST_FULL=1: eight
# ranks on two cores are slow, and make check must stay within minutes.

collcheck_full=0
case ${BUFPOOL_TEST_FULL:-0} in
    '' | 0) ;;
    *) collcheck_full=1 ;;
esac
# BUFPOOL_TEST_QUICK=1 (make distcheck in test/check-all.sh): the smoke
# subset at 1 and 3 processes, enough to prove the tarball's tests run.
collcheck_quick=0
case ${BUFPOOL_TEST_QUICK:-0} in
    '' | 0) ;;
    *) collcheck_quick=1 ;;
esac

collcheck_sweep() {
    collcheck_program=$1
    shift
    collcheck_status=0
    collcheck_nps="1 2 3 4 8"
    [ $collcheck_quick = 0 ] || collcheck_nps="1 3"
    for collcheck_np in ${BUFPOOL_TEST_NPS:-$collcheck_nps}; do
        collcheck_level=
        if { [ "$collcheck_np" -gt 4 ] || [ $collcheck_quick = 1 ]; } && [ $collcheck_full = 0 ]; then
            collcheck_level=--smoke
        fi
        # shellcheck disable=SC2086 # an empty level must vanish
        sh "$top_srcdir/test/mpi/run-mpi-test.sh" "$collcheck_np" \
            "$top_builddir/test/mpi/$collcheck_program" $collcheck_level "$@" ||
            collcheck_status=1
    done
    return $collcheck_status
}

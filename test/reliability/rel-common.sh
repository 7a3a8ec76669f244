# Sourced by the test/reliability/*.sh scripts (POSIX sh).
#
# Environment, as test/Makefile.am exports it: top_srcdir, top_builddir,
# MPIRUN, OMPI_INFO, OMPI_SYSTEM_COMPONENT_DIR.  Also read:
#   RELIABILITY_FULL=1     every sweep in full (tens of minutes)
#   BUFPOOL_TEST_QUICK=1   skip (exit 77); see below
#   RELIABILITY_RESULTS    where CSV results and logs go (default
#                          $top_builddir/test/reliability/results)
#   BUFPOOL_TEST_TIMEOUT   seconds before a job counts as hung (default 120)

rel_run="$top_srcdir/test/mpi/run-mpi-test.sh"
rel_job="$top_builddir/test/reliability/rel_job"
rel_fault_lib="$top_builddir/test/reliability/.libs/libfaultinject.so"
rel_results=${RELIABILITY_RESULTS:-$top_builddir/test/reliability/results}
mkdir -p "$rel_results" || exit 1
BUFPOOL_TEST_TIMEOUT=${BUFPOOL_TEST_TIMEOUT:-120}
export BUFPOOL_TEST_TIMEOUT

rel_full=0
case ${RELIABILITY_FULL:-0} in
    '' | 0) ;;
    *) rel_full=1 ;;
esac

# BUFPOOL_TEST_QUICK=1 (make distcheck in test/check-all.sh, after make check
# has run these in the same CI job): skip, so that distcheck proves the
# tarball without running the sweeps twice.
case ${BUFPOOL_TEST_QUICK:-0} in
    '' | 0) ;;
    *)
        echo "$(basename "$0"): BUFPOOL_TEST_QUICK is set (make check runs this): skipped"
        exit 77
        ;;
esac

# rel_is_sanitized TREE KIND: whether TREE was configured with a
# --enable-sanitizers list naming KIND (address, thread).
rel_is_sanitized() { grep -q "^BUFPOOL_SAN_CFLAGS = .*-fsanitize=[a-z,]*$2" "$1/test/Makefile" 2>/dev/null; }

# A build configured with --enable-sanitizers=address: its programs need the
# ASan runtime first in the process, before anything LD_PRELOADed.
# LeakSanitizer would fail every job on Open MPI's own leaks at exit: these
# scripts leave leaks to sanitize.sh, which sorts them by owner.
rel_sanitized=0
rel_preload=$rel_fault_lib
rel_san_mca=
if rel_is_sanitized "$top_builddir" address; then
    rel_sanitized=1
    rel_cc=$(sed -n 's/^CC = //p' "$top_builddir/Makefile")
    rel_preload="$($rel_cc -print-file-name=libasan.so):$rel_fault_lib"
    rel_san_mca="-x ASAN_OPTIONS=detect_leaks=0"
fi

# rel_sanitized_tree NAME SANITIZERS KIND RUNTIME SYMBOL TREE PROGRAMS: sets
# rel_san_tree to a build tree configured with
# --enable-sanitizers=SANITIZERS (its flags name KIND): TREE when not
# empty, else this build when it is one, else, with
# RELIABILITY_SANITIZERS=1 or RELIABILITY_FULL=1, a build of its own in
# $top_builddir/test/reliability/NAME (gcc: its sanitizer runtimes are
# shared libraries, which components loaded by dlopen need; about a
# minute, building only the test programs that the make variable PROGRAMS
# of test/reliability/reliability.inc names); else the calling script is
# skipped (exit 77).  Also sets
# rel_san_cc (the tree's compiler) and rel_san_runtime (its shared
# RUNTIME, libasan.so or libtsan.so, to preload into the ranks), and fails
# unless both components carry the instrumentation (SYMBOL among their
# dynamic symbols).
rel_sanitized_tree() {
    rel_me=$(basename "$0" .sh)
    rel_san_tree=$6
    if [ -z "$rel_san_tree" ] && rel_is_sanitized "$top_builddir" "$3"; then
        rel_san_tree=$top_builddir
    fi
    if [ -z "$rel_san_tree" ]; then
        case "${RELIABILITY_SANITIZERS:-0}$rel_full" in
            00)
                echo "$rel_me: this build is not built with -fsanitize=$3; RELIABILITY_SANITIZERS=1 builds one: skipped"
                exit 77
                ;;
        esac
        rel_san_tree="$top_builddir/test/reliability/$1"
        mkdir -p "$rel_san_tree"
        echo "$rel_me: building a tree with -fsanitize=$2 in $rel_san_tree"
        if ! { [ -f "$rel_san_tree/Makefile" ] || (cd "$rel_san_tree" && "$top_srcdir/configure" CC=gcc \
            --enable-sanitizers="$2" --disable-fuzz >configure.out 2>&1); } ||
            ! (cd "$rel_san_tree" && make -j2 >make.out 2>&1 &&
                make -C test -j2 check TESTS= check_PROGRAMS="\$($7)" check_SCRIPTS= \
                    >check-build.out 2>&1); then
            echo "FAIL: $rel_me: building $rel_san_tree failed (see its configure.out, make.out, check-build.out)"
            exit 1
        fi
    fi
    if ! rel_is_sanitized "$rel_san_tree" "$3"; then
        echo "FAIL: $rel_me: $rel_san_tree is not configured with --enable-sanitizers=$3,..."
        exit 1
    fi
    rel_san_cc=$(sed -n 's/^CC = //p' "$rel_san_tree/Makefile")
    rel_san_runtime=$($rel_san_cc -print-file-name="$4" 2>/dev/null)
    if [ ! -f "$rel_san_runtime" ]; then
        echo "FAIL: $rel_me: $rel_san_cc has no shared $4; build the tree with gcc"
        exit 1
    fi
    for rel_so in "$rel_san_tree"/components/*.so; do
        if ! nm -D "$rel_so" | grep -q "$5"; then
            echo "FAIL: $rel_me: $rel_so is not instrumented for -fsanitize=$3"
            exit 1
        fi
    done
}

# Both components must be built: every script here tests them.
rel_require_components() {
    for so in opal-mca-mpool-regpar/.libs/mca_mpool_regpar.so \
        ompi-mca-coll-bufpool/.libs/mca_coll_bufpool.so; do
        if [ ! -f "$top_builddir/$so" ]; then
            echo "$0: $top_builddir/$so is missing: run make first" >&2
            exit 99
        fi
    done
}

# rel_outcome RC LOGFILE: what a job's exit status and output say happened.
#   correct     exit 0 and collcheck's PASS line
#   hang        killed by the timeout
#   crash       a signal, a sanitizer report or an abort without a message
#   corruption  a result or an invariant check failed (a collcheck FAIL
#               line that is not about an error code)
#   test_oom    the test program's own malloc failed (collcheck says so and
#               aborts): the limit left nothing to check with
#   mpi_error   an MPI call returned an error code, which the program
#               printed (then it aborted, or went on when the call was
#               local, like MPI_Alloc_mem), and no result was wrong; or
#               coll/bufpool stopped the job with its message that one
#               rank ran out of memory making a communicator's module
#               (the help topic comm-out-of-memory: the others would wait)
#   other       anything else (counted as a failure)
rel_outcome() {
    if grep -q 'run-mpi-test: TIMEOUT' "$2"; then
        echo hang
    elif grep -E -q 'Segmentation fault|signal [0-9]+ \(|exited on signal|Signal: |core dumped|AddressSanitizer|runtime error:|LeakSanitizer|ThreadSanitizer' "$2"; then
        echo crash
    elif grep -E '^FAIL \[' "$2" | grep -v -q 'returned error'; then
        echo corruption
    elif grep -E -q 'collcheck: rank [0-9]+: out of memory' "$2"; then
        echo test_oom
    elif grep -E -q 'returned error [0-9]+: |coll_bufpool: out of memory on host .* while making' "$2"; then
        echo mpi_error
    elif [ "$1" -eq 0 ] && grep -q 'rel_job: PASS' "$2"; then
        echo correct
    else
        echo other
    fi
}

# rel_mpi NP LOGFILE [ARGS...]: runs rel_job with REL_MCA as extra mpirun
# arguments; returns its exit status.
rel_mpi() {
    rel_np=$1
    rel_log=$2
    shift 2
    BUFPOOL_TEST_MCA="${REL_MCA:-} $rel_san_mca" sh "$rel_run" "$rel_np" "$rel_job" "$@" >"$rel_log" 2>&1 </dev/null
}

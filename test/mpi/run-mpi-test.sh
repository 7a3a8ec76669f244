#!/bin/sh
# Runs one MPI program the way every MPI test of ompi-bufpool needs it:
#
#   run-mpi-test.sh NP PROGRAM [ARGS...]
#
# Environment (test/Makefile.am exports the first four):
#   MPIRUN                     mpirun to use (default: mpirun on PATH)
#   top_builddir               our components are loaded from its .libs
#                              directories when they have been built
#   OMPI_SYSTEM_COMPONENT_DIR  Open MPI's own component directory
#   BUFPOOL_TEST_MCA           extra mpirun arguments, word-split, e.g.
#                              "--mca coll_bufpool_segment_size 131072"
#   BUFPOOL_TEST_ARGS          extra program arguments, e.g. --expect-bufpool
#   BUFPOOL_TEST_TIMEOUT       seconds before a hung job is killed and the
#                              test fails (default 900, 7200 with
#                              BUFPOOL_TEST_FULL=1)
#   OMPI_MCA_coll_bufpool_node_warmup_calls  default 0 here (see below)
# An OMPI_MCA_mca_base_component_path already in the environment is kept.
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 NP PROGRAM [ARGS...]" >&2
    exit 2
fi
np=$1
program=$2
shift 2
case $np in
    '' | *[!0-9]*)
        echo "$0: NP must be a positive number of processes, not '$np'" >&2
        exit 2
        ;;
esac
if [ ! -x "$program" ]; then
    echo "$0: $program is not an executable: build it first (make check builds it)" >&2
    exit 2
fi

# Tests run as root in containers and CI.
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM

# Open MPI's components first, then ours where they have been built: a
# missing component is simply not added, so the suite also runs (against
# tuned/basic) before the components exist.  Ours are linked into a
# directory of their own because Open MPI tries to open every mca_* file of
# a directory on the path, and .libs also holds the libtool objects
# (mca_coll_bufpool_la-*.o), each of which would print a load error.  The
# directory is the build tree's, kept from run to run (make clean removes
# it), so that a run killed by a signal leaves nothing in $TMPDIR; a link
# is replaced by a rename, which runs started at once never see half done.
link_dir=
if [ -z "${OMPI_MCA_mca_base_component_path:-}" ] && [ -n "${OMPI_SYSTEM_COMPONENT_DIR:-}" ]; then
    component_path=$OMPI_SYSTEM_COMPONENT_DIR
    build=$(cd "${top_builddir:-.}" && pwd) || exit 1
    link_dir=$build/test/mca-components
    # Made only where a component is built (run by hand without
    # top_builddir, the current directory may be no build tree).
    for so in "$build"/opal-mca-mpool-regpar/.libs/mca_*.so \
        "$build"/ompi-mca-coll-bufpool/.libs/mca_*.so; do
        name=${so##*/}
        if [ -f "$so" ] && [ "$(readlink "$link_dir/$name")" != "$so" ]; then
            mkdir -p "$link_dir" && ln -sfn "$so" "$link_dir/.$name.$$" &&
                mv -fT "$link_dir/.$name.$$" "$link_dir/$name" || exit 1
        fi
    done
    # Links to components removed since (a component not built now).
    for link in "$link_dir"/mca_*.so; do
        if [ -L "$link" ] && [ ! -e "$link" ]; then
            rm -f "$link"
        fi
    done
    if [ -d "$link_dir" ]; then
        component_path=$component_path:$link_dir
    fi
    OMPI_MCA_mca_base_component_path=$component_path
    export OMPI_MCA_mca_base_component_path
fi

# More processes than cores: ranks waiting in a collective must yield the
# CPU to the ones they wait for, or oversubscribed runs crawl.  So also
# under a parallel make (its jobserver in MAKEFLAGS: make check -j2 runs
# two tests' jobs at once): the cores are shared with another job's ranks
# whatever this job's size (a 2-rank job beside another on 2 cores: 9.1
# and 11.5 s with yield, 14.6 and 14.5 s without).  Only Open MPI's
# progress loop reads it; bufpool runs the same code either way.
cores=$(nproc 2>/dev/null || echo 1)
yield=
case " ${MAKEFLAGS:-} " in
    *" --jobserver-auth="* | *" --jobserver-fds="*) shared_cores=1 ;;
    *) shared_cores=0 ;;
esac
if [ "$np" -gt "$cores" ] || [ $shared_cores = 1 ]; then
    yield="--mca mpi_yield_when_idle 1"
fi

full=0
case ${BUFPOOL_TEST_FULL:-0} in
    '' | 0) ;;
    *) full=1 ;;
esac
if [ $full = 1 ]; then
    timeout_s=${BUFPOOL_TEST_TIMEOUT:-7200}
else
    timeout_s=${BUFPOOL_TEST_TIMEOUT:-900}
fi

# The node algorithms' warm-up (coll_bufpool_node_warmup_calls) gives a
# communicator's first calls to the previous module; the tests check what
# serves from the first call, so it is off here unless the environment
# sets it (even empty: bad_mca_sweep.sh tries that) or a test's own --mca
# (which comes first) says otherwise: coll_barrier.sh tests the warm-up.
OMPI_MCA_coll_bufpool_node_warmup_calls=${OMPI_MCA_coll_bufpool_node_warmup_calls-0}
export OMPI_MCA_coll_bufpool_node_warmup_calls

# Open MPI 6.0.x's btl/sm loses a message now and then when two threads
# send to one peer at once: its fast-box send reserves its slot under the
# endpoint's lock but numbers the message after the copy, outside it, so
# a later slot can take the earlier number and the receiver, which reads
# the slots in order of their numbers, stops at the other one for good
# (5.0.10 holds the lock throughout).  Programs that run collectives from
# several threads at once hung there one run in 2 to 100, with
# ompi-bufpool or without it; never with the fast boxes off
# (docs/reliability.md, "Concurrency").  They run there without them.
no_fbox=
case $program in
    */test_coll_threads | */test_coll_nb_hazards | */rel_job)
        case $("${OMPI_INFO:-ompi_info}" --version 2>/dev/null | head -n 1) in
            *"Open MPI v6.0"*) no_fbox="--mca btl_sm_fbox_max 0" ;;
        esac
        ;;
esac

# --mca op ^avx: Debian's op/avx saturates 8-bit MPI_SUM at counts >= 16
# (upstream open-mpi/ompi#8045).  That is not our bug; the 8-bit sums are
# still checked exactly, against Open MPI's generic op functions.
# shellcheck disable=SC2086 # word splitting of the extra arguments is wanted
set -- ${MPIRUN:-mpirun} --oversubscribe --bind-to none -np "$np" \
    --mca op ^avx $yield $no_fbox ${BUFPOOL_TEST_MCA:-} \
    "$program" "$@" ${BUFPOOL_TEST_ARGS:-}
echo "run-mpi-test: $*"
echo "run-mpi-test: component path ${OMPI_MCA_mca_base_component_path:-(Open MPI default)}"
if [ -d "$link_dir" ]; then
    echo "run-mpi-test: our components: $(cd "$link_dir" && ls -l mca_*.so 2>/dev/null |
        sed 's/.* -> //' | tr '\n' ' ')"
fi

# Open MPI 6.0 on 5.0.10's PMIx now and then fails to start its PMIx
# server's listener thread, before any rank runs (seen twice in some forty
# CI runs, 2026-11-27): the launcher's failure, not the test's, so that
# one is run once more.  stderr is kept in a variable to be looked at (no
# file: a run killed by a signal leaves nothing behind), the exit status
# on its last line, and is printed when the run ends.
attempt=1
while :; do
    start=$(date +%s)
    # timeout signals its whole process group, mpirun and the ranks with it.
    # fd 3 is this script's stdout, where the program's stdout goes.
    # SIGPIPE is ignored for mpirun (the ranks get it back: 4.1.4's odls
    # resets it in each child): 4.1.4's mpirun removes its own SIGPIPE
    # handler at the start of its finalize, before its PMIx server and I/O
    # forwarding shut down, and libevent then puts back the disposition
    # mpirun started with.  One passing 17-process job ended by SIGPIPE
    # there (docs/reliability.md); ignored on entry, a late write to a
    # rank's closed socket fails with EPIPE instead.
    { err=$({
        trap '' PIPE
        timeout --kill-after=20 "$timeout_s" "$@" 2>&1 1>&3 3>&-
        echo "run-mpi-test-rc=$?"
    }); } 3>&1
    rc=${err##*run-mpi-test-rc=}
    err=${err%run-mpi-test-rc=*}
    elapsed=$(($(date +%s) - start))
    printf '%s' "$err" >&2
    if [ $attempt = 1 ] && [ $rc -ne 0 ]; then
        case $err in
            *"PMIx server's listener thread failed to start"*)
                echo "run-mpi-test: the launcher failed before any rank ran (PMIx listener thread): once more" >&2
                attempt=2
                continue
                ;;
        esac
    fi
    break
done
if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ "$elapsed" -ge "$timeout_s" ]; }; then
    echo "run-mpi-test: TIMEOUT: killed after ${timeout_s}s: $program hung at $np processes" >&2
    exit 1
fi
echo "run-mpi-test: exit status $rc after ${elapsed}s ($np processes)"
exit $rc

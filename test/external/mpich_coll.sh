#!/bin/sh
# MPICH's collective test suite (test/mpi/coll and threads/coll of an
# MPICH source tree, which this project does not ship) built against the
# Open MPI this build serves, and run under bufpool's configurations beside
# Open MPI alone: an
# independent check, each test verifying its own results, written by
# another MPI's authors (collectives of many datatypes, dtpools' derived
# layouts, in place, zero counts, user operations, nonblocking and
# persistent forms, 1 to 32 processes; threads running collectives at
# once).  A failure counts against bufpool
# only when stock Open MPI (--mca coll ^bufpool) passes the same test, in
# its first run and in three reruns.
#
#   mpich_coll.sh --mpich DIR [options]
#
# DIR is an MPICH source tree (git clone https://github.com/pmodels/mpich)
# or an unpacked release; its test/mpi (and confdb) is copied into the
# output folder and built there, never in DIR.  Needs autoconf, automake,
# libtool and python3 for a git tree (a release has its configure).
# Options:
#   --build-dir DIR   this project's build tree (default: ./_build of the
#                     source tree, or the current directory)
#   --configs "LIST"  bufpool configurations (test/mpi/configs.sh; default
#                     "default forced node"); stock always runs first
#   --max-np N        skip tests of more than N processes (default 32)
#   --dirs "LIST"     folders of MPICH's test/mpi whose testlist runs
#                     (default "coll threads/coll"; threads/comm, whose
#                     MPI_Comm_idup tests hang on Open MPI 4.1.4 alone, and
#                     comm are others that call collectives)
#   --filter REGEX    only the tests whose line in a testlist matches
#                     (grep -E)
#   --max-mem GB      skip tests that MPICH marks as needing more memory
#                     (default 4: gather_big asks for 20)
#   --timeout S       seconds before a test is killed (default 300)
#   --out DIR         default $top_builddir/test/external/mpich_coll.d
# Environment: MPIRUN, OMPI_SYSTEM_COMPONENT_DIR as for make check (read
# from the build tree when unset); BUFPOOL_TEST_MCA, mpirun arguments added
# to every run, stock's too (for a sanitized build, --build-dir of one
# configured with --enable-sanitizers=address,undefined and
# BUFPOOL_TEST_MCA="-x LD_PRELOAD=$(gcc -print-file-name=libasan.so)
# -x ASAN_OPTIONS=detect_leaks=0"; docs/reliability.md).  Every job runs
# through test/mpi/run-mpi-test.sh (--mca op ^avx, the node algorithms'
# warm-up off).
#
# Exit status: 0 when no failure counts against bufpool, 1 otherwise, 2 when
# the suite could not be built.  Results: OUT/CONFIG.txt (a line per test:
# PASS or FAIL, seconds, the test), OUT/logs/, OUT/summary.txt.
set -u

extra_mca=${BUFPOOL_TEST_MCA:-}
mpich=
build=
configs="default forced node"
dirs="coll threads/coll"
max_np=32
filter=
max_mem=4
timeout_s=300
out=
usage() {
    sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
        --mpich) mpich=${2:?}; shift ;;
        --build-dir) build=${2:?}; shift ;;
        --configs) configs=${2:?}; shift ;;
        --dirs) dirs=${2:?}; shift ;;
        --max-np) max_np=${2:?}; shift ;;
        --filter) filter=${2:?}; shift ;;
        --max-mem) max_mem=${2:?}; shift ;;
        --timeout) timeout_s=${2:?}; shift ;;
        --out) out=${2:?}; shift ;;
        -h | --help) usage ;;
        *) echo "mpich_coll.sh: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
if [ -z "$mpich" ] || [ ! -d "$mpich/test/mpi/coll" ]; then
    echo "mpich_coll.sh: --mpich must name an MPICH source tree (with test/mpi/coll), not '$mpich'" >&2
    usage
fi
mpich=$(cd "$mpich" && pwd)

if [ -z "${top_srcdir:-}" ]; then
    top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
fi
. "$top_srcdir/test/mpi/configs.sh"
bufpool_find_build "$build" || exit 2
for cfg in $configs; do bufpool_config_mca "$cfg" >/dev/null || exit 2; done
node_bcast=$(bufpool_node_bcast)
out=${out:-$top_builddir/test/external/mpich_coll.d}
mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)
runner=$top_srcdir/test/mpi/run-mpi-test.sh
say() { echo "mpich_coll.sh: $*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"

# The Open MPI that MPIRUN starts: its mpicc builds the suite.
mpirun_path=$(command -v "${MPIRUN:-mpirun}") || {
    echo "mpich_coll.sh: no mpirun '${MPIRUN:-mpirun}'" >&2
    exit 2
}
prefix=$(dirname "$(dirname "$mpirun_path")")
if [ ! -x "$prefix/bin/mpicc" ]; then
    echo "mpich_coll.sh: no mpicc next to $mpirun_path (in $prefix/bin)" >&2
    exit 2
fi

# Build (once per Open MPI and folders: the stamp names them).
src=$out/src
tests=$src/test/mpi
stamp="$prefix $dirs"
if [ "$(cat "$out/built-for" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$src" "$out/built-for"
    mkdir -p "$src/test" || exit 2
    cp -R "$mpich/test/mpi" "$src/test/mpi" || exit 2
    # What its autogen.sh takes from the tree above it.
    [ ! -d "$mpich/confdb" ] || cp -R "$mpich/confdb" "$src/confdb" || exit 2
    if [ -f "$mpich/maint/version.m4" ]; then
        mkdir -p "$src/maint" && cp "$mpich/maint/version.m4" "$src/maint/" || exit 2
    fi
    (
        cd "$src/test/mpi" || exit 1
        if [ ! -x configure ]; then
            MPICH_CONFDB=$src/confdb ./autogen.sh >"$out/autogen.log" 2>&1 || {
                echo "mpich_coll.sh: autogen.sh failed: $out/autogen.log" >&2
                exit 1
            }
        fi
        # Strict MPI (no MPIX_ of MPICH), C only.
        ./configure --with-mpi="$prefix" --disable-maintainer-mode --enable-strictmpi --enable-fortran=none \
            --disable-cxx --enable-threads=multiple >"$out/configure.log" 2>&1 || {
            echo "mpich_coll.sh: configure failed: $out/configure.log" >&2
            exit 1
        }
        flags="-O2 -include $top_srcdir/test/external/mpich_ompi_compat.h"
        make -C util CFLAGS="$flags" >"$out/make.log" 2>&1 &&
            make -C dtpools CFLAGS="$flags" >>"$out/make.log" 2>&1 || {
            echo "mpich_coll.sh: building MPICH's test utilities failed: $out/make.log" >&2
            exit 1
        }
        # -k: a test that does not build (MPI 4's large counts) is skipped.
        for dir in $dirs; do
            make -k -C "$dir" CFLAGS="$flags" >>"$out/make.log" 2>&1
        done
        exit 0
    ) || exit 2
    echo "$stamp" >"$out/built-for"
fi

# The tests: each folder's testlist without MPICH's own settings (env=:
# its algorithm variables; timeLimit=, mem=), each one once, named by
# their folder.
list=$out/tests.txt
: >"$list"
for dir in $dirs; do
    if [ ! -f "$tests/$dir/testlist" ]; then
        echo "mpich_coll.sh: no $dir/testlist in MPICH's test/mpi (--dirs)" >&2
        exit 2
    fi
    grep -v '^ *#' "$tests/$dir/testlist" | grep -v '^ *$' | grep -E -- "${filter:-.}" |
        awk -v dir="$dir" -v max_np="$max_np" -v max_mem="$max_mem" '{
        line = dir "/" $1 " " $2
        for (i = 3; i <= NF; i++) {
            if ($i ~ /^mem=/) { split($i, m, "="); if (m[2] + 0 > max_mem + 0) next }
            else if ($i ~ /^arg=/) line = line " " substr($i, 5)
        }
        if ($2 + 0 <= max_np + 0 && !seen[line]++) print line
    }' >>"$list"
done
total=$(wc -l <"$list")
if [ "$total" -eq 0 ]; then
    echo "mpich_coll.sh: no test left in the testlists of $dirs" >&2
    exit 2
fi

# run CONFIG INDEX NP PROGRAM ARGS...: ok 1 when the test said "No Errors"
# and exited 0; log in OUT/logs.
run() {
    r_cfg=$1 r_i=$2 r_np=$3 r_prog=$4
    shift 4
    r_log=$out/logs/$r_cfg-$r_i-$(basename "$r_prog").log
    (cd "$tests/$(dirname "$r_prog")" &&
        BUFPOOL_TEST_MCA="$extra_mca $(bufpool_config_mca "$r_cfg" "$node_bcast")" \
            BUFPOOL_TEST_TIMEOUT=$timeout_s sh "$runner" "$r_np" "./$(basename "$r_prog")" "$@") \
        </dev/null >"$r_log" 2>&1
    r_rc=$?
    ok=0
    if [ $r_rc -eq 0 ] && grep -q "No Errors" "$r_log"; then
        ok=1
    fi
}

# run_all CONFIG: every test of the list, results in OUT/CONFIG.txt.
run_all() {
    : >"$out/$1.txt"
    i=0
    while read -r name np args; do
        i=$((i + 1))
        if [ ! -x "$tests/$name" ]; then
            echo "SKIP 0 $i $name $np $args" >>"$out/$1.txt"
            continue
        fi
        t0=$(date +%s)
        # shellcheck disable=SC2086 # the test's arguments are several words
        run "$1" "$i" "$np" "$name" $args
        result=FAIL
        [ $ok = 0 ] || result=PASS
        echo "$result $(($(date +%s) - t0)) $i $name $np $args" >>"$out/$1.txt"
    done <"$list"
}

version=$(git -C "$mpich" describe --always 2>/dev/null) || version=$(basename "$mpich")
say "MPICH $version, Open MPI in $prefix, $total tests of at most $max_np processes; configurations: stock $configs"
run_all stock
skipped=$(grep -c '^SKIP' "$out/stock.txt")
stock_fail=$(grep -c '^FAIL' "$out/stock.txt")
say "stock: $(grep -c '^PASS' "$out/stock.txt") passed, $stock_fail failed, $skipped not built ($(grep '^SKIP' "$out/stock.txt" | awk '{print $4}' | sort -u | tr '\n' ' ' | sed 's/ $//'))"

against=0
for cfg in $configs; do
    run_all "$cfg"
    passed=$(grep -c '^PASS' "$out/$cfg.txt")
    shared=0 own=0
    # Each failure: does stock fail it too (its first run, or one of three
    # more)?  Else it is bufpool's: run once more under CONFIG to say
    # whether it comes back.
    grep '^FAIL' "$out/$cfg.txt" >"$out/$cfg.failed"
    while read -r _ _ i name np args; do
        verdict=
        if grep -q "^FAIL [0-9]* $i " "$out/stock.txt"; then
            verdict="STOCK (stock fails it too)"
        else
            for k in 1 2 3; do
                # shellcheck disable=SC2086
                run stock "$i.re$k" "$np" "$name" $args
                if [ $ok = 0 ]; then
                    verdict="STOCK (stock failed rerun $k)"
                    break
                fi
            done
        fi
        if [ -n "$verdict" ]; then
            shared=$((shared + 1))
        else
            own=$((own + 1))
            # shellcheck disable=SC2086
            run "$cfg" "$i.again" "$np" "$name" $args
            verdict="BUFPOOL ($([ $ok = 0 ] && echo "again on rerun" || echo "passed its rerun: intermittent"))"
        fi
        say "  $cfg: $name $np $args: $verdict; log $out/logs/$cfg-$i-$(basename "$name").log"
    done <"$out/$cfg.failed"
    rm -f "$out/$cfg.failed"
    say "$cfg: $passed passed; failures against bufpool $own, shared with stock $shared"
    against=$((against + own))
done
if [ $against -gt 0 ]; then
    say "FAILED: $against failure(s) against bufpool"
    exit 1
fi
say "passed: no failure against bufpool"
exit 0

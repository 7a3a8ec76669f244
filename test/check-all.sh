#!/bin/sh
# The whole test suite, from a clean checkout (the README's test command and
# what CI runs):
#   1. installs the dependencies (Debian 12, as root; skip with
#      BUFPOOL_SKIP_DEPS=1),
#   2. builds with -Wall -Wextra -Werror and runs `make check` (unit tests of
#      the pool and the registration engine, MPI tests at 1-8 processes,
#      bufpool-tune's quick form on 2 ranks and on 2 emulated hosts: its
#      rules file loaded by the component, test/tune/),
#   3. runs the README's first command in its quick form on that build tree
#      (bench/run-side-by-side.sh --quick: every collective at 2 and 4
#      processes, bufpool against default, adapt and basic, sizes to 4 MiB)
#      and fails unless it wrote its CSVs, Markdown and plots with every
#      point's data check ok; then checks that a peer crashing, hanging or
#      computing wrongly (coll_latency --inject) is reported point by point
#      without stopping the others, and that a wrong bufpool point fails,
#   4. rebuilds everything with AddressSanitizer and UndefinedBehaviorSanitizer
#      and runs the unit tests and 4-process collective jobs again; then
#      with ThreadSanitizer, and runs the jobs that call MPI from several
#      threads at once (test/reliability/tsan_mpi.sh),
#   5. checks that every source file follows .clang-format,
#   6. builds the Debian package, installs it, proves a job used bufpool with no
#      setting and purges it (scripts/deb-check.sh; seconds installed),
#   7. Open MPI 5.0.10: builds it from ../shared/vendor once into
#      ${BUFPOOL_OMPI5_PREFIX:-/opt/ompi5} (reused while its stamp matches),
#      builds the project against it with -Werror and runs the MPI suite's
#      quick form, every algorithm with --expect-bufpool, and the registrar
#      tests (btl/ofi, pml/ucx, mtl/ofi: 5.0.10 is built with UCX and OFI),
#      the resource limits (5000 communicators made and freed) and valgrind
#      in full, then the differential fuzzer's CI form (coll_fuzz.sh, about
#      45 s), and across 2 emulated hosts, where han is below bufpool, the
#      guards and hier_node (test/multihost/suite.sh --guards, seconds),
#   8. Open MPI 6.0.x: builds it once into ${BUFPOOL_OMPI6_PREFIX:-/opt/ompi6}
#      (reused likewise; it runs on 5.0.10's PMIx and PRRTE, the 6.0.x
#      tarball has no PRRTE), builds the project against it with -Werror and
#      runs the same tests as on 5.0 (none may be skipped); on each of them
#      the ThreadSanitizer jobs of step 4 again,
#   9. runs `make distcheck` (the release tarball builds, installs and runs
#      its unit tests and one MPI job of each kind) and checks that the
#      tarball holds every file git tracks but debian/ and .gitignore.
# Steps 7 and 8 need the Open MPI source tarballs in ${BUFPOOL_VENDOR_DIR:-
# ../shared/vendor beside the repository} (as scripts/build-ompi.sh finds
# them).  Where a tarball is missing (any machine but this project's), its
# step is skipped with a line saying why; set BUFPOOL_VENDOR_DIR to the
# folder holding openmpi-5.0.10-src.tar.xz and openmpi-6.0.x-src.tar.xz to
# run them.  Under CI (CI=true, which .ci/run sets) a missing tarball fails.
# Build trees go under ${BUFPOOL_BUILD_ROOT:-_build}.  Exits non-zero at the
# first failing step and says which; prints each step's time and, at the
# end, the steps skipped for a missing tarball.  Skip steps with
# BUFPOOL_SKIP_DEB=1, BUFPOOL_SKIP_OMPI5=1, BUFPOOL_SKIP_OMPI6=1.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
root=${BUFPOOL_BUILD_ROOT:-$top/_build}
jobs=${BUFPOOL_JOBS:-$(nproc 2>/dev/null || echo 2)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

t0=$(date +%s)
tstep=$t0
step() {
  now=$(date +%s)
  printf '\n=== check-all: %s (previous step %d s, total %d s) ===\n' "$*" \
    $((now - tstep)) $((now - t0))
  tstep=$now
}
# The machine, for a failure seen only on another one (CI's): cores,
# memory, /dev/shm (the node segments' room), whether ranks may read one
# another (Yama's ptrace scope, the capabilities: CMA and /proc/PID/fd).
machine() {
  printf 'check-all: machine: %s cores, %s MiB of memory, /dev/shm %s, yama ptrace_scope %s, %s, kernel %s\n' \
    "$(nproc 2>/dev/null)" "$(awk '/^MemTotal/ { print int($2 / 1024) }' /proc/meminfo 2>/dev/null)" \
    "$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { printf "%d MiB, %d MiB free", $2 / 1024, $4 / 1024 }')" \
    "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)" \
    "$(grep '^CapEff' /proc/self/status 2>/dev/null | tr -s '\t' ' ')" "$(uname -r)"
}
fail() { machine >&2; printf '\n*** check-all: FAILED at step: %s ***\n' "$1" >&2; exit 1; }
machine
# The logs of the tests (up to 5) under the folder DIR whose result, in
# files newer than the file NEWER found by find's further arguments, is one
# of RESULTS (FAIL|ERROR): their last lines, then each failed MPI run of
# theirs (test/failed-runs.awk: a sweep's failing run may be anywhere in its
# log), last, where a CI log's tail shows it.
show_failed_logs() { # RESULTS DIR NEWER [FIND ARGS...]
  sfl_results=$1 sfl_dir=$2 sfl_newer=$3
  shift 3
  sfl_logs=$(find "$sfl_dir" "$@" -name '*.trs' -newer "$sfl_newer" \
    -exec grep -l -E "^:test-result: ($sfl_results)" {} + 2>/dev/null | head -n 5 |
    sed 's/\.trs$/.log/')
  [ -n "$sfl_logs" ] || return 0
  # shellcheck disable=SC2086 # one word per log (paths without spaces)
  tail -v -n 40 $sfl_logs
  # shellcheck disable=SC2086
  awk -f "$top/test/failed-runs.awk" $sfl_logs </dev/null
}

# The Open MPI 5.0/6.0 steps build from source tarballs that only this
# project's machines have.  ompi_tarball SERIES TARBALL: true when the
# tarball is there; else fails under CI, and elsewhere says the step is
# skipped and why, and is false.
vendor=${BUFPOOL_VENDOR_DIR:-$top/../shared/vendor}
skipped=""
ompi_tarball() {
  [ -r "$vendor/$2" ] && return 0
  if [ "${CI:-}" = true ]; then
    fail "Open MPI $1: $vendor/$2 not found (CI=true: CI must run this step; set BUFPOOL_VENDOR_DIR)"
  fi
  printf '\n=== check-all: Open MPI %s step SKIPPED: %s not found; set BUFPOOL_VENDOR_DIR to the folder holding %s to run it ===\n' \
    "$1" "$vendor/$2" "$2"
  skipped="$skipped; Open MPI $1 (no $2)"
  return 1
}

if [ "${BUFPOOL_SKIP_DEPS:-0}" != 1 ]; then
  step "dependencies"
  "$top/scripts/install-deps.sh" || fail "dependencies"
fi

step "autogen"
./autogen.sh >/dev/null || fail "autogen"

step "build with -Werror and make check"
mkdir -p "$root/main"
(cd "$root/main" && "$top/configure" --enable-werror >configure.out &&
   make -j"$jobs" >make.out && make -j"$jobs" check) ||
  { show_failed_logs 'FAIL|ERROR' "$root/main/test" "$root/main/config.status"
    fail "make check"; }

# The README's first command (scripts/install-deps.sh, step 1, then
# bench/run-side-by-side.sh) in its quick form: every collective at 2 and 4
# processes, bufpool against default, adapt and basic, sizes to 4 MiB (20-45 s
# on 2 cores).  A step here rather than in .ci/run after check-all: the
# README's test command then proves the first command as well, `step` prints
# its time and `fail` names it, and the runner reuses the -Werror tree just
# built instead of configuring a second one (so its own build is a no-op
# here; from a fresh clone it runs autogen, configure and make in ./build).
# It fails on the runner's exit status (a job that crashed, hung or failed
# its data check, or a build or report error) and on its outputs: the CSVs,
# the Markdown and one plot per collective must be there, every point in
# summary.csv but the memcpy floor's must have its data check ok, and
# bufpool (not skipped for want of components) and default must have points
# for every collective at both process counts.
step "README's first command, quick form (bench/run-side-by-side.sh --quick on $root/main)"
bench_out=$root/side-by-side
bench_colls="allreduce reduce bcast allgather reduce_scatter reduce_scatter_block alltoall gather scatter scan exscan"
rm -rf "$bench_out"
"$top/bench/run-side-by-side.sh" --quick --build-dir "$root/main" --out "$bench_out" --timeout 600 ||
  { cat "$bench_out/failures.txt" 2>/dev/null || true; fail "side-by-side quick run (see $bench_out/logs)"; }
for f in raw.csv summary.csv results.md $(printf '%s.png ' $bench_colls); do
  [ -s "$bench_out/$f" ] || fail "side-by-side quick run: $bench_out/$f is missing or empty"
done
awk -F, -v colls="$bench_colls" -v nps="2 4" -v cfgs="bufpool default" '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["config"] == "floor" { next }
  { seen[$col["np"] " " $col["collective"] " " $col["config"]]++ }
  $col["check"] != "ok" {
    printf "not checked ok: np=%s %s %s size %s: %s\n", $col["np"], $col["collective"],
      $col["config"], $col["size"], $col["check"]; bad = 1 }
  END {
    if (!col["check"]) { print "summary.csv has no check column"; exit 1 }
    split(nps, P, " "); split(colls, C, " "); split(cfgs, G, " ")
    for (i in P) for (j in C) for (k in G)
      if (!((P[i] " " C[j] " " G[k]) in seen)) {
        printf "no points for np=%s %s %s\n", P[i], C[j], G[k]; bad = 1 }
    exit bad
  }' "$bench_out/summary.csv" ||
  fail "side-by-side quick run: summary.csv lacks points or a data check failed"
if grep -n FAIL "$bench_out/results.md"; then
  fail "side-by-side quick run: results.md shows a failed data check"
fi
# A peer that crashes, hangs or computes wrongly is reported point by point
# and left out of the timings, and the other configurations go on (exit 0);
# a wrong bufpool point fails the run.  coll_latency --inject makes rank 1
# crash, hang or report a wrong element at the named point (about 20 s).
fault_out=$root/side-by-side-faults
rm -rf "$fault_out"
"$top/bench/run-side-by-side.sh" --quick --build-dir "$root/main" --no-build --out "$fault_out" \
  --np 2 --collectives "bcast allreduce" --max-size 4K --configs "bufpool default basic" \
  --point-timeout 5 --inject "crash:basic:bcast:64,hang:basic:bcast:1K,wrong:basic:allreduce:256" \
  >"$fault_out.log" 2>&1 || { tail -n 20 "$fault_out.log"; fail "side-by-side with failing peers: exit status not 0"; }
for want in "FAILED: np=2 basic bcast 64 B: crashed" "FAILED: np=2 basic bcast 1 KiB: hung" \
  "WRONG: np=2 basic allreduce 256 B"; do
  grep -q "^- $want" "$fault_out/results.md" ||
    fail "side-by-side with failing peers: results.md lacks \"$want\""
done
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["config"] == "basic" && (($col["collective"] == "bcast" && ($col["size"] == 64 || $col["size"] == 1024)) ||
    ($col["collective"] == "allreduce" && $col["size"] == 256)) && $col["avg_us"] != "" { bad = 1 }
  $col["config"] == "bufpool" && $col["collective"] == "bcast" { n++ }
  END { exit bad || n != 13 }' "$fault_out/summary.csv" ||
  fail "side-by-side with failing peers: a failed point kept its timing, or bufpool lost bcast points"
# The persistent form's memory over init/free cycles: bufpool's mapped size
# flat, libnbc's growing by at least its 512 KiB scratch per cycle (it keeps
# a freed persistent request's scratch; 4.1.4 through 6.0.x).
persist_out=$root/side-by-side-persist
rm -rf "$persist_out"
"$top/bench/run-side-by-side.sh" --quick --build-dir "$root/main" --no-build --out "$persist_out" \
  --np 2 --form persistent --collectives allreduce --max-size 64 --configs "bufpool default" \
  --persist-cycles 40 >"$persist_out.log" 2>&1 || { tail -n 20 "$persist_out.log"; fail "side-by-side --form persistent"; }
awk -F, '$4 == "VmSize (mapped)" && $2 == "bufpool" { b = $5 == 0 }
  $4 == "VmSize (mapped)" && $2 == "default" { d = $6 >= 524288 }
  END { exit !(b && d) }' "$persist_out/persist_mem.csv" ||
  fail "side-by-side --persist-cycles: bufpool's mapped size grew, or libnbc's growth was not reported"
"$top/bench/run-side-by-side.sh" --quick --build-dir "$root/main" --no-build --out "$fault_out-bufpool" \
  --np 2 --collectives allreduce --max-size 1K --configs "bufpool default" \
  --inject "wrong:bufpool:allreduce:256" >"$fault_out-bufpool.log" 2>&1 &&
  fail "side-by-side: a wrong bufpool point did not fail the run"

step "unit tests and a 4-process collective job under ASan and UBSan"
# gcc: its ASan runtime is a shared library, which components that Open MPI
# loads with dlopen need.  sanitize.sh sorts leak reports by owner (ours
# fail, Open MPI's are counted).  The sanitized trees build only the test
# programs their jobs run (reliability.inc's sanitize_programs and
# tsan_mpi_programs): the rest ran in step 2.
mkdir -p "$root/asan"
(cd "$root/asan" && "$top/configure" --enable-werror --enable-sanitizers=address,undefined \
    CC=gcc >configure.out && make -j"$jobs" >make.out &&
   make -C test -j"$jobs" check TESTS='$(UNIT_TESTS) reliability/sanitize.sh' \
     check_PROGRAMS='$(UNIT_TESTS) $(sanitize_programs)' check_SCRIPTS= \
     UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1) ||
  { tail -n 40 "$root/asan/test/reliability/sanitize.log" 2>/dev/null
    fail "sanitized tests"; }

# tsan_jobs TREE [CONFIGURE ARGS]: a ThreadSanitizer build in $root/TREE
# and the jobs that call MPI from several threads at once under it.  gcc,
# like the ASan tree; no -Werror: Open MPI's headers draw gcc's -Wtsan (its
# fences are not modelled).  tsan_mpi.sh fails on any report but the few
# in Open MPI's own inline code that test/reliability/tsan.supp names.
tsan_jobs() {
  tree=$1
  shift
  mkdir -p "$root/$tree"
  (cd "$root/$tree" && "$top/configure" --enable-sanitizers=thread --disable-fuzz CC=gcc "$@" \
      >configure.out && make -j"$jobs" >make.out &&
     make -C test -j"$jobs" check TESTS='reliability/tsan_mpi.sh' \
       check_PROGRAMS='$(tsan_mpi_programs)' check_SCRIPTS=) ||
    { tail -n 40 "$root/$tree/test/reliability/tsan_mpi.log" 2>/dev/null
      fail "ThreadSanitizer ($tree)"; }
}

step "MPI_THREAD_MULTIPLE jobs under ThreadSanitizer"
tsan_jobs tsan

step "formatting (.clang-format)"
if command -v clang-format >/dev/null 2>&1; then
  git ls-files '*.c' '*.h' | grep -v '^compat/' | xargs clang-format --dry-run --Werror ||
    fail "formatting: run 'make format' or clang-format -i on the files above"
fi

if [ "${BUFPOOL_SKIP_DEB:-0}" != 1 ]; then
  step "Debian package: build, install, prove bufpool with no setting, purge"
  "$top/scripts/deb-check.sh" "$root/main" || fail "Debian package"
fi

# The 5.0 and 6.0 steps run the MPI suite's quick mode, which skips the
# reliability tests, so two of them run there apart, in full: on 5.0 and 6.0
# a peer's host name is a PMIx lookup that allocates (a leak of 132 bytes
# per communicator before the host cache, which reslimits' 5000
# communicators and valgrind caught), about a minute each; beside them,
# in the same make -j, the differential fuzzer's CI form (not quick).
ompi_reliability='reliability/reslimits.sh reliability/valgrind.sh'

if [ "${BUFPOOL_SKIP_OMPI5:-0}" != 1 ] && ompi_tarball 5.0.10 openmpi-5.0.10-src.tar.xz; then
  ompi5=${BUFPOOL_OMPI5_PREFIX:-/opt/ompi5}
  step "Open MPI 5.0.10 in $ompi5 (built once, reused while its stamp matches)"
  "$top/scripts/build-ompi.sh" 5.0 "$ompi5" || fail "Open MPI 5.0.10 build"
  step "Open MPI 5.0.10: -Werror build, MPI tests (quick) proving bufpool served the calls"
  mkdir -p "$root/ompi5"
  # One line: a backslash inside quotes would reach make as a test named '\'.
  ompi5_tests='mpi/coll_selftest.sh mpi/coll_algorithms.sh mpi/coll_reduce_guard.sh mpi/coll_own_block.sh mpi/coll_consistency.sh mpi/coll_spawn.sh mpi/coll_nb_hazards.sh mpi/coll_node.sh mpi/coll_barrier.sh mpi/coll_sessions.sh mpi/mpool_alloc_mem.sh mpi/reg_transport.sh mpi/reg_registrars.sh'
  (cd "$root/ompi5" && "$top/configure" --enable-werror --with-ompi="$ompi5" >configure.out &&
     grep -A3 'Open MPI  ' configure.out && make -j"$jobs" >make.out &&
     BUFPOOL_TEST_QUICK=1 make -C test -j"$jobs" check \
       TESTS="$ompi5_tests" &&
     make -C test -j"$jobs" check TESTS="$ompi_reliability fuzz/coll_fuzz.sh" &&
     BUFPOOL_MH_MODE=guards make -C test check TESTS=multihost/suite.sh) ||
    { show_failed_logs 'FAIL|ERROR' "$root/ompi5/test" "$root/ompi5/config.status"
      fail "Open MPI 5.0.10 tests"; }
  step "Open MPI 5.0.10: MPI_THREAD_MULTIPLE jobs under ThreadSanitizer"
  tsan_jobs tsan5 --with-ompi="$ompi5"
fi

if [ "${BUFPOOL_SKIP_OMPI6:-0}" != 1 ] && ompi_tarball 6.0.x openmpi-6.0.x-src.tar.xz; then
  ompi6=${BUFPOOL_OMPI6_PREFIX:-/opt/ompi6}
  step "Open MPI 6.0.x in $ompi6 (built once on 5.0.10's PMIx and PRRTE, reused while its stamp matches)"
  BUFPOOL_OMPI5_PREFIX=${BUFPOOL_OMPI5_PREFIX:-/opt/ompi5} "$top/scripts/build-ompi.sh" 6.0 "$ompi6" ||
    fail "Open MPI 6.0.x build"
  step "Open MPI 6.0.x: -Werror build, MPI tests (quick) proving bufpool served the calls"
  mkdir -p "$root/ompi6"
  # The same tests as on 5.0, bufpool above and below acoll, xhc and adapt
  # (coll_order: 6.0's modules install and restore themselves), and the
  # messages (coll_rules, bad_params: 6.0 no longer reads help files); none
  # may be skipped (6.0 is built with UCX and libfabric, so the registrar
  # tests must run).
  ompi6_tests='mpi/coll_selftest.sh mpi/coll_algorithms.sh mpi/coll_reduce_guard.sh mpi/coll_own_block.sh mpi/coll_consistency.sh mpi/coll_spawn.sh mpi/coll_nb_hazards.sh mpi/coll_node.sh mpi/coll_barrier.sh mpi/coll_sessions.sh mpi/coll_order.sh mpi/coll_rules.sh mpi/mpool_alloc_mem.sh mpi/bad_params.sh mpi/reg_transport.sh mpi/reg_registrars.sh'
  # The result files of every test of the step, the fuzzer's and the
  # multi-host guards' included.
  ompi6_results="$(echo "$ompi6_tests $ompi_reliability" | sed 's/\.sh/.trs/g') fuzz/coll_fuzz.trs multihost/suite.trs"
  # shellcheck disable=SC2086 # one word per result file
  (cd "$root/ompi6" && "$top/configure" --enable-werror --with-ompi="$ompi6" >configure.out &&
     grep -A3 'Open MPI  ' configure.out && make -j"$jobs" >make.out &&
     make syntax-check >syntax.out &&
     BUFPOOL_TEST_QUICK=1 make -C test -j"$jobs" check TESTS="$ompi6_tests" &&
     make -C test -j"$jobs" check TESTS="$ompi_reliability fuzz/coll_fuzz.sh" &&
     BUFPOOL_MH_MODE=guards make -C test check TESTS=multihost/suite.sh &&
     if (cd test && grep -l ':test-result: SKIP' $ompi6_results); then
       echo "check-all: the tests above were skipped on Open MPI 6.0.x"; false
     fi) ||
    { tail -n 40 "$root/ompi6/configure.out" "$root/ompi6/make.out" "$root/ompi6/syntax.out" 2>/dev/null
      show_failed_logs 'FAIL|ERROR|SKIP' "$root/ompi6/test" "$root/ompi6/config.status"
      fail "Open MPI 6.0.x tests"; }
  step "Open MPI 6.0.x: MPI_THREAD_MULTIPLE jobs under ThreadSanitizer"
  tsan_jobs tsan6 --with-ompi="$ompi6"
fi

if [ "${BUFPOOL_SKIP_DISTCHECK:-0}" != 1 ]; then
  step "make distcheck, and the tarball holds every tracked file"
  # The tarball builds out of tree, installs, uninstalls and runs the unit
  # tests and a few MPI jobs (one of each kind: the collectives' self-test,
  # the rules file, ompi_info's parameters, bufpool-tune): every other test
  # ran above from this same tree, and what they need from the tarball the
  # listing check below proves is there.  On failure the distribution's
  # build stays (make distcheck removes it only on success): the failing
  # tests' own last lines come last, where a CI log's tail shows them.
  dist_tests='$(UNIT_TESTS) mpi/coll_selftest.sh mpi/coll_rules.sh mpi/ompi_info_params.sh tune/tune_quick.sh'
  (cd "$root/main" && BUFPOOL_TEST_QUICK=1 make -j"$jobs" distcheck TESTS="$dist_tests" >distcheck.out 2>&1) ||
    { tail -n 60 "$root/main/distcheck.out"
      show_failed_logs 'FAIL|ERROR' "$root/main" "$root/main/config.status" \
        -path '*/_build/sub/test/*'
      fail "make distcheck"; }
  # Every file git tracks is in the tarball but the packaging's own (debian/
  # builds the package from this tree, not from a release) and .gitignore
  # (outside a git checkout: not checked).
  if git rev-parse --git-dir >/dev/null 2>&1; then
    tarball=$(ls "$root"/main/ompi-bufpool-*.tar.gz | head -n 1)
    tar tzf "$tarball" | sed 's|^[^/]*/||' | sort >"$root/main/dist-files.txt"
    missing=$(git ls-files | grep -v -e '^debian/' -e '^\.gitignore$' | sort |
      comm -23 - "$root/main/dist-files.txt")
    [ -z "$missing" ] ||
      { printf '%s\n' "$missing"; fail "make distcheck: the files above are tracked but not in $tarball (EXTRA_DIST)"; }
  fi
fi

step "done"
printf '\n=== check-all: every step passed in %d s%s ===\n' $(($(date +%s) - t0)) \
  "${skipped:+ (skipped: ${skipped#; })}"

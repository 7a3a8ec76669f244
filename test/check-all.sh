#!/bin/sh
# The whole test suite, from a clean checkout (the README's test command and
# what CI runs):
#   1. installs the dependencies (Debian 12, as root; skip with
#      BUFPOOL_SKIP_DEPS=1),
#   2. builds with -Wall -Wextra -Werror and runs `make check` (unit tests of
#      the pool and the registration engine, MPI tests at 1-8 processes),
#   3. rebuilds everything with AddressSanitizer and UndefinedBehaviorSanitizer
#      and runs the unit tests and 4-process collective jobs again,
#   4. checks that every source file follows .clang-format,
#   5. builds the Debian package, installs it, proves a job used bufpool with no
#      setting and purges it (scripts/deb-check.sh; seconds installed),
#   6. Open MPI 5.0.10: builds it from ../shared/vendor once into
#      ${BUFPOOL_OMPI5_PREFIX:-/opt/ompi5} (reused while its stamp matches),
#      builds the project against it with -Werror and runs the MPI suite's
#      quick form, every algorithm with --expect-bufpool, and the registrar
#      tests (btl/ofi, pml/ucx, mtl/ofi: 5.0.10 is built with UCX and OFI),
#   7. Open MPI 6.0.x: builds it once into ${BUFPOOL_OMPI6_PREFIX:-/opt/ompi6}
#      (reused likewise; it runs on 5.0.10's PMIx and PRRTE, the 6.0.x
#      tarball has no PRRTE), builds the project against it with -Werror and
#      runs the same tests as on 5.0 (none may be skipped),
#   8. runs `make distcheck` (the release tarball builds and passes its own
#      quick tests).
# Build trees go under ${BUFPOOL_BUILD_ROOT:-_build}.  Exits non-zero at the
# first failing step and says which; prints each step's time.  Skip steps
# with BUFPOOL_SKIP_DEB=1, BUFPOOL_SKIP_OMPI5=1, BUFPOOL_SKIP_OMPI6=1.
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
fail() { printf '\n*** check-all: FAILED at step: %s ***\n' "$1" >&2; exit 1; }

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
  { find "$root/main/test" -name '*.log' -newer "$root/main/config.status" \
      -exec grep -l -E '^(FAIL|ERROR)' {} + 2>/dev/null | head -n 5 | xargs -r tail -n 40
    fail "make check"; }

step "unit tests and a 4-process collective job under ASan and UBSan"
# gcc: its ASan runtime is a shared library, which components that Open MPI
# loads with dlopen need.  sanitize.sh sorts leak reports by owner (ours
# fail, Open MPI's are counted).
mkdir -p "$root/asan"
(cd "$root/asan" && "$top/configure" --enable-werror --enable-sanitizers=address,undefined \
    CC=gcc >configure.out && make -j"$jobs" >make.out &&
   make -C test -j"$jobs" check TESTS='$(UNIT_TESTS) reliability/sanitize.sh' \
     UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1) ||
  { tail -n 40 "$root/asan/test/reliability/sanitize.log" 2>/dev/null
    fail "sanitized tests"; }

step "formatting (.clang-format)"
if command -v clang-format >/dev/null 2>&1; then
  git ls-files '*.c' '*.h' | grep -v '^compat/' | xargs clang-format --dry-run --Werror ||
    fail "formatting: run 'make format' or clang-format -i on the files above"
fi

if [ "${BUFPOOL_SKIP_DEB:-0}" != 1 ]; then
  step "Debian package: build, install, prove bufpool with no setting, purge"
  "$top/scripts/deb-check.sh" "$root/main" || fail "Debian package"
fi

if [ "${BUFPOOL_SKIP_OMPI5:-0}" != 1 ]; then
  ompi5=${BUFPOOL_OMPI5_PREFIX:-/opt/ompi5}
  step "Open MPI 5.0.10 in $ompi5 (built once, reused while its stamp matches)"
  "$top/scripts/build-ompi.sh" 5.0 "$ompi5" || fail "Open MPI 5.0.10 build"
  step "Open MPI 5.0.10: -Werror build, MPI tests (quick) proving bufpool served the calls"
  mkdir -p "$root/ompi5"
  # One line: a backslash inside quotes would reach make as a test named '\'.
  ompi5_tests='mpi/coll_selftest.sh mpi/coll_algorithms.sh mpi/mpool_alloc_mem.sh mpi/reg_transport.sh mpi/reg_registrars.sh'
  (cd "$root/ompi5" && "$top/configure" --enable-werror --with-ompi="$ompi5" >configure.out &&
     grep -A3 'Open MPI  ' configure.out && make -j"$jobs" >make.out &&
     BUFPOOL_TEST_QUICK=1 make -C test -j"$jobs" check \
       TESTS="$ompi5_tests") ||
    { find "$root/ompi5/test" -name '*.log' -newer "$root/ompi5/config.status" \
        -exec grep -l -E '^(FAIL|ERROR)' {} + 2>/dev/null | head -n 5 | xargs -r tail -n 40
      fail "Open MPI 5.0.10 tests"; }
fi

if [ "${BUFPOOL_SKIP_OMPI6:-0}" != 1 ]; then
  ompi6=${BUFPOOL_OMPI6_PREFIX:-/opt/ompi6}
  step "Open MPI 6.0.x in $ompi6 (built once on 5.0.10's PMIx and PRRTE, reused while its stamp matches)"
  BUFPOOL_OMPI5_PREFIX=${BUFPOOL_OMPI5_PREFIX:-/opt/ompi5} "$top/scripts/build-ompi.sh" 6.0 "$ompi6" ||
    fail "Open MPI 6.0.x build"
  step "Open MPI 6.0.x: -Werror build, MPI tests (quick) proving bufpool served the calls"
  mkdir -p "$root/ompi6"
  # The same tests as on 5.0, and bufpool above and below acoll, xhc and
  # adapt (coll_order: 6.0's modules install and restore themselves); none
  # may be skipped (6.0 is built with UCX and libfabric, so the registrar
  # tests must run).
  ompi6_tests='mpi/coll_selftest.sh mpi/coll_algorithms.sh mpi/coll_order.sh mpi/mpool_alloc_mem.sh mpi/reg_transport.sh mpi/reg_registrars.sh'
  ompi6_results=$(echo "$ompi6_tests" | sed 's/\.sh/.trs/g')
  # shellcheck disable=SC2086 # one word per result file
  (cd "$root/ompi6" && "$top/configure" --enable-werror --with-ompi="$ompi6" >configure.out &&
     grep -A3 'Open MPI  ' configure.out && make -j"$jobs" >make.out &&
     make syntax-check >syntax.out &&
     BUFPOOL_TEST_QUICK=1 make -C test -j"$jobs" check TESTS="$ompi6_tests" &&
     if (cd test && grep -l ':test-result: SKIP' $ompi6_results); then
       echo "check-all: the tests above were skipped on Open MPI 6.0.x"; false
     fi) ||
    { tail -n 40 "$root/ompi6/configure.out" "$root/ompi6/make.out" "$root/ompi6/syntax.out" 2>/dev/null
      find "$root/ompi6/test" -name '*.log' -newer "$root/ompi6/config.status" \
        -exec grep -l -E '^(FAIL|ERROR|SKIP)' {} + 2>/dev/null | head -n 5 | xargs -r tail -n 40
      fail "Open MPI 6.0.x tests"; }
fi

if [ "${BUFPOOL_SKIP_DISTCHECK:-0}" != 1 ]; then
  step "make distcheck"
  (cd "$root/main" && BUFPOOL_TEST_QUICK=1 make -j"$jobs" distcheck >distcheck.out 2>&1) ||
    { tail -n 60 "$root/main/distcheck.out"; fail "make distcheck"; }
fi

step "done"
printf '\n=== check-all: every step passed in %d s ===\n' $(($(date +%s) - t0))

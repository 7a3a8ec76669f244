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
#   5. runs `make distcheck` (the release tarball builds and passes its own
#      quick tests).
# Build trees go under ${BUFPOOL_BUILD_ROOT:-_build}.  Exits non-zero at the
# first failing step and says which.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
root=${BUFPOOL_BUILD_ROOT:-$top/_build}
jobs=${BUFPOOL_JOBS:-$(nproc 2>/dev/null || echo 2)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

step() { printf '\n=== check-all: %s ===\n' "$*"; }
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

if [ "${BUFPOOL_SKIP_DISTCHECK:-0}" != 1 ]; then
  step "make distcheck"
  (cd "$root/main" && BUFPOOL_TEST_QUICK=1 make -j"$jobs" distcheck >distcheck.out 2>&1) ||
    { tail -n 60 "$root/main/distcheck.out"; fail "make distcheck"; }
fi

printf '\n=== check-all: every step passed ===\n'

# BUFPOOL_CHECK_FUZZER: can we build libFuzzer targets?
#
# The fuzz targets (test/fuzz/) are built with clang and
# -fsanitize=fuzzer,address,undefined whatever compiler builds the rest, so
# this looks for a clang that links such a program (Debian: the clang and
# libclang-rt-N-dev packages).  --disable-fuzz skips them; --enable-fuzz
# makes their absence an error.  Sets FUZZ_CC, FUZZ_CFLAGS,
# bufpool_have_fuzzer (yes/no) and bufpool_have_fuzzer_msg; configure.ac
# turns bufpool_have_fuzzer into the BUFPOOL_FUZZ conditional.  The replay
# of the committed corpus does not need any of this.
AC_DEFUN([BUFPOOL_CHECK_FUZZER], [
  AC_ARG_ENABLE([fuzz],
    [AS_HELP_STRING([--enable-fuzz],
       [build and run the libFuzzer targets in make check (default: when clang
        supports -fsanitize=fuzzer)])],
    [], [enable_fuzz=check])
  AC_ARG_VAR([FUZZ_CC], [clang used for the libFuzzer targets])
  bufpool_have_fuzzer=no
  bufpool_have_fuzzer_msg="no (disabled)"
  FUZZ_CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
  AS_IF([test "x$enable_fuzz" != "xno"], [
    AS_IF([test -z "$FUZZ_CC"], [AC_PATH_PROGS([FUZZ_CC], [clang clang-16 clang-15 clang-14], [])])
    bufpool_have_fuzzer_msg="no (no clang)"
    AS_IF([test -n "$FUZZ_CC"], [
      AC_MSG_CHECKING([whether $FUZZ_CC links libFuzzer targets])
      cat >conftest_fuzz.c <<_BUFPOOL_EOF
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return size && data[[0]] == 1; }
_BUFPOOL_EOF
      AS_IF([$FUZZ_CC $FUZZ_CFLAGS conftest_fuzz.c -o conftest_fuzz >&AS_MESSAGE_LOG_FD 2>&1],
            [bufpool_have_fuzzer=yes; bufpool_have_fuzzer_msg="yes ($FUZZ_CC)"],
            [bufpool_have_fuzzer_msg="no ($FUZZ_CC cannot link -fsanitize=fuzzer: install libclang-rt-N-dev)"])
      rm -f conftest_fuzz.c conftest_fuzz
      AC_MSG_RESULT([$bufpool_have_fuzzer])
    ])
    AS_IF([test "x$enable_fuzz" = "xyes" && test "$bufpool_have_fuzzer" != "yes"],
          [AC_MSG_ERROR([--enable-fuzz: $bufpool_have_fuzzer_msg])])
  ])
  AC_SUBST([FUZZ_CFLAGS])
])

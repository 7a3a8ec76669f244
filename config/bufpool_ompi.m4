# BUFPOOL_FIND_OMPI
# -----------------
# Locate the Open MPI installation the components will be loaded into, find
# its series (4.1, 5.0 or 6.0: one build per series, libopen-pal's soname
# differs) and check that the internal (component-building) headers are
# complete.  Every series difference in the C code lives in
# compat/bufpool_ompi_compat.h.
#
# --with-ompi-source=DIR names a configured Open MPI source/build tree of the
# same version: it supplies the headers an installation lacks (all the
# internal ones when Open MPI was installed without --with-devel-headers;
# else the opal/mca/threads/pthreads headers that 5.0's and 6.0's installed
# opal_config.h includes), and, with no mpicc at all, allows a headers-only
# build (compile and link the components without libmpi; no tests).
#
# Open MPI 6.0 moved its internals from libmpi to libopen_mpi (libmpi keeps
# the MPI bindings): the components link against it too when it exists.
# Built with an external PMIx, the internal headers include <pmix.h> from
# that PMIx, which the wrapper compiler does not name: it is looked for
# beside the libpmix that libopen-pal loads.
#
# Sets and substitutes:
#   OMPI_CPPFLAGS   -isystem flags for mpi.h and the internal headers
#   OMPI_LDFLAGS    -L flags for libmpi and libopen-pal
#   OMPI_LIBS       -lmpi [-lopen_mpi] -lopen-pal (components link against
#                   these so that -Wl,--no-undefined catches a missing symbol
#                   at build time)
#   OMPI_PAL_LIBS   -lopen-pal only (the mpool component needs nothing more)
#   OMPI_MPI_LIBS   what an MPI program links, as mpicc links it: -lmpi, and
#                   on 6.0 -lopen_mpi too (mpi.h's predefined handles,
#                   ompi_mpi_int and the like, live there)
#   MPICC, MPIRUN, OMPI_INFO, OMPI_SYSTEM_COMPONENT_DIR, bufpool_ompi_series
AC_DEFUN([BUFPOOL_FIND_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR],
       [Open MPI installation prefix (default: found through mpicc --showme)])],
    [], [with_ompi=auto])
  AC_ARG_WITH([ompi-source],
    [AS_HELP_STRING([--with-ompi-source=DIR],
       [configured Open MPI source tree of the same version, for the internal
        headers an installation lacks (all of them without
        --with-devel-headers, else opal/mca/threads/pthreads); without an
        mpicc, a headers-only build of the components against it])],
    [], [with_ompi_source=no])
  AS_IF([test "x$with_ompi_source" != "xno" && test ! -f "$with_ompi_source/opal/include/opal_config.h"],
        [AC_MSG_ERROR([--with-ompi-source=$with_ompi_source: no opal/include/opal_config.h there.
                  Pass the top of an Open MPI source tree on which ./configure has run
                  (scripts/build-ompi.sh 6.0 makes one).])])

  bufpool_ompi_headers_only=no
  AS_IF([test "x$with_ompi" != "xauto" && test "x$with_ompi" != "xyes"],
        [AC_PATH_PROG([MPICC], [mpicc], [], [$with_ompi/bin$PATH_SEPARATOR$PATH])],
        [AS_IF([test "x$with_ompi_source" = "xno"], [AC_PATH_PROG([MPICC], [mpicc], [])])])
  AS_IF([test -z "$MPICC" && test "x$with_ompi_source" != "xno"],
        [bufpool_ompi_headers_only=yes
         AC_MSG_NOTICE([no mpicc: headers-only build against $with_ompi_source (components compile and link, no tests)])],
        [test -z "$MPICC"],
        [AC_MSG_ERROR([mpicc not found.  Install Open MPI 4.1, 5.0 or 6.0 with its development files
                  (Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin; from source:
                  configure Open MPI with --with-devel-headers) or pass --with-ompi=DIR
                  pointing at the installation prefix.])])

  # A configured tree holds the generated headers beside the sources; its
  # bundled PMIx only when it was configured with it (6.0.x bundles a PMIx
  # 6 and runs here on an external 5.0.10).
  bufpool_ompi_tree_incdirs=""
  AS_IF([test "x$with_ompi_source" != "xno"], [
    bufpool_ompi_tree_dirs="ompi/include opal/include"
    AS_IF([test -f "$with_ompi_source/3rd-party/openpmix/config.status"],
          [bufpool_ompi_tree_dirs="$bufpool_ompi_tree_dirs 3rd-party/openpmix/include 3rd-party/openpmix/src/include"])
    for bufpool_d in $bufpool_ompi_tree_dirs; do
      bufpool_ompi_tree_incdirs="$bufpool_ompi_tree_incdirs $with_ompi_source/$bufpool_d"
    done
    bufpool_ompi_tree_incdirs="$bufpool_ompi_tree_incdirs $with_ompi_source"])

  AS_IF([test "$bufpool_ompi_headers_only" = "yes"], [
    bufpool_ompi_incdirs="$bufpool_ompi_tree_incdirs"
    bufpool_ompi_incdir="$with_ompi_source"
  ], [
  bufpool_mpidir=`AS_DIRNAME(["$MPICC"])`
  AC_PATH_PROG([MPIRUN], [mpirun], [], [$bufpool_mpidir$PATH_SEPARATOR$PATH])
  AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [$bufpool_mpidir$PATH_SEPARATOR$PATH])
  AC_MSG_CHECKING([for Open MPI include directories])
  bufpool_ompi_incdirs=`$MPICC --showme:incdirs 2>/dev/null`
  AS_IF([test -z "$bufpool_ompi_incdirs"],
        [AC_MSG_RESULT([none])
         AC_MSG_ERROR([$MPICC is not Open MPI's wrapper compiler (--showme:incdirs gave nothing).])])
  AC_MSG_RESULT([$bufpool_ompi_incdirs])

  # The internal headers live in <incdir>/openmpi on distribution packages and
  # directly in <incdir> in a devel-headers install from source.
  bufpool_ompi_incdir=""
  for bufpool_d in $bufpool_ompi_incdirs; do
    for bufpool_cand in "$bufpool_d" "$bufpool_d/openmpi"; do
      AS_IF([test -z "$bufpool_ompi_incdir" && test -f "$bufpool_cand/ompi/mca/coll/coll.h"],
            [bufpool_ompi_incdir="$bufpool_cand"])
    done
  done
  AS_IF([test -z "$bufpool_ompi_incdir" && test "x$with_ompi_source" != "xno" &&
         test -f "$with_ompi_source/ompi/mca/coll/coll.h"],
        [# An installation without --with-devel-headers: mpi.h from it, the
         # internal headers from the configured tree it was built from.
         AC_MSG_NOTICE([no internal headers installed: taking them from $with_ompi_source])
         bufpool_ompi_incdirs="$bufpool_ompi_incdirs $bufpool_ompi_tree_incdirs"
         bufpool_ompi_incdir="$with_ompi_source"])
  AS_IF([test -z "$bufpool_ompi_incdir"],
        [AC_MSG_ERROR([Open MPI's internal headers (ompi/mca/coll/coll.h, opal/mca/mpool/mpool.h)
                  were not found under: $bufpool_ompi_incdirs
                  Components can only be built against an installation that ships them
                  (Debian: libopenmpi-dev; from source: configure Open MPI with
                  --with-devel-headers), or with --with-ompi-source=DIR naming the
                  configured source tree that installation was built from.])])
  ])

  OMPI_CPPFLAGS=""
  for bufpool_d in $bufpool_ompi_incdirs; do
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -isystem $bufpool_d"
  done
  AS_CASE([" $bufpool_ompi_incdirs "], [*" $bufpool_ompi_incdir "*], [],
          [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -isystem $bufpool_ompi_incdir"])

  # Version and series.
  AC_MSG_CHECKING([Open MPI version])
  bufpool_save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
  AC_COMPUTE_INT([bufpool_ompi_major], [OMPI_MAJOR_VERSION], [#include <mpi.h>], [bufpool_ompi_major=0])
  AC_COMPUTE_INT([bufpool_ompi_minor], [OMPI_MINOR_VERSION], [#include <mpi.h>], [bufpool_ompi_minor=0])
  AC_COMPUTE_INT([bufpool_ompi_release], [OMPI_RELEASE_VERSION], [#include <mpi.h>], [bufpool_ompi_release=0])
  bufpool_ompi_version="$bufpool_ompi_major.$bufpool_ompi_minor.$bufpool_ompi_release"
  AC_MSG_RESULT([$bufpool_ompi_version])
  AS_CASE([$bufpool_ompi_major.$bufpool_ompi_minor],
    [4.1], [bufpool_ompi_series=4.1],
    [5.*], [bufpool_ompi_series=5.0],
    [6.*], [bufpool_ompi_series=6.0],
    [AC_MSG_ERROR([Open MPI $bufpool_ompi_version is not supported: ompi-bufpool $PACKAGE_VERSION
                  builds against the Open MPI 4.1, 5.0 and 6.0 series (see
                  compat/bufpool_ompi_compat.h for what differs between them).])])
  AC_MSG_CHECKING([Open MPI series])
  AC_MSG_RESULT([$bufpool_ompi_series])

  # Open MPI 5 and 6 install opal_config.h, which includes
  # opal/mca/threads/pthreads/*.h, but not those headers.
  AC_MSG_CHECKING([whether opal_config.h compiles as installed])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "opal_config.h"]], [[return 0;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AS_IF([test "x$with_ompi_source" != "xno" && test -f "$with_ompi_source/opal/mca/threads/pthreads/threads_pthreads_mutex.h"],
       [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -isystem $with_ompi_source"
        CPPFLAGS="$bufpool_save_CPPFLAGS $OMPI_CPPFLAGS"
        AC_MSG_CHECKING([whether opal_config.h compiles with the headers of $with_ompi_source])
        AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "opal_config.h"]], [[return 0;]])],
          [AC_MSG_RESULT([yes])],
          [AC_MSG_RESULT([no])
           AC_MSG_ERROR([opal_config.h does not compile even with --with-ompi-source=$with_ompi_source; see config.log])])],
       [AC_MSG_ERROR([Open MPI $bufpool_ompi_version's opal_config.h does not compile as installed
                  (in $bufpool_ompi_incdir): Open MPI 5 and 6 do not install
                  opal/mca/threads/pthreads/*.h, which it includes.  Either copy them:
                    cp OMPI_SRC/opal/mca/threads/pthreads/*.h $bufpool_ompi_incdir/opal/mca/threads/pthreads/
                  or pass --with-ompi-source=OMPI_SRC, the configured source tree of this
                  same Open MPI $bufpool_ompi_version (scripts/build-ompi.sh does the copy).  See config.log.])])])

  # The internal headers include <pmix.h>.  An Open MPI built with an
  # external PMIx (6.0 from scripts/build-ompi.sh runs on 5.0's) does not
  # name its directory in the wrapper's include directories: look beside
  # the libpmix that libopen-pal loads, beside the wrapper's library
  # directories, and in the include flags of a configured source tree.
  # (4.1's internal headers do not include it.)
  AC_MSG_CHECKING([whether the internal headers find pmix.h])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "opal_config.h"
#if __has_include("opal/mca/pmix/pmix-internal.h")
#include <pmix.h>
#endif]], [[return 0;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     bufpool_pmix_cands=""
     AS_IF([test "$bufpool_ompi_headers_only" != "yes"],
           [for bufpool_d in `$MPICC --showme:libdirs 2>/dev/null`; do
              # Where libopen-pal loads libpmix from (its run path), and
              # beside the wrapper's library directories.
              bufpool_f=`ldd "$bufpool_d/libopen-pal.so" 2>/dev/null |
                         sed -n 's|.*libpmix[[^ ]]* => \(/[[^ ]]*\)/libpmix.*|\1|p' | head -n 1`
              AS_IF([test -n "$bufpool_f"],
                    [bufpool_pmix_cands="$bufpool_pmix_cands `dirname "$bufpool_f"`/include"])
              bufpool_pmix_cands="$bufpool_pmix_cands `dirname "$bufpool_d"`/include"
            done])
     AS_IF([test "x$with_ompi_source" != "xno" && test -f "$with_ompi_source/Makefile"],
           [for bufpool_f in `sed -n 's/^CPPFLAGS = //p' "$with_ompi_source/Makefile"`; do
              bufpool_pmix_cands="$bufpool_pmix_cands `echo "$bufpool_f" | sed -n 's/^-I//p'`"
            done])
     bufpool_pmix_incdir=""
     for bufpool_d in $bufpool_pmix_cands; do
       AS_IF([test -z "$bufpool_pmix_incdir" && test -f "$bufpool_d/pmix.h"],
             [bufpool_pmix_incdir="$bufpool_d"])
     done
     AS_IF([test -z "$bufpool_pmix_incdir"],
           [AC_MSG_ERROR([Open MPI's internal headers include <pmix.h>, which was found neither
                  with them nor in: $bufpool_pmix_cands
                  Pass CPPFLAGS=-I<PMIx prefix>/include, the PMIx this Open MPI was built with.])])
     # After Open MPI's own directories: the PMIx prefix may hold another
     # Open MPI's mpi.h (the 5.0 installation that 6.0 takes PMIx from).
     OMPI_CPPFLAGS="$OMPI_CPPFLAGS -idirafter $bufpool_pmix_incdir"
     CPPFLAGS="$bufpool_save_CPPFLAGS $OMPI_CPPFLAGS"
     AC_MSG_CHECKING([whether pmix.h compiles from $bufpool_pmix_incdir])
     AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "opal_config.h"
#include <pmix.h>]], [[return 0;]])],
       [AC_MSG_RESULT([yes])],
       [AC_MSG_RESULT([no])
        AC_MSG_ERROR([pmix.h from $bufpool_pmix_incdir does not compile; see config.log])])])

  # Debian and Ubuntu omit ompi/mpi/fortran/base/fint_2_int.h, which
  # ompi/op/op.h includes.  Use our copy only when theirs is missing.
  AC_MSG_CHECKING([whether ompi/op/op.h compiles as installed])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/op/op.h"]], [[return 0;]])],
    [AC_MSG_RESULT([yes]); bufpool_need_compat=no],
    [AC_MSG_RESULT([no]); bufpool_need_compat=yes])
  AS_IF([test "$bufpool_need_compat" = "yes"], [
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I\$(abs_top_srcdir)/compat/fint"
    CPPFLAGS="$bufpool_save_CPPFLAGS $OMPI_CPPFLAGS -I$srcdir/compat/fint"
    AC_MSG_CHECKING([whether ompi/op/op.h compiles with the fint_2_int.h compat header])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/op/op.h"]], [[return 0;]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([ompi/op/op.h does not compile even with compat/fint; see config.log])])
  ])
  CPPFLAGS="$bufpool_save_CPPFLAGS"
  # compat/bufpool_ompi_compat.h: the series differences (after the checks:
  # configure's own compiles must not see a make variable).
  OMPI_CPPFLAGS="-I\$(abs_top_srcdir)/compat $OMPI_CPPFLAGS"

  OMPI_LDFLAGS=""
  OMPI_SYSTEM_COMPONENT_DIR=""
  AS_IF([test "$bufpool_ompi_headers_only" = "yes"], [
    # Nothing to link against: the components keep their undefined symbols.
    OMPI_LIBS=""
    OMPI_PAL_LIBS=""
    OMPI_MPI_LIBS=""
    OMPI_NO_UNDEFINED=""
  ], [
  OMPI_NO_UNDEFINED="-Wl,--no-undefined"
  bufpool_ompi_libdirs=`$MPICC --showme:libdirs 2>/dev/null`
  for bufpool_d in $bufpool_ompi_libdirs; do
    OMPI_LDFLAGS="$OMPI_LDFLAGS -L$bufpool_d"
  done
  OMPI_LIBS="-lmpi -lopen-pal"
  OMPI_PAL_LIBS="-lopen-pal"
  # 6.0: the internals (communicators, coll base, ops) are in libopen_mpi.
  for bufpool_d in $bufpool_ompi_libdirs; do
    AS_IF([ls "$bufpool_d"/libopen_mpi.so* >/dev/null 2>&1],
          [OMPI_LIBS="-lmpi -lopen_mpi -lopen-pal"])
  done
  OMPI_MPI_LIBS=""
  for bufpool_d in `$MPICC --showme:libs 2>/dev/null`; do
    OMPI_MPI_LIBS="$OMPI_MPI_LIBS -l$bufpool_d"
  done
  AS_IF([test -z "$OMPI_MPI_LIBS"], [OMPI_MPI_LIBS="-lmpi"])
  bufpool_save_LDFLAGS="$LDFLAGS"
  LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"
  AC_CHECK_LIB([open-pal], [mca_mpool_base_module_lookup], [],
               [AC_MSG_ERROR([libopen-pal with mca_mpool_base_module_lookup not found in: $bufpool_ompi_libdirs])],
               [])
  LDFLAGS="$bufpool_save_LDFLAGS"
  # AC_CHECK_LIB prepends to LIBS; the components add it themselves.
  LIBS=`echo "$LIBS" | sed 's/-lopen-pal//'`

  # Open MPI's own component directory: where mca_coll_basic.so is (4.1),
  # else LIBDIR/openmpi (5.0 and 6.0 build their components into the
  # libraries, but still search that directory).
  for bufpool_d in $bufpool_ompi_libdirs; do
    AS_IF([test -z "$OMPI_SYSTEM_COMPONENT_DIR" && ls "$bufpool_d"/openmpi*/mca_coll_basic.so >/dev/null 2>&1],
          [OMPI_SYSTEM_COMPONENT_DIR=`ls -d "$bufpool_d"/openmpi*/mca_coll_basic.so | head -n 1 | xargs dirname`])
  done
  AS_IF([test -z "$OMPI_SYSTEM_COMPONENT_DIR" && test "$bufpool_ompi_series" != "4.1"],
        [for bufpool_d in $bufpool_ompi_libdirs; do
           AS_IF([test -z "$OMPI_SYSTEM_COMPONENT_DIR"],
                 [OMPI_SYSTEM_COMPONENT_DIR="$bufpool_d/openmpi"])
         done])
  ])

  AC_DEFINE_UNQUOTED([BUFPOOL_OMPI_VERSION_STRING], ["$bufpool_ompi_version"],
                     [Open MPI version the components were built against])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_LDFLAGS])
  AC_SUBST([OMPI_LIBS])
  AC_SUBST([OMPI_PAL_LIBS])
  AC_SUBST([OMPI_MPI_LIBS])
  AC_SUBST([OMPI_SYSTEM_COMPONENT_DIR])
  AC_SUBST([OMPI_NO_UNDEFINED])
  AC_SUBST([bufpool_ompi_series])
  AM_CONDITIONAL([BUFPOOL_OMPI_HEADERS_ONLY], [test "$bufpool_ompi_headers_only" = "yes"])
  AC_SUBST([bufpool_ompi_version])
])

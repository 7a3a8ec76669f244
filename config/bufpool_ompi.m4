# BUFPOOL_FIND_OMPI
# -----------------
# Locate the Open MPI installation the components will be loaded into, check
# its version and the presence of the internal (component-building) headers.
#
# Sets and substitutes:
#   OMPI_CPPFLAGS   -isystem flags for mpi.h and the internal headers
#   OMPI_LDFLAGS    -L flags for libmpi and libopen-pal
#   OMPI_LIBS       -lmpi -lopen-pal (components link against these so that
#                   -Wl,--no-undefined catches a missing symbol at build time)
#   OMPI_PAL_LIBS   -lopen-pal only (the mpool component needs nothing more)
#   MPICC, MPIRUN, OMPI_INFO, OMPI_SYSTEM_COMPONENT_DIR
AC_DEFUN([BUFPOOL_FIND_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR],
       [Open MPI installation prefix (default: found through mpicc --showme)])],
    [], [with_ompi=auto])

  AS_IF([test "x$with_ompi" != "xauto" && test "x$with_ompi" != "xyes"],
        [AC_PATH_PROG([MPICC], [mpicc], [], [$with_ompi/bin$PATH_SEPARATOR$PATH])],
        [AC_PATH_PROG([MPICC], [mpicc], [])])
  AS_IF([test -z "$MPICC"],
        [AC_MSG_ERROR([mpicc not found.  Install Open MPI 4.1 and its development files
                  (Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin) or pass
                  --with-ompi=DIR pointing at the installation prefix.])])
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
  AS_IF([test -z "$bufpool_ompi_incdir"],
        [AC_MSG_ERROR([Open MPI's internal headers (ompi/mca/coll/coll.h, opal/mca/mpool/mpool.h)
                  were not found under: $bufpool_ompi_incdirs
                  Components can only be built against an installation that ships them
                  (Debian: libopenmpi-dev; from source: configure Open MPI with
                  --with-devel-headers).])])

  OMPI_CPPFLAGS=""
  for bufpool_d in $bufpool_ompi_incdirs; do
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -isystem $bufpool_d"
  done
  AS_CASE([" $bufpool_ompi_incdirs "], [*" $bufpool_ompi_incdir "*], [],
          [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -isystem $bufpool_ompi_incdir"])

  # Version: the components use the 4.1 framework interfaces
  # (coll 2.3.0 module struct, mpool 3.0.0).
  AC_MSG_CHECKING([Open MPI version])
  bufpool_save_CPPFLAGS="$CPPFLAGS"
  CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"
  AC_COMPUTE_INT([bufpool_ompi_major], [OMPI_MAJOR_VERSION], [#include <mpi.h>], [bufpool_ompi_major=0])
  AC_COMPUTE_INT([bufpool_ompi_minor], [OMPI_MINOR_VERSION], [#include <mpi.h>], [bufpool_ompi_minor=0])
  AC_COMPUTE_INT([bufpool_ompi_release], [OMPI_RELEASE_VERSION], [#include <mpi.h>], [bufpool_ompi_release=0])
  bufpool_ompi_version="$bufpool_ompi_major.$bufpool_ompi_minor.$bufpool_ompi_release"
  AC_MSG_RESULT([$bufpool_ompi_version])
  AS_IF([test "$bufpool_ompi_major" != "4" || test "$bufpool_ompi_minor" != "1"],
        [AC_MSG_ERROR([Open MPI $bufpool_ompi_version is not supported: ompi-bufpool $PACKAGE_VERSION
                  builds against the Open MPI 4.1 series only (component interfaces
                  coll 2.0.0 and mpool 3.0.0).  Open MPI 5.x support is planned; the
                  version-specific code is isolated behind OMPI_MAJOR_VERSION checks.])])

  # Debian and Ubuntu omit ompi/mpi/fortran/base/fint_2_int.h, which
  # ompi/op/op.h includes.  Use our copy only when theirs is missing.
  AC_MSG_CHECKING([whether ompi/op/op.h compiles as installed])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/op/op.h"]], [[return 0;]])],
    [AC_MSG_RESULT([yes]); bufpool_need_compat=no],
    [AC_MSG_RESULT([no]); bufpool_need_compat=yes])
  AS_IF([test "$bufpool_need_compat" = "yes"], [
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I\$(abs_top_srcdir)/compat"
    CPPFLAGS="$bufpool_save_CPPFLAGS $OMPI_CPPFLAGS -I$srcdir/compat"
    AC_MSG_CHECKING([whether ompi/op/op.h compiles with the fint_2_int.h compat header])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/op/op.h"]], [[return 0;]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([ompi/op/op.h does not compile even with compat/; see config.log])])
  ])
  CPPFLAGS="$bufpool_save_CPPFLAGS"

  bufpool_ompi_libdirs=`$MPICC --showme:libdirs 2>/dev/null`
  OMPI_LDFLAGS=""
  for bufpool_d in $bufpool_ompi_libdirs; do
    OMPI_LDFLAGS="$OMPI_LDFLAGS -L$bufpool_d"
  done
  OMPI_LIBS="-lmpi -lopen-pal"
  OMPI_PAL_LIBS="-lopen-pal"
  bufpool_save_LDFLAGS="$LDFLAGS"
  LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"
  AC_CHECK_LIB([open-pal], [mca_mpool_base_module_lookup], [],
               [AC_MSG_ERROR([libopen-pal with mca_mpool_base_module_lookup not found in: $bufpool_ompi_libdirs])],
               [])
  LDFLAGS="$bufpool_save_LDFLAGS"
  # AC_CHECK_LIB prepends to LIBS; the components add it themselves.
  LIBS=`echo "$LIBS" | sed 's/-lopen-pal//'`

  # Open MPI's own component directory, for the "how to load" hint.
  OMPI_SYSTEM_COMPONENT_DIR=""
  for bufpool_d in $bufpool_ompi_libdirs; do
    AS_IF([test -z "$OMPI_SYSTEM_COMPONENT_DIR" && ls "$bufpool_d"/openmpi*/mca_coll_basic.so >/dev/null 2>&1],
          [OMPI_SYSTEM_COMPONENT_DIR=`ls -d "$bufpool_d"/openmpi*/mca_coll_basic.so | head -n 1 | xargs dirname`])
  done

  AC_DEFINE_UNQUOTED([BUFPOOL_OMPI_VERSION_STRING], ["$bufpool_ompi_version"],
                     [Open MPI version the components were built against])
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_LDFLAGS])
  AC_SUBST([OMPI_LIBS])
  AC_SUBST([OMPI_PAL_LIBS])
  AC_SUBST([OMPI_SYSTEM_COMPONENT_DIR])
  AC_SUBST([bufpool_ompi_version])
])

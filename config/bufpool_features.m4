# Optional registration backends and topology support.
#
# Each macro honours --with-X (force, fail if missing), --without-X (skip)
# and the default (use when found).  Each sets bufpool_have_X_msg for the
# configure summary, an AM_CONDITIONAL and a HAVE_X define.

# _BUFPOOL_OPTIONAL_LIB(name, header, lib, function, pkg-config name, help)
AC_DEFUN([_BUFPOOL_OPTIONAL_LIB], [
  AC_ARG_WITH([$1], [AS_HELP_STRING([--with-$1@<:@=DIR@:>@], [$6 (default: use when found)])],
              [], [with_$1=check])
  bufpool_have_$1=no
  bufpool_have_$1_msg="no (not found)"
  AS_UNSET([m4_toupper($1)_CPPFLAGS])
  AS_UNSET([m4_toupper($1)_LDFLAGS])
  AS_UNSET([m4_toupper($1)_LIBS])
  AS_IF([test "x$with_$1" = "xno"], [bufpool_have_$1_msg="no (disabled)"], [
    AS_IF([test "x$with_$1" != "xyes" && test "x$with_$1" != "xcheck"],
          [m4_toupper($1)_CPPFLAGS="-I$with_$1/include"
           m4_toupper($1)_LDFLAGS="-L$with_$1/lib -L$with_$1/lib64"])
    bufpool_save_CPPFLAGS="$CPPFLAGS"; bufpool_save_LDFLAGS="$LDFLAGS"; bufpool_save_LIBS="$LIBS"
    CPPFLAGS="$CPPFLAGS $m4_toupper($1)_CPPFLAGS"
    LDFLAGS="$LDFLAGS $m4_toupper($1)_LDFLAGS"
    AC_CHECK_HEADER([$2], [
      AC_CHECK_LIB([$3], [$4], [bufpool_have_$1=yes])])
    CPPFLAGS="$bufpool_save_CPPFLAGS"; LDFLAGS="$bufpool_save_LDFLAGS"; LIBS="$bufpool_save_LIBS"
    AS_IF([test "$bufpool_have_$1" = "yes"], [
        m4_toupper($1)_LIBS="-l$3"
        bufpool_have_$1_msg="yes"
        AC_DEFINE([HAVE_]m4_toupper($1), [1], [Define to 1 if $1 is available])
      ], [test "x$with_$1" != "xcheck"], [
        AC_MSG_ERROR([--with-$1 was given but $2 / lib$3 were not found])
      ])
  ])
  AM_CONDITIONAL([HAVE_]m4_toupper($1), [test "$bufpool_have_$1" = "yes"])
  AC_SUBST(m4_toupper($1)_CPPFLAGS)
  AC_SUBST(m4_toupper($1)_LDFLAGS)
  AC_SUBST(m4_toupper($1)_LIBS)
])

AC_DEFUN([BUFPOOL_CHECK_LIBFABRIC], [
  _BUFPOOL_OPTIONAL_LIB([libfabric], [rdma/fabric.h], [fabric], [fi_getinfo],
                        [libfabric], [register slabs through libfabric fi_mr_reg (backend ofi)])
])

AC_DEFUN([BUFPOOL_CHECK_VERBS], [
  _BUFPOOL_OPTIONAL_LIB([verbs], [infiniband/verbs.h], [ibverbs], [ibv_get_device_list],
                        [libibverbs], [register slabs through rdma-core ibv_reg_mr (backend verbs)])
])

AC_DEFUN([BUFPOOL_CHECK_HWLOC], [
  _BUFPOOL_OPTIONAL_LIB([hwloc], [hwloc.h], [hwloc], [hwloc_topology_init],
                        [hwloc], [NUMA-local slabs and core binding of registration threads])
])

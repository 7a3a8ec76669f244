/*
 * Compatibility header for distributions (Debian, Ubuntu) whose Open MPI
 * development package omits ompi/mpi/fortran/base/fint_2_int.h although
 * ompi/op/op.h includes it.  Only the two conversion macros that op.h uses
 * are needed; they match upstream for the usual case where a Fortran
 * INTEGER has the size of a C int.  configure adds this directory to the
 * include path only when the installed Open MPI lacks the real header.
 */
#ifndef OMPI_FORTRAN_BASE_FINT_2_INT_H
#define OMPI_FORTRAN_BASE_FINT_2_INT_H

#include "ompi_config.h"

#if OMPI_SIZEOF_FORTRAN_INTEGER == SIZEOF_INT
#define OMPI_INT_2_FINT(a) a
#define OMPI_FINT_2_INT(a) a
#elif OMPI_SIZEOF_FORTRAN_INTEGER > SIZEOF_INT
#define OMPI_INT_2_FINT(a) (MPI_Fint)(a)
#define OMPI_FINT_2_INT(a) (int)(a)
#else
#define OMPI_INT_2_FINT(a) (MPI_Fint)(a)
#define OMPI_FINT_2_INT(a) (a)
#endif

#endif /* OMPI_FORTRAN_BASE_FINT_2_INT_H */

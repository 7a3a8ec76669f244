/*
 * Persistent collectives under one name for the tests and benchmarks:
 * MPI-4's MPI_<Coll>_init (Open MPI 5.0 on), or the pcollreq extension's
 * MPIX_<Coll>_init (Open MPI 4.1, declared in mpi-ext.h).
 */
#ifndef BUFPOOL_TEST_PCOLL_H
#define BUFPOOL_TEST_PCOLL_H

#include <mpi.h>
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#endif

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PCOLL_INIT(name) MPIX_##name##_init
#else
#define PCOLL_INIT(name) MPI_##name##_init
#endif

#endif

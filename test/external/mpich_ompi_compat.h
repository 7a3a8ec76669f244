/*
 * Forced into every file of MPICH's test suite (-include) when
 * test/external/mpich_coll.sh builds it against Open MPI: the suite is
 * written for MPI 4.1, Open MPI 4.1 is MPI 3.1.
 *  - MPI_Errhandler_set, removed in MPI 3.0: Open MPI's mpi.h turns it into
 *    a compile error; its replacement takes the same arguments.
 *  - The persistent collectives (MPI 4.0) are MPIX_*_init in Open MPI 4.1
 *    (its pcollreq extension, same arguments), MPI_*_init from 5.0.
 * The large-count (_c) functions of MPI 4.0 are in neither 4.1 nor 5.0:
 * their tests fail to link, and the script skips them.
 */
#include <mpi.h>

#undef MPI_Errhandler_set
#define MPI_Errhandler_set MPI_Comm_set_errhandler

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
#include <mpi-ext.h>
#define MPI_Allgather_init            MPIX_Allgather_init
#define MPI_Allgatherv_init           MPIX_Allgatherv_init
#define MPI_Allreduce_init            MPIX_Allreduce_init
#define MPI_Alltoall_init             MPIX_Alltoall_init
#define MPI_Alltoallv_init            MPIX_Alltoallv_init
#define MPI_Alltoallw_init            MPIX_Alltoallw_init
#define MPI_Barrier_init              MPIX_Barrier_init
#define MPI_Bcast_init                MPIX_Bcast_init
#define MPI_Exscan_init               MPIX_Exscan_init
#define MPI_Gather_init               MPIX_Gather_init
#define MPI_Gatherv_init              MPIX_Gatherv_init
#define MPI_Reduce_init               MPIX_Reduce_init
#define MPI_Reduce_scatter_init       MPIX_Reduce_scatter_init
#define MPI_Reduce_scatter_block_init MPIX_Reduce_scatter_block_init
#define MPI_Scan_init                 MPIX_Scan_init
#define MPI_Scatter_init              MPIX_Scatter_init
#define MPI_Scatterv_init             MPIX_Scatterv_init
#define MPI_Neighbor_allgather_init   MPIX_Neighbor_allgather_init
#define MPI_Neighbor_allgatherv_init  MPIX_Neighbor_allgatherv_init
#define MPI_Neighbor_alltoall_init    MPIX_Neighbor_alltoall_init
#define MPI_Neighbor_alltoallv_init   MPIX_Neighbor_alltoallv_init
#define MPI_Neighbor_alltoallw_init   MPIX_Neighbor_alltoallw_init
#endif

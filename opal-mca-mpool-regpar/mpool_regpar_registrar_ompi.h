/*
 * The transport registrars' side that knows Open MPI (see
 * mpool_regpar_registrar.h for the life cycle): reaching the selected
 * transport's registration domain, the hook before MPI_Finalize, and the
 * registrations each registrar made and holds (MPI_T).  Below the
 * registrar's choice (mpool_regpar_registrar.c), which calls it.
 */
#ifndef MCA_MPOOL_REGPAR_REGISTRAR_OMPI_H
#define MCA_MPOOL_REGPAR_REGISTRAR_OMPI_H

#include <stdbool.h>
#include <stddef.h>

#include "opal/mca/base/base.h"

#include "regpar_reg.h"

BEGIN_C_DECLS

/* The transport registrars (indices of the per-registrar counters). */
enum { REGPAR_TRANSPORT_BTL = 0, REGPAR_TRANSPORT_UCX, REGPAR_TRANSPORT_MTL, REGPAR_TRANSPORTS };

/* MPI_T counters per registrar (called from the component's register). */
void mca_mpool_regpar_ompi_register_pvars(const mca_base_component_t *component);

/* Transport access (mpool_regpar_registrar_ompi.c): the only code that
 * knows Open MPI's private layouts.  Each open function checks the selected
 * component's name before touching anything, and returns 0 with *ops and *arg
 * set, 1 when this transport does not apply or has nothing to register
 * (why says so), -1 when it applies but could not be reached (why). */

/* The selected PML's and MTL's names ("" when none is selected yet, NULL
 * when this is not an MPI process). */
const char *mca_mpool_regpar_ompi_pml_name(void);
const char *mca_mpool_regpar_ompi_mtl_name(void);
/* MPI_Init has completed and MPI_Finalize has not begun. */
bool mca_mpool_regpar_ompi_mpi_ready(void);
/* Call fn(arg) first thing in MPI_Finalize (an MPI_COMM_SELF attribute).
 * Returns 0, or -1 when it cannot be arranged. */
int mca_mpool_regpar_ompi_at_finalize(void (*fn)(void *), void *arg);

int mca_mpool_regpar_ompi_btl_open(const regpar_registrar_t **ops, void **arg, char *why,
                                   size_t whylen);
int mca_mpool_regpar_ompi_ucx_open(const regpar_registrar_t **ops, void **arg, char *why,
                                   size_t whylen);
/* force: register even where the provider's MR cache does not take
 * application registrations (reg_backend=mtl, to show that it works). */
int mca_mpool_regpar_ompi_mtl_open(bool force, const regpar_registrar_t **ops, void **arg,
                                   char *why, size_t whylen);
void mca_mpool_regpar_ompi_close(const regpar_registrar_t *ops, void *arg);

END_C_DECLS

#endif /* MCA_MPOOL_REGPAR_REGISTRAR_OMPI_H */

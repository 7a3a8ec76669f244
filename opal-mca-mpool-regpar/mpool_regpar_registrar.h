/*
 * Registrars of Open MPI's transports for the regpar pool: each slab is
 * registered once, in the domain where the selected transport looks for
 * registrations (ob1's BTLs and their rcache/grdma, the UCX PML's context,
 * the OFI MTL's domain), instead of in a domain of the pool's own.
 *
 * The registrar is resolved lazily: the pool may be created before the PML
 * and BTLs are selected (a lookup during MPI_Init).  While unresolved, slabs
 * are pre-faulted but not registered; the first allocation after MPI_Init
 * has completed picks the registrar, attaches it to the engine and
 * registers the slabs created so far (regpar_pool_register_live).  Before
 * MPI_Finalize tears the transports down (an MPI_COMM_SELF attribute's
 * delete callback, which MPI runs first thing in MPI_Finalize), every slab
 * is deregistered and the registrar detached.
 *
 * docs/registration.md describes the design; the Open MPI-version-specific
 * layouts live in mpool_regpar_registrar_ompi.c only.
 */
#ifndef MCA_MPOOL_REGPAR_REGISTRAR_H
#define MCA_MPOOL_REGPAR_REGISTRAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opal/mca/base/base.h"

#include "regpar_reg.h"

BEGIN_C_DECLS

struct mca_mpool_regpar_module;

/* Which transport registrar reg_backend asks for. */
typedef enum mca_mpool_regpar_want {
    REGPAR_WANT_NONE = 0, /* a core backend (pin, none, ofi, verbs)          */
    REGPAR_WANT_AUTO,     /* the one matching the selected PML/MTL/BTLs     */
    REGPAR_WANT_BTL,      /* ob1's registering BTLs                         */
    REGPAR_WANT_UCX,      /* pml/ucx's ucp_context                          */
    REGPAR_WANT_MTL       /* pml/cm + mtl/ofi's domain, whatever provider  */
} mca_mpool_regpar_want_t;

/* The transport registrars (indices of the per-registrar counters). */
enum { REGPAR_TRANSPORT_BTL = 0, REGPAR_TRANSPORT_UCX, REGPAR_TRANSPORT_MTL, REGPAR_TRANSPORTS };

/* Parse a reg_backend value naming a transport registrar (auto, btl, ucx,
 * mtl).  Returns 0 and sets *want, or -1 if value names none of them. */
int mca_mpool_regpar_registrar_parse(const char *value, mca_mpool_regpar_want_t *want);

/* What settings parsed; read at module init. */
void mca_mpool_regpar_registrar_set_want(mca_mpool_regpar_want_t want);

/* MPI_T counters per registrar (called from the component's register). */
void mca_mpool_regpar_registrar_register_pvars(const mca_base_component_t *component);

/* Set while a registrar may still be resolved: the module's alloc path
 * calls mca_mpool_regpar_registrar_resolve when it is set (one load on the
 * hit path). */
extern volatile bool mca_mpool_regpar_registrar_pending;

void mca_mpool_regpar_registrar_init(struct mca_mpool_regpar_module *module);
void mca_mpool_regpar_registrar_resolve(struct mca_mpool_regpar_module *module);
/* Deregister every slab and detach (before the pool is destroyed, or when
 * MPI_Finalize begins). */
void mca_mpool_regpar_registrar_fini(struct mca_mpool_regpar_module *module);

/* ---------------------------------------------------------------------- */
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

/* Counters the registrars bump (per chunk registration). */
void mca_mpool_regpar_registrar_count(int transport, int delta_live);

END_C_DECLS

#endif /* MCA_MPOOL_REGPAR_REGISTRAR_H */

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
#include "mpool_regpar_registrar_ompi.h"

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

/* Parse a reg_backend value naming a transport registrar (auto, btl, ucx,
 * mtl).  Returns 0 and sets *want, or -1 if value names none of them. */
int mca_mpool_regpar_registrar_parse(const char *value, mca_mpool_regpar_want_t *want);

/* What settings parsed; read at module init. */
void mca_mpool_regpar_registrar_set_want(mca_mpool_regpar_want_t want);

/* Set while a registrar may still be resolved: the module's alloc path
 * calls mca_mpool_regpar_registrar_resolve when it is set (one load on the
 * hit path).  Written under the registrar's lock, read on that path by any
 * thread without it: atomic accesses (an acquire load is a plain load on
 * x86), never a plain read racing the write. */
extern bool mca_mpool_regpar_registrar_pending;

static inline bool mca_mpool_regpar_registrar_is_pending(void)
{
    return __atomic_load_n(&mca_mpool_regpar_registrar_pending, __ATOMIC_ACQUIRE);
}

void mca_mpool_regpar_registrar_init(struct mca_mpool_regpar_module *module);
void mca_mpool_regpar_registrar_resolve(struct mca_mpool_regpar_module *module);
/* Deregister every slab and detach (before the pool is destroyed, or when
 * MPI_Finalize begins). */
void mca_mpool_regpar_registrar_fini(struct mca_mpool_regpar_module *module);

END_C_DECLS

#endif /* MCA_MPOOL_REGPAR_REGISTRAR_H */

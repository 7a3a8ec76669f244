/*
 * The transport registrars: the only code of the regpar pool that knows
 * where Open MPI's transports keep their domains.  Everything here checks
 * the selected component's name before touching a private structure, and
 * reaches OMPI-level symbols through dlsym so that the component (an OPAL
 * one) links against libopen-pal only and loads in any process.
 *
 * Open MPI versions (what differs, for the compat layer):
 *   - 4.1.x (built against here): mca_btl_base_modules_initialized,
 *     mca_pml_base_selected_component, ompi_mtl_base_selected_component and
 *     ompi_mtl as below; pml/ucx's module starts with mca_pml_base_module_t
 *     followed by ucp_context; mtl/ofi's module starts with
 *     mca_mtl_base_module_t followed by fabric and domain.
 *   - 5.0.10 (checked against its sources and run here) keeps those names
 *     and layouts (mca_pml_ucx_module_t still has ucp_context right after
 *     super; mca_mtl_ofi_module_t still starts base, fabric, domain) and
 *     exports them, but builds components into libmpi: ompi_pml_ucx is
 *     then found in the global scope, not in a mca_pml_ucx.so.
 *     opal_common_ofi.domain (5.0.10's common/ofi) is not a substitute for
 *     the MTL's own domain: opal_common_ofi_fi_domain overwrites it with
 *     every domain it creates, so with btl/ofi also open it may hold the
 *     BTL's.  The MTL's fields are checked to be a fabric and a domain
 *     (fid.fclass) before use instead.
 */
#include "opal_config.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "opal/class/opal_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"

#include "ompi/mca/mtl/mtl.h"
#include "ompi/mca/pml/pml.h"

#include <mpi.h>

/* UCX headers come with libucx-dev (scripts/install-deps.sh); without them
 * the ucx registrar is left out and says so. */
#if defined(__has_include)
#if __has_include(<ucp/api/ucp.h>)
#include <ucp/api/ucp.h>
#define REGPAR_HAVE_UCP 1
#endif
#endif

#include "opal/mca/base/mca_base_pvar.h"

#include "mpool_regpar_registrar_ompi.h"

/* ---------------------------------------------------------------------- */
/* Registrations per registrar: bumped by the registrars below (one per
 * chunk, and per BTL), read through MPI_T. */

/* Per registrar: chunk registrations made, and held now. */
static int64_t regs_made[REGPAR_TRANSPORTS];
static int64_t regs_live[REGPAR_TRANSPORTS];

static void count_registrations(int transport, int delta_live)
{
    if (transport < 0 || transport >= REGPAR_TRANSPORTS) {
        return;
    }
    if (delta_live > 0) {
        (void)__atomic_add_fetch(&regs_made[transport], delta_live, __ATOMIC_RELAXED);
    }
    (void)__atomic_add_fetch(&regs_live[transport], delta_live, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------- */
/* MPI_T: regs_made and regs_live of each registrar. */

static const char *const transport_names[REGPAR_TRANSPORTS] = {"btl", "ucx", "mtl"};

static int registrar_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;
    intptr_t which = (intptr_t)pvar->ctx;
    int transport = (int)(which / 2);
    int64_t v = __atomic_load_n(which % 2 ? &regs_live[transport] : &regs_made[transport],
                                __ATOMIC_RELAXED);
    *(unsigned long long *)value = v < 0 ? 0 : (unsigned long long)v;
    return OPAL_SUCCESS;
}

void mca_mpool_regpar_ompi_register_pvars(const mca_base_component_t *component)
{
    for (int t = 0; t < REGPAR_TRANSPORTS; t++) {
        char name[64], help[160];
        for (int live = 0; live < 2; live++) {
            snprintf(name, sizeof(name), "reg_%s_%s", transport_names[t],
                     live ? "live" : "registrations");
            snprintf(help, sizeof(help),
                     live ? "Registrations the %s registrar holds now (one per slab chunk, and "
                            "BTL)"
                          : "Registrations made through the %s registrar (one per slab chunk, "
                            "and BTL)",
                     transport_names[t]);
            (void)mca_base_component_pvar_register(
                component, name, help, OPAL_INFO_LVL_4,
                live ? MCA_BASE_PVAR_CLASS_SIZE : MCA_BASE_PVAR_CLASS_COUNTER,
                MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
                MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, registrar_pvar_read,
                NULL, NULL, (void *)(intptr_t)(2 * t + live));
        }
    }
}

/* ---------------------------------------------------------------------- */
/* Where MPI stands */

static void *sym(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

const char *mca_mpool_regpar_ompi_pml_name(void)
{
    const mca_pml_base_component_t *pml = sym("mca_pml_base_selected_component");
    return NULL == pml ? NULL : pml->pmlm_version.mca_component_name;
}

const char *mca_mpool_regpar_ompi_mtl_name(void)
{
    mca_mtl_base_component_t **mtl = sym("ompi_mtl_base_selected_component");
    return NULL == mtl || NULL == *mtl ? "" : (*mtl)->mtl_version.mca_component_name;
}

bool mca_mpool_regpar_ompi_mpi_ready(void)
{
    int (*initialized)(int *) = (int (*)(int *))sym("PMPI_Initialized");
    int (*finalized)(int *) = (int (*)(int *))sym("PMPI_Finalized");
    int init = 0, fini = 1;
    if (NULL == initialized || NULL == finalized) {
        return false;
    }
    (void)initialized(&init);
    (void)finalized(&fini);
    return init && !fini;
}

typedef struct finalize_hook {
    void (*fn)(void *);
    void *arg;
} finalize_hook_t;

static finalize_hook_t finalize_hook;

static int hook_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out;
    *flag = 0;
    return MPI_SUCCESS;
}

static int hook_delete(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)value, (void)extra;
    if (NULL != finalize_hook.fn) {
        finalize_hook.fn(finalize_hook.arg);
        finalize_hook.fn = NULL;
    }
    return MPI_SUCCESS;
}

int mca_mpool_regpar_ompi_at_finalize(void (*fn)(void *), void *arg)
{
    typedef int (*create_fn)(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *, int *,
                             void *);
    typedef int (*set_fn)(MPI_Comm, int, void *);
    create_fn create = (create_fn)sym("PMPI_Comm_create_keyval");
    set_fn set = (set_fn)sym("PMPI_Comm_set_attr");
    void *self = sym("ompi_mpi_comm_self");
    int keyval;
    if (NULL == create || NULL == set || NULL == self) {
        return -1;
    }
    finalize_hook.fn = fn;
    finalize_hook.arg = arg;
    /* MPI_Finalize deletes MPI_COMM_SELF's attributes before anything else
     * (MPI standard, "Allowing User Functions at Process Termination"). */
    if (MPI_SUCCESS != create(hook_copy, hook_delete, &keyval, NULL) ||
        MPI_SUCCESS != set((MPI_Comm)self, keyval, NULL)) {
        finalize_hook.fn = NULL;
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* ob1 + registering BTLs: one registration per chunk in every BTL module
 * that registers (btl/ofi, openib, uct), with every access flag, so that
 * ob1's later registration of any sub-range is a hit in that BTL's grdma. */

typedef struct btl_registrar {
    size_t n;
    mca_btl_base_module_t *btl[8];
} btl_registrar_t;

static int btl_reg(void *arg, regpar_reg_chunk_t *chunk)
{
    btl_registrar_t *r = arg;
    mca_btl_base_registration_handle_t **handles = calloc(r->n, sizeof(*handles));
    if (NULL == handles) {
        return ENOMEM;
    }
    for (size_t i = 0; i < r->n; i++) {
        handles[i] = r->btl[i]->btl_register_mem(r->btl[i], MCA_BTL_ENDPOINT_ANY, chunk->addr,
                                                 chunk->len, MCA_BTL_REG_FLAG_ACCESS_ANY);
        if (NULL == handles[i]) {
            /* The BTL does not say why; the memlock limit is the usual
             * cause with real pinning (ENOMEM in the message). */
            while (i-- > 0) {
                (void)r->btl[i]->btl_deregister_mem(r->btl[i], handles[i]);
                count_registrations(REGPAR_TRANSPORT_BTL, -1);
            }
            free(handles);
            return ENOMEM;
        }
        count_registrations(REGPAR_TRANSPORT_BTL, 1);
    }
    chunk->handle = handles;
    return 0;
}

static int btl_dereg(void *arg, regpar_reg_chunk_t *chunk)
{
    btl_registrar_t *r = arg;
    mca_btl_base_registration_handle_t **handles = chunk->handle;
    int rc = 0;
    for (size_t i = 0; NULL != handles && i < r->n; i++) {
        if (OPAL_SUCCESS != r->btl[i]->btl_deregister_mem(r->btl[i], handles[i])) {
            rc = EIO;
        }
        count_registrations(REGPAR_TRANSPORT_BTL, -1);
    }
    free(handles);
    chunk->handle = NULL;
    return rc;
}

/* grdma locks only when Open MPI runs with threads, which is exactly when
 * another thread may register at the same time: calls stay one at a time. */
static const regpar_registrar_t btl_ops = {
    .name = "btl",
    .thread_safe = false,
    .reg = btl_reg,
    .dereg = btl_dereg,
    .remedy = "raise the locked-memory limit (ulimit -l) or set mpool_regpar_reg_backend=none",
};

int mca_mpool_regpar_ompi_btl_open(const regpar_registrar_t **ops, void **arg, char *why,
                                   size_t whylen)
{
    btl_registrar_t *r = calloc(1, sizeof(*r));
    if (NULL == r) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    char names[256] = "";
    mca_btl_base_selected_module_t *sm;
    OPAL_LIST_FOREACH(sm, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t)
    {
        mca_btl_base_module_t *btl = sm->btl_module;
        if (NULL == btl || NULL == btl->btl_register_mem || NULL == btl->btl_deregister_mem ||
            r->n == sizeof(r->btl) / sizeof(r->btl[0])) {
            continue;
        }
        r->btl[r->n++] = btl;
        size_t used = strlen(names);
        snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
                 sm->btl_component->btl_version.mca_component_name);
    }
    if (0 == r->n) {
        free(r);
        snprintf(why, whylen,
                 "pml ob1 is selected but none of its BTLs registers memory (shared memory, "
                 "tcp): nothing to pre-register");
        return 1;
    }
    snprintf(why, whylen, "pml ob1 selected; BTL(s) %s register memory", names);
    *ops = &btl_ops;
    *arg = r;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* pml/ucx: ucp_mem_map of each chunk on the PML's own context, which puts it
 * in the context's registration cache (UCX 1.13: the rcache that the new
 * protocols search; on InfiniBand also the device's cache). */

#ifdef REGPAR_HAVE_UCP
typedef struct ucx_registrar {
    ucp_context_h context;
    ucs_status_t (*map)(ucp_context_h, const ucp_mem_map_params_t *, ucp_mem_h *);
    ucs_status_t (*unmap)(ucp_context_h, ucp_mem_h);
} ucx_registrar_t;

/* The first fields of pml/ucx's module (4.1 and 5.0 alike). */
typedef struct pml_ucx_head {
    mca_pml_base_module_t super;
    ucp_context_h ucp_context;
} pml_ucx_head_t;

static int ucx_reg(void *arg, regpar_reg_chunk_t *chunk)
{
    ucx_registrar_t *r = arg;
    ucp_mem_map_params_t params;
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = chunk->addr;
    params.length = chunk->len;
    ucp_mem_h memh;
    ucs_status_t st = r->map(r->context, &params, &memh);
    if (UCS_OK != st) {
        return UCS_ERR_NO_MEMORY == st ? ENOMEM : EIO;
    }
    chunk->handle = memh;
    count_registrations(REGPAR_TRANSPORT_UCX, 1);
    return 0;
}

static int ucx_dereg(void *arg, regpar_reg_chunk_t *chunk)
{
    ucx_registrar_t *r = arg;
    ucs_status_t st = r->unmap(r->context, (ucp_mem_h)chunk->handle);
    chunk->handle = NULL;
    count_registrations(REGPAR_TRANSPORT_UCX, -1);
    return UCS_OK == st ? 0 : EIO;
}

/* A UCX context is not thread-safe (unless made for shared workers). */
static const regpar_registrar_t ucx_ops = {
    .name = "ucx",
    .thread_safe = false,
    .reg = ucx_reg,
    .dereg = ucx_dereg,
    .remedy = "raise the locked-memory limit (ulimit -l) or set mpool_regpar_reg_backend=none",
};

static int find_pml_ucx(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name, *slash = strrchr(name, '/');
    if (0 == strcmp(NULL != slash ? slash + 1 : name, "mca_pml_ucx.so")) {
        snprintf(data, 4096, "%s", name);
        return 1;
    }
    return 0;
}

int mca_mpool_regpar_ompi_ucx_open(const regpar_registrar_t **ops, void **arg, char *why,
                                   size_t whylen)
{
    char path[4096] = "";
    (void)dl_iterate_phdr(find_pml_ucx, path);
    void *dl = '\0' != path[0] ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    /* 4.1 (Debian) loads pml/ucx as mca_pml_ucx.so, whose handle also
     * searches its dependencies (libucp).  Open MPI 5 builds components
     * into libmpi by default, which links libucp: there the PML's module
     * and ucp_mem_map are in the global scope. */
    void *scope = NULL != dl ? dl : RTLD_DEFAULT;
    const pml_ucx_head_t *pml = dlsym(scope, "ompi_pml_ucx");
    ucx_registrar_t *r = calloc(1, sizeof(*r));
    if (NULL == r) {
        if (NULL != dl) {
            dlclose(dl);
        }
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    r->map = (ucs_status_t(*)(ucp_context_h, const ucp_mem_map_params_t *, ucp_mem_h *))dlsym(
        scope, "ucp_mem_map");
    r->unmap = (ucs_status_t(*)(ucp_context_h, ucp_mem_h))dlsym(scope, "ucp_mem_unmap");
    r->context = NULL != pml ? pml->ucp_context : NULL;
    /* The PML stays loaded until after our finalize hook: dropping our
     * reference now keeps the count balanced. */
    if (NULL != dl) {
        dlclose(dl);
    }
    if (NULL == pml) {
        free(r);
        snprintf(why, whylen,
                 "pml ucx is selected but its module (ompi_pml_ucx) was found neither in a "
                 "loaded mca_pml_ucx.so nor in libmpi");
        return -1;
    }
    if (NULL == r->context || NULL == r->map || NULL == r->unmap) {
        free(r);
        snprintf(why, whylen, "pml ucx is selected but its context or ucp_mem_map was not found");
        return -1;
    }
    snprintf(why, whylen, "pml ucx selected; slabs go into its ucp_context's registration cache");
    *ops = &ucx_ops;
    *arg = r;
    return 0;
}
#else
int mca_mpool_regpar_ompi_ucx_open(const regpar_registrar_t **ops, void **arg, char *why,
                                   size_t whylen)
{
    (void)ops, (void)arg;
    snprintf(why, whylen, "built without UCX headers (install libucx-dev and rebuild)");
    return -1;
}
#endif

/* ---------------------------------------------------------------------- */
/* pml/cm + mtl/ofi: fi_mr_reg in the MTL's own domain.  The MTL hands the
 * provider no descriptor, so this helps only where the provider's MR cache
 * also holds application registrations: EFA with libfabric before 2.2.
 * Elsewhere auto registers nothing; reg_backend=mtl registers anyway. */

typedef struct mtl_ofi_head {
    mca_mtl_base_module_t base;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
} mtl_ofi_head_t;

typedef struct mtl_registrar {
    struct fid_domain *domain;
    uint64_t next_key;
} mtl_registrar_t;

static int mtl_reg(void *arg, regpar_reg_chunk_t *chunk)
{
    mtl_registrar_t *r = arg;
    struct fid_mr *mr = NULL;
    int rc = fi_mr_reg(r->domain, chunk->addr, chunk->len,
                       FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                       r->next_key++, 0, &mr, NULL);
    if (0 != rc) {
        return rc < 0 ? -rc : EIO;
    }
    chunk->handle = mr;
    chunk->desc = fi_mr_desc(mr);
    chunk->key = chunk->rkey = fi_mr_key(mr);
    count_registrations(REGPAR_TRANSPORT_MTL, 1);
    return 0;
}

static int mtl_dereg(void *arg, regpar_reg_chunk_t *chunk)
{
    (void)arg;
    int rc = fi_close(&((struct fid_mr *)chunk->handle)->fid);
    chunk->handle = NULL;
    count_registrations(REGPAR_TRANSPORT_MTL, -1);
    return 0 == rc ? 0 : (rc < 0 ? -rc : EIO);
}

/* FI_THREAD_DOMAIN unless MPI_THREAD_MULTIPLE: one call at a time. */
static const regpar_registrar_t mtl_ops = {
    .name = "mtl",
    .thread_safe = false,
    .reg = mtl_reg,
    .dereg = mtl_dereg,
    .remedy = "raise the locked-memory limit (ulimit -l) or set mpool_regpar_reg_backend=none",
};

/* An EFA device on this node (its driver is efa). */
static bool efa_present(void)
{
    char link[512];
    for (int i = 0; i < 16; i++) {
        char path[128];
        snprintf(path, sizeof(path), "/sys/class/infiniband/rdmap%d/device/driver", i);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n > 0) {
            link[n] = '\0';
            const char *slash = strrchr(link, '/');
            if (0 == strcmp(NULL != slash ? slash + 1 : link, "efa")) {
                return true;
            }
        }
    }
    return false;
}

int mca_mpool_regpar_ompi_mtl_open(bool force, const regpar_registrar_t **ops, void **arg,
                                   char *why, size_t whylen)
{
    const char *mtl = mca_mpool_regpar_ompi_mtl_name();
    mca_mtl_base_module_t **module = sym("ompi_mtl");
    if (0 != strcmp(mtl, "ofi") || NULL == module || NULL == *module) {
        snprintf(why, whylen, "pml cm is selected with mtl \"%s\", not ofi", mtl);
        return 1;
    }
    uint32_t version = fi_version();
    bool cache_takes_app_mrs = efa_present() && version < FI_VERSION(2, 2);
    if (!force && !cache_takes_app_mrs) {
        snprintf(why, whylen,
                 "mtl ofi: the provider's MR cache takes application registrations only with "
                 "EFA and libfabric < 2.2 (libfabric %u.%u here%s); registering would pin twice",
                 FI_MAJOR(version), FI_MINOR(version), efa_present() ? ", EFA present" : "");
        return 1;
    }
    const mtl_ofi_head_t *ofi = (const mtl_ofi_head_t *)*module;
    /* The layout is an assumption (4.1.x and 5.0.10 alike): check that the
     * two words after the base module are libfabric objects of the right
     * classes before registering anything in what they point to. */
    if (NULL == ofi->fabric || NULL == ofi->domain || FI_CLASS_FABRIC != ofi->fabric->fid.fclass ||
        FI_CLASS_DOMAIN != ofi->domain->fid.fclass) {
        snprintf(why, whylen,
                 "mtl ofi's module does not hold an open fabric and domain where this build "
                 "expects them (an Open MPI whose mtl/ofi layout differs?)");
        return -1;
    }
    mtl_registrar_t *r = calloc(1, sizeof(*r));
    if (NULL == r) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    r->domain = ofi->domain;
    r->next_key = 0x5265675000000000ull; /* requested keys ("RegP"...) */
    snprintf(why, whylen, "pml cm + mtl ofi selected; fi_mr_reg in the MTL's domain (%s)",
             cache_takes_app_mrs ? "EFA, libfabric < 2.2: its MR cache serves the MTL"
                                 : "asked for with reg_backend=mtl");
    *ops = &mtl_ops;
    *arg = r;
    return 0;
}

void mca_mpool_regpar_ompi_close(const regpar_registrar_t *ops, void *arg)
{
    (void)ops;
    free(arg);
}

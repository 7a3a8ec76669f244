/*
 * Backend ofi: libfabric fi_mr_reg / fi_close on a domain of the chosen
 * provider.
 *
 * mr_mode: the engine declares every mode it can honour and the provider
 * keeps the bits it needs:
 *   FI_MR_LOCAL      every chunk keeps its fi_mr_desc for local transfers;
 *   FI_MR_VIRT_ADDR  chunks are addressed by virtual address (nothing to do
 *                    when registering; peers must exchange addresses);
 *   FI_MR_ALLOCATED  pages must be present: the engine pre-faults even with
 *                    prefault off;
 *   FI_MR_PROV_KEY   the provider chooses keys, else the engine hands out
 *                    unique requested keys per domain;
 *   FI_MR_ENDPOINT   an endpoint is opened and every MR is bound to it and
 *                    enabled.
 * Modes the engine cannot honour (FI_MR_RAW, FI_MR_RMA_EVENT, FI_MR_HMEM,
 * FI_MR_MMU_NOTIFY) are not offered, so providers that require them are not
 * selected.
 */
#include "bufpool_config.h"

#include "regpar_reg_backend.h"
#include "regpar_size.h"

#include <errno.h>
#include <stdlib.h>

#ifdef HAVE_LIBFABRIC

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define OFI_MR_MODES_HONOURED                                                                      \
    (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)
#define OFI_API_VERSION FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define OFI_REMEDY_PROVIDER                                                                        \
    "set mpool_regpar_ofi_provider to another provider, or mpool_regpar_reg_backend to pin or "    \
    "none"

typedef struct ofi_ctx {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep; /* FI_MR_ENDPOINT only */
    uint64_t access;
    uint64_t mr_mode;
    /* The domain is not FI_THREAD_SAFE: registrations take turns. */
    bool serialize;
    pthread_mutex_t lock;
    atomic_uint_fast64_t next_key;
} ofi_ctx_t;

/* Whether the ", "-separated list holds name as a whole entry. */
static bool list_has(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *at = list; (at = strstr(at, name)); at += len) {
        bool starts = at == list || ' ' == at[-1];
        bool ends = '\0' == at[len] || ',' == at[len];
        if (starts && ends) {
            return true;
        }
    }
    return false;
}

/* The providers libfabric offers at all, for the "not found" message. */
static void ofi_list_providers(char *buf, size_t len)
{
    struct fi_info *all = NULL;
    buf[0] = '\0';
    if (0 != fi_getinfo(OFI_API_VERSION, NULL, NULL, 0, NULL, &all) || !all) {
        snprintf(buf, len, "none");
        return;
    }
    size_t used = 0;
    for (struct fi_info *cur = all; cur; cur = cur->next) {
        const char *name = cur->fabric_attr ? cur->fabric_attr->prov_name : NULL;
        if (!name || list_has(buf, name)) {
            continue;
        }
        int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
        if (n < 0 || (size_t)n >= len - used) {
            break;
        }
        used += (size_t)n;
    }
    fi_freeinfo(all);
}

/*
 * The first fi_info of provider (any when NULL) that registration can use,
 * preferring thread-safe domains and RMA capability.  When local_only, only
 * providers that need local registration (FI_MR_LOCAL) qualify.  Returns a
 * copy to free with fi_freeinfo, or NULL with the last fi_getinfo code.
 */
static struct fi_info *ofi_select(const char *provider, bool local_only, int *last_rc)
{
    static const struct {
        uint64_t caps;
        enum fi_threading threading;
    } attempts[] = {{FI_MSG | FI_RMA, FI_THREAD_SAFE},
                    {FI_MSG | FI_RMA, FI_THREAD_UNSPEC},
                    {FI_MSG, FI_THREAD_SAFE},
                    {FI_MSG, FI_THREAD_UNSPEC}};
    *last_rc = -FI_ENODATA;
    for (size_t a = 0; a < sizeof(attempts) / sizeof(attempts[0]); a++) {
        struct fi_info *hints = fi_allocinfo();
        struct fi_info *list = NULL;
        if (!hints) {
            *last_rc = -FI_ENOMEM;
            return NULL;
        }
        hints->caps = attempts[a].caps;
        /* Nothing is ever sent on this domain: any mode is acceptable. */
        hints->mode = ~0ULL;
        hints->domain_attr->mr_mode = OFI_MR_MODES_HONOURED;
        hints->domain_attr->threading = attempts[a].threading;
        if (provider && provider[0]) {
            hints->fabric_attr->prov_name = strdup(provider);
        }
        *last_rc = fi_getinfo(OFI_API_VERSION, NULL, NULL, 0, hints, &list);
        fi_freeinfo(hints);
        if (0 != *last_rc) {
            continue;
        }
        for (struct fi_info *cur = list; cur; cur = cur->next) {
            if (!local_only || (cur->domain_attr->mr_mode & FI_MR_LOCAL)) {
                struct fi_info *chosen = fi_dupinfo(cur);
                fi_freeinfo(list);
                return chosen;
            }
        }
        fi_freeinfo(list);
        *last_rc = -FI_ENODATA;
    }
    return NULL;
}

static int ofi_close(void *ctx, regpar_reg_why_t *why)
{
    ofi_ctx_t *ofi = ctx;
    int rc = 0;
    if (!ofi) {
        return 0;
    }
    if (ofi->ep) {
        fi_close(&ofi->ep->fid);
    }
    /* A domain that still holds memory regions refuses to close (EBUSY):
     * that is a registration leak, worth saying. */
    if (ofi->domain && 0 != (rc = fi_close(&ofi->domain->fid)) && why) {
        regpar_reg_why_set(why, "ofi:close", "deregister every region before closing",
                           "fi_close(domain) on provider %s failed: %s",
                           ofi->info->fabric_attr->prov_name, fi_strerror(-rc));
    }
    if (ofi->fabric && 0 == rc) {
        fi_close(&ofi->fabric->fid);
    }
    if (ofi->info) {
        fi_freeinfo(ofi->info);
    }
    pthread_mutex_destroy(&ofi->lock);
    free(ofi);
    return 0 == rc ? 0 : -1;
}

static int ofi_open(const regpar_reg_config_t *cfg, const regpar_sys_t *sys, bool probing,
                    void **ctx, regpar_reg_backend_props_t *props, regpar_reg_why_t *why)
{
    (void)sys; /* no system call to inject: the engine injects registration failures */
    const char *provider = cfg->ofi_provider && cfg->ofi_provider[0] ? cfg->ofi_provider : NULL;
    ofi_ctx_t *ofi = calloc(1, sizeof(*ofi));
    if (!ofi) {
        regpar_reg_why_set(why, "ofi:nomem", "free some memory", "out of memory");
        return -1;
    }
    pthread_mutex_init(&ofi->lock, NULL);
    atomic_init(&ofi->next_key, 1);

    int rc;
    ofi->info = ofi_select(provider, probing, &rc);
    if (!ofi->info) {
        char available[512];
        ofi_list_providers(available, sizeof(available));
        if (probing) {
            regpar_reg_why_set(why, "ofi:probe", "",
                               "no libfabric provider needs local registration");
        } else if (provider) {
            char remedy[384];
            snprintf(remedy, sizeof(remedy),
                     "set mpool_regpar_ofi_provider to one of: %s (or empty for the first), or "
                     "mpool_regpar_reg_backend to pin or none",
                     available);
            regpar_reg_why_set(why, "ofi:provider", remedy,
                               "no usable libfabric provider named '%s' (fi_getinfo: %s)", provider,
                               fi_strerror(-rc));
        } else {
            regpar_reg_why_set(why, "ofi:provider",
                               "check the libfabric installation (FI_PROVIDER, FI_PROVIDER_PATH) "
                               "or set mpool_regpar_reg_backend to pin or none",
                               "no usable libfabric provider (fi_getinfo: %s)", fi_strerror(-rc));
        }
        ofi_close(ofi, NULL);
        return -1;
    }
    const char *prov_name = ofi->info->fabric_attr->prov_name;
    ofi->mr_mode = (uint64_t)ofi->info->domain_attr->mr_mode;

    rc = fi_fabric(ofi->info->fabric_attr, &ofi->fabric, NULL);
    const char *step = "fi_fabric";
    if (0 == rc) {
        step = "fi_domain";
        rc = fi_domain(ofi->fabric, ofi->info, &ofi->domain, NULL);
    }
    if (0 == rc && (ofi->mr_mode & FI_MR_ENDPOINT)) {
        step = "fi_endpoint";
        rc = fi_endpoint(ofi->domain, ofi->info, &ofi->ep, NULL);
    }
    if (0 != rc) {
        regpar_reg_why_set(why, "ofi:open", OFI_REMEDY_PROVIDER, "%s on provider %s failed: %s",
                           step, prov_name, fi_strerror(-rc));
        ofi_close(ofi, NULL);
        return -1;
    }

    ofi->access = FI_SEND | FI_RECV;
    if (ofi->info->caps & FI_RMA) {
        ofi->access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    }
    ofi->serialize = FI_THREAD_SAFE != ofi->info->domain_attr->threading;
    /* A provider that needs local registration or allocated pages pins in
     * the kernel, where disjoint chunks pin in parallel once present;
     * the others (tcp, shm, udp, sockets here) only insert the range in a
     * table, where threads add hand-off cost and nothing else. */
    bool pins = 0 != (ofi->mr_mode & (FI_MR_LOCAL | FI_MR_ALLOCATED));
    props->parallel_reg = pins && !ofi->serialize;
    props->parallel_dereg = pins && !ofi->serialize;
    props->needs_prefault = 0 != (ofi->mr_mode & FI_MR_ALLOCATED);
    *ctx = ofi;
    return 0;
}

static int ofi_register_locked(ofi_ctx_t *ofi, regpar_reg_chunk_t *chunk)
{
    uint64_t requested_key = 0;
    if (!(ofi->mr_mode & FI_MR_PROV_KEY)) {
        requested_key = atomic_fetch_add_explicit(&ofi->next_key, 1, memory_order_relaxed);
    }
    struct fid_mr *mr = NULL;
    int rc = fi_mr_reg(ofi->domain, chunk->addr, chunk->len, ofi->access, 0, requested_key, 0, &mr,
                       NULL);
    if (0 == rc && ofi->ep) {
        rc = fi_mr_bind(mr, &ofi->ep->fid, 0);
        if (0 == rc) {
            rc = fi_mr_enable(mr);
        }
        if (0 != rc) {
            fi_close(&mr->fid);
        }
    }
    if (0 != rc) {
        return rc < 0 ? -rc : rc;
    }
    chunk->handle = mr;
    chunk->desc = fi_mr_desc(mr);
    chunk->key = fi_mr_key(mr);
    chunk->rkey = chunk->key;
    return 0;
}

static int ofi_reg(void *ctx, regpar_reg_chunk_t *chunk)
{
    ofi_ctx_t *ofi = ctx;
    if (ofi->serialize) {
        pthread_mutex_lock(&ofi->lock);
    }
    int rc = ofi_register_locked(ofi, chunk);
    if (ofi->serialize) {
        pthread_mutex_unlock(&ofi->lock);
    }
    return rc;
}

static int ofi_dereg(void *ctx, regpar_reg_chunk_t *chunk)
{
    ofi_ctx_t *ofi = ctx;
    struct fid_mr *mr = chunk->handle;
    if (!mr) {
        return 0;
    }
    if (ofi->serialize) {
        pthread_mutex_lock(&ofi->lock);
    }
    int rc = fi_close(&mr->fid);
    if (ofi->serialize) {
        pthread_mutex_unlock(&ofi->lock);
    }
    if (0 == rc) {
        chunk->handle = NULL;
        chunk->desc = NULL;
    }
    return rc < 0 ? -rc : rc;
}

static void ofi_explain(void *ctx, int code, const regpar_reg_chunk_t *chunk, bool dereg,
                        regpar_reg_why_t *why)
{
    ofi_ctx_t *ofi = ctx;
    const char *prov_name = ofi->info->fabric_attr->prov_name;
    if (!dereg && FI_ENOMEM == code) {
        regpar_reg_explain_pinning("ofi", "fi_mr_reg", code, chunk->len, OFI_REMEDY_PROVIDER, why);
        return;
    }
    char key[64], size[32];
    snprintf(key, sizeof(key), "ofi:%s:%d", dereg ? "dereg" : "reg", code);
    regpar_format_size(chunk->len, size, sizeof(size));
    regpar_reg_why_set(why, key, OFI_REMEDY_PROVIDER, "%s of a %s chunk on provider %s failed: %s",
                       dereg ? "fi_close" : "fi_mr_reg", size, prov_name, fi_strerror(code));
}

REGPAR_REG_BACKEND_OPS(ofi, REGPAR_REG_OFI);

#else /* !HAVE_LIBFABRIC */

REGPAR_REG_BACKEND_UNBUILT(
    ofi, REGPAR_REG_OFI,
    "reconfigure with --with-libfabric, or set mpool_regpar_reg_backend to pin or none",
    "libfabric");

#endif /* HAVE_LIBFABRIC */

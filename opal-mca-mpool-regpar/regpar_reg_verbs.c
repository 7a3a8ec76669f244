/*
 * Backend verbs: rdma-core ibv_reg_mr / ibv_dereg_mr in one protection
 * domain of the named device (or the first one).
 *
 * Policy: ibv_reg_mr pins with the mm lock held for reading, so disjoint
 * chunks of present pages register in parallel (UCX: 100 GB in 1.6 s on 32
 * threads instead of 25.3 s).  No device exists on the development machine,
 * so this is the reference figure, not a local measurement.
 */
#include "bufpool_config.h"

#include "regpar_reg_backend.h"

#include <errno.h>
#include <stdlib.h>

#ifdef HAVE_VERBS

#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#define VERBS_REMEDY_BACKEND "set mpool_regpar_reg_backend to ofi, pin or none"

typedef struct verbs_ctx {
    struct ibv_context *context;
    struct ibv_pd *pd;
    int access;
    char device[64];
} verbs_ctx_t;

static int verbs_close(void *ctx, regpar_reg_why_t *why)
{
    verbs_ctx_t *verbs = ctx;
    int rc = 0;
    if (!verbs) {
        return 0;
    }
    /* A protection domain with memory regions left refuses to go (EBUSY). */
    if (verbs->pd && 0 != (rc = ibv_dealloc_pd(verbs->pd)) && why) {
        regpar_reg_why_set(why, "verbs:close", "deregister every region before closing",
                           "ibv_dealloc_pd(%s) failed: %s", verbs->device, strerror(rc));
    }
    if (verbs->context) {
        ibv_close_device(verbs->context);
    }
    free(verbs);
    return 0 == rc ? 0 : -1;
}

static void list_devices(struct ibv_device **list, int count, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        int n =
            snprintf(buf + used, len - used, "%s%s", i ? ", " : "", ibv_get_device_name(list[i]));
        if (n < 0 || (size_t)n >= len - used) {
            break;
        }
        used += (size_t)n;
    }
}

static int verbs_open(const regpar_reg_config_t *cfg, const regpar_sys_t *sys, bool probing,
                      void **ctx, regpar_reg_backend_props_t *props, regpar_reg_why_t *why)
{
    (void)sys;     /* no system call to inject: the engine injects registration failures */
    (void)probing; /* a device that opens is the right choice for auto */
    const char *wanted = cfg->verbs_device && cfg->verbs_device[0] ? cfg->verbs_device : NULL;
    verbs_ctx_t *verbs = calloc(1, sizeof(*verbs));
    if (!verbs) {
        regpar_reg_why_set(why, "verbs:nomem", "free some memory", "out of memory");
        return -1;
    }

    int count = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&count);
    if (!list || count <= 0) {
        int err = errno;
        regpar_reg_why_set(
            why, "verbs:nodevice", "load the device's kernel driver, or " VERBS_REMEDY_BACKEND,
            "no RDMA device found (ibv_get_device_list: %s)", err ? strerror(err) : "0 devices");
        if (list) {
            ibv_free_device_list(list);
        }
        verbs_close(verbs, NULL);
        return -1;
    }
    struct ibv_device *device = NULL;
    for (int i = 0; i < count && !device; i++) {
        if (!wanted || 0 == strcmp(wanted, ibv_get_device_name(list[i]))) {
            device = list[i];
        }
    }
    if (!device) {
        char names[256], remedy[384];
        list_devices(list, count, names, sizeof(names));
        snprintf(remedy, sizeof(remedy),
                 "set mpool_regpar_verbs_device to one of: %s (or empty for the first), or "
                 "mpool_regpar_reg_backend to ofi, pin or none",
                 names);
        regpar_reg_why_set(why, "verbs:device", remedy, "RDMA device '%s' not found", wanted);
        ibv_free_device_list(list);
        verbs_close(verbs, NULL);
        return -1;
    }
    snprintf(verbs->device, sizeof(verbs->device), "%s", ibv_get_device_name(device));
    verbs->context = ibv_open_device(device);
    int err = errno;
    ibv_free_device_list(list);
    if (!verbs->context) {
        regpar_reg_why_set(why, "verbs:open",
                           "check the device with ibv_devinfo, or " VERBS_REMEDY_BACKEND,
                           "ibv_open_device(%s) failed: %s", verbs->device, strerror(err));
        verbs_close(verbs, NULL);
        return -1;
    }
    verbs->pd = ibv_alloc_pd(verbs->context);
    if (!verbs->pd) {
        err = errno;
        regpar_reg_why_set(why, "verbs:pd",
                           "check the device with ibv_devinfo, or " VERBS_REMEDY_BACKEND,
                           "ibv_alloc_pd(%s) failed: %s", verbs->device, strerror(err));
        verbs_close(verbs, NULL);
        return -1;
    }

    verbs->access = cfg->verbs_access ? cfg->verbs_access : IBV_ACCESS_LOCAL_WRITE;
    /* ibv_reg_mr refuses remote write or atomics without local write. */
    if (verbs->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) {
        verbs->access |= IBV_ACCESS_LOCAL_WRITE;
    }
    props->parallel_reg = true;
    props->parallel_dereg = true;
    props->needs_prefault = false;
    *ctx = verbs;
    return 0;
}

static int verbs_reg(void *ctx, regpar_reg_chunk_t *chunk)
{
    verbs_ctx_t *verbs = ctx;
    errno = 0;
    struct ibv_mr *mr = ibv_reg_mr(verbs->pd, chunk->addr, chunk->len, verbs->access);
    if (!mr) {
        return errno ? errno : ENOMEM;
    }
    chunk->handle = mr;
    chunk->desc = mr;
    chunk->key = mr->lkey;
    chunk->rkey = mr->rkey;
    return 0;
}

static int verbs_dereg(void *ctx, regpar_reg_chunk_t *chunk)
{
    (void)ctx;
    if (!chunk->handle) {
        return 0;
    }
    int rc = ibv_dereg_mr(chunk->handle);
    if (0 == rc) {
        chunk->handle = NULL;
        chunk->desc = NULL;
    }
    return rc;
}

static void verbs_explain(void *ctx, int code, const regpar_reg_chunk_t *chunk, bool dereg,
                          regpar_reg_why_t *why)
{
    verbs_ctx_t *verbs = ctx;
    if (dereg) {
        char key[64];
        snprintf(key, sizeof(key), "verbs:dereg:%d", code);
        regpar_reg_why_set(why, key, "report this as a bug in the device driver",
                           "ibv_dereg_mr on %s: %s", verbs->device, strerror(code));
        return;
    }
    regpar_reg_explain_pinning("verbs", "ibv_reg_mr", code, chunk->len, VERBS_REMEDY_BACKEND, why);
}

REGPAR_REG_BACKEND_OPS(verbs, REGPAR_REG_VERBS);

#else /* !HAVE_VERBS */

REGPAR_REG_BACKEND_UNBUILT(
    verbs, REGPAR_REG_VERBS,
    "reconfigure with --with-verbs, or set mpool_regpar_reg_backend to ofi, pin or none",
    "rdma-core verbs");

#endif /* HAVE_VERBS */

/*
 * The digest of what a process's decisions follow from, published and
 * compared per communicator (coll_bufpool_alike.h).
 */
#include "coll_bufpool_alike.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"
#include BUFPOOL_OPAL_PMIX_H

_Static_assert(sizeof(opal_process_name_t) == sizeof(uint64_t),
               "a process name is the 64-bit key of the table");

/* The modex key (a variable: Open MPI 4.1's macro takes a char *). */
static char alike_key[] = "coll.bufpool.alike";

/* A 64-bit value in the modex: published with this process's connection
 * data (before Open MPI's commit and fence), read back for a peer.  Up to
 * 4.1 through the pmix framework's module in libopen-pal; from 5.0 Open
 * MPI calls PMIx itself, whose library it loads but a component cannot
 * name at link time (-no-undefined, and 6.0 may run on another install's
 * PMIx), so its two calls are found in the process. */
#if BUFPOOL_OMPI_SERIES == 41
static bool modex_send(uint64_t value)
{
    int rc;
    OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_GLOBAL, alike_key, &value, OPAL_UINT64);
    return OPAL_SUCCESS == rc;
}

static bool modex_recv(const opal_process_name_t *name, uint64_t *value)
{
    int rc;
    uint64_t *target = value;
    OPAL_MODEX_RECV_VALUE(rc, alike_key, name, &target, OPAL_UINT64);
    return OPAL_SUCCESS == rc;
}
#else
#include <dlfcn.h>

typedef pmix_status_t (*pmix_put_fn_t)(pmix_scope_t, const char *, pmix_value_t *);
typedef pmix_status_t (*pmix_get_fn_t)(const pmix_proc_t *, const char *, const pmix_info_t *,
                                       size_t, pmix_value_t **);

static bool modex_send(uint64_t value)
{
    pmix_put_fn_t put = (pmix_put_fn_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PMIx_Put");
    if (NULL == put) {
        return false;
    }
    pmix_value_t v;
    memset(&v, 0, sizeof(v));
    v.type = PMIX_UINT64;
    v.data.uint64 = value;
    return PMIX_SUCCESS == put(PMIX_GLOBAL, alike_key, &v);
}

static bool modex_recv(const opal_process_name_t *name, uint64_t *value)
{
    pmix_get_fn_t get = (pmix_get_fn_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PMIx_Get");
    if (NULL == get) {
        return false;
    }
    pmix_proc_t proc;
    OPAL_PMIX_CONVERT_NAME(&proc, name);
    pmix_value_t *v = NULL;
    const bool ok =
        PMIX_SUCCESS == get(&proc, alike_key, NULL, 0, &v) && NULL != v && PMIX_UINT64 == v->type;
    if (ok) {
        *value = v->data.uint64;
    }
    /* A value of a plain type holds no further allocation. */
    free(v);
    return ok;
}
#endif

void bufpool_alike_init(bufpool_alike_t *alike)
{
    alike->digest = BUFPOOL_DIGEST_INIT;
    alike->published = false;
    OBJ_CONSTRUCT(&alike->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&alike->of_proc, opal_hash_table_t);
    alike->ready = OPAL_SUCCESS == opal_hash_table_init(&alike->of_proc, 256);
}

void bufpool_alike_fini(bufpool_alike_t *alike)
{
    OBJ_DESTRUCT(&alike->of_proc);
    OBJ_DESTRUCT(&alike->lock);
    alike->ready = false;
    alike->published = false;
}

void bufpool_alike_add_bytes(bufpool_alike_t *alike, const char *name, const void *bytes, size_t n)
{
    /* The name and the length first, so that no two settings' bytes run
     * together into the same stream. */
    alike->digest = bufpool_digest(alike->digest, name, strlen(name) + 1);
    alike->digest = bufpool_digest(alike->digest, &n, sizeof(n));
    alike->digest = bufpool_digest(alike->digest, bytes, n);
}

void bufpool_alike_add(bufpool_alike_t *alike, const char *name, const char *text)
{
    if (NULL == text) {
        bufpool_alike_add_bytes(alike, name, "", 0);
        alike->digest = bufpool_digest(alike->digest, "unset", 5);
    } else {
        bufpool_alike_add_bytes(alike, name, text, strlen(text));
    }
}

void bufpool_alike_publish(bufpool_alike_t *alike)
{
    /* 0 is the table's "published none". */
    alike->digest |= 1;
    alike->published = modex_send(alike->digest);
}

/* proc's digest, 0 where it published none; looked up once. */
static uint64_t digest_of(bufpool_alike_t *alike, ompi_proc_t *proc)
{
    if (proc == ompi_proc_local()) {
        return alike->digest;
    }
    uint64_t key;
    memcpy(&key, &proc->super.proc_name, sizeof(key));
    void *cached = NULL;
    OPAL_THREAD_LOCK(&alike->lock);
    const bool known = alike->ready && OPAL_SUCCESS == opal_hash_table_get_value_uint64(
                                                           &alike->of_proc, key, &cached);
    OPAL_THREAD_UNLOCK(&alike->lock);
    if (known) {
        return (uint64_t)(uintptr_t)cached;
    }
    /* Outside the lock: from Open MPI 5.0 this asks PMIx, which may wait
     * for the peer's server. */
    uint64_t value = 0;
    if (!modex_recv(&proc->super.proc_name, &value)) {
        value = 0;
    }
    OPAL_THREAD_LOCK(&alike->lock);
    if (alike->ready) {
        /* Without room to remember it, the next communicator asks again
         * and finds the same value. */
        (void)opal_hash_table_set_value_uint64(&alike->of_proc, key, (void *)(uintptr_t)value);
    }
    OPAL_THREAD_UNLOCK(&alike->lock);
    return value;
}

bool bufpool_alike_comm(bufpool_alike_t *alike, struct ompi_communicator_t *comm, char *why,
                        size_t whylen)
{
    const int p = ompi_comm_size(comm);
    if (1 == p) {
        return true; /* nobody to disagree with */
    }
    if (!alike->published) {
        snprintf(why, whylen, "this process could not publish its settings' digest");
        return false;
    }
    for (int r = 0; r < p; r++) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        const uint64_t theirs = digest_of(alike, proc);
        if (theirs != alike->digest) {
            snprintf(why, whylen,
                     0 == theirs ? "its rank %d (job rank %u) runs without coll/bufpool, or "
                                   "could not publish its settings"
                                 : "its rank %d (job rank %u) runs coll/bufpool with other "
                                   "settings: another version, other coll_bufpool parameters "
                                   "or rules, or rules it could not load",
                     r, (unsigned)proc->super.proc_name.vpid);
            return false;
        }
    }
    return true;
}

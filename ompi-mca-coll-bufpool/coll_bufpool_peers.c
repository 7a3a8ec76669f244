/*
 * Each process's host and settings digest, learned once
 * (coll_bufpool_peers.h).
 */
#include "coll_bufpool_peers.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/proc/proc.h"
#include "opal/util/proc.h"
#include BUFPOOL_OPAL_PMIX_H

_Static_assert(sizeof(opal_process_name_t) == sizeof(uint64_t),
               "a process name is the 64-bit key of the table");

/* The modex key of the digest (a variable: Open MPI 4.1's macro takes a
 * char *). */
static char digest_key[] = "coll.bufpool.alike";

/* What a lookup of a peer's value found: the value, that the peer
 * published none (every rank finds that alike), or neither, the runtime
 * having run out of memory (this rank alone may find that). */
typedef enum { MODEX_FOUND, MODEX_NONE, MODEX_LOST } modex_answer_t;

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
    OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_GLOBAL, digest_key, &value, OPAL_UINT64);
    return OPAL_SUCCESS == rc;
}

static modex_answer_t modex_recv(const opal_process_name_t *name, uint64_t *value)
{
    int rc;
    uint64_t *target = value;
    OPAL_MODEX_RECV_VALUE(rc, digest_key, name, &target, OPAL_UINT64);
    return OPAL_SUCCESS == rc                                                      ? MODEX_FOUND
           : OPAL_ERR_OUT_OF_RESOURCE == rc || OPAL_ERR_TEMP_OUT_OF_RESOURCE == rc ? MODEX_LOST
                                                                                   : MODEX_NONE;
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
    return PMIX_SUCCESS == put(PMIX_GLOBAL, digest_key, &v);
}

static modex_answer_t modex_recv(const opal_process_name_t *name, uint64_t *value)
{
    pmix_get_fn_t get = (pmix_get_fn_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PMIx_Get");
    if (NULL == get) {
        return MODEX_NONE; /* on every rank alike: the same library everywhere */
    }
    pmix_proc_t proc;
    OPAL_PMIX_CONVERT_NAME(&proc, name);
    pmix_value_t *v = NULL;
    const pmix_status_t rc = get(&proc, digest_key, NULL, 0, &v);
    modex_answer_t answer = MODEX_NONE;
    if (PMIX_SUCCESS == rc && NULL != v && PMIX_UINT64 == v->type) {
        *value = v->data.uint64;
        answer = MODEX_FOUND;
    } else if (PMIX_ERR_NOMEM == rc || PMIX_ERR_OUT_OF_RESOURCE == rc) {
        answer = MODEX_LOST;
    }
    /* A value of a plain type holds no further allocation. */
    free(v);
    return answer;
}
#endif

bool bufpool_peers_publish(uint64_t digest)
{
    return modex_send(digest);
}

void bufpool_peers_init(bufpool_peers_t *peers)
{
    OBJ_CONSTRUCT(&peers->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&peers->of_proc, opal_hash_table_t);
    OBJ_CONSTRUCT(&peers->of_name, opal_hash_table_t);
    peers->n = 0;
    peers->records = NULL;
    peers->nrecords = peers->capacity = 0;
    peers->ready = OPAL_SUCCESS == opal_hash_table_init(&peers->of_proc, 256) &&
                   OPAL_SUCCESS == opal_hash_table_init(&peers->of_name, 16);
}

void bufpool_peers_fini(bufpool_peers_t *peers)
{
    OBJ_DESTRUCT(&peers->of_name);
    OBJ_DESTRUCT(&peers->of_proc);
    OBJ_DESTRUCT(&peers->lock);
    free(peers->records);
    peers->records = NULL;
    peers->nrecords = peers->capacity = 0;
    peers->ready = false;
}

/* The number of host name (one name, one number); -1 where the name is
 * unusable or there is no room for it. */
static int number_host(bufpool_peers_t *peers, const char *name)
{
    if (0 == strcmp(name, "unknown") || !peers->ready) {
        return -1;
    }
    const size_t len = strlen(name);
    void *value = NULL;
    int host = -1;
    OPAL_THREAD_LOCK(&peers->lock);
    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(&peers->of_name, name, len, &value)) {
        host = (int)(intptr_t)value - 1;
    } else if (OPAL_SUCCESS == opal_hash_table_set_value_ptr(&peers->of_name, name, len,
                                                             (void *)(intptr_t)(peers->n + 1))) {
        host = peers->n++;
    }
    OPAL_THREAD_UNLOCK(&peers->lock);
    return host;
}

static int look_up_host(bufpool_peers_t *peers, struct ompi_proc_t *proc)
{
    char *name = opal_get_proc_hostname(&proc->super);
    if (NULL == name) {
        return -1;
    }
    const int host = number_host(peers, name);
    BUFPOOL_PROC_HOSTNAME_FREE(name);
    return host;
}

static bool remembered(bufpool_peers_t *peers, uint64_t key, bufpool_peer_t *facts)
{
    void *value = NULL;
    OPAL_THREAD_LOCK(&peers->lock);
    const bool known = peers->ready && OPAL_SUCCESS == opal_hash_table_get_value_uint64(
                                                           &peers->of_proc, key, &value);
    if (known) {
        *facts = peers->records[(size_t)(uintptr_t)value - 1];
    }
    OPAL_THREAD_UNLOCK(&peers->lock);
    return known;
}

/* Without room to remember them, the next question looks them up again
 * and finds the same facts. */
static void remember(bufpool_peers_t *peers, uint64_t key, const bufpool_peer_t *facts)
{
    void *known = NULL;
    OPAL_THREAD_LOCK(&peers->lock);
    /* Another thread may have looked the same process up meanwhile. */
    if (!peers->ready ||
        OPAL_SUCCESS == opal_hash_table_get_value_uint64(&peers->of_proc, key, &known)) {
        goto out;
    }
    if (peers->nrecords == peers->capacity) {
        const size_t capacity = 0 == peers->capacity ? 64 : 2 * peers->capacity;
        bufpool_peer_t *records = realloc(peers->records, capacity * sizeof(*records));
        if (NULL == records) {
            goto out;
        }
        peers->records = records;
        peers->capacity = capacity;
    }
    if (OPAL_SUCCESS == opal_hash_table_set_value_uint64(
                            &peers->of_proc, key, (void *)(uintptr_t)(peers->nrecords + 1))) {
        peers->records[peers->nrecords++] = *facts;
    }
out:
    OPAL_THREAD_UNLOCK(&peers->lock);
}

bufpool_peer_t bufpool_peers_of(bufpool_peers_t *peers, struct ompi_proc_t *proc)
{
    struct ompi_proc_t *self = ompi_proc_local();
    bufpool_peer_t facts = {.host = -1, .digest = 0, .digest_lost = false};
    uint64_t key;
    memcpy(&key, &proc->super.proc_name, sizeof(key));
    if (remembered(peers, key, &facts)) {
        return facts;
    }
    /* A process on this node runs on this process's host, whose name is
     * this process's own (no lookup): only peers on other hosts are looked
     * up.  The same partition on every rank: the launch sets the locality
     * of two processes from the node it gave both. */
    if (proc != self && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
        facts.host = bufpool_peers_of(peers, self).host;
    } else {
        facts.host = look_up_host(peers, proc);
    }
    if (proc != self) {
        const modex_answer_t answer = modex_recv(&proc->super.proc_name, &facts.digest);
        facts.digest_lost = MODEX_LOST == answer;
        if (MODEX_FOUND != answer) {
            facts.digest = 0;
        }
    }
    /* A host name not known now is asked for again next time, as before
     * there was a digest to keep beside it, and so is a digest lost. */
    if (facts.host >= 0 && !facts.digest_lost) {
        remember(peers, key, &facts);
    }
    return facts;
}

/*
 * The host of each process, looked up once (coll_bufpool_hosts.h).
 */
#include "coll_bufpool_hosts.h"

#include <stdint.h>
#include <string.h>

#include "ompi/proc/proc.h"
#include "opal/util/proc.h"

_Static_assert(sizeof(opal_process_name_t) == sizeof(uint64_t),
               "a process name is the 64-bit key of the table");

void bufpool_hosts_init(bufpool_hosts_t *hosts)
{
    OBJ_CONSTRUCT(&hosts->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&hosts->of_proc, opal_hash_table_t);
    OBJ_CONSTRUCT(&hosts->of_name, opal_hash_table_t);
    hosts->n = 0;
    hosts->ready = OPAL_SUCCESS == opal_hash_table_init(&hosts->of_proc, 256) &&
                   OPAL_SUCCESS == opal_hash_table_init(&hosts->of_name, 16);
}

void bufpool_hosts_fini(bufpool_hosts_t *hosts)
{
    OBJ_DESTRUCT(&hosts->of_name);
    OBJ_DESTRUCT(&hosts->of_proc);
    OBJ_DESTRUCT(&hosts->lock);
    hosts->ready = false;
}

/* The number of host name (one name, one number) and the process key's
 * entry for it.  -1 where the name is unusable or out of memory. */
static int number_host(bufpool_hosts_t *hosts, const char *name, uint64_t key)
{
    if (0 == strcmp(name, "unknown")) {
        return -1;
    }
    const size_t len = strlen(name);
    void *value = NULL;
    int host = -1;
    OPAL_THREAD_LOCK(&hosts->lock);
    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(&hosts->of_name, name, len, &value)) {
        host = (int)(intptr_t)value - 1;
    } else if (OPAL_SUCCESS == opal_hash_table_set_value_ptr(&hosts->of_name, name, len,
                                                             (void *)(intptr_t)(hosts->n + 1))) {
        host = hosts->n++;
    }
    /* Without room to remember the process, the next communicator asks for
     * its name again and finds the same number. */
    if (host >= 0) {
        (void)opal_hash_table_set_value_uint64(&hosts->of_proc, key, (void *)(intptr_t)(host + 1));
    }
    OPAL_THREAD_UNLOCK(&hosts->lock);
    return host;
}

/* Look proc's host name up (outside the lock: from Open MPI 5.0 it asks
 * PMIx) and number it. */
static int look_up(bufpool_hosts_t *hosts, struct ompi_proc_t *proc, uint64_t key)
{
    char *name = opal_get_proc_hostname(&proc->super);
    if (NULL == name) {
        return -1;
    }
    const int host = number_host(hosts, name, key);
    BUFPOOL_PROC_HOSTNAME_FREE(name);
    return host;
}

int bufpool_hosts_of(bufpool_hosts_t *hosts, struct ompi_proc_t *proc)
{
    if (!hosts->ready) {
        return -1;
    }
    /* A process on this node runs on this process's host, whose name is
     * this process's own (no PMIx lookup): only peers on other hosts are
     * looked up.  The same partition on every rank: the launch sets the
     * locality of two processes from the node it gave both. */
    if (proc != ompi_proc_local() && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
        proc = ompi_proc_local();
    }
    uint64_t key;
    memcpy(&key, &proc->super.proc_name, sizeof(key));
    void *value = NULL;
    int host = -1;
    OPAL_THREAD_LOCK(&hosts->lock);
    if (OPAL_SUCCESS == opal_hash_table_get_value_uint64(&hosts->of_proc, key, &value)) {
        host = (int)(intptr_t)value - 1;
    }
    OPAL_THREAD_UNLOCK(&hosts->lock);
    return host >= 0 ? host : look_up(hosts, proc, key);
}

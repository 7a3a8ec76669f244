/*
 * Which host each process of the job runs on, looked up once per process.
 *
 * A communicator's hosts (bufpool_comm_host_ids, at every module enable)
 * come from its peers' host names.  From Open MPI 5.0 every
 * opal_get_proc_hostname of a peer is a PMIx lookup that allocates, and
 * PMIx keeps part of each: asked anew for every communicator, the heap
 * grew by some 130 bytes per communicator made and freed at 2 ranks
 * (test/reliability/reslimits.sh, "comms").  A process's host cannot
 * change during the job, so each is looked up once and each host name
 * gets a number.
 */
#ifndef MCA_COLL_BUFPOOL_HOSTS_H
#define MCA_COLL_BUFPOOL_HOSTS_H

#include "ompi_config.h"

#include <stdbool.h>

#include "bufpool_ompi_compat.h"
#include "opal/class/opal_hash_table.h"
#include BUFPOOL_OPAL_MUTEX_H

struct ompi_proc_t;

typedef struct bufpool_hosts {
    opal_mutex_t lock;
    opal_hash_table_t of_proc; /* process name -> host number + 1 */
    opal_hash_table_t of_name; /* host name -> host number + 1    */
    int n;                     /* host numbers given so far       */
    bool ready;                /* the tables could be made        */
} bufpool_hosts_t;

void bufpool_hosts_init(bufpool_hosts_t *hosts);
void bufpool_hosts_fini(bufpool_hosts_t *hosts);

/* The number of proc's host, from 0 (one host, one number, in this
 * process), or -1 where its host name is not known (or the tables could
 * not be made). */
int bufpool_hosts_of(bufpool_hosts_t *hosts, struct ompi_proc_t *proc);

#endif /* MCA_COLL_BUFPOOL_HOSTS_H */
